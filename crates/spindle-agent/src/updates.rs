//! Version-aware builders for the `update` objects of `session/update`.
//!
//! Each function returns the `update` value only; the session id envelope is
//! added when the line is written. v1 and v2 differ in tags and required
//! fields (see docs/src/semantics.md, "Session updates"); those differences live here and
//! nowhere else.

use serde_json::{Map, Value, json};
use spindle_wire::client_methods::permission_kinds as kinds;
use spindle_wire::meta::{
    CLAUDE_CODE_META_KEY, CLEAR_BOUNDARY_FLAG, META_KEY, SNAPSHOT_FLAG, SPINDLE_META_KEY,
};
use spindle_wire::routing::SEGMENT_FIELD;
use spindle_wire::tags::{self, MessageKind};

use crate::wire::Version;

/// A text content block.
pub fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// `agent_message_chunk` / `agent_thought_chunk` / `user_message_chunk`.
pub fn chunk(kind: MessageKind, message_id: &str, text: &str, meta: Option<Value>) -> Value {
    let mut update = json!({
        "sessionUpdate": kind.chunk_tag().as_str(),
        "messageId": message_id,
        "content": text_block(text),
    });
    if let Some(meta) = meta {
        update[META_KEY] = meta;
    }
    update
}

/// The v1 extension update that clears a message of `kind` (users' messages
/// are never cleared; they fall back to the agent message's tag).
fn clear_tag(kind: MessageKind) -> &'static str {
    match kind {
        MessageKind::Thought => tags::AGENT_THOUGHT_CLEAR,
        MessageKind::User | MessageKind::Agent => tags::AGENT_MESSAGE_CLEAR,
    }
}

/// v2 whole-message upsert (`user_message`, `agent_message`, `agent_thought`)
/// whose `content` replaces everything stored for `message_id`. An empty
/// `blocks` slice sends `content: []`, which clears the message.
pub fn whole_message(kind: MessageKind, message_id: &str, blocks: &[Value]) -> Value {
    json!({
        "sessionUpdate": kind.upsert_tag().as_str(),
        "messageId": message_id,
        "content": blocks,
    })
}

/// Seed extension (v1): `agent_message_clear` / `agent_thought_clear`.
pub fn clear(kind: MessageKind, message_id: &str) -> Value {
    json!({"sessionUpdate": clear_tag(kind), "messageId": message_id})
}

/// Seed extension: the `session_cleared` update.
pub fn session_cleared() -> Value {
    json!({"sessionUpdate": tags::SESSION_CLEARED})
}

/// `usage_update`.
pub fn usage(used: u64, size: u64) -> Value {
    json!({"sessionUpdate": tags::USAGE_UPDATE, "used": used, "size": size})
}

/// v2 `state_update`.
pub fn state(state: &str, stop_reason: Option<&str>) -> Value {
    let mut update = json!({"sessionUpdate": tags::STATE_UPDATE, "state": state});
    if let Some(reason) = stop_reason {
        update["stopReason"] = json!(reason);
    }
    update
}

/// One slash command advertised by `available_commands_update`.
#[derive(Debug, Clone, Copy)]
pub struct CommandSpec {
    /// Name without the slash.
    pub name: &'static str,
    /// One-line description.
    pub description: &'static str,
    /// Input hint, when the command takes an argument.
    pub hint: Option<&'static str>,
}

/// `available_commands_update`. v2 entries carry `"type":"command"` and a
/// typed input (the 1.15.1 crate drops untyped entries).
pub fn available_commands(version: Version, commands: &[CommandSpec]) -> Value {
    let entries: Vec<Value> = commands
        .iter()
        .map(|c| {
            let mut entry = Map::new();
            if version == Version::V2 {
                entry.insert("type".into(), json!("command"));
            }
            entry.insert("name".into(), json!(c.name));
            entry.insert("description".into(), json!(c.description));
            if let Some(hint) = c.hint {
                let input = match version {
                    Version::V1 => json!({"hint": hint}),
                    Version::V2 => json!({"type": "text", "hint": hint}),
                };
                entry.insert("input".into(), input);
            }
            Value::Object(entry)
        })
        .collect();
    json!({"sessionUpdate": tags::AVAILABLE_COMMANDS_UPDATE, "availableCommands": entries})
}

/// A plan entry: (content, status).
pub type PlanEntry<'a> = (&'a str, &'a str);

/// The whole plan: v1 `plan`, v2 `plan_update` with an `items` plan.
pub fn plan(version: Version, plan_id: &str, entries: &[PlanEntry<'_>]) -> Value {
    let entries: Vec<Value> = entries
        .iter()
        .map(
            |(content, status)| json!({"content": content, "priority": "medium", "status": status}),
        )
        .collect();
    match version {
        Version::V1 => json!({"sessionUpdate": tags::PLAN, "entries": entries}),
        Version::V2 => json!({
            "sessionUpdate": tags::PLAN_UPDATE,
            "plan": {"type": "items", "planId": plan_id, "entries": entries},
        }),
    }
}

/// Creates a tool call: v1 `tool_call`, v2 a first `tool_call_update` with a title.
pub fn tool_call_start(
    version: Version,
    tool_call_id: &str,
    title: &str,
    kind: &str,
    raw_input: Value,
) -> Value {
    let tag = match version {
        Version::V1 => tags::TOOL_CALL,
        Version::V2 => tags::TOOL_CALL_UPDATE,
    };
    json!({
        "sessionUpdate": tag,
        "toolCallId": tool_call_id,
        "title": title,
        "kind": kind,
        "status": "pending",
        "rawInput": raw_input,
    })
}

/// Patches a tool call's status, optionally replacing its content.
pub fn tool_call_status(tool_call_id: &str, status: &str, content: Option<Vec<Value>>) -> Value {
    let mut update = json!({
        "sessionUpdate": tags::TOOL_CALL_UPDATE,
        "toolCallId": tool_call_id,
        "status": status,
    });
    if let Some(content) = content {
        update["content"] = Value::Array(content);
    }
    update
}

/// Tool call content wrapping a text block.
pub fn tool_text(text: &str) -> Value {
    json!({"type": "content", "content": text_block(text)})
}

/// Tool call content showing a one-file modification. v1 carries the old and
/// new text; v2 describes the change and carries a git-style patch.
pub fn tool_diff(version: Version, path: &str, old_text: &str, new_text: &str) -> Value {
    match version {
        Version::V1 => {
            json!({"type": "diff", "path": path, "oldText": old_text, "newText": new_text})
        }
        Version::V2 => {
            let rel = path.trim_start_matches('/');
            let mut patch = format!("diff --git a/{rel} b/{rel}\n--- a/{rel}\n+++ b/{rel}\n");
            patch.push_str(&spindle_engine::unified_hunks(old_text, new_text));
            json!({
                "type": "diff",
                "changes": [{"operation": "modify", "path": path, "fileType": "text"}],
                "patch": {"format": "git_patch", "text": patch},
            })
        }
    }
}

/// v2 `tool_call_content_chunk`: appends one content item.
pub fn tool_content_chunk(tool_call_id: &str, item: Value) -> Value {
    json!({"sessionUpdate": tags::TOOL_CALL_CONTENT_CHUNK, "toolCallId": tool_call_id, "content": item})
}

/// The status a cancelled tool call ends in: v2 has `cancelled`, v1 only `failed`.
pub fn cancelled_tool_status(version: Version) -> &'static str {
    match version {
        Version::V1 => "failed",
        Version::V2 => "cancelled",
    }
}

/// The option id of "Allow" (`allow_once`).
pub const PERMISSION_ALLOW: &str = "allow";
/// The option id of "Reject" (`reject_once`).
pub const PERMISSION_REJECT: &str = "reject";
/// The option id of "Always allow" (`allow_always`).
pub const PERMISSION_ALLOW_ALWAYS: &str = "allow_always";
/// The option id of "Always reject" (`reject_always`).
pub const PERMISSION_REJECT_ALWAYS: &str = "reject_always";

/// The options an answer allows by.
pub const PERMISSION_ALLOWING: [&str; 2] = [PERMISSION_ALLOW, PERMISSION_ALLOW_ALWAYS];

/// `session/request_permission` params for a tool call, with `content` (say, the diff of an
/// edit) in its tool call as production agents send it. The options are
/// Allow, Reject, Always allow, Always reject, in that order. The agent
/// itself remembers no "always" answer: it asks again each time, so a
/// client that remembers one is what answers without the user.
pub fn permission_params(
    version: Version,
    session_id: &str,
    tool_call_id: &str,
    title: &str,
    kind: &str,
    content: &[Value],
) -> Value {
    let options = json!([
        {"optionId": PERMISSION_ALLOW, "name": "Allow", "kind": kinds::ALLOW_ONCE},
        {"optionId": PERMISSION_REJECT, "name": "Reject", "kind": kinds::REJECT_ONCE},
        {"optionId": PERMISSION_ALLOW_ALWAYS, "name": "Always allow", "kind": kinds::ALLOW_ALWAYS},
        {"optionId": PERMISSION_REJECT_ALWAYS, "name": "Always reject", "kind": kinds::REJECT_ALWAYS},
    ]);
    let mut tool_call =
        json!({"toolCallId": tool_call_id, "title": title, "kind": kind, "status": "pending"});
    // What the call would do (an edit's diff), shown before the user answers.
    if !content.is_empty() {
        tool_call["content"] = Value::Array(content.to_vec());
    }
    match version {
        Version::V1 => json!({"sessionId": session_id, "toolCall": tool_call, "options": options}),
        Version::V2 => json!({
            "sessionId": session_id,
            "title": title,
            "subject": {"type": "tool_call", "toolCall": tool_call},
            "options": options,
        }),
    }
}

/// `compaction_update`.
pub fn compaction(compaction_id: &str, status: &str) -> Value {
    json!({"sessionUpdate": tags::COMPACTION_UPDATE, "compactionId": compaction_id, "status": status})
}

/// `compaction_summary_chunk`.
pub fn compaction_chunk(compaction_id: &str, text: &str) -> Value {
    json!({
        "sessionUpdate": tags::COMPACTION_SUMMARY_CHUNK,
        "compactionId": compaction_id,
        "content": text_block(text),
    })
}

/// `_meta` marking a message chunk as a routed segment (docs/src/routing.md) (`thought`, `plan`):
/// `{"spindle":{"segment":kind}}`.
pub fn segment_meta(kind: &str) -> Value {
    json!({SPINDLE_META_KEY: {SEGMENT_FIELD: kind}})
}

/// `_meta` marking a chunk as snapshot-style: its text is the whole message so far.
pub fn snapshot_meta() -> Value {
    json!({SPINDLE_META_KEY: {SNAPSHOT_FLAG: true}})
}

/// `_meta` carrying the clear boundary in its `_meta` form (docs/src/extensions.md).
pub fn clear_boundary_meta() -> Value {
    json!({CLAUDE_CODE_META_KEY: {CLEAR_BOUNDARY_FLAG: true}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v2_diff_patch_is_one_hunk_of_the_changed_lines_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let diff = tool_diff(Version::V2, "/w/x.txt", old, new);
        assert_eq!(
            diff["patch"]["text"],
            "diff --git a/w/x.txt b/w/x.txt\n--- a/w/x.txt\n+++ b/w/x.txt\n\
             @@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
        let added = tool_diff(Version::V2, "/w/new.txt", "", "one\ntwo\n");
        assert!(
            added["patch"]["text"]
                .as_str()
                .unwrap()
                .ends_with("@@ -0,0 +1,2 @@\n+one\n+two\n"),
            "{added}"
        );
    }

    #[test]
    fn a_permission_request_carries_the_content_of_its_tool_call() {
        let diff = tool_diff(Version::V1, "/w/a.rs", "x\n", "y\n");
        let v1 = permission_params(
            Version::V1,
            "s",
            "c",
            "Edit",
            "edit",
            std::slice::from_ref(&diff),
        );
        assert_eq!(v1["toolCall"]["content"], json!([diff]));
        let v2_diff = tool_diff(Version::V2, "/w/a.rs", "x\n", "y\n");
        let v2 = permission_params(
            Version::V2,
            "s",
            "c",
            "Edit",
            "edit",
            std::slice::from_ref(&v2_diff),
        );
        assert_eq!(v2["subject"]["toolCall"]["content"], json!([v2_diff]));
        let bare = permission_params(Version::V1, "s", "c", "Run", "execute", &[]);
        assert!(bare["toolCall"].get("content").is_none());
    }
}
