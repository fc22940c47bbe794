#![allow(dead_code)] // Shared by the bench and the example; each uses a subset.
//! Deterministic generated ACP v1 streams for benchmarks (shared by the
//! criterion bench and the `replay_bench` example via `#[path]`).
//! Every line is a valid v1 `session/update` the official schema crate decodes.

/// A tiny deterministic PRNG (xorshift64*): benchmarks must not depend on a clock.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "the", "engine", "streams", "tokens", "while", "tool", "calls", "run", "quickly", "and", "a",
    "client", "renders", "every", "chunk", "without", "flicker", "résumé", "naïve", "data",
];

fn words(rng: &mut Rng, n: u64) -> String {
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    if rng.below(8) == 0 {
        // Escaped newlines, as real model output has.
        s.push_str("\\n\\n");
    }
    s
}

fn update(u: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"sess_bench","update":{u}}}}}"#
    )
}

fn message_chunk(rng: &mut Rng, tag: &str) -> String {
    let count = 2 + rng.below(8);
    update(&format!(
        r#"{{"sessionUpdate":"{tag}","content":{{"type":"text","text":"{} "}}}}"#,
        words(rng, count)
    ))
}

/// `n` lines shaped like real turns: a usage update and a plan, a run of
/// thought chunks, then runs of agent message chunks separated by tool calls
/// (a `tool_call` and a few `tool_call_update`s), now and then the available
/// commands. About 80% of the lines are message chunks (see [`chunk_share`]).
pub fn mixed_stream(n: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let mut lines = Vec::with_capacity(n + 200);
    let mut tool = 0u64;
    while lines.len() < n {
        let used = rng.below(200_000);
        lines.push(update(&format!(
            r#"{{"sessionUpdate":"usage_update","used":{used},"size":200000}}"#
        )));
        lines.push(update(
            r#"{"sessionUpdate":"plan","entries":[{"content":"Read the code","priority":"high","status":"completed"},{"content":"Write the fix","priority":"medium","status":"in_progress"}]}"#,
        ));
        if rng.below(10) == 0 {
            lines.push(update(
                r#"{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"web","description":"Search the web","input":{"hint":"query"}}]}"#,
            ));
        }
        for _ in 0..2 + rng.below(9) {
            lines.push(message_chunk(&mut rng, "agent_thought_chunk"));
        }
        let tools = rng.below(5);
        for t in 0..=tools {
            for _ in 0..4 + rng.below(17) {
                lines.push(message_chunk(&mut rng, "agent_message_chunk"));
            }
            if t == tools {
                break;
            }
            tool += 1;
            lines.push(update(&format!(
                r#"{{"sessionUpdate":"tool_call","toolCallId":"call_{tool}","title":"Run cargo test","kind":"execute","status":"pending","rawInput":{{"command":"cargo test","cwd":"/work"}}}}"#
            )));
            for u in 0..1 + rng.below(4) {
                let status = if u == 0 { "in_progress" } else { "completed" };
                lines.push(update(&format!(
                    r#"{{"sessionUpdate":"tool_call_update","toolCallId":"call_{tool}","status":"{status}","content":[{{"type":"content","content":{{"type":"text","text":"ok: {u} passed"}}}}]}}"#
                )));
            }
        }
    }
    lines.truncate(n);
    lines
}

/// Fraction of `lines` that are message or thought chunks.
pub fn chunk_share(lines: &[String]) -> f64 {
    let chunks = lines
        .iter()
        .filter(|l| l.contains(r#""sessionUpdate":"agent_"#))
        .count();
    chunks as f64 / lines.len().max(1) as f64
}

/// Writes snapshot `k` (1-based) of `steps` of a `total`-byte message into
/// `buf`: a chunk flagged `_meta.spindle.snapshot` carrying the first
/// `total * k / steps` bytes of the final text.
pub fn snapshot_line(buf: &mut String, final_text: &str, k: usize, steps: usize) {
    let len = final_text.len() * k / steps;
    buf.clear();
    buf.push_str(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"m1","_meta":{"spindle":{"snapshot":true}},"content":{"type":"text","text":""#);
    buf.push_str(&final_text[..len]);
    buf.push_str(r#""}}}}"#);
}

/// ASCII text of exactly `len` bytes with no characters that need escaping.
pub fn plain_text(len: usize, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let mut s = String::with_capacity(len);
    while s.len() < len {
        s.push_str(WORDS[rng.below(8) as usize]);
        s.push(' ');
    }
    s.truncate(len);
    s
}
