//! Property: for streams representable in both versions, the transcript a
//! client builds through the bridge equals the one built from the source
//! stream directly (both with the project's transcript engine).
//!
//! Normalized before comparing (see `normalize`): entry ids (the bridge
//! mints messageIds, the engine mints entry ids), user-message ids, the
//! shape of plans (v1 `entries` vs v2 `{type, planId, entries}`: entries
//! compared) and of tool-call content (text of each item). Compared: the
//! kind and text of every message entry in order, every tool call's id,
//! title, status and content text, every plan's entries, the per-turn
//! replies and stop reasons.

use proptest::prelude::*;
use serde_json::{Value, json};
use spindle_bridge::{Bridge, BridgeConfig, Policy};
use spindle_engine::{EngineConfig, EntryBody, ProtocolHint, TranscriptEngine};

#[derive(Debug, Clone)]
enum Step {
    /// kind 0 = agent, 1 = thought; id slot None = no id (v1 only).
    Chunk {
        thought: bool,
        id: Option<u8>,
        text: String,
    },
    /// v2 only: whole message (sent as chunks on v1 when the id is fresh).
    Upsert {
        thought: bool,
        id: u8,
        texts: Vec<String>,
    },
    Tool {
        n: u8,
        status: u8,
        text: Option<String>,
    },
    ToolChunk {
        n: u8,
        text: String,
    },
    Plan {
        statuses: Vec<u8>,
    },
    /// v1 agent_message_clear of the message streaming (v1 sources only).
    Clear,
}

#[derive(Debug, Clone)]
struct Turn {
    prompt: String,
    steps: Vec<Step>,
    stop: u8,
    /// v2: send the idle snapshot twice.
    repeat_idle: bool,
}

const STOPS: [&str; 5] = [
    "end_turn",
    "max_tokens",
    "max_turn_requests",
    "refusal",
    "cancelled",
];
const TOOL_STATUS: [&str; 4] = ["pending", "in_progress", "completed", "failed"];
const PLAN_STATUS: [&str; 3] = ["pending", "in_progress", "completed"];

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z ]{1,8}", Just("é😀\n\"q\"".to_owned())]
}

fn step(v1: bool) -> impl Strategy<Value = Step> {
    let id = if v1 {
        prop::option::of(0u8..3).boxed()
    } else {
        (0u8..3).prop_map(Some).boxed()
    };
    prop_oneof![
        5 => (any::<bool>(), id, text()).prop_map(|(thought, id, text)| Step::Chunk { thought, id, text }),
        2 => (any::<bool>(), 0u8..3, prop::collection::vec(text(), 1..3))
            .prop_map(|(thought, id, texts)| Step::Upsert { thought, id, texts }),
        2 => (0u8..2, 0u8..4, prop::option::of(text())).prop_map(|(n, status, text)| Step::Tool { n, status, text }),
        1 => (0u8..2, text()).prop_map(|(n, text)| Step::ToolChunk { n, text }),
        1 => prop::collection::vec(0u8..3, 1..3).prop_map(|statuses| Step::Plan { statuses }),
        1 => Just(Step::Clear),
    ]
}

fn turns(v1: bool) -> impl Strategy<Value = Vec<Turn>> {
    prop::collection::vec(
        (
            text(),
            prop::collection::vec(step(v1), 0..10),
            0u8..5,
            any::<bool>(),
        )
            .prop_map(|(prompt, steps, stop, repeat_idle)| Turn {
                prompt,
                steps,
                stop,
                repeat_idle,
            }),
        1..4,
    )
}

fn notify(u: Value) -> String {
    json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":u}})
        .to_string()
}

/// What a client sends, and what the agent answers, as a script in which
/// `PROMPT` stands for the id the agent sees on the prompt request.
enum Line {
    Client(String),
    Agent(String),
    /// The agent's answer to the latest prompt: result JSON.
    PromptAnswer(Value),
}

fn kind_tag(thought: bool, chunk: bool) -> &'static str {
    match (thought, chunk) {
        (false, true) => "agent_message_chunk",
        (true, true) => "agent_thought_chunk",
        (false, false) => "agent_message",
        (true, false) => "agent_thought",
    }
}

/// Renders turns as the agent of `version` would send them, keeping to what
/// the other version can represent.
fn script(version: u16, turns: &[Turn]) -> Vec<Line> {
    let mut lines = Vec::new();
    let init = if version == 2 {
        json!({"protocolVersion":2,"info":{"name":"p","version":"1"}})
    } else {
        json!({"protocolVersion":1})
    };
    lines.push(Line::Client(
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":init}).to_string(),
    ));
    let result = if version == 2 {
        json!({"protocolVersion":2,"info":{"name":"a","version":"1"},"capabilities":{"session":{}}})
    } else {
        json!({"protocolVersion":1})
    };
    lines.push(Line::Agent(
        json!({"jsonrpc":"2.0","id":0,"result":result}).to_string(),
    ));
    lines.push(Line::Client(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}).to_string()));
    lines.push(Line::Agent(
        json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}).to_string(),
    ));
    let mut tools_seen = [false; 2];
    let mut tool_content: [Vec<String>; 2] = Default::default();
    for (t, turn) in turns.iter().enumerate() {
        let id = 10 + t as u64;
        // Message ids are per turn, so a new turn's chunks are new messages
        // in both versions.
        let mid =
            |thought: bool, slot: u8| format!("t{t}{}{slot}", if thought { "th" } else { "m" });
        let mut with_content: Vec<String> = Vec::new();
        lines.push(Line::Client(
            json!({"jsonrpc":"2.0","id":id,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":turn.prompt}]}}).to_string(),
        ));
        if version == 2 {
            let uid = format!("u{t}");
            lines.push(Line::PromptAnswer(json!({"messageId": uid})));
            lines.push(Line::Agent(notify(json!({"sessionUpdate":"user_message","messageId":uid,"content":[{"type":"text","text":turn.prompt}]}))));
            lines.push(Line::Agent(notify(
                json!({"sessionUpdate":"state_update","state":"running"}),
            )));
        }
        for step in &turn.steps {
            match step {
                Step::Chunk { thought, id, text } => {
                    let mut u = json!({"sessionUpdate": kind_tag(*thought, true), "content": {"type":"text","text":text}});
                    if let Some(slot) = id {
                        let m = mid(*thought, *slot);
                        with_content.push(m.clone());
                        u["messageId"] = json!(m);
                    }
                    lines.push(Line::Agent(notify(u)));
                }
                Step::Upsert { thought, id, texts } => {
                    let m = mid(*thought, *id);
                    let blocks: Vec<Value> = texts
                        .iter()
                        .map(|t| json!({"type":"text","text":t}))
                        .collect();
                    if version == 2 && !with_content.contains(&m) {
                        lines.push(Line::Agent(notify(json!({"sessionUpdate": kind_tag(*thought, false), "messageId": m, "content": blocks}))));
                    } else {
                        for b in blocks {
                            lines.push(Line::Agent(notify(json!({"sessionUpdate": kind_tag(*thought, true), "messageId": m, "content": b}))));
                        }
                    }
                    with_content.push(m);
                }
                Step::Tool { n, status, text } => {
                    let n = *n as usize;
                    let call = format!("call{n}");
                    let mut u =
                        json!({"toolCallId": call, "status": TOOL_STATUS[*status as usize]});
                    if !tools_seen[n] {
                        u["title"] = json!(format!("Tool {n}"));
                        u["kind"] = json!("read");
                    }
                    if let Some(text) = text {
                        tool_content[n] = vec![text.clone()];
                        u["content"] =
                            json!([{"type":"content","content":{"type":"text","text":text}}]);
                    }
                    let tag = if version == 1 && !tools_seen[n] {
                        "tool_call"
                    } else {
                        "tool_call_update"
                    };
                    u["sessionUpdate"] = json!(tag);
                    tools_seen[n] = true;
                    lines.push(Line::Agent(notify(u)));
                }
                Step::ToolChunk { n, text } => {
                    let n = *n as usize;
                    if !tools_seen[n] {
                        continue;
                    }
                    tool_content[n].push(text.clone());
                    let item = json!({"type":"content","content":{"type":"text","text":text}});
                    if version == 2 {
                        lines.push(Line::Agent(notify(json!({"sessionUpdate":"tool_call_content_chunk","toolCallId":format!("call{n}"),"content":item}))));
                    } else {
                        let all: Vec<Value> = tool_content[n]
                            .iter()
                            .map(|t| json!({"type":"content","content":{"type":"text","text":t}}))
                            .collect();
                        lines.push(Line::Agent(notify(json!({"sessionUpdate":"tool_call_update","toolCallId":format!("call{n}"),"content":all}))));
                    }
                }
                Step::Plan { statuses } => {
                    let entries: Vec<Value> = statuses
                        .iter()
                        .enumerate()
                        .map(|(i, s)| json!({"content": format!("step {i}"), "priority":"medium", "status": PLAN_STATUS[*s as usize]}))
                        .collect();
                    let u = if version == 2 {
                        json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p","entries":entries}})
                    } else {
                        json!({"sessionUpdate":"plan","entries":entries})
                    };
                    lines.push(Line::Agent(notify(u)));
                }
                Step::Clear => {
                    if version == 1 {
                        lines.push(Line::Agent(notify(
                            json!({"sessionUpdate":"agent_message_clear"}),
                        )));
                    }
                }
            }
        }
        let stop = STOPS[turn.stop as usize];
        if version == 2 {
            let idle =
                notify(json!({"sessionUpdate":"state_update","state":"idle","stopReason":stop}));
            lines.push(Line::Agent(idle.clone()));
            if turn.repeat_idle {
                lines.push(Line::Agent(idle));
            }
        } else {
            lines.push(Line::PromptAnswer(json!({"stopReason": stop})));
        }
    }
    lines
}

fn engine(version: u16) -> TranscriptEngine {
    TranscriptEngine::new(EngineConfig {
        protocol: if version == 2 {
            ProtocolHint::V2
        } else {
            ProtocolHint::V1
        },
        ..EngineConfig::default()
    })
}

/// The client's requests in its own version (only initialize differs).
fn client_line(client: u16, line: &str) -> String {
    let mut v: Value = serde_json::from_str(line).unwrap();
    if v["method"] == "initialize" {
        v["params"] = if client == 2 {
            json!({"protocolVersion":2,"info":{"name":"p","version":"1"}})
        } else {
            json!({"protocolVersion":1})
        };
    }
    v.to_string()
}

fn direct(version: u16, lines: &[Line]) -> TranscriptEngine {
    let mut e = engine(version);
    let mut prompt_id = Value::Null;
    for l in lines {
        match l {
            Line::Client(c) => {
                let v: Value = serde_json::from_str(c).unwrap();
                if v["method"] == "session/prompt" {
                    prompt_id = v["id"].clone();
                }
                e.apply_client_line(c);
            }
            Line::Agent(a) => {
                e.apply_agent_line(a);
            }
            Line::PromptAnswer(r) => {
                e.apply_agent_line(&json!({"jsonrpc":"2.0","id":prompt_id,"result":r}).to_string());
            }
        }
    }
    e
}

fn bridged(agent: u16, lines: &[Line]) -> TranscriptEngine {
    let client = 3 - agent;
    let mut e = engine(client);
    let mut bridge = Bridge::new(BridgeConfig {
        client_protocol: Some(client),
        agent_protocol: Some(agent),
        policy: Policy::Strict,
    });
    let mut agent_prompt_id = Value::Null;
    let deliver = |e: &mut TranscriptEngine, t: spindle_bridge::Translated, prompt: &mut Value| {
        assert!(
            t.diagnostics
                .iter()
                .all(|d| d.severity != spindle_bridge::Severity::Error),
            "representable stream rejected: {:?}",
            t.diagnostics
        );
        for l in &t.to_agent {
            let v: Value = serde_json::from_str(l).unwrap();
            if v["method"] == "session/prompt" {
                *prompt = v["id"].clone();
            }
        }
        for l in &t.to_client {
            e.apply_agent_line(l);
        }
    };
    for l in lines {
        match l {
            Line::Client(c) => {
                let c = client_line(client, c);
                e.apply_client_line(&c);
                let t = bridge.from_client(&c);
                deliver(&mut e, t, &mut agent_prompt_id);
            }
            Line::Agent(a) => {
                let t = bridge.from_agent(a);
                deliver(&mut e, t, &mut agent_prompt_id);
            }
            Line::PromptAnswer(r) => {
                let line = json!({"jsonrpc":"2.0","id":agent_prompt_id,"result":r}).to_string();
                let t = bridge.from_agent(&line);
                deliver(&mut e, t, &mut agent_prompt_id);
            }
        }
    }
    e
}

/// The version-independent content of a transcript.
fn normalize(e: &TranscriptEngine) -> Value {
    let entries: Vec<Value> = e
        .transcript()
        .entries
        .iter()
        .filter_map(|entry| match &entry.body {
            EntryBody::Message(m) => Some(json!({"kind": entry.kind.as_str(), "text": m.text()})),
            EntryBody::ToolCall(tc) => {
                let f = tc.fields();
                let content: Vec<Value> = f
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|i| i["content"]["text"].clone())
                    .collect();
                Some(json!({"kind":"tool_call","id":f.get("toolCallId"),"title":f.get("title"),
                    "status":f.get("status").cloned().unwrap_or_else(|| json!("pending")),"content":content}))
            }
            EntryBody::Plan { plan, removed } => Some(json!({"kind":"plan","entries":plan["entries"],"removed":removed})),
            _ => None,
        })
        .collect();
    let turns: Vec<Value> = e
        .turn_replies()
        .iter()
        .map(|t| json!({"reply": t.reply, "finished": t.finished, "stop": t.stop_reason}))
        .collect();
    json!({"entries": entries, "turns": turns, "stop": e.transcript().state.stop_reason})
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn bridged_v1_agent_transcript_equals_direct(turns in turns(true)) {
        let lines = script(1, &turns);
        prop_assert_eq!(normalize(&bridged(1, &lines)), normalize(&direct(1, &lines)));
    }

    #[test]
    fn bridged_v2_agent_transcript_equals_direct(turns in turns(false)) {
        let lines = script(2, &turns);
        prop_assert_eq!(normalize(&bridged(2, &lines)), normalize(&direct(2, &lines)));
    }
}

/// The comparison is not vacuous: a fixed stream yields the expected
/// normalized transcript through the bridge, and a lossy bridge would differ.
#[test]
fn normalized_transcript_of_a_fixed_stream() {
    let turns = vec![Turn {
        prompt: "hi".into(),
        steps: vec![
            Step::Chunk {
                thought: false,
                id: None,
                text: "A".into(),
            },
            Step::Tool {
                n: 0,
                status: 1,
                text: Some("out".into()),
            },
            Step::ToolChunk {
                n: 0,
                text: "more".into(),
            },
            Step::Upsert {
                thought: false,
                id: 1,
                texts: vec!["B".into(), "C".into()],
            },
            Step::Plan { statuses: vec![2] },
        ],
        stop: 1,
        repeat_idle: true,
    }];
    for version in [1u16, 2] {
        let lines = script(version, &turns);
        let n = normalize(&bridged(version, &lines));
        assert_eq!(n, normalize(&direct(version, &lines)));
        assert_eq!(n["turns"][0]["reply"], "A\n\nBC", "{n}");
        assert_eq!(n["turns"][0]["stop"], "max_tokens");
        assert_eq!(n["entries"][2]["content"], json!(["out", "more"]));
        assert_eq!(n["entries"].as_array().unwrap().len(), 5, "{n}");
    }
}
