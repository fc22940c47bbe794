//! Data-driven cases (part of **B**): values the v2 schema allows and v1's
//! does not (open v2 enums against closed v1 ones, found by diffing the two
//! official schemas), in every update or request that can carry them to a
//! v1 client: plan entry status and priority (in `plan_update`, in a v2
//! agent's `plan`, in v1 plan operations), plan content types, compaction
//! summaries' content blocks and audience roles, permission option kinds,
//! tool status and kind in a v2 agent's `tool_call`, config option types. Each case runs under one
//! policy and one client capability set; the rig validates every line the
//! client gets against the official v1 schema, and the case pins what the
//! client received and the error / warning codes.

use crate::common::{Rig, text};
use serde_json::{Value, json};
use spindle_bridge::Policy;

struct Case {
    name: &'static str,
    policy: Policy,
    /// The v1 client's `clientCapabilities`.
    capabilities: Value,
    input: Vec<Value>,
    /// Every update the client received, in order.
    output: Vec<Value>,
    errors: &'static [&'static str],
    warnings: &'static [&'static str],
}

fn rig(policy: Policy, capabilities: &Value) -> Rig {
    let mut r = Rig::new(1, 2, policy);
    r.client(
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,
        "clientInfo":{"name":"c","version":"1"},"clientCapabilities":capabilities}}),
    );
    r.agent(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"a","version":"1"},
        "capabilities":{"session":{"prompt":{}}}}}));
    r
}

fn entry(content: &str, priority: &str, status: &str) -> Value {
    json!({"content":content,"priority":priority,"status":status})
}

/// The entries an agent sends: one of each v2-only value, one plain.
fn v2_entries() -> Vec<Value> {
    vec![
        entry("read", "high", "completed"),
        entry("lint", "low", "cancelled"),
        entry("test", "_urgent", "in_progress"),
        entry("ship", "medium", "_blocked"),
    ]
}

/// [`v2_entries`] under degrade.
fn degraded_entries() -> Vec<Value> {
    vec![
        entry("read", "high", "completed"),
        json!({"content":"(cancelled) lint","priority":"low","status":"completed",
               "_meta":{"spindle":{"status":"cancelled"}}}),
        json!({"content":"test","priority":"medium","status":"in_progress",
               "_meta":{"spindle":{"priority":"_urgent"}}}),
        json!({"content":"(_blocked) ship","priority":"medium","status":"pending",
               "_meta":{"spindle":{"status":"_blocked"}}}),
    ]
}

fn plan_update(entries: Vec<Value>) -> Value {
    json!({"sessionUpdate":"plan_update","plan":{"type":"items","planId":"p1","entries":entries}})
}

fn v1_plan(entries: Vec<Value>) -> Value {
    json!({"sessionUpdate":"plan","entries":entries})
}

fn cases() -> Vec<Case> {
    use Policy::{Degrade, Strict};
    let none = json!({});
    let plan_ops = json!({"plan":{}});
    let compaction = json!({"session":{"compaction":{}}});
    let plain_only = vec![entry("read", "high", "completed")];
    let plan_errors: &[&str] = &["plan_status", "plan_priority", "plan_status"];
    let mut cases = Vec::new();
    for (policy, entries, errors, warnings) in [
        (Strict, plain_only.clone(), plan_errors, &[][..]),
        (Degrade, degraded_entries(), &[][..], plan_errors),
    ] {
        cases.push(Case {
            name: "plan_update entries with v2-only status / priority",
            policy,
            capabilities: none.clone(),
            input: vec![plan_update(v2_entries())],
            output: vec![v1_plan(entries.clone())],
            errors,
            warnings,
        });
        let mut removed_warnings = vec!["removed_v1_update"];
        removed_warnings.extend(warnings);
        cases.push(Case {
            name: "a v2 agent's plan (removed tag) with v2-only entries",
            policy,
            capabilities: none.clone(),
            input: vec![v1_plan(v2_entries())],
            output: vec![v1_plan(entries.clone())],
            errors,
            warnings: removed_warnings.leak(),
        });
        cases.push(Case {
            name: "plan operations client: plan_update entries made v1, plan_removed passes",
            policy,
            capabilities: plan_ops.clone(),
            input: vec![
                plan_update(v2_entries()),
                json!({"sessionUpdate":"plan_removed","planId":"p1"}),
            ],
            output: vec![
                plan_update(entries),
                json!({"sessionUpdate":"plan_removed","planId":"p1"}),
            ],
            errors,
            warnings,
        });
    }
    for (policy, errors, warnings) in [
        (Strict, &["plan_type"][..], &[][..]),
        (Degrade, &[][..], &["plan_type"][..]),
    ] {
        cases.push(Case {
            name: "plan operations client: markdown passes, an _x plan type is not sent",
            policy,
            capabilities: plan_ops.clone(),
            input: vec![
                json!({"sessionUpdate":"plan_update","plan":{"type":"markdown","planId":"m","content":"# a"}}),
                json!({"sessionUpdate":"plan_update","plan":{"type":"_graph","planId":"g","nodes":[]}}),
            ],
            output: vec![
                json!({"sessionUpdate":"plan_update","plan":{"type":"markdown","planId":"m","content":"# a"}}),
            ],
            errors,
            warnings,
        });
    }
    // Compaction summaries carry content blocks: the same rules as messages.
    let annotated =
        json!({"type":"text","text":"sum","annotations":{"audience":["assistant","_auditor"]}});
    let kept = json!({"type":"text","text":"sum","annotations":{"audience":["assistant"]}});
    let odd = json!({"type":"_chart","bars":[1]});
    let placeholder = json!({"type":"text","text":"[_chart content not representable in ACP v1]",
                             "_meta":{"spindle":{"bridgePlaceholder":true}}});
    let started =
        json!({"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress"});
    let chunk = |c: &Value| json!({"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":c});
    let done = |s: Vec<Value>| json!({"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed","summary":s});
    let done_without_summary =
        json!({"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed"});
    cases.push(Case {
        name: "strict: compaction summary blocks: unknown type left out, v2-only role left out",
        policy: Strict,
        capabilities: compaction.clone(),
        input: vec![
            started.clone(),
            chunk(&annotated),
            chunk(&odd),
            done(vec![annotated.clone(), odd.clone()]),
            done(vec![odd.clone()]),
        ],
        output: vec![
            started.clone(),
            chunk(&kept),
            done(vec![kept.clone()]),
            done_without_summary,
        ],
        errors: &[
            "audience_role",
            "unknown_content_block",
            "audience_role",
            "unknown_content_block",
            "unknown_content_block",
        ],
        warnings: &[],
    });
    cases.push(Case {
        name: "degrade: compaction summary blocks: unknown type as placeholder text",
        policy: Degrade,
        capabilities: compaction,
        input: vec![
            started.clone(),
            chunk(&odd),
            done(vec![annotated.clone(), odd.clone()]),
            done(vec![]),
        ],
        output: vec![
            started,
            chunk(&placeholder),
            done(vec![kept, placeholder.clone()]),
            done(vec![]),
        ],
        errors: &[],
        warnings: &[
            "unknown_content_block",
            "audience_role",
            "unknown_content_block",
        ],
    });
    // Tool status and kind: open in v2, closed in v1; a v2 agent's
    // `tool_call` goes through the same fields translation.
    let tool = |status: &str, kind: &str| {
        json!({"sessionUpdate":"tool_call","toolCallId":"t9","title":"Run","kind":kind,"status":status,
               "content":[{"type":"content","content":text("ok")}]})
    };
    cases.push(Case {
        name: "strict: a v2 agent's tool_call with a cancelled status and an _x kind",
        policy: Strict,
        capabilities: json!({}),
        input: vec![tool("cancelled", "_deploy")],
        output: vec![{
            let mut t = tool("x", "other");
            t.as_object_mut().unwrap().remove("status");
            t
        }],
        errors: &["tool_status"],
        warnings: &["removed_v1_update"],
    });
    cases.push(Case {
        name: "degrade: a v2 agent's tool_call with a paused status and an _x kind",
        policy: Degrade,
        capabilities: json!({}),
        input: vec![tool("paused", "_deploy")],
        output: vec![tool("in_progress", "other")],
        errors: &[],
        warnings: &["removed_v1_update", "tool_status"],
    });
    // Config option types: v1 has select and boolean only.
    let flag = json!({"type":"boolean","configId":"fast","name":"Fast","currentValue":true});
    let slider = json!({"type":"_slider","configId":"t","name":"Temperature","min":0,"max":1});
    for (policy, errors, warnings) in [
        (Strict, &["config_option_type"][..], &[][..]),
        (Degrade, &[][..], &["config_option_type"][..]),
    ] {
        cases.push(Case {
            name: "config_option_update: an _x option type is left out",
            policy,
            capabilities: json!({}),
            input: vec![json!({"sessionUpdate":"config_option_update","configOptions":[flag.clone(), slider.clone()]})],
            output: vec![json!({"sessionUpdate":"config_option_update","configOptions":[
                {"type":"boolean","id":"fast","name":"Fast","currentValue":true}]})],
            errors,
            warnings,
        });
    }
    cases
}

#[test]
fn v2_only_enum_values_reach_v1_clients_in_valid_v1_form() {
    for case in cases() {
        let mut r = rig(case.policy, &case.capabilities);
        let name = format!("{} ({:?})", case.name, case.policy);
        r.check_updates(&name, &case.input, &case.output, case.errors, case.warnings);
    }
}

#[test]
fn permission_options_with_a_v2_only_kind() {
    let options = json!([
        {"optionId":"y","name":"Yes","kind":"allow_once"},
        {"optionId":"s","name":"Allow for this session","kind":"_allow_session"},
        {"optionId":"l","name":"Later","kind":"_defer"}]);
    let request = json!({"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{
        "sessionId":"s1","title":"Run?","subject":{"type":"tool_call","toolCall":{"toolCallId":"t1"}},
        "options":options}});
    let mut r = rig(Policy::Strict, &json!({}));
    r.agent(request.clone());
    let sent = &r.client_log.last().unwrap()["params"]["options"];
    assert_eq!(sent, &json!([options[0]]));
    assert_eq!(
        r.errors(),
        ["permission_option_kind", "permission_option_kind"]
    );

    let mut r = rig(Policy::Degrade, &json!({}));
    r.agent(request.clone());
    let sent = &r.client_log.last().unwrap()["params"]["options"];
    assert_eq!(
        sent,
        &json!([options[0],
            {"optionId":"s","name":"Allow for this session","kind":"allow_once","_meta":{"spindle":{"kind":"_allow_session"}}},
            {"optionId":"l","name":"Later","kind":"reject_once","_meta":{"spindle":{"kind":"_defer"}}}])
    );
    assert_eq!(
        r.warnings(),
        ["permission_option_kind", "permission_option_kind"]
    );

    // Strict with no option v1 can show: the agent is answered, the client
    // is not asked.
    let mut request = request;
    request["params"]["options"] = json!([options[2]]);
    let mut r = rig(Policy::Strict, &json!({}));
    let before = r.client_log.len();
    let t = r.agent(request);
    assert_eq!(r.client_log.len(), before);
    let answer = crate::common::parse(&t.to_agent[0]);
    assert_eq!(answer["id"], "p1");
    assert_eq!(answer["error"]["code"], -32603);
}

#[test]
fn session_new_config_options_of_a_v2_only_type_are_left_out() {
    let mut r = rig(Policy::Degrade, &json!({}));
    r.client(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}));
    r.agent(
        json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1","configOptions":[
        {"type":"boolean","configId":"fast","name":"Fast","currentValue":false},
        {"type":"_slider","configId":"t","name":"Temperature"}]}}),
    );
    let result = &r.client_log.last().unwrap()["result"];
    assert_eq!(
        result["configOptions"],
        json!([{"type":"boolean","id":"fast","name":"Fast","currentValue":false}])
    );
    assert_eq!(r.warnings(), ["config_option_type"]);
}
