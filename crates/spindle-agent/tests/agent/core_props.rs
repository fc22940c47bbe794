//! Properties of the sans-I/O core: any input sequence leaves it alive and
//! emitting valid JSON lines, and the same input gives the same bytes.

use proptest::prelude::*;
use spindle_agent::{AgentConfig, AgentCore, Next};

const LINES: [&str; 22] = [
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"p","version":"0"}}}"#,
    r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}"#,
    r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"hi"}]}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"/scenario tools"}]}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"/scenario stall"}]}}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"/clear"}]}}"#,
    r#"{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"text","text":"/stream 50 refine"}]}}"#,
    r#"{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"sess_2","prompt":[{"type":"text","text":"/scenario refine"}]}}"#,
    r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess_1"}}"#,
    r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}"#,
    r#"{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}}"#,
    r#"{"jsonrpc":"2.0","id":0,"error":{"code":-1,"message":"no"}}"#,
    r#"{"jsonrpc":"2.0","id":8,"method":"session/close","params":{"sessionId":"sess_1"}}"#,
    r#"{"jsonrpc":"2.0","id":9,"method":"session/set_mode","params":{"sessionId":"sess_1","modeId":"plan"}}"#,
    r#"{"jsonrpc":"2.0","id":10,"method":"session/resume","params":{"sessionId":"sess_1","cwd":"/"}}"#,
    r#"[{"jsonrpc":"2.0","id":11,"method":"session/new","params":{"cwd":"/"}},{"jsonrpc":"2.0","method":"x"}]"#,
    r#"{"jsonrpc":"2.0","id":12,"method":"session/prompt","params":{"sessionId":"sess_1","prompt":[{"type":"_weird"},{"type":"text"}]}}"#,
    r#"{"jsonrpc":"2.0","id":null,"result":null}"#,
    r#"{"jsonrpc":"1.0","id":13,"method":"session/new"}"#,
    "[]",
    "{\"unterminated",
];

fn run(lines: &[String]) -> Vec<u8> {
    let mut core = AgentCore::new(AgentConfig::default());
    let mut out = Vec::new();
    for line in lines {
        core.handle_line(line);
        for _ in 0..10_000 {
            let next = core.advance(0);
            out.extend(core.take_output());
            if next != Next::Ready {
                break;
            }
        }
    }
    core.handle_eof();
    out.extend(core.take_output());
    out
}

fn line_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0..LINES.len()).prop_map(|i| LINES[i].to_owned()),
        1 => ".{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_input_gives_json_lines(lines in proptest::collection::vec(line_strategy(), 0..24)) {
        let out = run(&lines);
        prop_assert!(out.is_empty() || out.ends_with(b"\n"));
        for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let v: serde_json::Value = serde_json::from_slice(line).expect("JSON line");
            prop_assert!(v.is_object() || v.is_array());
        }
        // Deterministic: the same input gives the same bytes.
        prop_assert_eq!(run(&lines), out);
    }
}
