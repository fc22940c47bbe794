//! `/scenario tools` (a plan, a read, an edit behind a permission request)
//! and `/scenario background` (work that goes on after the turn ended).

use serde_json::json;
use spindle_wire::tags::{self, MessageKind};

use crate::program::{PermissionStep, Program, Step};
use crate::turn_context::TurnCtx;
use crate::updates;
use crate::wire::Version;

/// Final reply of `/scenario tools` when the client allows the edit.
pub const TOOLS_REPLY_ALLOWED: &str =
    "I will read the file and then edit it. I changed the greeting in src/main.rs.";
/// Final reply of `/scenario tools` when the client rejects the edit.
pub const TOOLS_REPLY_REJECTED: &str =
    "I will read the file and then edit it. Understood: I left src/main.rs unchanged.";

pub(super) fn tools(ctx: &mut TurnCtx<'_>) -> Program {
    let v = ctx.version();
    let mut p = Program::new(ctx.delay_ms);
    let plan_id = ctx.state.next_id("plan_");
    let plan = |read: &str, edit: &str, sum: &str| {
        updates::plan(
            v,
            &plan_id,
            &[
                ("Read src/main.rs", read),
                ("Edit the greeting", edit),
                ("Summarise the change", sum),
            ],
        )
    };
    p.update(plan("in_progress", "pending", "pending"));
    let id = ctx.state.next_id("msg_a");
    p.say(
        MessageKind::Agent,
        &id,
        "I will read the file and then edit it. ",
        None,
    );
    let old = "fn main() {\n    println!(\"hello\");\n}\n";
    let new = "fn main() {\n    println!(\"hello, spindle\");\n}\n";

    let read = ctx.state.next_id("call_");
    p.update(updates::tool_call_start(
        v,
        &read,
        "Read src/main.rs",
        "read",
        json!({"path": "/workspace/src/main.rs"}),
    ));
    p.update(updates::tool_call_status(&read, "in_progress", None));
    p.pause(2);
    match v {
        Version::V2 => {
            for line in old.split_inclusive('\n') {
                p.update(updates::tool_content_chunk(&read, updates::tool_text(line)));
                p.pause(1);
            }
            p.update(updates::tool_call_status(&read, "completed", None));
        }
        Version::V1 => p.update(updates::tool_call_status(
            &read,
            "completed",
            Some(vec![updates::tool_text(old)]),
        )),
    }
    p.update(plan("completed", "in_progress", "pending"));

    let edit = ctx.state.next_id("call_");
    let title = "Edit src/main.rs";
    p.update(updates::tool_call_start(
        v,
        &edit,
        title,
        "edit",
        json!({"path": "/workspace/src/main.rs", "newText": new}),
    ));
    let mut allow = Program::new(ctx.delay_ms);
    allow.update(updates::tool_call_status(&edit, "in_progress", None));
    allow.pause(2);
    allow.update(updates::tool_call_status(
        &edit,
        "completed",
        Some(vec![updates::tool_diff(
            v,
            "/workspace/src/main.rs",
            old,
            new,
        )]),
    ));
    allow.update(plan("completed", "completed", "completed"));
    allow.say(
        MessageKind::Agent,
        &id,
        "I changed the greeting in src/main.rs.",
        None,
    );
    let mut reject = Program::new(ctx.delay_ms);
    reject.update(updates::tool_call_status(
        &edit,
        "failed",
        Some(vec![updates::tool_text("Permission denied by the user.")]),
    ));
    reject.update(plan("completed", "pending", "completed"));
    reject.say(
        MessageKind::Agent,
        &id,
        "Understood: I left src/main.rs unchanged.",
        None,
    );
    p.steps.push(Step::Permission(Box::new(PermissionStep {
        tool_call_id: edit.clone(),
        title: title.to_owned(),
        kind: "edit".to_owned(),
        content: vec![updates::tool_diff(v, "/workspace/src/main.rs", old, new)],
        on_allow: allow.steps,
        on_reject: reject.steps,
    })));
    p.update(ctx.usage(120));
    p.end("end_turn");
    p
}

/// Final reply of `/scenario background` (the turn's message).
pub const BACKGROUND_REPLY: &str =
    "Started indexing in the background; I will report when it is done.";
/// The message sent after the turn ended.
pub const BACKGROUND_LATE_MESSAGE: &str = "Background task finished: indexed 42 files.";

pub(super) fn background(ctx: &mut TurnCtx<'_>) -> Program {
    let v = ctx.version();
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    p.say(MessageKind::Agent, &id, BACKGROUND_REPLY, None);
    let task = ctx.state.next_id("call_");
    p.update(updates::tool_call_start(
        v,
        &task,
        "Index the repository",
        "search",
        json!({"path": "."}),
    ));
    p.update(updates::tool_call_status(&task, "in_progress", None));
    p.update(ctx.usage(40));
    p.end("end_turn");
    // After the turn: v2 sends these while idle; v1 after the prompt response.
    p.pause(5);
    p.update(updates::tool_call_status(
        &task,
        "completed",
        Some(vec![updates::tool_text("Indexed 42 files.")]),
    ));
    let late = ctx.state.next_id("msg_a");
    match v {
        Version::V2 => p.update(updates::whole_message(
            MessageKind::Agent,
            &late,
            &[updates::text_block(BACKGROUND_LATE_MESSAGE)],
        )),
        Version::V1 => p.say(MessageKind::Agent, &late, BACKGROUND_LATE_MESSAGE, None),
    }
    p.update(json!({"sessionUpdate": tags::SESSION_INFO_UPDATE, "title": "Indexed repository"}));
    p
}
