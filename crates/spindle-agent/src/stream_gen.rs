//! The benchmark stream generator: N realistic `session/update` lines at
//! memory speed.
//!
//! Lines are assembled from pre-rendered, pre-escaped byte slices; nothing is
//! built through `serde_json::Value`. Content is a pure function of
//! (version, mix, N): no clock, no random seed from outside.
//!
//! Every mix streams one agent message, `gen_a1`. Its final content (after
//! appends, clears, replacements and snapshots) is the *expected reply*;
//! [`expected_reply`] computes its length and FNV-1a 64 hash so consumers can
//! check they rebuilt the same text.

use std::sync::OnceLock;

use spindle_wire::meta::{META_KEY, SNAPSHOT_FLAG, SPINDLE_META_KEY};
use spindle_wire::tags;

use crate::wire::{Fnv1a64, Version, escape_json_into};

/// Which kind of traffic to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamMix {
    /// 80% message chunks, thought chunks, tool calls and updates, plans, usage.
    Mixed,
    /// Refinement-heavy: message/thought clears (v1 extension) or
    /// replacements (v2 `agent_message` / `agent_thought`).
    Refine,
    /// Snapshot-style chunks (`_meta.spindle.snapshot: true`), each carrying
    /// the whole message text.
    Snapshot,
    /// Message chunks only.
    Chunks,
}

impl StreamMix {
    /// Every mix, in declaration order.
    pub const ALL: [StreamMix; 4] = [
        StreamMix::Mixed,
        StreamMix::Refine,
        StreamMix::Snapshot,
        StreamMix::Chunks,
    ];

    /// Parses `mixed`, `refine`, `snapshot` or `chunks`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "mixed" => Some(StreamMix::Mixed),
            "refine" => Some(StreamMix::Refine),
            "snapshot" => Some(StreamMix::Snapshot),
            "chunks" => Some(StreamMix::Chunks),
            _ => None,
        }
    }

    /// The name [`StreamMix::parse`] accepts.
    pub fn name(self) -> &'static str {
        match self {
            StreamMix::Mixed => "mixed",
            StreamMix::Refine => "refine",
            StreamMix::Snapshot => "snapshot",
            StreamMix::Chunks => "chunks",
        }
    }
}

/// The message id all generated agent chunks use.
pub const MESSAGE_ID: &str = "gen_a1";

const WORDS: [&str; 48] = [
    "the",
    "stream",
    "client",
    "agent",
    "protocol",
    "message",
    "chunk",
    "update",
    "session",
    "renders",
    "quickly",
    "while",
    "parsing",
    "every",
    "line",
    "of",
    "JSON",
    "text",
    "and",
    "builds",
    "a",
    "transcript",
    "with",
    "tool",
    "calls",
    "plans",
    "thoughts",
    "usage",
    "numbers",
    "so",
    "that",
    "users",
    "see",
    "progress",
    "in",
    "real",
    "time",
    "without",
    "flicker",
    "or",
    "duplicated",
    "output",
    "is",
    "fast",
    "correct",
    "deterministic",
    "Rust",
    "async",
];
const EXTRAS: [&str; 6] = [
    "\n\n",
    " \"quoted\"",
    " caf\u{e9}",
    " \u{2192}",
    " `code`",
    "\n- item",
];
const POOL_SIZE: usize = 1024;
const SNAPSHOT_STEPS: usize = 8;

struct Piece {
    raw: String,
    escaped: Vec<u8>,
}

impl Piece {
    fn new(raw: String) -> Self {
        let mut escaped = Vec::with_capacity(raw.len() + 8);
        escape_json_into(&mut escaped, &raw);
        Piece { raw, escaped }
    }
}

struct Pool {
    /// Message and thought chunk texts (about 50 bytes each).
    chunks: Vec<Piece>,
    /// Snapshot texts: `POOL_SIZE / SNAPSHOT_STEPS` sentences, each as
    /// `SNAPSHOT_STEPS` growing prefixes.
    snapshots: Vec<Piece>,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| {
        // xorshift64 with a fixed seed: deterministic across runs and platforms.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut sentence = |base: usize| {
            let min_len = base + (next() % 30) as usize;
            let mut s = String::new();
            while s.len() < min_len {
                if !s.is_empty() {
                    s.push(' ');
                }
                s.push_str(WORDS[(next() % WORDS.len() as u64) as usize]);
                if next() % 11 == 0 {
                    s.push_str(EXTRAS[(next() % EXTRAS.len() as u64) as usize]);
                }
            }
            s
        };
        let chunks = (0..POOL_SIZE)
            .map(|_| {
                let mut s = sentence(12);
                s.push(' ');
                Piece::new(s)
            })
            .collect();
        let mut snapshots = Vec::with_capacity(POOL_SIZE);
        for _ in 0..POOL_SIZE / SNAPSHOT_STEPS {
            let full = sentence(110);
            let words: Vec<&str> = full.split(' ').collect();
            for step in 1..=SNAPSHOT_STEPS {
                let take = (words.len() * step).div_ceil(SNAPSHOT_STEPS);
                snapshots.push(Piece::new(words[..take].join(" ")));
            }
        }
        Pool { chunks, snapshots }
    })
}

/// Writes the generated notifications.
#[derive(Debug)]
pub struct StreamGenerator {
    version: Version,
    mix: StreamMix,
    total: u64,
    index: u64,
    prefix: Vec<u8>,
    heads: &'static Heads,
    chunk_cursor: usize,
    snapshot_cursor: usize,
    tool_counter: u64,
    /// The reply so far (only when tracking, for [`expected_reply`]).
    reply: Option<Vec<u8>>,
    /// Text the transcript holds besides the reply (thoughts, tool output).
    other_text: OtherText,
}

/// Bytes of thought and tool-output text a transcript of the stream holds.
#[derive(Debug, Default)]
struct OtherText {
    /// Tool output and the thoughts of finished cycles.
    settled: u64,
    /// The thought message being written (`gen_t<cycle>`) and its bytes.
    thought_cycle: u64,
    thought_bytes: u64,
}

impl OtherText {
    fn thought(&mut self, cycle: u64, bytes: usize) {
        if cycle != self.thought_cycle {
            self.settled += self.thought_bytes;
            self.thought_cycle = cycle;
            self.thought_bytes = 0;
        }
        self.thought_bytes += bytes as u64;
    }

    fn thought_cleared(&mut self, cycle: u64) {
        if cycle == self.thought_cycle {
            self.thought_bytes = 0;
        }
    }

    fn total(&self) -> u64 {
        self.settled + self.thought_bytes
    }
}

/// The fixed start of each kind of update, rendered once from the wire
/// vocabulary (`"sessionUpdate":"<tag>",...` up to the first variable part).
#[derive(Debug)]
struct Heads {
    message_chunk: Vec<u8>,
    thought_chunk: Vec<u8>,
    thought_clear_v1: Vec<u8>,
    thought_upsert_v2: Vec<u8>,
    message_clear_v1: Vec<u8>,
    message_upsert_empty_v2: Vec<u8>,
    message_upsert_v2: Vec<u8>,
    snapshot_meta_end: Vec<u8>,
    tool_start_v1: Vec<u8>,
    tool_start_v2: Vec<u8>,
    tool_done: Vec<u8>,
    plan_v1: Vec<u8>,
    plan_v2: Vec<u8>,
    usage: Vec<u8>,
}

fn heads() -> &'static Heads {
    static HEADS: OnceLock<Heads> = OnceLock::new();
    HEADS.get_or_init(|| {
        let head =
            |tag: &str, rest: &str| format!("\"sessionUpdate\":\"{tag}\"{rest}").into_bytes();
        let text_block = ",\"content\":{\"type\":\"text\",\"text\":\"";
        let gen_a1 = format!(",\"messageId\":\"{MESSAGE_ID}\"");
        Heads {
            message_chunk: head(tags::AGENT_MESSAGE_CHUNK, &format!("{gen_a1}{text_block}")),
            thought_chunk: head(tags::AGENT_THOUGHT_CHUNK, ",\"messageId\":\"gen_t"),
            thought_clear_v1: head(tags::AGENT_THOUGHT_CLEAR, ",\"messageId\":\"gen_t"),
            thought_upsert_v2: head(tags::AGENT_THOUGHT, ",\"messageId\":\"gen_t"),
            message_clear_v1: head(tags::AGENT_MESSAGE_CLEAR, &gen_a1),
            message_upsert_empty_v2: head(tags::AGENT_MESSAGE, &format!("{gen_a1},\"content\":[]")),
            message_upsert_v2: head(
                tags::AGENT_MESSAGE,
                &format!("{gen_a1},\"content\":[{{\"type\":\"text\",\"text\":\""),
            ),
            snapshot_meta_end: format!(
                "\"}},\"{META_KEY}\":{{\"{SPINDLE_META_KEY}\":{{\"{SNAPSHOT_FLAG}\":true}}}}"
            )
            .into_bytes(),
            tool_start_v1: head(tags::TOOL_CALL, ""),
            tool_start_v2: head(tags::TOOL_CALL_UPDATE, ""),
            tool_done: head(tags::TOOL_CALL_UPDATE, ",\"toolCallId\":\"gen_call_"),
            plan_v1: head(tags::PLAN, ",\"entries\":"),
            plan_v2: head(
                tags::PLAN_UPDATE,
                ",\"plan\":{\"type\":\"items\",\"planId\":\"gen_plan\",\"entries\":",
            ),
            usage: head(tags::USAGE_UPDATE, ",\"used\":"),
        }
    })
}

const SUFFIX: &[u8] = b"}}}\n";
const TEXT_END: &[u8] = b"\"}}}}\n";

impl StreamGenerator {
    /// A generator of `total` notifications for session `session_id`.
    pub fn new(version: Version, mix: StreamMix, session_id: &str, total: u64) -> Self {
        let mut prefix = Vec::new();
        prefix.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"",
        );
        escape_json_into(&mut prefix, session_id);
        prefix.extend_from_slice(b"\",\"update\":{");
        StreamGenerator {
            version,
            mix,
            total,
            index: 0,
            prefix,
            heads: heads(),
            chunk_cursor: 0,
            snapshot_cursor: 0,
            tool_counter: 0,
            reply: None,
            other_text: OtherText::default(),
        }
    }

    /// Notifications still to write.
    pub fn remaining(&self) -> u64 {
        self.total - self.index
    }

    /// Writes lines into `out` until it holds at least `budget` bytes or the
    /// stream is complete; returns `true` when complete.
    pub fn write_until(&mut self, out: &mut Vec<u8>, budget: usize) -> bool {
        while self.index < self.total {
            if out.len() >= budget {
                return false;
            }
            self.write_one(out);
            self.index += 1;
        }
        true
    }

    fn write_one(&mut self, out: &mut Vec<u8>) {
        let i = self.index;
        match self.mix {
            StreamMix::Chunks => self.message_chunk(out),
            StreamMix::Mixed => match i % 20 {
                0..=15 => self.message_chunk(out),
                16 | 17 => self.thought_chunk(out, i / 20),
                18 if (i / 20).is_multiple_of(2) => self.tool_start(out),
                18 => self.tool_done(out),
                _ if (i / 20).is_multiple_of(2) => self.plan(out),
                _ => self.usage(out, i),
            },
            StreamMix::Refine => match i % 16 {
                0..=11 | 15 => self.message_chunk(out),
                12 => self.thought_chunk(out, i / 16),
                13 => self.thought_clear(out, i / 16),
                _ => self.message_rewind(out, i / 16),
            },
            StreamMix::Snapshot => match i % 10 {
                0..=7 => self.snapshot(out),
                8 => self.thought_chunk(out, i / 10),
                _ => self.usage(out, i),
            },
        }
    }

    fn begin(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.prefix);
    }

    fn next_chunk(&mut self) -> &'static Piece {
        let p = &pool().chunks[self.chunk_cursor];
        self.chunk_cursor = (self.chunk_cursor + 1) % POOL_SIZE;
        p
    }

    fn message_chunk(&mut self, out: &mut Vec<u8>) {
        let piece = self.next_chunk();
        self.begin(out);
        out.extend_from_slice(&self.heads.message_chunk);
        out.extend_from_slice(&piece.escaped);
        out.extend_from_slice(TEXT_END);
        if let Some(reply) = &mut self.reply {
            reply.extend_from_slice(piece.raw.as_bytes());
        }
    }

    fn thought_chunk(&mut self, out: &mut Vec<u8>, cycle: u64) {
        let piece = self.next_chunk();
        self.begin(out);
        out.extend_from_slice(&self.heads.thought_chunk);
        push_u64(out, cycle);
        out.extend_from_slice(b"\",\"content\":{\"type\":\"text\",\"text\":\"");
        out.extend_from_slice(&piece.escaped);
        out.extend_from_slice(TEXT_END);
        self.other_text.thought(cycle, piece.raw.len());
    }

    fn thought_clear(&mut self, out: &mut Vec<u8>, cycle: u64) {
        self.begin(out);
        match self.version {
            Version::V1 => out.extend_from_slice(&self.heads.thought_clear_v1),
            Version::V2 => out.extend_from_slice(&self.heads.thought_upsert_v2),
        }
        push_u64(out, cycle);
        match self.version {
            Version::V1 => out.extend_from_slice(b"\""),
            Version::V2 => out.extend_from_slice(b"\",\"content\":[]"),
        }
        out.extend_from_slice(SUFFIX);
        self.other_text.thought_cleared(cycle);
    }

    /// v1: `agent_message_clear`. v2: alternately `content: []` and a
    /// one-block replacement.
    fn message_rewind(&mut self, out: &mut Vec<u8>, cycle: u64) {
        self.begin(out);
        match self.version {
            Version::V1 => {
                out.extend_from_slice(&self.heads.message_clear_v1);
                out.extend_from_slice(SUFFIX);
                if let Some(reply) = &mut self.reply {
                    reply.clear();
                }
            }
            Version::V2 if cycle.is_multiple_of(2) => {
                out.extend_from_slice(&self.heads.message_upsert_empty_v2);
                out.extend_from_slice(SUFFIX);
                if let Some(reply) = &mut self.reply {
                    reply.clear();
                }
            }
            Version::V2 => {
                let piece = self.next_chunk();
                out.extend_from_slice(&self.heads.message_upsert_v2);
                out.extend_from_slice(&piece.escaped);
                out.extend_from_slice(b"\"}]");
                out.extend_from_slice(SUFFIX);
                if let Some(reply) = &mut self.reply {
                    reply.clear();
                    reply.extend_from_slice(piece.raw.as_bytes());
                }
            }
        }
    }

    fn snapshot(&mut self, out: &mut Vec<u8>) {
        let piece = &pool().snapshots[self.snapshot_cursor];
        self.snapshot_cursor = (self.snapshot_cursor + 1) % POOL_SIZE;
        self.begin(out);
        out.extend_from_slice(&self.heads.message_chunk);
        out.extend_from_slice(&piece.escaped);
        out.extend_from_slice(&self.heads.snapshot_meta_end);
        out.extend_from_slice(SUFFIX);
        if let Some(reply) = &mut self.reply {
            reply.clear();
            reply.extend_from_slice(piece.raw.as_bytes());
        }
    }

    fn tool_start(&mut self, out: &mut Vec<u8>) {
        self.tool_counter += 1;
        let k = self.tool_counter;
        self.begin(out);
        match self.version {
            Version::V1 => out.extend_from_slice(&self.heads.tool_start_v1),
            Version::V2 => out.extend_from_slice(&self.heads.tool_start_v2),
        }
        out.extend_from_slice(b",\"toolCallId\":\"gen_call_");
        push_u64(out, k);
        out.extend_from_slice(b"\",\"title\":\"Read src/module_");
        push_u64(out, k);
        out.extend_from_slice(b".rs\",\"kind\":\"read\",\"status\":\"in_progress\",\"rawInput\":{\"path\":\"src/module_");
        push_u64(out, k);
        out.extend_from_slice(b".rs\"}");
        out.extend_from_slice(SUFFIX);
    }

    fn tool_done(&mut self, out: &mut Vec<u8>) {
        let k = self.tool_counter;
        let piece = self.next_chunk();
        self.begin(out);
        out.extend_from_slice(&self.heads.tool_done);
        push_u64(out, k);
        out.extend_from_slice(
            b"\",\"status\":\"completed\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"",
        );
        out.extend_from_slice(&piece.escaped);
        out.extend_from_slice(b"\"}}]");
        out.extend_from_slice(SUFFIX);
        self.other_text.settled += piece.raw.len() as u64;
    }

    fn plan(&mut self, out: &mut Vec<u8>) {
        const ENTRIES: &[u8] = b"[{\"content\":\"Read the modules\",\"priority\":\"high\",\"status\":\"completed\"},{\"content\":\"Stream the answer\",\"priority\":\"medium\",\"status\":\"in_progress\"},{\"content\":\"Summarise\",\"priority\":\"low\",\"status\":\"pending\"}]";
        self.begin(out);
        match self.version {
            Version::V1 => {
                out.extend_from_slice(&self.heads.plan_v1);
                out.extend_from_slice(ENTRIES);
            }
            Version::V2 => {
                out.extend_from_slice(&self.heads.plan_v2);
                out.extend_from_slice(ENTRIES);
                out.push(b'}');
            }
        }
        out.extend_from_slice(SUFFIX);
    }

    fn usage(&mut self, out: &mut Vec<u8>, i: u64) {
        self.begin(out);
        out.extend_from_slice(&self.heads.usage);
        push_u64(out, 1000 + i * 12);
        out.extend_from_slice(b",\"size\":1000000000");
        out.extend_from_slice(SUFFIX);
    }
}

fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut pos = buf.len();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[pos..]);
}

/// The final content of message [`MESSAGE_ID`] after a whole stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedReply {
    /// Length of the reply text in bytes (UTF-8).
    pub bytes: u64,
    /// Length of the reply text in Unicode scalar values.
    pub chars: u64,
    /// FNV-1a 64 of the reply text's UTF-8 bytes.
    pub fnv1a64: u64,
    /// All the text a transcript of the stream holds, in bytes: the reply, the
    /// thoughts (after their clears) and the tool calls' text output.
    pub transcript_text_bytes: u64,
}

impl ExpectedReply {
    /// One JSON line: `{"mix":..,"protocol":..,"notifications":..,"replyBytes":..,"replyChars":..,"replyFnv1a64":"<16 hex>","transcriptTextBytes":..}`.
    pub fn to_json(&self, version: Version, mix: StreamMix, n: u64) -> String {
        format!(
            "{{\"mix\":\"{}\",\"protocol\":{},\"notifications\":{n},\"messageId\":\"{MESSAGE_ID}\",\"replyBytes\":{},\"replyChars\":{},\"replyFnv1a64\":\"{:016x}\",\"transcriptTextBytes\":{}}}",
            mix.name(),
            version.number(),
            self.bytes,
            self.chars,
            self.fnv1a64,
            self.transcript_text_bytes
        )
    }
}

/// The reply text a consumer must end up with after the stream, and the
/// bytes of the transcript's other text (thoughts, tool output).
fn generate_expected(version: Version, mix: StreamMix, n: u64) -> (String, u64) {
    let mut generator = StreamGenerator::new(version, mix, "sess_1", n);
    generator.reply = Some(Vec::new());
    let mut scratch = Vec::with_capacity(1 << 20);
    while !generator.write_until(&mut scratch, 1 << 20) {
        scratch.clear();
    }
    let bytes = generator.reply.take().unwrap_or_default();
    let text = String::from_utf8(bytes).expect("pool pieces are whole strings");
    (text, generator.other_text.total())
}

/// The reply text a consumer must end up with after the stream.
pub fn expected_reply_text(version: Version, mix: StreamMix, n: u64) -> String {
    generate_expected(version, mix, n).0
}

/// Length and hash of [`expected_reply_text`], and the transcript's text size.
pub fn expected_reply(version: Version, mix: StreamMix, n: u64) -> ExpectedReply {
    let (text, other) = generate_expected(version, mix, n);
    ExpectedReply {
        bytes: text.len() as u64,
        chars: text.chars().count() as u64,
        fnv1a64: Fnv1a64::hash(&text),
        transcript_text_bytes: text.len() as u64 + other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn lines(version: Version, mix: StreamMix, n: u64) -> Vec<Value> {
        let mut generator = StreamGenerator::new(version, mix, "sess_1", n);
        let mut out = Vec::new();
        assert!(generator.write_until(&mut out, usize::MAX));
        out.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("valid JSON line"))
            .collect()
    }

    /// Rebuilds message `gen_a1` the way a client following the documented
    /// semantics would.
    fn rebuild(lines: &[Value]) -> String {
        let mut text = String::new();
        for line in lines {
            let u = &line["params"]["update"];
            if u["messageId"] != MESSAGE_ID {
                continue;
            }
            match u["sessionUpdate"].as_str().unwrap() {
                "agent_message_chunk" => {
                    let t = u["content"]["text"].as_str().unwrap();
                    if u.pointer("/_meta/spindle/snapshot") == Some(&Value::Bool(true)) {
                        text.clear();
                    }
                    text.push_str(t);
                }
                "agent_message_clear" => text.clear(),
                "agent_message" => {
                    text.clear();
                    for block in u["content"].as_array().unwrap() {
                        text.push_str(block["text"].as_str().unwrap());
                    }
                }
                other => panic!("unexpected update {other}"),
            }
        }
        text
    }

    /// Bytes of the thoughts (each message's text after its clears) and of
    /// the tool calls' text output, rebuilt from the lines.
    fn rebuild_other_text(lines: &[Value]) -> u64 {
        let mut thoughts: std::collections::BTreeMap<String, u64> = Default::default();
        let mut tools = 0u64;
        for line in lines {
            let u = &line["params"]["update"];
            let id = u["messageId"].as_str().unwrap_or_default().to_owned();
            match u["sessionUpdate"].as_str().unwrap() {
                "agent_thought_chunk" => {
                    *thoughts.entry(id).or_default() +=
                        u["content"]["text"].as_str().unwrap().len() as u64;
                }
                "agent_thought_clear" => {
                    thoughts.insert(id, 0);
                }
                "agent_thought" => {
                    let blocks = u["content"].as_array().unwrap();
                    let len = blocks.iter().map(|b| b["text"].as_str().unwrap().len());
                    thoughts.insert(id, len.sum::<usize>() as u64);
                }
                "tool_call" | "tool_call_update" => {
                    for item in u["content"].as_array().into_iter().flatten() {
                        tools += item["content"]["text"].as_str().unwrap().len() as u64;
                    }
                }
                _ => {}
            }
        }
        thoughts.values().sum::<u64>() + tools
    }

    #[test]
    fn every_mix_is_valid_json_and_matches_its_expectation() {
        for version in [Version::V1, Version::V2] {
            for mix in StreamMix::ALL {
                for n in [0, 1, 19, 20, 333] {
                    let lines = lines(version, mix, n);
                    assert_eq!(lines.len() as u64, n);
                    let text = rebuild(&lines);
                    assert_eq!(text, expected_reply_text(version, mix, n), "{mix:?} {n}");
                    let exp = expected_reply(version, mix, n);
                    assert_eq!(exp.bytes, text.len() as u64);
                    assert_eq!(exp.fnv1a64, Fnv1a64::hash(&text));
                    assert_eq!(
                        exp.transcript_text_bytes,
                        text.len() as u64 + rebuild_other_text(&lines),
                        "{version:?} {mix:?} {n}"
                    );
                }
            }
        }
    }

    #[test]
    fn mixed_is_mostly_message_chunks_of_realistic_size() {
        let mut generator = StreamGenerator::new(Version::V1, StreamMix::Mixed, "sess_1", 10_000);
        let mut out = Vec::new();
        generator.write_until(&mut out, usize::MAX);
        let avg = out.len() / 10_000;
        assert!((150..=260).contains(&avg), "average line {avg} bytes");
        let lines = lines(Version::V1, StreamMix::Mixed, 1000);
        let chunks = lines
            .iter()
            .filter(|l| l["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
            .count();
        assert_eq!(chunks, 800);
    }

    #[test]
    fn output_is_deterministic() {
        let mut a = Vec::new();
        let mut b = Vec::new();
        StreamGenerator::new(Version::V2, StreamMix::Refine, "s", 500)
            .write_until(&mut a, usize::MAX);
        StreamGenerator::new(Version::V2, StreamMix::Refine, "s", 500)
            .write_until(&mut b, usize::MAX);
        assert_eq!(a, b);
    }
}
