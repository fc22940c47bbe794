//! Session history: what `session/load` (v1) and `session/resume` with
//! `replayFrom` (v2) replay, and what `--state-dir` keeps between agent
//! processes so a fresh agent can list and open earlier sessions.
//!
//! The history is version-neutral (the user's prompt blocks and the agent's
//! reply texts, plus the config values), so a session recorded over v1 replays as
//! valid v2 and the other way round. On disk each session is one JSONL file
//! `<sessionId>.jsonl`, one record per line: `{"session":{"sessionId","cwd","additionalDirectories"?}}`
//! first, then `{"user":[blocks]}`, `{"agent":"text"}`, `{"tool":{...}}` (a tool
//! call as it ended, `history_turn`), `{"plan":[{"content","status"}]}`, `{"config":{"id","value"}}`, `{"title":"…"}`,
//! each with an `"at"` ISO 8601 time when the agent has a wall clock. The
//! core only produces these lines ([`PersistedLine`]); the driver writes
//! them.

use serde_json::{Value, json};
use spindle_wire::client_methods::fields;
use spindle_wire::tags::MessageKind;

pub use crate::history_turn::{RecordedDiff, RecordedTool, TurnItem, track_update};
use crate::updates;
use crate::wire::Version;

/// One entry of a session's conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryEntry {
    /// A prompt: its content blocks.
    User(Vec<Value>),
    /// One agent reply message: its text.
    Agent(String),
    /// A tool call as it ended.
    Tool(RecordedTool),
    /// A turn's plan as it ended: (content, status) per item.
    Plan(Vec<(String, String)>),
}

/// A session known from an earlier agent process (read from `--state-dir`).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSession {
    /// Its id.
    pub session_id: String,
    /// Its working directory.
    pub cwd: String,
    /// Its additional workspace roots (`additionalDirectories`).
    pub additional_directories: Vec<String>,
    /// Its title: the start of its first prompt.
    pub title: Option<String>,
    /// Its last activity (ISO 8601), when recorded.
    pub updated_at: Option<String>,
    /// Its config changes (`mode`, `model`, `effort`), in order.
    pub config: Vec<(String, String)>,
    /// Its conversation.
    pub entries: Vec<HistoryEntry>,
}

/// A line to append to the session's history file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistedLine {
    /// The session (its file is `<session_id>.jsonl`).
    pub session_id: String,
    /// The JSON record, without newline.
    pub line: String,
}

/// The longest title taken from a first prompt, in characters.
const TITLE_CHARS: usize = 60;

/// A session title from its first prompt's text: the first line, at most
/// [`TITLE_CHARS`] characters.
pub fn title_from(blocks: &[Value]) -> Option<String> {
    let text = blocks
        .iter()
        .find_map(|b| b.get("text").and_then(Value::as_str))?;
    let line = text.lines().find(|l| !l.trim().is_empty())?.trim();
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    Some(title)
}

/// Whether a session id is safe as a file name (what this agent mints, or
/// at least nothing that leaves the state directory).
pub fn safe_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The record starting a session's file (`additionalDirectories` only when
/// there are some).
pub fn session_record(
    session_id: &str,
    cwd: &str,
    additional_directories: &[String],
    at: Option<&str>,
) -> Value {
    let mut head = json!({fields::SESSION_ID: session_id, fields::CWD: cwd});
    if !additional_directories.is_empty() {
        head[fields::ADDITIONAL_DIRECTORIES] = json!(additional_directories);
    }
    with_time(json!({ "session": head }), at)
}

/// The record of one history entry (to copy a history into a fork's file).
pub fn entry_record(entry: &HistoryEntry, at: Option<&str>) -> Value {
    match entry {
        HistoryEntry::User(blocks) => user_record(blocks, at),
        HistoryEntry::Agent(text) => agent_record(text, at),
        HistoryEntry::Tool(tool) => tool_record(tool, at),
        HistoryEntry::Plan(entries) => plan_record(entries, at),
    }
}

/// A prompt's record.
pub fn user_record(blocks: &[Value], at: Option<&str>) -> Value {
    with_time(json!({"user": blocks}), at)
}

/// An agent reply's record.
pub fn agent_record(text: &str, at: Option<&str>) -> Value {
    with_time(json!({"agent": text}), at)
}

/// A tool call's record.
pub fn tool_record(tool: &RecordedTool, at: Option<&str>) -> Value {
    with_time(json!({"tool": tool.to_json()}), at)
}

/// A plan's record.
pub fn plan_record(entries: &[(String, String)], at: Option<&str>) -> Value {
    let entries: Vec<Value> = entries
        .iter()
        .map(|(content, status)| json!({"content": content, "status": status}))
        .collect();
    with_time(json!({"plan": entries}), at)
}

/// A title's record (the agent announced it in a `session_info_update`).
pub fn title_record(title: &str, at: Option<&str>) -> Value {
    with_time(json!({ "title": title }), at)
}

/// A config change's record (`mode`, `model`, `effort`).
pub fn config_record(config_id: &str, value: &str, at: Option<&str>) -> Value {
    with_time(json!({"config": {"id": config_id, "value": value}}), at)
}

fn with_time(mut record: Value, at: Option<&str>) -> Value {
    if let Some(at) = at {
        record["at"] = json!(at);
    }
    record
}

impl StoredSession {
    /// Reads a session file. Records it does not know are skipped; a file
    /// without its `session` record first, or with a line that is not JSON,
    /// is refused (the message says which line).
    pub fn from_jsonl(text: &str) -> Result<StoredSession, String> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, first) = lines.next().ok_or("the file is empty")?;
        let first: Value = serde_json::from_str(first).map_err(|e| format!("line 1: {e}"))?;
        let head = first
            .get("session")
            .ok_or("line 1 is not a session record")?;
        let text_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        let mut stored = StoredSession {
            session_id: text_of(head, fields::SESSION_ID)
                .ok_or("the session record has no sessionId")?,
            cwd: text_of(head, fields::CWD).ok_or("the session record has no cwd")?,
            additional_directories: head
                .get(fields::ADDITIONAL_DIRECTORIES)
                .and_then(Value::as_array)
                .map(|dirs| {
                    dirs.iter()
                        .filter_map(|d| d.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            title: None,
            updated_at: text_of(&first, "at"),
            config: Vec::new(),
            entries: Vec::new(),
        };
        for (n, line) in lines {
            let record: Value =
                serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
            if let Some(at) = text_of(&record, "at") {
                stored.updated_at = Some(at);
            }
            if let Some(blocks) = record.get("user").and_then(Value::as_array) {
                if stored.title.is_none() {
                    stored.title = title_from(blocks);
                }
                stored.entries.push(HistoryEntry::User(blocks.clone()));
            } else if let Some(text) = record.get("agent").and_then(Value::as_str) {
                stored.entries.push(HistoryEntry::Agent(text.to_owned()));
            } else if let Some(tool) = record.get("tool") {
                stored
                    .entries
                    .push(HistoryEntry::Tool(RecordedTool::from_json(tool)));
            } else if let Some(items) = record.get("plan").and_then(Value::as_array) {
                let entries = items
                    .iter()
                    .map(|i| {
                        (
                            text_of(i, "content").unwrap_or_default(),
                            text_of(i, "status").unwrap_or_default(),
                        )
                    })
                    .collect();
                stored.entries.push(HistoryEntry::Plan(entries));
            } else if let Some(title) = record.get("title").and_then(Value::as_str) {
                stored.title = Some(title.to_owned());
            } else if let Some(config) = record.get("config")
                && let (Some(id), Some(value)) = (text_of(config, "id"), text_of(config, "value"))
            {
                stored.config.push((id, value));
            }
        }
        Ok(stored)
    }
}

/// The updates replaying `entries` in `version`: v1 one chunk per prompt
/// block and one agent chunk per reply; v2 whole-message upserts; a tool
/// call as one update with its final status and content, a plan as its
/// final items. Ids come from `next_id` (prefix -> fresh id).
pub fn replay_updates(
    version: Version,
    entries: &[HistoryEntry],
    next_id: &mut dyn FnMut(&str) -> String,
) -> Vec<Value> {
    let mut out = Vec::new();
    for entry in entries {
        match (entry, version) {
            (HistoryEntry::User(blocks), Version::V1) => {
                let id = next_id("msg_u");
                for block in blocks {
                    out.push(json!({
                        "sessionUpdate": MessageKind::User.chunk_tag().as_str(),
                        "messageId": id,
                        "content": block,
                    }));
                }
            }
            (HistoryEntry::User(blocks), Version::V2) => {
                out.push(updates::whole_message(
                    MessageKind::User,
                    &next_id("msg_u"),
                    blocks,
                ));
            }
            (HistoryEntry::Agent(text), Version::V1) => {
                out.push(updates::chunk(
                    MessageKind::Agent,
                    &next_id("msg_a"),
                    text,
                    None,
                ));
            }
            (HistoryEntry::Agent(text), Version::V2) => {
                let block = updates::text_block(text);
                out.push(updates::whole_message(
                    MessageKind::Agent,
                    &next_id("msg_a"),
                    &[block],
                ));
            }
            (HistoryEntry::Tool(tool), _) => {
                out.push(tool.replay_update(version, &next_id("call_")));
            }
            (HistoryEntry::Plan(entries), _) => {
                let entries: Vec<(&str, &str)> = entries
                    .iter()
                    .map(|(c, s)| (c.as_str(), s.as_str()))
                    .collect();
                out.push(updates::plan(version, &next_id("plan_"), &entries));
            }
        }
    }
    out
}

/// `unix_ms` as an ISO 8601 UTC time with milliseconds.
pub fn iso8601(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        unix_ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(1_795_651_200_000), "2026-11-26T00:00:00.000Z");
    }

    #[test]
    fn a_session_file_round_trips_and_bad_files_are_refused() {
        let lines = [
            session_record("sess_a", "/w", &[], Some("2026-11-26T00:00:00.000Z")),
            user_record(
                &[json!({"type": "text", "text": "fix the build\nplease"})],
                None,
            ),
            agent_record("Done.", Some("2026-11-26T00:01:00.000Z")),
            tool_record(
                &RecordedTool {
                    title: "Edit a.rs".into(),
                    status: "completed".into(),
                    ..RecordedTool::default()
                },
                None,
            ),
            plan_record(&[("Fix".into(), "completed".into())], None),
            config_record("mode", "plan", None),
            json!({"future": 1}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let stored = StoredSession::from_jsonl(&text).unwrap();
        assert_eq!(stored.session_id, "sess_a");
        assert_eq!(stored.title.as_deref(), Some("fix the build"));
        assert_eq!(
            stored.updated_at.as_deref(),
            Some("2026-11-26T00:01:00.000Z")
        );
        assert_eq!(stored.config, vec![("mode".to_owned(), "plan".to_owned())]);
        assert_eq!(stored.entries.len(), 4);
        assert!(matches!(&stored.entries[2], HistoryEntry::Tool(t) if t.title == "Edit a.rs"));
        assert_eq!(
            stored.entries[3],
            HistoryEntry::Plan(vec![("Fix".into(), "completed".into())])
        );
        assert!(StoredSession::from_jsonl("").is_err());
        assert!(StoredSession::from_jsonl("{\"user\":[]}\n").is_err());
        assert!(
            StoredSession::from_jsonl(&format!("{}\nnot json\n", lines[0]))
                .unwrap_err()
                .contains("line 2")
        );
        assert!(safe_session_id("sess_1-a") && !safe_session_id("../x") && !safe_session_id(""));
    }
}
