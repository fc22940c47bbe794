//! Data-driven cases (part of **B**): v2 content a v1 client would otherwise
//! receive inline and invalid: diffs, terminals and unknown items in
//! `tool_call` / `tool_call_update` / `tool_call_content_chunk` content and
//! in permission subjects, and v2-only audience roles in message blocks.
//! Each case runs under one policy; the rig validates every line the client
//! gets against the official v1 schema, and the case pins the updates the
//! client received and the error / warning codes.

use crate::common::{Rig, text};
use serde_json::{Value, json};
use spindle_bridge::{Policy, Route};

struct Case {
    name: &'static str,
    policy: Policy,
    /// Agent updates, in order.
    input: Vec<Value>,
    /// Every update the client received, in order.
    output: Vec<Value>,
    errors: &'static [&'static str],
    warnings: &'static [&'static str],
}

const MODIFY_PATCH: &str = "diff --git /w/a.rs /w/a.rs\n--- /w/a.rs\n+++ /w/a.rs\n@@ -1,2 +1,2 @@\n fn a() {}\n-old\n+new\n";
const MULTI_PATCH: &str = "diff --git /w/new.txt /w/new.txt\nnew file mode 100644\n--- /dev/null\n+++ /w/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n\
diff --git /w/a.rs /w/a.rs\n--- /w/a.rs\n+++ /w/a.rs\n@@ -1,2 +1,2 @@\n-x\n+y\n z\n@@ -10 +10 @@ fn b\n-p\n\\ No newline at end of file\n+q\n\\ No newline at end of file\n\
diff --git /w/gone.txt /w/gone.txt\ndeleted file mode 100644\n--- /w/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
const GONE_SECTION: &str = "diff --git /w/gone.txt /w/gone.txt\ndeleted file mode 100644\n--- /w/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n";
const MOVE_PATCH: &str =
    "diff --git /w/a.rs /w/b.rs\nsimilarity index 100%\nrename from /w/a.rs\nrename to /w/b.rs\n";

fn v2_diff(changes: Value, patch: Option<&str>) -> Value {
    let mut d = json!({"type":"diff","changes":changes});
    if let Some(p) = patch {
        d["patch"] = json!({"format":"git_patch","text":p});
    }
    d
}

fn modify_diff() -> Value {
    v2_diff(
        json!([{"operation":"modify","path":"/w/a.rs"}]),
        Some(MODIFY_PATCH),
    )
}

fn multi_diff() -> Value {
    v2_diff(
        json!([{"operation":"add","path":"/w/new.txt"},{"operation":"modify","path":"/w/a.rs"},
               {"operation":"delete","path":"/w/gone.txt"}]),
        Some(MULTI_PATCH),
    )
}

fn v1_modify() -> Value {
    json!({"type":"diff","path":"/w/a.rs","oldText":"fn a() {}\nold\n","newText":"fn a() {}\nnew\n"})
}

/// The v1 items of [`multi_diff`]'s add and modify changes.
fn v1_multi() -> Vec<Value> {
    vec![
        json!({"type":"diff","path":"/w/new.txt","newText":"one\ntwo\n"}),
        json!({"type":"diff","path":"/w/a.rs","oldText":"x\nz\n","newText":"y\nz\n",
               "_meta":{"spindle":{"hunk":"@@ -1,2 +1,2 @@"}}}),
        json!({"type":"diff","path":"/w/a.rs","oldText":"p","newText":"q",
               "_meta":{"spindle":{"hunk":"@@ -10 +10 @@ fn b"}}}),
    ]
}

fn item(block: Value) -> Value {
    json!({"type":"content","content":block})
}

fn upsert(content: Vec<Value>) -> Value {
    json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"Edit","kind":"edit",
           "status":"in_progress","locations":[{"path":"/w/a.rs","line":1}],"rawInput":{"p":"/w/a.rs"},
           "content":content})
}

fn created(content: Vec<Value>) -> Value {
    let mut u = upsert(content);
    u["sessionUpdate"] = "tool_call".into();
    u
}

fn cases() -> Vec<Case> {
    use Policy::{Degrade, Strict};
    let mut cases = Vec::new();
    for policy in [Strict, Degrade] {
        cases.push(Case {
            name: "tool_call_update with an inline v2 diff becomes a v1 diff, other fields kept",
            policy,
            input: vec![upsert(vec![item(text("editing")), modify_diff()])],
            output: vec![created(vec![item(text("editing")), v1_modify()])],
            errors: &[],
            warnings: &[],
        });
        cases.push(Case {
            name: "a v2 agent's tool_call (removed tag) with an inline diff becomes a v1 diff",
            policy,
            input: vec![created(vec![modify_diff()])],
            output: vec![created(vec![v1_modify()])],
            errors: &[],
            warnings: &["removed_v1_update"],
        });
        cases.push(Case {
            name: "tool_call_content_chunk with a v2 diff appends v1 diffs",
            policy,
            input: vec![
                upsert(vec![]),
                json!({"sessionUpdate":"tool_call_content_chunk","toolCallId":"t1","content":modify_diff()}),
            ],
            output: vec![
                created(vec![]),
                json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","content":[v1_modify()]}),
            ],
            errors: &[],
            warnings: &[],
        });
        cases.push(Case {
            name: "a v1-shaped diff from the v2 agent passes as is",
            policy,
            input: vec![upsert(vec![v1_modify()])],
            output: vec![created(vec![v1_modify()])],
            errors: &[],
            warnings: &["v1_diff_from_v2_agent"],
        });
    }
    // A diff over three files: add and modify convert (one item per hunk),
    // the deletion has no v1 diff form.
    cases.push(Case {
        name: "strict: multi-file diff converts add/modify hunks and rejects the deletion",
        policy: Strict,
        input: vec![upsert(vec![multi_diff()])],
        output: vec![created(v1_multi())],
        errors: &["v2_diff"],
        warnings: &[],
    });
    let mut degraded = v1_multi();
    degraded.push(item(text(GONE_SECTION)));
    cases.push(Case {
        name: "degrade: multi-file diff converts add/modify hunks, the deletion as its patch text",
        policy: Degrade,
        input: vec![upsert(vec![multi_diff()])],
        output: vec![created(degraded)],
        errors: &[],
        warnings: &["v2_diff"],
    });
    let no_patch = v2_diff(json!([{"operation":"modify","path":"/w/a.rs"}]), None);
    let moved = v2_diff(
        json!([{"operation":"move","oldPath":"/w/a.rs","path":"/w/b.rs"}]),
        Some(MOVE_PATCH),
    );
    let mut other_format = modify_diff();
    other_format["patch"]["format"] = "_hg".into();
    cases.push(Case {
        name: "strict: a diff without patch text, a move and a non-git patch are rejected",
        policy: Strict,
        input: vec![upsert(vec![
            no_patch.clone(),
            moved.clone(),
            other_format.clone(),
        ])],
        output: vec![created(vec![])],
        errors: &["v2_diff", "v2_diff", "v2_diff"],
        warnings: &[],
    });
    cases.push(Case {
        name: "degrade: a diff without patch text, a move and a non-git patch as text",
        policy: Degrade,
        input: vec![upsert(vec![no_patch, moved, other_format])],
        output: vec![created(vec![
            item(text("modify /w/a.rs")),
            item(text(MOVE_PATCH)),
            item(text(MODIFY_PATCH)),
        ])],
        errors: &[],
        warnings: &["v2_diff", "v2_diff", "v2_diff"],
    });
    let odd = vec![
        json!({"type":"terminal","terminalId":"term1"}),
        json!({"type":"_canvas","w":3}),
        item(json!({"type":"_sketch","d":1})),
    ];
    cases.push(Case {
        name: "strict: terminal, unknown tool content and unknown blocks inline are rejected",
        policy: Strict,
        input: vec![created(odd.clone())],
        output: vec![created(vec![])],
        errors: &[
            "v2_terminal",
            "unknown_tool_content",
            "unknown_content_block",
        ],
        warnings: &["removed_v1_update"],
    });
    let placeholder = |t: &str| {
        item(json!({"type":"text","text":t,"_meta":{"spindle":{"bridgePlaceholder":true}}}))
    };
    cases.push(Case {
        name: "degrade: terminal, unknown tool content and unknown blocks inline as text",
        policy: Degrade,
        input: vec![created(odd)],
        output: vec![created(vec![
            item(text("[terminal term1]")),
            placeholder("[_canvas tool content not representable in ACP v1]"),
            placeholder("[_sketch content not representable in ACP v1]"),
        ])],
        errors: &[],
        warnings: &[
            "removed_v1_update",
            "v2_terminal",
            "unknown_tool_content",
            "unknown_content_block",
        ],
    });
    // Message blocks: v2 roles are open, v1 has user and assistant only.
    let annotated = json!({"type":"text","text":"hi","annotations":{"audience":["user","_robot"],"priority":0.5}});
    let kept =
        json!({"type":"text","text":"hi","annotations":{"audience":["user"],"priority":0.5}});
    for (policy, errors, warnings) in [
        (Strict, &["audience_role", "audience_role"][..], &[][..]),
        (Degrade, &[][..], &["audience_role", "audience_role"][..]),
    ] {
        cases.push(Case {
            name: "a v2-only audience role in an upsert block and a chunk is left out",
            policy,
            input: vec![
                json!({"sessionUpdate":"agent_message","messageId":"a1","content":[annotated.clone()]}),
                json!({"sessionUpdate":"agent_message_chunk","messageId":"a2","content":annotated.clone()}),
            ],
            output: vec![
                json!({"sessionUpdate":"agent_message_chunk","messageId":"a1","content":kept.clone()}),
                json!({"sessionUpdate":"agent_message_chunk","messageId":"a2","content":kept.clone()}),
            ],
            errors,
            warnings,
        });
    }
    cases
}

#[test]
fn inline_v2_content_reaches_v1_clients_in_valid_v1_form() {
    for case in cases() {
        let mut r = Rig::new(1, 2, case.policy);
        r.handshake(None);
        assert_eq!(r.bridge.route(), Route::V1ClientV2Agent);
        let name = format!("{} ({:?})", case.name, case.policy);
        r.check_updates(&name, &case.input, &case.output, case.errors, case.warnings);
    }
}

#[test]
fn permission_tool_call_with_an_inline_v2_diff_becomes_a_v1_diff() {
    for policy in [Policy::Strict, Policy::Degrade] {
        let mut r = Rig::new(1, 2, policy);
        r.handshake(None);
        r.agent(
            json!({"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{
            "sessionId":"s1","title":"Edit a.rs?",
            "subject":{"type":"tool_call","toolCall":{"toolCallId":"t1","content":[modify_diff()]}},
            "options":[{"optionId":"y","name":"Yes","kind":"allow_once"}]}}),
        );
        let request = r.client_log.last().unwrap();
        assert_eq!(
            request["params"]["toolCall"]["content"],
            json!([v1_modify()])
        );
        assert_eq!(request["params"]["toolCall"]["title"], "Edit a.rs?");
        assert!(r.errors().is_empty() && r.warnings().is_empty());
    }
}
