//! A v1 client in front of a v2 agent. Every emitted line is schema-checked
//! by the rig.

use crate::common::{Rig, text};
use serde_json::{Value, json};
use spindle_bridge::{Policy, Route, Severity};

fn rig_with(policy: Policy, meta: Option<Value>) -> Rig {
    let mut r = Rig::new(1, 2, policy);
    r.handshake(meta);
    assert_eq!(r.bridge.route(), Route::V1ClientV2Agent);
    r
}

fn rig() -> Rig {
    rig_with(Policy::Strict, None)
}

/// Sends a prompt (id 5) and the agent's acceptance with messageId `u1`.
fn accepted_prompt(r: &mut Rig) {
    let t = r.client(json!({"jsonrpc":"2.0","id":5,"method":"session/prompt",
        "params":{"sessionId":"s1","prompt":[text("hello")]}}));
    assert_eq!(t.to_agent.len(), 1);
    let t = r.agent(json!({"jsonrpc":"2.0","id":5,"result":{"messageId":"u1"}}));
    assert!(t.to_client.is_empty(), "acceptance is not the v1 answer");
}

fn prompt_answers(r: &Rig) -> Vec<Value> {
    r.client_log
        .iter()
        .filter(|l| l["id"] == 5 && l.get("method").is_none())
        .cloned()
        .collect()
}

fn idle(stop: &str) -> Value {
    json!({"sessionUpdate":"state_update","state":"idle","stopReason":stop})
}

#[test]
fn initialize_v1_client_becomes_v2_shapes_and_back() {
    let r = rig();
    let init = &r.agent_log[0]["params"];
    assert_eq!(init["protocolVersion"], 2);
    assert_eq!(init["info"]["name"], "test-client");
    assert!(init.get("clientCapabilities").is_none());
    let resp = &r.client_log[0]["result"];
    assert_eq!(resp["protocolVersion"], 1);
    assert_eq!(resp["agentInfo"]["name"], "test-agent");
    assert_eq!(resp["agentCapabilities"]["loadSession"], true);
    assert_eq!(
        resp["agentCapabilities"]["promptCapabilities"]["image"],
        true
    );
    assert_eq!(resp["agentCapabilities"]["mcpCapabilities"]["http"], true);
    assert_eq!(
        resp["agentCapabilities"]["sessionCapabilities"]["resume"],
        json!({})
    );
    assert_eq!(r.agent_log[1]["params"]["mcpServers"][0]["type"], "stdio");
}

#[test]
fn v1_prompt_held_open_until_idle_with_stop_reason() {
    let mut r = rig();
    accepted_prompt(&mut r);
    r.agent_update(json!({"sessionUpdate":"state_update","state":"running"}));
    r.agent_update(
        json!({"sessionUpdate":"agent_message_chunk","messageId":"a1","content":text("hi")}),
    );
    r.agent_update(json!({"sessionUpdate":"state_update","state":"requires_action"}));
    r.agent_update(json!({"sessionUpdate":"state_update","state":"idle"}));
    assert!(
        prompt_answers(&r).is_empty(),
        "idle without stopReason ends nothing"
    );
    r.agent_update(idle("end_turn"));
    assert_eq!(
        prompt_answers(&r),
        vec![json!({"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}})]
    );
}

/// F9, the other direction: a second acceptance of a held v1 prompt was
/// relayed to the v1 client as its prompt's answer (`{"messageId":...}`, no
/// stopReason), ending the turn early.
#[test]
fn duplicate_prompt_response_is_dropped_and_the_prompt_stays_held() {
    let mut r = rig();
    accepted_prompt(&mut r);
    let t = r.agent(json!({"jsonrpc":"2.0","id":5,"result":{"messageId":"u1"}}));
    assert!(t.to_client.is_empty(), "{:?}", t.to_client);
    let t = r.agent(json!({"jsonrpc":"2.0","id":"spindle-x","result":{}}));
    assert!(t.to_client.is_empty(), "{:?}", t.to_client);
    assert!(prompt_answers(&r).is_empty(), "the prompt is still held");
    assert_eq!(
        r.warnings(),
        vec!["unknown_response_id", "unknown_response_id"]
    );
    r.agent_update(idle("end_turn"));
    assert_eq!(
        prompt_answers(&r),
        vec![json!({"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}})]
    );
}

#[test]
fn repeated_idle_snapshot_is_not_counted_twice() {
    let mut r = rig();
    accepted_prompt(&mut r);
    r.agent_update(idle("end_turn"));
    r.agent_update(idle("end_turn"));
    assert_eq!(prompt_answers(&r).len(), 1);
    // A second prompt is not ended by a stale snapshot before it is accepted.
    r.client(json!({"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":"s1","prompt":[text("again")]}}));
    r.agent_update(idle("end_turn"));
    assert!(r.client_log.iter().all(|l| l["id"] != 6));
    r.agent(json!({"jsonrpc":"2.0","id":6,"result":{"messageId":"u2"}}));
    r.agent_update(idle("end_turn"));
    assert_eq!(r.client_log.iter().filter(|l| l["id"] == 6).count(), 1);
}

#[test]
fn running_and_requires_action_are_dropped() {
    let mut r = rig();
    accepted_prompt(&mut r);
    let from = r.client_log.len();
    r.agent_update(json!({"sessionUpdate":"state_update","state":"running"}));
    r.agent_update(json!({"sessionUpdate":"state_update","state":"requires_action"}));
    r.agent_update(json!({"sessionUpdate":"state_update","state":"_paused_for_hook"}));
    assert_eq!(r.client_log.len(), from);
    // `running` is used (it lets the held prompt end); the others are reported.
    assert!(r.errors().is_empty() && r.warnings().is_empty());
    assert_eq!(
        r.codes(Severity::Info),
        ["state_not_representable", "state_not_representable"]
    );
}

#[test]
fn user_message_echo_is_suppressed() {
    let mut r = rig();
    accepted_prompt(&mut r);
    let from = r.client_log.len();
    r.agent_update(
        json!({"sessionUpdate":"user_message","messageId":"u1","content":[text("hello")]}),
    );
    assert_eq!(r.client_log.len(), from);
    // A user message from another client is shown.
    r.agent_update(
        json!({"sessionUpdate":"user_message","messageId":"u7","content":[text("other")]}),
    );
    let ups = r.client_updates(from);
    assert_eq!(
        ups,
        vec![
            json!({"sessionUpdate":"user_message_chunk","messageId":"u7","content":text("other")})
        ]
    );
}

#[test]
fn user_message_echo_before_acceptance_is_suppressed() {
    let mut r = rig();
    r.client(json!({"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s1","prompt":[text("hello")]}}));
    let from = r.client_log.len();
    r.agent_update(
        json!({"sessionUpdate":"user_message_chunk","messageId":"u1","content":text("hello")}),
    );
    r.agent(json!({"jsonrpc":"2.0","id":5,"result":{"messageId":"u1"}}));
    assert_eq!(r.client_log.len(), from);
}

#[test]
fn background_updates_flow_while_idle() {
    let mut r = rig();
    let from = r.client_log.len();
    r.agent_update(
        json!({"sessionUpdate":"agent_message_chunk","messageId":"bg","content":text("tick")}),
    );
    r.agent_update(idle("end_turn"));
    let ups = r.client_updates(from);
    assert_eq!(ups.len(), 1, "the chunk flows, the idle has no v1 frame");
    assert_eq!(ups[0]["content"]["text"], "tick");
}

#[test]
fn upsert_fans_out_into_chunks_for_a_new_message() {
    let mut r = rig();
    let from = r.client_log.len();
    r.agent_update(
        json!({"sessionUpdate":"agent_message","messageId":"a1","content":[text("A"),text("B")]}),
    );
    r.agent_update(
        json!({"sessionUpdate":"agent_message_chunk","messageId":"a1","content":text("C")}),
    );
    let ups = r.client_updates(from);
    let texts: Vec<&str> = ups
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["A", "B", "C"]);
    assert!(
        ups.iter()
            .all(|u| u["sessionUpdate"] == "agent_message_chunk" && u["messageId"] == "a1")
    );
    assert!(r.diagnostics.is_empty());
}

#[test]
fn strict_replacement_after_chunks_is_rejected_and_fails_the_prompt() {
    let mut r = rig();
    accepted_prompt(&mut r);
    r.agent_update(
        json!({"sessionUpdate":"agent_message_chunk","messageId":"a1","content":text("A")}),
    );
    let t = r.agent_update(
        json!({"sessionUpdate":"agent_message","messageId":"a1","content":[text("C")]}),
    );
    assert!(t.to_client.is_empty());
    assert_eq!(r.errors(), vec!["replacement_after_chunks"]);
    r.agent_update(idle("end_turn"));
    let answer = &prompt_answers(&r)[0];
    assert_eq!(answer["error"]["code"], -32603);
    assert_eq!(answer["error"]["data"]["stopReason"], "end_turn");
}

#[test]
fn replacement_uses_agent_message_clear_when_negotiated() {
    let meta = json!({"spindle":{"extensions":["agent_message_clear"]}});
    let mut r = rig_with(Policy::Degrade, Some(meta));
    let from = r.client_log.len();
    r.agent_update(
        json!({"sessionUpdate":"agent_message_chunk","messageId":"a1","content":text("A")}),
    );
    r.agent_update(json!({"sessionUpdate":"agent_message","messageId":"a1","content":[text("C")]}));
    let ups = r.client_updates(from);
    assert_eq!(
        ups[1],
        json!({"sessionUpdate":"agent_message_clear","messageId":"a1"})
    );
    assert_eq!(ups[2]["content"]["text"], "C");
    assert!(r.warnings().is_empty() && r.errors().is_empty());
}

#[test]
fn strict_replacement_and_clear_are_exact_with_the_clear_extension() {
    let meta = json!({"spindle":{"extensions":["agent_message_clear","agent_thought_clear"]}});
    let mut r = rig_with(Policy::Strict, Some(meta));
    accepted_prompt(&mut r);
    let from = r.client_log.len();
    r.agent_update(
        json!({"sessionUpdate":"agent_thought_chunk","messageId":"t1","content":text("hm")}),
    );
    r.agent_update(json!({"sessionUpdate":"agent_thought","messageId":"t1","content":[]}));
    r.agent_update(
        json!({"sessionUpdate":"agent_message_chunk","messageId":"a1","content":text("A")}),
    );
    r.agent_update(json!({"sessionUpdate":"agent_message","messageId":"a1","content":[text("C")]}));
    r.agent_update(idle("end_turn"));
    let ups = r.client_updates(from);
    assert_eq!(
        ups[1],
        json!({"sessionUpdate":"agent_thought_clear","messageId":"t1"})
    );
    assert_eq!(
        ups[3],
        json!({"sessionUpdate":"agent_message_clear","messageId":"a1"})
    );
    assert_eq!(ups[4]["content"]["text"], "C");
    assert!(r.errors().is_empty());
    assert_eq!(prompt_answers(&r)[0]["result"]["stopReason"], "end_turn");
}

#[test]
fn degrade_replacement_without_extension_is_a_marked_repush() {
    let mut r = rig_with(Policy::Degrade, None);
    let from = r.client_log.len();
    r.agent_update(
        json!({"sessionUpdate":"agent_message_chunk","messageId":"a1","content":text("A")}),
    );
    r.agent_update(json!({"sessionUpdate":"agent_message","messageId":"a1","content":[text("C")]}));
    let ups = r.client_updates(from);
    assert_eq!(ups[1]["content"]["text"], "\n\n---\n\n");
    assert_eq!(ups[1]["_meta"]["spindle"]["repush"], true);
    assert_eq!(ups[2]["content"]["text"], "C");
}

#[test]
fn content_null_or_empty_is_rejected_in_strict() {
    let mut r = rig();
    r.agent_update(
        json!({"sessionUpdate":"agent_message_chunk","messageId":"a1","content":text("A")}),
    );
    let t1 = r.agent_update(json!({"sessionUpdate":"agent_message","messageId":"a1","content":[]}));
    let t2 =
        r.agent_update(json!({"sessionUpdate":"agent_thought","messageId":"t1","content":null}));
    assert!(t1.to_client.is_empty() && t2.to_client.is_empty());
    assert_eq!(r.errors(), vec!["content_cleared", "content_cleared"]);
}

#[test]
fn meta_null_and_patch_only_updates_are_rejected_in_strict() {
    let mut r = rig();
    r.agent_update(json!({"sessionUpdate":"agent_message","messageId":"a1","content":[text("A")],"_meta":null}));
    r.agent_update(json!({"sessionUpdate":"agent_message","messageId":"a1","_meta":{"k":1}}));
    assert_eq!(r.errors(), vec!["meta_null", "patch_only_update"]);
    // The content of the first still reached the client.
    assert_eq!(
        r.client_log.last().unwrap()["params"]["update"]["content"]["text"],
        "A"
    );
}

#[test]
fn tool_call_upsert_becomes_tool_call_with_title_then_update_with_accumulated_content() {
    let mut r = rig();
    let from = r.client_log.len();
    r.agent_update(json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","name":"grep","kind":"search","status":"in_progress"}));
    r.agent_update(json!({"sessionUpdate":"tool_call_content_chunk","toolCallId":"t1","content":{"type":"content","content":text("a")}}));
    r.agent_update(json!({"sessionUpdate":"tool_call_content_chunk","toolCallId":"t1","content":{"type":"content","content":text("b")}}));
    r.agent_update(
        json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}),
    );
    let ups = r.client_updates(from);
    assert_eq!(ups[0]["sessionUpdate"], "tool_call");
    assert_eq!(ups[0]["title"], "grep");
    assert_eq!(ups[1]["sessionUpdate"], "tool_call_update");
    assert_eq!(
        ups[2]["content"].as_array().unwrap().len(),
        2,
        "accumulated"
    );
    assert_eq!(ups[2]["content"][1]["content"]["text"], "b");
    assert_eq!(
        ups[3],
        json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"})
    );
}

#[test]
fn tool_call_null_clears_cancelled_status_and_v2_diff_in_strict() {
    let mut r = rig();
    r.agent_update(json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"Edit"}));
    r.agent_update(json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","title":null,"status":"cancelled",
        "content":[{"type":"diff","changes":[{"operation":"modify","path":"/w/a"}],"patch":{"format":"git_patch","text":"@@"}}]}));
    assert_eq!(r.errors(), vec!["scalar_clear", "tool_status", "v2_diff"]);
    let last = &r.client_log.last().unwrap()["params"]["update"];
    assert!(last.get("title").is_none() && last.get("status").is_none());
    assert_eq!(last["content"], json!([]));
}

#[test]
fn tool_call_degrade_maps_cancelled_to_failed_and_diff_to_patch_text() {
    let mut r = rig_with(Policy::Degrade, None);
    r.agent_update(json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"Edit"}));
    r.agent_update(json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"cancelled",
        "content":[{"type":"diff","changes":[{"operation":"modify","path":"/w/a"}],"patch":{"format":"git_patch","text":"@@ -1 +1 @@"}}]}));
    let last = &r.client_log.last().unwrap()["params"]["update"];
    assert_eq!(last["status"], "failed");
    assert_eq!(last["content"][0]["content"]["text"], "@@ -1 +1 @@");
}

#[test]
fn plan_update_becomes_plan_and_plans_collapse() {
    let mut r = rig();
    let from = r.client_log.len();
    let e = |c: &str| json!({"content":c,"priority":"low","status":"pending"});
    r.agent_update(json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p1","entries":[e("a")]}}));
    r.agent_update(json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p2","entries":[e("b")]}}));
    r.agent_update(json!({"sessionUpdate":"plan_removed","planId":"p1"}));
    let ups = r.client_updates(from);
    assert_eq!(ups[0], json!({"sessionUpdate":"plan","entries":[e("a")]}));
    assert_eq!(ups[1]["entries"], json!([e("a"), e("b")]));
    assert_eq!(ups[2]["entries"], json!([e("b")]));
}

#[test]
fn plan_entry_cancelled_is_rejected_in_strict() {
    let mut r = rig();
    r.agent_update(
        json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p1","entries":[
        {"content":"x","priority":"low","status":"cancelled"}]}}),
    );
    assert_eq!(r.errors(), vec!["plan_status"]);
    assert_eq!(
        r.client_log.last().unwrap()["params"]["update"]["entries"],
        json!([])
    );
}

#[test]
fn config_options_become_modes_and_set_mode_becomes_set_config_option() {
    let mut r = Rig::new(1, 2, Policy::Strict);
    r.client(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}));
    r.agent(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"a","version":"1"},"capabilities":{"session":{}}}}));
    r.client(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}));
    let opt = |v: &str| {
        json!({"type":"select","configId":"m","name":"Mode","category":"mode","currentValue":v,
        "options":[{"value":"ask","name":"Ask"},{"value":"code","name":"Code"}]})
    };
    r.agent(
        json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","configOptions":[opt("ask")]}}),
    );
    let res = &r.client_log[1]["result"];
    assert_eq!(res["modes"]["currentModeId"], "ask");
    assert_eq!(res["modes"]["availableModes"][1]["id"], "code");
    assert_eq!(res["configOptions"][0]["id"], "m");
    r.client(json!({"jsonrpc":"2.0","id":2,"method":"session/set_mode","params":{"sessionId":"s1","modeId":"code"}}));
    let fwd = r.agent_log.last().unwrap();
    assert_eq!(fwd["method"], "session/set_config_option");
    assert_eq!(
        fwd["params"],
        json!({"sessionId":"s1","configId":"m","type":"id","value":"code"})
    );
    r.agent(json!({"jsonrpc":"2.0","id":2,"result":{"configOptions":[opt("code")]}}));
    assert_eq!(r.client_log.last().unwrap()["result"], json!({}));
    let from = r.client_log.len();
    r.agent_update(json!({"sessionUpdate":"config_option_update","configOptions":[opt("ask")]}));
    let ups = r.client_updates(from);
    assert_eq!(ups[0]["configOptions"][0]["id"], "m");
    assert_eq!(
        ups[1],
        json!({"sessionUpdate":"current_mode_update","currentModeId":"ask"})
    );
}

#[test]
fn session_load_becomes_resume_with_replay_from_start() {
    let mut r = rig();
    r.client(json!({"jsonrpc":"2.0","id":8,"method":"session/load","params":{"sessionId":"s1","cwd":"/w","mcpServers":[]}}));
    let fwd = r.agent_log.last().unwrap();
    assert_eq!(fwd["method"], "session/resume");
    assert_eq!(fwd["params"]["replayFrom"], json!({"type":"start"}));
    let from = r.client_log.len();
    r.agent_update(
        json!({"sessionUpdate":"user_message","messageId":"u0","content":[text("old")]}),
    );
    r.agent_update(
        json!({"sessionUpdate":"agent_message","messageId":"a0","content":[text("reply")]}),
    );
    r.agent_update(idle("end_turn"));
    r.agent(json!({"jsonrpc":"2.0","id":8,"result":{}}));
    let ups = r.client_updates(from);
    assert_eq!(ups.len(), 2, "replay converted, the state snapshot dropped");
    assert_eq!(ups[0]["sessionUpdate"], "user_message_chunk");
    assert_eq!(ups[1]["sessionUpdate"], "agent_message_chunk");
    assert_eq!(r.client_log.last().unwrap()["id"], 8);
}

#[test]
fn permission_request_v2_becomes_v1_tool_call() {
    let mut r = rig();
    r.agent(json!({"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"s1",
        "title":"Run tests?","subject":{"type":"tool_call","toolCall":{"toolCallId":"t1"}},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}));
    let req = r.client_log.last().unwrap();
    assert_eq!(
        req["params"]["toolCall"],
        json!({"toolCallId":"t1","title":"Run tests?"})
    );
    assert!(req["params"].get("title").is_none());
}

#[test]
fn permission_command_subject_is_refused_in_strict_and_synthesized_in_degrade() {
    let params = json!({"sessionId":"s1","title":"Run ls?","subject":{"type":"command","command":"ls","cwd":"/w"},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]});
    let mut r = rig();
    let t = r.agent(
        json!({"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":params}),
    );
    assert!(t.to_client.is_empty());
    assert_eq!(
        crate::common::parse(&t.to_agent[0])["error"]["code"],
        -32603
    );
    let mut r = rig_with(Policy::Degrade, None);
    r.agent(
        json!({"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":params}),
    );
    let tc = &r.client_log.last().unwrap()["params"]["toolCall"];
    assert_eq!(tc["title"], "Run ls?");
    assert_eq!(tc["rawInput"]["command"], "ls");
}

#[test]
fn stop_reason_error_becomes_json_rpc_error() {
    let mut r = rig_with(Policy::Degrade, None);
    accepted_prompt(&mut r);
    r.agent_update(json!({"sessionUpdate":"state_update","state":"idle","stopReason":"error","error":{"code":-32000,"message":"boom"}}));
    let a = &prompt_answers(&r)[0];
    assert_eq!(a["error"], json!({"code":-32000,"message":"boom"}));
}

#[test]
fn unknown_stop_reason_strict_errors_degrade_ends_turn() {
    let mut r = rig();
    accepted_prompt(&mut r);
    r.agent_update(idle("_budget"));
    assert_eq!(prompt_answers(&r)[0]["error"]["code"], -32603);
    let mut r = rig_with(Policy::Degrade, None);
    accepted_prompt(&mut r);
    r.agent_update(idle("_budget"));
    assert_eq!(prompt_answers(&r)[0]["result"]["stopReason"], "end_turn");
}

#[test]
fn prompt_rejected_by_agent_error_is_relayed() {
    let mut r = rig();
    r.client(json!({"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s1","prompt":[text("x")]}}));
    r.agent(json!({"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"bad"}}));
    assert_eq!(prompt_answers(&r)[0]["error"]["code"], -32602);
}

#[test]
fn unknown_underscore_update_and_terminal_updates_rejected_in_strict() {
    let mut r = rig();
    r.agent_update(json!({"sessionUpdate":"_vendor_thing","x":1}));
    r.agent_update(json!({"sessionUpdate":"terminal_update","terminalId":"term1","command":"ls"}));
    assert_eq!(r.errors(), vec!["no_v1_form", "no_v1_form"]);
    let mut r = rig_with(Policy::Degrade, None);
    let t = r.agent_update(json!({"sessionUpdate":"_vendor_thing","x":1}));
    assert!(t.to_client.is_empty());
    assert_eq!(r.warnings(), vec!["no_v1_form"]);
}

#[test]
fn unknown_content_block_rejected_in_strict_placeholder_in_degrade() {
    let mut r = rig();
    let t = r.agent_update(json!({"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"_sketch","d":1}}));
    assert!(t.to_client.is_empty());
    assert_eq!(r.errors(), vec!["unknown_content_block"]);
    let mut r = rig_with(Policy::Degrade, None);
    r.agent_update(json!({"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"_sketch","d":1}}));
    let u = &r.client_log.last().unwrap()["params"]["update"];
    assert!(u["content"]["text"].as_str().unwrap().contains("_sketch"));
}

#[test]
fn commands_lose_type_markers_and_cost_null_is_rejected() {
    let mut r = rig();
    let from = r.client_log.len();
    r.agent_update(
        json!({"sessionUpdate":"available_commands_update","availableCommands":[
        {"type":"command","name":"web","description":"d","input":{"type":"text","hint":"q"}}]}),
    );
    r.agent_update(json!({"sessionUpdate":"usage_update","used":1,"size":10,"cost":null}));
    let ups = r.client_updates(from);
    assert_eq!(
        ups[0]["availableCommands"][0],
        json!({"name":"web","description":"d","input":{"hint":"q"}})
    );
    assert!(ups[1].get("cost").is_none());
    assert_eq!(r.errors(), vec!["cost_cleared"]);
}

#[test]
fn notices_and_compaction_pass_only_with_client_capability() {
    let mut r = rig();
    r.agent_update(json!({"sessionUpdate":"notice","severity":"info","title":"hi"}));
    assert_eq!(r.errors(), vec!["no_v1_form"]);
    let mut r = Rig::new(1, 2, Policy::Strict);
    r.client(
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,
        "clientCapabilities":{"session":{"compaction":{}}}}}),
    );
    r.agent(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"a","version":"1"}}}));
    let t = r.agent_update(
        json!({"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress"}),
    );
    assert_eq!(t.to_client.len(), 1);
}

#[test]
fn session_cleared_only_to_opted_in_clients() {
    let mut r = rig();
    let t = r.agent_update(json!({"sessionUpdate":"session_cleared"}));
    assert!(t.to_client.is_empty());
    let mut r = rig_with(
        Policy::Strict,
        Some(json!({"spindle":{"extensions":["session_cleared"]}})),
    );
    let t = r.agent_update(json!({"sessionUpdate":"session_cleared"}));
    assert_eq!(t.to_client.len(), 1);
}

#[test]
fn replay_complete_is_not_sent_to_a_v1_client() {
    let mut r = rig();
    let t = r.agent_update(json!({"sessionUpdate":"replay_complete"}));
    assert!(t.to_client.is_empty());
    assert_eq!(r.codes(Severity::Info), vec!["replay_marker_dropped"]);
    assert!(r.codes(Severity::Error).is_empty());
}

#[test]
fn agent_exit_fails_the_held_v1_prompt() {
    let mut r = rig();
    accepted_prompt(&mut r);
    let lines = r.bridge.fail_pending("agent exited");
    assert_eq!(lines.len(), 1);
    let v = crate::common::parse(&lines[0]);
    assert_eq!(v["id"], 5);
    assert_eq!(v["error"]["message"], "agent exited");
}

#[test]
fn degrade_clear_without_extension_is_a_marked_separator_and_patch_only_is_dropped() {
    let mut r = rig_with(Policy::Degrade, None);
    let from = r.client_log.len();
    r.agent_update(
        json!({"sessionUpdate":"agent_message_chunk","messageId":"a1","content":text("A")}),
    );
    r.agent_update(json!({"sessionUpdate":"agent_message","messageId":"a1","content":null}));
    r.agent_update(json!({"sessionUpdate":"agent_message","messageId":"a1","_meta":{"k":1}}));
    r.agent_update(json!({"sessionUpdate":"agent_message","messageId":"a2","content":[text("B")],"_meta":null}));
    let ups = r.client_updates(from);
    assert_eq!(ups.len(), 3);
    assert_eq!(ups[1]["_meta"]["spindle"]["repush"], true);
    assert_eq!(ups[2]["content"]["text"], "B");
    assert_eq!(
        r.warnings(),
        vec!["content_cleared", "patch_only_update", "meta_null"]
    );
    assert!(r.errors().is_empty());
}

#[test]
fn plan_entry_cancelled_degrades_to_marked_completed() {
    let mut r = rig_with(Policy::Degrade, None);
    r.agent_update(
        json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p1","entries":[
        {"content":"x","priority":"low","status":"cancelled"}]}}),
    );
    let e = &r.client_log.last().unwrap()["params"]["update"]["entries"][0];
    assert_eq!(e["content"], "(cancelled) x");
    assert_eq!(e["status"], "completed");
}

#[test]
fn cancel_passes_and_idle_cancelled_answers_the_prompt() {
    let mut r = rig();
    accepted_prompt(&mut r);
    let t =
        r.client(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}));
    assert_eq!(
        crate::common::parse(&t.to_agent[0])["method"],
        "session/cancel"
    );
    r.agent_update(json!({"sessionUpdate":"tool_call_update","toolCallId":"t9","title":"late","status":"in_progress"}));
    r.agent_update(idle("cancelled"));
    assert_eq!(prompt_answers(&r)[0]["result"]["stopReason"], "cancelled");
}

#[test]
fn fresh_upsert_meta_rides_on_the_first_chunk() {
    let mut r = rig();
    let from = r.client_log.len();
    r.agent_update(json!({"sessionUpdate":"agent_thought","messageId":"t1","content":[text("a"),text("b")],"_meta":{"src":"x"}}));
    let ups = r.client_updates(from);
    assert_eq!(ups[0]["_meta"], json!({"src":"x"}));
    assert!(ups[1].get("_meta").is_none());
    assert_eq!(ups[1]["sessionUpdate"], "agent_thought_chunk");
}

#[test]
fn an_adopted_session_result_shows_the_mode_option_as_modes_and_set_mode_round_trips() {
    // A gateway opened session s9 with the agent itself; a v1 client joins it later.
    let mut r = rig();
    let option = |v: &str| {
        json!({"type":"select","configId":"m","name":"Mode","category":"mode","currentValue":v,
        "options":[{"value":"ask","name":"Ask"},{"value":"code","name":"Code"}]})
    };
    let odd = json!({"type":"text","configId":"note","name":"Note","currentValue":""});
    let (result, diagnostics) = r.bridge.adopt_session_result(
        "s9",
        json!({"configOptions":[option("ask"), odd]})
            .as_object()
            .unwrap()
            .clone(),
    );
    let mut answer = json!({"jsonrpc":"2.0","id":5,"result":result});
    answer["result"]["sessionId"] = json!("s9");
    crate::common::validate(1, &answer, Some("session/new"));
    assert_eq!(result["modes"]["currentModeId"], "ask");
    assert_eq!(result["modes"]["availableModes"][1]["id"], "code");
    assert_eq!(
        result["configOptions"],
        json!([{"type":"select","id":"m","name":"Mode",
        "category":"mode","currentValue":"ask","options":[{"value":"ask","name":"Ask"},
        {"value":"code","name":"Code"}]}])
    );
    // The option v1 has no form for is left out, and said.
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0].code, "config_option_type");

    r.client(json!({"jsonrpc":"2.0","id":6,"method":"session/set_mode","params":{"sessionId":"s9","modeId":"code"}}));
    let sent = r.agent_log.last().unwrap();
    assert_eq!(
        sent["params"],
        json!({"sessionId":"s9","configId":"m","type":"id","value":"code"})
    );
    r.agent(json!({"jsonrpc":"2.0","id":6,"result":{"configOptions":[option("code")]}}));
    assert_eq!(r.client_log.last().unwrap()["result"], json!({}));
}
