//! ACP v2: a second prompt sent while the first one's work runs, arriving at
//! every point of that work (each `advance` of the sans-I/O core, with the
//! core's clock stepped to each pause): before the end it is inserted and one
//! `idle` ends both; after the `idle` it starts new work that ends with an
//! `idle` of its own. Either way the work it asked for is done and ended.

use serde_json::{Value, json};
use spindle_agent::{AgentConfig, AgentCore, Next};

/// The core driven with a virtual clock: every pause is waited out at once.
struct Sim {
    core: AgentCore,
    now_ms: u64,
    /// Every line the agent wrote, in order.
    lines: Vec<Value>,
}

impl Sim {
    /// Initialized (v2) with session `sess_1`, pausing 5 ms between pieces.
    fn ready() -> Sim {
        let config = AgentConfig {
            delay_ms: 5,
            ..AgentConfig::default()
        };
        let mut sim = Sim {
            core: AgentCore::new(config),
            now_ms: 0,
            lines: Vec::new(),
        };
        sim.send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": 2, "info": {"name": "races", "version": "0"}}}));
        sim.settle();
        sim.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
            "params": {"cwd": "/", "mcpServers": []}}));
        sim.settle();
        sim.lines.clear();
        sim
    }

    fn send(&mut self, message: Value) {
        self.core.handle_line(&message.to_string());
    }

    fn prompt(&mut self, id: u64, text: &str) {
        self.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": "sess_1", "prompt": [{"type": "text", "text": text}]}}),
        );
    }

    /// One `advance`; `false` once the core waits for input.
    fn step(&mut self) -> bool {
        let next = self.core.advance(self.now_ms);
        let out = self.core.take_output();
        for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            self.lines
                .push(serde_json::from_slice(line).expect("a JSON line"));
        }
        match next {
            Next::Ready => true,
            Next::WakeAt(t) => {
                self.now_ms = t;
                true
            }
            Next::WaitForInput => false,
            Next::Exit(code) => panic!("the agent exited ({code})"),
        }
    }

    /// Steps until the core waits for input; returns how many steps it took.
    fn settle(&mut self) -> usize {
        for n in 0..100_000 {
            if !self.step() {
                return n;
            }
        }
        panic!("the agent never waited for input: {:?}", self.lines);
    }
}

fn update_tag(line: &Value) -> &str {
    line["params"]["update"]["sessionUpdate"]
        .as_str()
        .unwrap_or("")
}

/// Whether `line` is a `state_update` to `state` (an idle with a stop reason
/// only: the one that ends work).
fn is_state(line: &Value, state: &str) -> bool {
    let update = &line["params"]["update"];
    update_tag(line) == "state_update"
        && update["state"] == state
        && (state != "idle" || update["stopReason"].is_string())
}

/// Sends `first`, lets the core take `steps` steps (fewer if it waits for
/// input sooner), sends a second prompt, and runs until all work waits.
fn second_prompt_after(first: &str, steps: usize) -> Vec<Value> {
    let mut sim = Sim::ready();
    sim.prompt(2, first);
    for _ in 0..steps {
        if !sim.step() {
            break;
        }
    }
    sim.prompt(3, "go on");
    sim.settle();
    sim.lines
}

/// The checks every arrival point must pass; `at` names the case.
fn check(lines: &[Value], at: &str) {
    let answer = |id: u64| {
        lines
            .iter()
            .position(|m| m["id"] == id && m.get("method").is_none())
            .unwrap_or_else(|| panic!("{at}: prompt {id} never answered: {lines:#?}"))
    };
    let second = answer(3);
    assert!(
        lines[second]["result"]["messageId"].is_string(),
        "{at}: the second prompt was accepted: {}",
        lines[second]
    );
    assert!(answer(2) < second, "{at}");
    let idles: Vec<usize> = (0..lines.len())
        .filter(|&i| is_state(&lines[i], "idle"))
        .collect();
    let Some(&last_idle) = idles.last() else {
        panic!("{at}: the work never ended: {lines:#?}");
    };
    assert!(
        second < last_idle,
        "{at}: the second prompt's work ended after its acceptance: {lines:#?}"
    );
    // Its reply came before that end.
    assert!(
        lines[second..last_idle]
            .iter()
            .any(|m| update_tag(m).starts_with("agent_message")),
        "{at}: no reply to the second prompt: {lines:#?}"
    );
    // Nothing runs after the last idle.
    assert!(
        !lines[last_idle..]
            .iter()
            .any(|m| is_state(m, "running") || update_tag(m).starts_with("agent_message")),
        "{at}: work after the end: {lines:#?}"
    );
    if idles[0] < second {
        // Arrived after the first work's end: new work, with its own start and end.
        assert_eq!(idles.len(), 2, "{at}: {lines:#?}");
        assert!(
            lines[second..last_idle]
                .iter()
                .any(|m| is_state(m, "running")),
            "{at}: the new work never said it runs: {lines:#?}"
        );
    } else {
        // Inserted into the running work: one idle ends both prompts.
        assert_eq!(idles.len(), 1, "{at}: {lines:#?}");
    }
}

/// A plain reply, paused between words: the second prompt lands in it at
/// every point, and after its end.
#[test]
fn v2_a_second_prompt_at_any_point_of_a_turn_is_run_and_ended() {
    let mut alone = Sim::ready();
    alone.prompt(2, "hello there");
    let steps = alone.settle();
    assert!(steps > 5, "the reply is paused between words: {steps}");
    let (mut inserted, mut after) = (0, 0);
    for k in 0..=steps + 1 {
        let lines = second_prompt_after("hello there", k);
        check(&lines, &format!("after {k} of {steps} steps"));
        let second = lines.iter().position(|m| m["id"] == 3).unwrap();
        if lines.iter().position(|m| is_state(m, "idle")).unwrap() < second {
            after += 1;
        } else {
            inserted += 1;
        }
    }
    // Both sides of the race were taken.
    assert!(inserted > 0 && after > 0, "{inserted} {after}");
}

/// `/scenario wait-next` waits for the next inserted prompt: one inserted
/// while its text still streams (before the wait was reached) lifts the wait
/// too, so the work goes on and ends (it once waited forever).
#[test]
fn v2_wait_next_goes_on_whenever_the_next_prompt_arrives() {
    let mut alone = Sim::ready();
    alone.prompt(2, "/scenario wait-next");
    let steps = alone.settle();
    assert!(
        !alone.lines.iter().any(|m| is_state(m, "idle")),
        "waits without a second prompt: {:?}",
        alone.lines
    );
    for k in 0..=steps + 1 {
        let lines = second_prompt_after("/scenario wait-next", k);
        check(&lines, &format!("after {k} of {steps} steps"));
        let idles = lines.iter().filter(|m| is_state(m, "idle")).count();
        assert_eq!(idles, 1, "after {k} steps: inserted, one end: {lines:#?}");
    }
}
