//! Same-version peers: the bridge relays bytes unchanged.

use crate::common::Rig;
use serde_json::{Value, json};
use spindle_bridge::{Bridge, BridgeConfig, Policy, Route};

#[test]
fn same_version_lines_are_relayed_verbatim() {
    for v in [1u16, 2] {
        let mut r = Rig::new(v, v, Policy::Strict);
        r.handshake(None);
        assert_eq!(r.bridge.route(), Route::Passthrough);
        let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#;
        assert_eq!(r.bridge.from_agent(line).to_client, vec![line.to_owned()]);
        let odd = "  {\"id\":1, \"method\":\"x\"}  ";
        assert_eq!(r.bridge.from_client(odd).to_agent, vec![odd.to_owned()]);
    }
}

#[test]
fn agent_version_is_learnt_from_its_initialize_response() {
    let mut b = Bridge::new(BridgeConfig::default());
    b.from_client(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}).to_string());
    assert_eq!(b.route(), Route::Unknown);
    let t = b.from_agent(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#);
    assert_eq!(b.route(), Route::V2ClientV1Agent);
    let v: serde_json::Value = serde_json::from_str(&t.to_client[0]).unwrap();
    assert_eq!(v["result"]["protocolVersion"], 2);
    crate::common::validate(2, &v, Some("initialize"));
}

#[test]
fn rig_schema_check_rejects_invalid_lines() {
    // v1 tool_call needs a title; v2 chunks need a messageId.
    let bad_v1 = json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t"}}});
    let bad_v2 = json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}});
    assert!(std::panic::catch_unwind(|| crate::common::validate(1, &bad_v1, None)).is_err());
    assert!(std::panic::catch_unwind(|| crate::common::validate(2, &bad_v2, None)).is_err());
    assert!(std::panic::catch_unwind(|| crate::common::validate(1, &bad_v2, None)).is_ok());
}

#[test]
fn an_adopted_session_result_passes_unchanged_between_equal_versions() {
    let mut r = Rig::new(2, 2, Policy::Strict);
    r.handshake(None);
    let result = json!({"configOptions":[{"type":"select","configId":"m","name":"Mode",
        "currentValue":"a","options":[{"value":"a","name":"A"}]}],"_meta":{"k":1}});
    let (adopted, diagnostics) = r
        .bridge
        .adopt_session_result("s9", result.as_object().unwrap().clone());
    assert_eq!(Value::Object(adopted), result);
    assert!(diagnostics.is_empty());
}
