//! A v2 client in front of a v1 agent. Every emitted line is schema-checked
//! by the rig.

use crate::common::{Rig, text};
use serde_json::{Value, json};
use spindle_bridge::{Policy, Route};

fn rig() -> Rig {
    let mut r = Rig::new(2, 1, Policy::Strict);
    r.handshake(None);
    assert_eq!(r.bridge.route(), Route::V2ClientV1Agent);
    r
}

fn prompt(r: &mut Rig, id: u64) -> String {
    let t = r.client(json!({"jsonrpc":"2.0","id":id,"method":"session/prompt",
        "params":{"sessionId":"s1","prompt":[text("hello")]}}));
    let fwd = crate::common::parse(&t.to_agent[0]);
    fwd["id"]
        .as_str()
        .expect("bridge-minted prompt id")
        .to_owned()
}

#[test]
fn initialize_v2_client_becomes_v1_shapes_and_back() {
    let mut r = Rig::new(2, 1, Policy::Strict);
    r.handshake(Some(json!({"spindle":{"extensions":["session_cleared"]}})));
    let init = &r.agent_log[0]["params"];
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["clientInfo"]["name"], "test-client");
    assert_eq!(init["clientCapabilities"]["fs"]["readTextFile"], false);
    assert_eq!(init["clientCapabilities"]["terminal"], false);
    let ext = init["_meta"]["spindle"]["extensions"].as_array().unwrap();
    assert!(ext.contains(&json!("agent_message_clear")));
    assert!(ext.contains(&json!("session_cleared")));
    let resp = &r.client_log[0]["result"];
    assert_eq!(resp["protocolVersion"], 2);
    assert_eq!(resp["info"]["name"], "test-agent");
    assert_eq!(
        resp["capabilities"]["session"]["prompt"]["image"],
        json!({})
    );
    assert_eq!(resp["capabilities"]["session"]["mcp"]["stdio"], json!({}));
    // session/new: the stdio server loses its v2 tag.
    assert!(
        r.agent_log[1]["params"]["mcpServers"][0]
            .get("type")
            .is_none()
    );
}

#[test]
fn initialize_without_agent_info_synthesizes_required_info() {
    let mut r = Rig::new(2, 1, Policy::Strict);
    r.client(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}));
    r.agent(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}));
    assert!(
        r.client_log[0]["result"]["info"]["name"]
            .as_str()
            .unwrap()
            .contains("spindle-bridge")
    );
}

#[test]
fn prompt_is_answered_on_acceptance_with_minted_message_id() {
    let mut r = rig();
    let from = r.client_log.len();
    prompt(&mut r, 5);
    let resp = &r.client_log[from];
    assert_eq!(resp["id"], 5);
    let mid = resp["result"]["messageId"].as_str().unwrap().to_owned();
    let ups = r.client_updates(from);
    assert_eq!(ups[0]["sessionUpdate"], "user_message");
    assert_eq!(ups[0]["messageId"], mid.as_str());
    assert_eq!(ups[0]["content"][0]["text"], "hello");
    assert_eq!(
        ups[1],
        json!({"sessionUpdate":"state_update","state":"running"})
    );
}

#[test]
fn v1_prompt_response_becomes_idle_with_stop_reason() {
    let mut r = rig();
    let agent_id = prompt(&mut r, 5);
    let from = r.client_log.len();
    r.agent(json!({"jsonrpc":"2.0","id":agent_id,"result":{"stopReason":"max_tokens"}}));
    let ups = r.client_updates(from);
    assert_eq!(
        ups,
        vec![json!({"sessionUpdate":"state_update","state":"idle","stopReason":"max_tokens"})]
    );
    assert_eq!(r.client_log.len(), from + 1, "no second prompt response");
}

/// F9 (RELIABILITY.md): a v1 agent answering the same prompt twice leaked
/// `{"id":"spindle-prompt-N",...}` (the bridge's own id, v1-shaped) to the v2
/// client.
#[test]
fn duplicate_prompt_response_is_dropped_not_leaked_with_the_bridge_id() {
    let mut r = rig();
    let agent_id = prompt(&mut r, 5);
    r.agent(json!({"jsonrpc":"2.0","id":agent_id,"result":{"stopReason":"end_turn"}}));
    let from = r.client_log.len();
    let t = r.agent(json!({"jsonrpc":"2.0","id":agent_id,"result":{"stopReason":"refusal"}}));
    assert!(t.to_client.is_empty(), "{:?}", t.to_client);
    // Responses to ids nobody sent (number and string) go the same way.
    let t = r.agent(json!({"jsonrpc":"2.0","id":9999,"result":{"stopReason":"refusal"}}));
    assert!(t.to_client.is_empty(), "{:?}", t.to_client);
    let t = r.agent(json!({"jsonrpc":"2.0","id":"who","error":{"code":-1,"message":"?"}}));
    assert!(t.to_client.is_empty(), "{:?}", t.to_client);
    assert_eq!(r.client_log.len(), from);
    assert_eq!(
        r.warnings(),
        vec![
            "unknown_response_id",
            "unknown_response_id",
            "unknown_response_id"
        ]
    );
    // The next turn is unaffected.
    let next = prompt(&mut r, 6);
    let from = r.client_log.len();
    r.agent(json!({"jsonrpc":"2.0","id":next,"result":{"stopReason":"end_turn"}}));
    assert_eq!(r.client_updates(from)[0]["stopReason"], "end_turn");
}

#[test]
fn v1_prompt_error_becomes_idle_stop_reason_error() {
    let mut r = rig();
    let agent_id = prompt(&mut r, 5);
    let from = r.client_log.len();
    r.agent(json!({"jsonrpc":"2.0","id":agent_id,"error":{"code":-32000,"message":"model down"}}));
    let ups = r.client_updates(from);
    assert_eq!(ups[0]["state"], "idle");
    assert_eq!(ups[0]["stopReason"], "error");
    assert_eq!(ups[0]["error"]["message"], "model down");
}

#[test]
fn chunks_without_message_id_get_stable_minted_ids() {
    let mut r = rig();
    prompt(&mut r, 5);
    let from = r.client_log.len();
    r.agent_update(json!({"sessionUpdate":"agent_message_chunk","content":text("a")}));
    r.agent_update(json!({"sessionUpdate":"agent_message_chunk","content":text("b")}));
    r.agent_update(json!({"sessionUpdate":"agent_thought_chunk","content":text("t")}));
    r.agent_update(json!({"sessionUpdate":"agent_message_chunk","content":text("c")}));
    let ups = r.client_updates(from);
    let ids: Vec<&str> = ups
        .iter()
        .map(|u| u["messageId"].as_str().unwrap())
        .collect();
    assert_eq!(ids[0], ids[1], "same message until the type changes");
    assert_ne!(ids[1], ids[2]);
    assert_ne!(ids[2], ids[3], "a type change ends the message");
    assert_ne!(ids[0], ids[3]);
    assert_eq!(ups[1]["content"]["text"], "b");
}

#[test]
fn chunk_with_message_id_is_relayed_verbatim() {
    let mut r = rig();
    let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","messageId":"m9","content":{"type":"text","text":"x"}}}}"#;
    let t = r.bridge.from_agent(line);
    assert_eq!(t.to_client, vec![line.to_owned()]);
}

#[test]
fn tool_call_boundary_starts_a_new_minted_message() {
    let mut r = rig();
    let from = r.client_log.len();
    r.agent_update(json!({"sessionUpdate":"agent_message_chunk","content":text("a")}));
    r.agent_update(json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read"}));
    r.agent_update(json!({"sessionUpdate":"agent_message_chunk","content":text("b")}));
    let ups = r.client_updates(from);
    assert_ne!(ups[0]["messageId"], ups[2]["messageId"]);
}

#[test]
fn tool_call_becomes_tool_call_update_and_v1_nulls_are_dropped() {
    let mut r = rig();
    let from = r.client_log.len();
    r.agent_update(json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"Edit","kind":"edit","status":"pending",
        "content":[{"type":"diff","path":"/w/a.txt","oldText":"x\n","newText":"y\n"}]}));
    r.agent_update(json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed","title":null}));
    let ups = r.client_updates(from);
    assert_eq!(ups[0]["sessionUpdate"], "tool_call_update");
    assert_eq!(ups[0]["title"], "Edit");
    let diff = &ups[0]["content"][0];
    assert_eq!(
        diff["changes"][0],
        json!({"operation":"modify","path":"/w/a.txt"})
    );
    assert!(diff["patch"]["text"].as_str().unwrap().contains("-x\n+y\n"));
    assert_eq!(
        ups[1],
        json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"})
    );
}

#[test]
fn plan_becomes_plan_update_main() {
    let mut r = rig();
    let from = r.client_log.len();
    let entries = json!([{"content":"step","priority":"high","status":"pending"}]);
    r.agent_update(json!({"sessionUpdate":"plan","entries":entries}));
    let ups = r.client_updates(from);
    assert_eq!(
        ups[0],
        json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"main","entries":entries}})
    );
}

#[test]
fn modes_become_a_mode_config_option_and_set_mode_round_trips() {
    let mut r = Rig::new(2, 1, Policy::Strict);
    r.client(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}));
    r.agent(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}));
    r.client(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}));
    r.agent(
        json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","modes":{"currentModeId":"ask",
        "availableModes":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code"}]}}}),
    );
    let opts = &r.client_log[1]["result"]["configOptions"];
    assert_eq!(opts[0]["configId"], "mode");
    assert_eq!(opts[0]["category"], "mode");
    assert_eq!(opts[0]["currentValue"], "ask");
    r.client(json!({"jsonrpc":"2.0","id":2,"method":"session/set_config_option","params":{"sessionId":"s1","configId":"mode","type":"id","value":"code"}}));
    let fwd = r.agent_log.last().unwrap();
    assert_eq!(fwd["method"], "session/set_mode");
    assert_eq!(fwd["params"]["modeId"], "code");
    r.agent(json!({"jsonrpc":"2.0","id":2,"result":{}}));
    assert_eq!(
        r.client_log.last().unwrap()["result"]["configOptions"][0]["currentValue"],
        "code"
    );
    let from = r.client_log.len();
    r.agent_update(json!({"sessionUpdate":"current_mode_update","currentModeId":"ask"}));
    let ups = r.client_updates(from);
    assert_eq!(ups[0]["sessionUpdate"], "config_option_update");
    assert_eq!(ups[0]["configOptions"][0]["currentValue"], "ask");
}

#[test]
fn resume_with_replay_from_start_becomes_session_load() {
    let mut r = rig();
    r.client(json!({"jsonrpc":"2.0","id":7,"method":"session/resume","params":{"sessionId":"s1","cwd":"/w","replayFrom":{"type":"start"}}}));
    let fwd = r.agent_log.last().unwrap().clone();
    assert_eq!(fwd["method"], "session/load");
    assert_eq!(fwd["params"]["mcpServers"], json!([]));
    let from = r.client_log.len();
    r.agent_update(json!({"sessionUpdate":"user_message_chunk","content":text("old prompt")}));
    r.agent(json!({"jsonrpc":"2.0","id":7,"result":{}}));
    let ups = r.client_updates(from);
    assert_eq!(ups[0]["sessionUpdate"], "user_message_chunk");
    assert!(ups[0]["messageId"].is_string());
    assert_eq!(
        ups[1],
        json!({"sessionUpdate":"state_update","state":"idle"})
    );
    assert_eq!(r.client_log.last().unwrap()["id"], 7);
}

#[test]
fn resume_with_unknown_replay_cursor_is_rejected_32602() {
    let mut r = rig();
    let t = r.client(json!({"jsonrpc":"2.0","id":7,"method":"session/resume","params":{"sessionId":"s1","cwd":"/w","replayFrom":{"type":"_at","messageId":"m"}}}));
    assert!(t.to_agent.is_empty());
    assert_eq!(r.client_log.last().unwrap()["error"]["code"], -32602);
    assert_eq!(r.errors(), vec!["unknown_replay_cursor"]);
}

#[test]
fn plain_resume_stays_session_resume() {
    let mut r = rig();
    r.client(json!({"jsonrpc":"2.0","id":7,"method":"session/resume","params":{"sessionId":"s1","cwd":"/w"}}));
    assert_eq!(r.agent_log.last().unwrap()["method"], "session/resume");
}

#[test]
fn permission_request_gains_title_and_tool_call_subject() {
    let mut r = rig();
    r.agent(json!({"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1",
        "toolCall":{"toolCallId":"t1","title":"Write a.txt","status":null},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}));
    let req = r.client_log.last().unwrap();
    assert_eq!(req["params"]["title"], "Write a.txt");
    assert_eq!(req["params"]["subject"]["type"], "tool_call");
    assert!(req["params"]["subject"]["toolCall"].get("status").is_none());
    let t = r.client(json!({"jsonrpc":"2.0","id":"p1","result":{"outcome":{"outcome":"selected","optionId":"ok"}}}));
    assert_eq!(
        crate::common::parse(&t.to_agent[0])["result"]["outcome"]["optionId"],
        "ok"
    );
}

#[test]
fn agent_message_clear_becomes_agent_message_with_empty_content() {
    let mut r = rig();
    let from = r.client_log.len();
    r.agent_update(json!({"sessionUpdate":"agent_message_chunk","content":text("draft")}));
    r.agent_update(json!({"sessionUpdate":"agent_message_clear"}));
    r.agent_update(
        json!({"sessionUpdate":"agent_thought_chunk","messageId":"th","content":text("hm")}),
    );
    r.agent_update(json!({"sessionUpdate":"agent_thought_clear","messageId":"th"}));
    let ups = r.client_updates(from);
    assert_eq!(ups[1]["sessionUpdate"], "agent_message");
    assert_eq!(ups[1]["messageId"], ups[0]["messageId"]);
    assert_eq!(ups[1]["content"], json!([]));
    assert_eq!(
        ups[3],
        json!({"sessionUpdate":"agent_thought","messageId":"th","content":[]})
    );
}

#[test]
fn cancel_is_forwarded_and_cancelled_stop_reason_ends_turn() {
    let mut r = rig();
    let agent_id = prompt(&mut r, 5);
    let t =
        r.client(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}));
    assert_eq!(
        crate::common::parse(&t.to_agent[0])["method"],
        "session/cancel"
    );
    let from = r.client_log.len();
    r.agent(json!({"jsonrpc":"2.0","id":agent_id,"result":{"stopReason":"cancelled"}}));
    assert_eq!(r.client_updates(from)[0]["stopReason"], "cancelled");
}

#[test]
fn background_updates_after_the_turn_still_flow() {
    let mut r = rig();
    let agent_id = prompt(&mut r, 5);
    r.agent(json!({"jsonrpc":"2.0","id":agent_id,"result":{"stopReason":"end_turn"}}));
    let from = r.client_log.len();
    r.agent_update(json!({"sessionUpdate":"agent_message_chunk","content":text("later")}));
    assert_eq!(r.client_updates(from)[0]["content"]["text"], "later");
}

#[test]
fn commands_gain_type_command_and_text_input() {
    let mut r = rig();
    let from = r.client_log.len();
    r.agent_update(json!({"sessionUpdate":"available_commands_update","availableCommands":[{"name":"web","description":"search","input":{"hint":"q"}}]}));
    let c = &r.client_updates(from)[0]["availableCommands"][0];
    assert_eq!(c["type"], "command");
    assert_eq!(c["input"], json!({"type":"text","hint":"q"}));
}

#[test]
fn v1_agent_fs_request_is_refused_with_method_not_found() {
    let mut r = rig();
    let t = r.agent(json!({"jsonrpc":"2.0","id":9,"method":"fs/read_text_file","params":{"sessionId":"s1","path":"/a"}}));
    assert!(t.to_client.is_empty());
    assert_eq!(
        crate::common::parse(&t.to_agent[0])["error"]["code"],
        -32601
    );
}

#[test]
fn agent_exit_fails_running_v2_turns_with_idle_error() {
    let mut r = rig();
    prompt(&mut r, 5);
    let lines = r.bridge.fail_pending("agent exited");
    let idle = crate::common::parse(lines.last().unwrap());
    assert_eq!(idle["params"]["update"]["stopReason"], "error");
    crate::common::validate(2, &idle, None);
}

#[test]
fn malformed_agent_line_is_a_diagnostic_not_a_panic() {
    let mut r = rig();
    let t = r.bridge.from_agent("{not json");
    assert_eq!(t.diagnostics[0].code, "malformed_agent_line");
    let t = r
        .bridge
        .from_agent(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":1}}"#);
    assert_eq!(t.diagnostics[0].code, "malformed_update");
}

#[test]
fn chunk_with_null_or_numeric_message_id_gets_a_minted_string_id() {
    let mut r = rig();
    let from = r.client_log.len();
    r.agent_update(
        json!({"sessionUpdate":"agent_message_chunk","messageId":null,"content":text("a")}),
    );
    r.agent_update(
        json!({"sessionUpdate":"agent_message_chunk","messageId":5,"content":text("b")}),
    );
    let ups = r.client_updates(from);
    assert!(ups[0]["messageId"].is_string());
    assert_eq!(ups[0]["messageId"], ups[1]["messageId"]);
}

#[test]
fn requests_pipelined_behind_initialize_wait_for_its_answer_and_are_translated() {
    let mut r = Rig::new(2, 1, Policy::Strict);
    r.client(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}));
    // The client does not wait for the answer: session/new follows at once.
    let held = r.client(
        json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w",
        "mcpServers":[{"type":"stdio","name":"m","command":"/bin/m","args":[],"env":[]}]}}),
    );
    assert!(held.to_agent.is_empty() && held.to_client.is_empty());
    assert_eq!(r.bridge.pending_client_requests(), vec!["0", "1"]);
    assert_eq!(r.agent_log.len(), 1);
    // The answer releases it, translated for the v1 agent (the stdio server loses its v2 tag).
    let t = r.agent(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}));
    assert_eq!(t.to_client.len(), 1);
    assert_eq!(r.agent_log[1]["method"], "session/new");
    assert!(
        r.agent_log[1]["params"]["mcpServers"][0]
            .get("type")
            .is_none()
    );
    // ... and its response is translated too: v1 modes become a v2 config option.
    r.agent(
        json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","modes":{"currentModeId":"ask",
        "availableModes":[{"id":"ask","name":"Ask"}]}}}),
    );
    let result = &r.client_log.last().unwrap()["result"];
    assert_eq!(result["configOptions"][0]["configId"], "mode");
    assert!(result.get("modes").is_none(), "{result}");
}

#[test]
fn requests_held_behind_initialize_are_failed_when_the_agent_dies() {
    let mut r = Rig::new(2, 1, Policy::Strict);
    r.client(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}));
    r.client(json!({"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}));
    let lines = r.bridge.fail_pending("agent exited");
    let mut failed: Vec<Value> = lines
        .iter()
        .map(|l| crate::common::parse(l)["id"].clone())
        .collect();
    failed.sort_by_key(|id| id.as_u64());
    assert_eq!(failed, vec![json!(0), json!(7)]);
    assert!(r.bridge.pending_client_requests().is_empty());
    // Nothing held is released later.
    let t = r.agent(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}));
    assert!(t.to_agent.is_empty(), "{:?}", t.to_agent);
}

#[test]
fn a_flood_before_initialize_is_answered_is_relayed_past_the_hold_limit() {
    let mut r = Rig::new(2, 1, Policy::Strict);
    r.client(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"c","version":"1"}}}));
    let big = "x".repeat(1 << 20);
    let note = json!({"jsonrpc":"2.0","method":"_spindle/note","params":{"text":big}}).to_string();
    let mut relayed = 0;
    let mut warned = 0;
    for _ in 0..20 {
        let t = r.bridge.from_client(&note);
        relayed += t.to_agent.len();
        warned += t
            .diagnostics
            .iter()
            .filter(|d| d.code == "held_limit")
            .count();
    }
    // 16 MiB of ~1 MiB lines are held; the rest pass at once with a warning each.
    assert_eq!(relayed, 5);
    assert_eq!(warned, 5);
    let t = r
        .bridge
        .from_agent(r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}"#);
    assert_eq!(t.to_agent.len(), 15);
}

#[test]
fn an_adopted_session_result_shows_modes_as_the_mode_option_and_set_mode_round_trips() {
    // A gateway opened session s9 with the agent itself; a v2 client joins it later.
    let mut r = rig();
    let (result, diagnostics) = r.bridge.adopt_session_result(
        "s9",
        json!({"modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},
               {"id":"code","name":"Code","description":"Writes code"}]},
               "configOptions":[{"id":"model","name":"Model","type":"select","currentValue":"m1",
               "options":[{"value":"m1","name":"M1"}]}]})
        .as_object()
        .unwrap()
        .clone(),
    );
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let answer = json!({"jsonrpc":"2.0","id":5,"result":{"sessionId":"s9","configOptions":result["configOptions"]}});
    crate::common::validate(2, &answer, Some("session/new"));
    assert!(result.get("modes").is_none(), "v2 has no modes: {result:?}");
    let options = result["configOptions"].as_array().unwrap();
    assert_eq!(options[0]["configId"], "model");
    assert_eq!(options[1]["configId"], "mode");
    assert_eq!(options[1]["currentValue"], "ask");
    assert_eq!(options[1]["options"][1]["description"], "Writes code");

    // The bridge knows the mode option now: setting it is a set_mode, and the agent's later
    // current_mode_update changes it.
    r.client(
        json!({"jsonrpc":"2.0","id":6,"method":"session/set_config_option",
        "params":{"sessionId":"s9","configId":"mode","type":"id","value":"code"}}),
    );
    let sent = r.agent_log.last().unwrap();
    assert_eq!(sent["method"], "session/set_mode");
    assert_eq!(sent["params"]["modeId"], "code");
    r.agent(json!({"jsonrpc":"2.0","id":6,"result":{}}));
    let answered = &r.client_log.last().unwrap()["result"]["configOptions"];
    assert_eq!(answered[1]["currentValue"], "code");
    let from = r.client_log.len();
    r.agent(
        json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s9",
        "update":{"sessionUpdate":"current_mode_update","currentModeId":"ask"}}}),
    );
    let updates = r.client_updates(from);
    assert_eq!(updates[0]["sessionUpdate"], "config_option_update");
    assert_eq!(updates[0]["configOptions"][1]["currentValue"], "ask");
}
