//! Params handed over alone (`apply_session_update`, what `spindle chat` and
//! the runtimes call) take the canonical scanner's path when they can, and so
//! do whole lines in the compact envelope agents write (`apply_agent_line`,
//! what `spindle serve` calls); a line in any other envelope takes the `Value`
//! path. All must give the same ops, diagnostics and transcript for every
//! update, in every shape: canonical or not, well-formed or not.

use serde_json::Value;
use spindle_engine::{Applied, Diagnostic, EngineConfig, ProtocolHint, TranscriptEngine};

/// Update params, applied in order. Each line is a `session/update` params
/// text as an agent may write it.
const STREAM: &[&str] = &[
    // Tool calls in the shape agents send most (the scanner's path).
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read src/a.rs","kind":"read","status":"in_progress","rawInput":{"path":"src/a.rs"}}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"caf\u00e9 → \"quoted\"\n"}}]}}"#,
    // Defaults for kind and status, unknown members kept in wire order, unicode and escapes.
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t2","zeta":[1,-2,{"k":true}],"title":"naïve 😀 \\ \" \t \u0001","locations":[{"path":"/w/é","line":3}]}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t2","title":"again","extra":{"nested":{"deep":[null,false]}},"rawOutput":"x"}}"#,
    // Loose whitespace between the params' and the update's tokens, members in any order.
    " { \"update\" : { \"status\" : \"pending\" , \"toolCallId\" : \"t3\" , \"sessionUpdate\" : \"tool_call\" } , \"sessionId\" : \"s\" } ",
    // Not canonical: whitespace inside a member, `\/`, `\u` escapes, floats, big numbers.
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t3","rawInput":{"a": 1}}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t3","title":"a\/b \u00e9"}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t3","rawOutput":{"ms":1.50,"n":1e2,"big":123456789012345678901}}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t\u0034","title":"escaped id"}}"#,
    // Nulls and empty arrays (three-state: v1 ignores, v2 clears), name and _meta extras.
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","kind":null,"status":null,"content":[],"rawInput":null}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t5","title":null,"kind":null,"content":[],"locations":[]}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t5","name":"Bash","_meta":{"terminal_output":{"terminal_id":"x","data":"out\n"}}}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t6","_meta":{"claudeCode":{"toolName":"Edit"}}}}"#,
    // Malformed: wrong types, missing or non-string ids, repeated keys, bad JSON.
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t7","title":7}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","content":{"type":"text"}}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","title":"no id"}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":8}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t8","title":"a","title":"b"}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t9","rawInput":{"a":1,"a":2}}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t10","title":"cut"}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t10"}} trailing"#,
    r#"{"sessionId":"s","update":null}"#,
    r#"{"sessionId":"s","update":{"toolCallId":"t11"}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":7}}"#,
    // Another session's update is not applied; no session id is this one's.
    r#"{"sessionId":"other","update":{"sessionUpdate":"tool_call","toolCallId":"t12","title":"foreign"}}"#,
    r#"{"update":{"sessionUpdate":"tool_call_update","toolCallId":"t2","status":"failed"}}"#,
    r#"{"sessionId":1,"update":{"sessionUpdate":"tool_call_update","toolCallId":"t2","status":"completed"}}"#,
    // Plans and usage (members made into a Value without the envelope's parse).
    r#"{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"Read","priority":"high","status":"completed"},{"content":"Write \"it\"","priority":"low","status":"pending"}]}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"plan","entries":{"not":"an array"}}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":1468,"size":1000000000}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":-3,"size":0,"cost":{"amount":7,"currency":"USD"}}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":null,"size":5}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":"lots"}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":2,"size":9,"_meta":null}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":0.5,"size":9}}"#,
    // Other tags through the same members path, known and unknown.
    r#"{"sessionId":"s","update":{"sessionUpdate":"session_info_update","title":"T","updatedAt":null}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"x","description":"y"}]}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"current_mode_update","currentModeId":"ask"}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"notice","severity":"warning","title":"careful"}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"_vendor_thing","v":[1,{"w":"x"}]}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"plan_update","plan":{"planId":"p","entries":[]}}}"#,
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_content_chunk","toolCallId":"t1","content":{"type":"text","text":"more"}}}"#,
    // A tool call after all that, in a turn of its own.
    r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"reused id","kind":"edit"}}"#,
];

/// Params alone carry no line number (a whole line does), and JSON errors
/// name what was parsed (params or line) and where.
fn normalize(d: &mut Diagnostic) {
    d.line = None;
    if d.code == "invalid_json" {
        d.message.clear();
    }
}

fn without_lines(mut applied: Applied) -> Applied {
    applied.diagnostics.iter_mut().for_each(normalize);
    applied
}

/// The compact envelope (the envelope scanner hands its params on).
fn line_of(params: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{params}}}"#)
}

/// An envelope with spaces (the `Value` path: the reference).
fn spaced_line_of(params: &str) -> String {
    format!(r#"{{"jsonrpc": "2.0", "method": "session/update", "params": {params}}}"#)
}

#[test]
fn params_alone_apply_exactly_as_whole_lines_do() {
    let envelopes: [fn(&str) -> String; 2] = [line_of, spaced_line_of];
    for (protocol, ops_on, line_of) in [ProtocolHint::Auto, ProtocolHint::V1, ProtocolHint::V2]
        .into_iter()
        .flat_map(|p| [true, false].map(|on| (p, on)))
        .flat_map(|(p, on)| envelopes.map(|envelope| (p, on, envelope)))
    {
        let config = EngineConfig {
            protocol,
            ..EngineConfig::default()
        };
        let mut params_path = TranscriptEngine::new(config.clone());
        let mut line_path = TranscriptEngine::new(config);
        params_path.set_render_ops(ops_on);
        line_path.set_render_ops(ops_on);
        for params in STREAM {
            let a = params_path.apply_session_update(params);
            let b = line_path.apply_agent_line(&line_of(params));
            // A line that is not JSON says so in its own words; the rest is equal.
            if serde_json::from_str::<Value>(params).is_err() {
                assert_eq!(a.ops, b.ops, "{params}");
                assert_eq!(a.diagnostics.len(), b.diagnostics.len(), "{params}");
                continue;
            }
            assert_eq!(
                format!("{:?}", without_lines(a)),
                format!("{:?}", without_lines(b)),
                "{protocol:?}: {params}"
            );
            let transcript = |e: &TranscriptEngine| {
                let mut t = e.transcript().clone();
                t.diagnostics.iter_mut().for_each(normalize);
                format!("{t:?}")
            };
            assert_eq!(
                transcript(&params_path),
                transcript(&line_path),
                "{protocol:?}: {params}"
            );
        }
        // Diagnostics were compared above (the replay gives their line numbers).
        let replay = |e: &TranscriptEngine| {
            let mut json = e.replay_json();
            json.as_object_mut().unwrap().remove("diagnostics");
            json
        };
        assert_eq!(replay(&params_path), replay(&line_path));
        // Params that are no object (the line path words this one differently).
        let applied = params_path.apply_session_update("[1]");
        assert_eq!(applied.diagnostics[0].code, "malformed_update");
    }
}

/// The scanner's tool calls store their members' text as it came: the same
/// compact JSON the `Value` path writes.
#[test]
fn a_scanned_tool_call_keeps_its_members_in_wire_order_with_defaults_last() {
    let mut e = TranscriptEngine::default();
    e.apply_session_update(STREAM[2]);
    let entry = e.transcript().entries.last().unwrap();
    let spindle_engine::EntryBody::ToolCall(tc) = &entry.body else {
        panic!("{entry:?}")
    };
    assert_eq!(
        tc.fields_json(),
        r#"{"toolCallId":"t2","zeta":[1,-2,{"k":true}],"title":"naïve 😀 \\ \" \t \u0001","locations":[{"path":"/w/é","line":3}],"kind":"other","status":"pending"}"#
    );
    e.apply_session_update(STREAM[3]);
    let entry = e.transcript().entries.last().unwrap();
    let spindle_engine::EntryBody::ToolCall(tc) = &entry.body else {
        panic!("{entry:?}")
    };
    assert_eq!(
        tc.fields_json(),
        r#"{"toolCallId":"t2","zeta":[1,-2,{"k":true}],"title":"again","locations":[{"path":"/w/é","line":3}],"kind":"other","status":"pending","extra":{"nested":{"deep":[null,false]}},"rawOutput":"x"}"#
    );
}
