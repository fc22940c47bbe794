//! How logged lines reach the engine: one [`EngineFeed`] per session, used the same way live and
//! when the session is rebuilt from its wire log, so both give the same transcript.
//!
//! One web session outlives its agent processes: after a crash (or a server restart) the next
//! prompt starts a new process, which numbers its messages, tool calls and terminals from the
//! start again (`msg_u2` in both). The engine keys entries by those ids, so a second process's
//! `msg_u2` would replace the first one's prompt and its reply would append to the crashed
//! partial reply (F1). Each agent process therefore gets its own id namespace: the lines of the
//! second and later processes reach the engine with those ids scoped (`a2:msg_u2`), while the
//! wire log keeps every line verbatim. The boundary is the client's `initialize` request, which
//! is always logged before anything else of a process, so a rebuild scopes exactly the same
//! lines. Lines of the first process reach the engine unchanged.
//!
//! The log also holds the server's own notes ([`Direction::Server`]): the agent exiting ends the
//! turn it left open, with an error that says so.
//!
//! Local lines ([`Direction::Local`], contract C) are the client's own terminals' output and exits:
//! not on the wire, but applied to the engine in log order like the rest, so a rebuild shows the
//! same terminal output. The client's session requests are read by [`SessionFacts`] on the way
//! (their `cwd`); the modes and config options of the agent's answers are the engine's.

use serde_json::{Value, json};
use spindle_engine::{RenderOp, TranscriptEngine};
use spindle_wire::stop_reasons;
use spindle_wire::tags::STATE_UPDATE;

use crate::checkpoints::{CHECKPOINT_RESTORED, CHECKPOINT_TAKEN};
use crate::facts::SessionFacts;
use crate::store::Direction;
use crate::store::NOTE_KIND_KEY;

/// The id fields that name an agent's entities; scoped per agent process.
const SCOPED_KEYS: [&str; 5] = [
    "messageId",
    "toolCallId",
    "terminalId",
    "planId",
    "compactionId",
];

/// The kind of the note logged when the agent process exits.
const AGENT_EXITED: &str = "agent_exited";

/// The kind of the note logged when a permission is answered "always".
const STANDING_PERMISSION: &str = "standing_permission";

/// The kind of the note logged when a standing permission is forgotten.
const FORGET_PERMISSION: &str = "forget_permission";

/// The kind of the note logged when a session is created for a working directory of its own.
const SESSION_CWD: &str = "session_cwd";

/// The kind of the note that names who did something (`spindle serve --users`).
const AUTHOR: &str = "author";

/// What an author note is about: the client request of a prompt (after it is logged), the
/// agent's permission request (before its answer), or an action of the page with no line of
/// its own on the wire (cancel, review, restore, elicitation answer, queue edit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Authored<'a> {
    /// The `session/prompt` request with this id (JSON text).
    Prompt(&'a str),
    /// The agent's `session/request_permission` request with this id (JSON text).
    Permission(&'a str),
    /// An action, by name, with what it concerned.
    Action(&'a str, Value),
}

/// `{"spindle":"author","user":NAME, "prompt"|"permission": ID}` or
/// `{"spindle":"author","user":NAME,"action":NAME,"detail":...}`.
pub(crate) fn author_note(user: &str, what: Authored<'_>) -> String {
    match what {
        Authored::Prompt(id) => json!({ NOTE_KIND_KEY: AUTHOR, "user": user, "prompt": id }),
        Authored::Permission(id) => {
            json!({ NOTE_KIND_KEY: AUTHOR, "user": user, "permission": id })
        }
        Authored::Action(action, detail) => {
            json!({ NOTE_KIND_KEY: AUTHOR, "user": user, "action": action, "detail": detail })
        }
    }
    .to_string()
}

/// The note logged when the agent process exits: `{"spindle":"agent_exited","message":..}`.
pub(crate) fn agent_exited_note(message: &str) -> String {
    json!({ NOTE_KIND_KEY: AGENT_EXITED, "message": message }).to_string()
}

/// `{"spindle":"standing_permission","rule":{key,label,kind,optionId}}`.
pub(crate) fn standing_permission_note(rule: &Value) -> String {
    json!({ NOTE_KIND_KEY: STANDING_PERMISSION, "rule": rule }).to_string()
}

/// `{"spindle":"forget_permission","key":..}`.
pub(crate) fn forget_permission_note(key: &str) -> String {
    json!({ NOTE_KIND_KEY: FORGET_PERMISSION, "key": key }).to_string()
}

/// `{"spindle":"session_cwd","cwd":..}`: the session's working directory, chosen at creation.
pub(crate) fn session_cwd_note(cwd: &str) -> String {
    json!({ NOTE_KIND_KEY: SESSION_CWD, "cwd": cwd }).to_string()
}

/// The prefix of the request ids the server sends to one agent process: `w{generation}-{process}-`.
/// Unique across server runs (the generation changes at every start) and agent processes, so the
/// engine never mistakes a response for one of an earlier request during replay; and it tells a
/// retried `initialize` (v2 refused, v1 asked next) from a new process.
pub(crate) fn request_id_prefix(generation: u64, process: u64) -> String {
    format!("w{generation}-{process}-")
}

/// Feeds one session's logged lines to its engine (see the module docs).
#[derive(Debug, Default, Clone)]
pub(crate) struct EngineFeed {
    /// Agent processes seen so far: the number of the current one.
    process: u32,
    /// The id prefix of the current process's `initialize` ([`request_id_prefix`]), if it had one.
    process_ids: Option<String>,
    /// What the log said besides the transcript.
    pub(crate) facts: SessionFacts,
}

impl EngineFeed {
    /// Applies one logged line; returns the render ops it caused.
    pub(crate) fn apply(
        &mut self,
        engine: &mut TranscriptEngine,
        direction: Direction,
        line: &str,
    ) -> Vec<RenderOp> {
        let mut ops = Vec::new();
        match direction {
            Direction::AgentReplay => return ops,
            Direction::Server => return self.server_note(engine, line),
            Direction::Local => {
                return scoped_apply(self.process, line, |line| engine.apply_recorded_line(line));
            }
            Direction::Client if self.starts_a_process(line) => {
                self.process += 1;
                if self.process > 1 {
                    // Only reached without an exit note (the server itself was killed).
                    ops = end_open_turn(
                        engine,
                        "The agent process was replaced before this turn finished.",
                    );
                }
            }
            Direction::Client | Direction::Agent => {}
        }
        if direction == Direction::Client {
            self.facts.client_line(line);
        }
        let scoped = if self.process > 1 {
            scope_ids(line, self.process)
        } else {
            None
        };
        let line = scoped.as_deref().unwrap_or(line);
        let applied = match direction {
            Direction::Client => engine.apply_client_line(line),
            _ => engine.apply_agent_line(line),
        };
        for diagnostic in &applied.diagnostics {
            tracing::debug!(
                code = diagnostic.code,
                "engine diagnostic: {}",
                diagnostic.message
            );
        }
        ops.extend(applied.ops);
        ops
    }

    /// Whether a client line is the `initialize` of a new agent process: any `initialize`, except
    /// one whose id has the prefix of the previous one (the same process asked again with v1).
    /// Logs written before ids carried the process count every `initialize` as a new process.
    fn starts_a_process(&mut self, line: &str) -> bool {
        let Some(id) = initialize_id(line) else {
            return false;
        };
        let ids = id
            .as_deref()
            .and_then(|id| id.rfind('-').map(|end| &id[..=end]))
            .filter(|prefix| prefix.matches('-').count() == 2)
            .map(str::to_string);
        let same = ids.is_some() && ids == self.process_ids;
        self.process_ids = ids;
        !same
    }

    fn server_note(&mut self, engine: &mut TranscriptEngine, line: &str) -> Vec<RenderOp> {
        let Ok(note) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        match note.get(NOTE_KIND_KEY).and_then(Value::as_str) {
            Some(AGENT_EXITED) => {
                let message = note
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("The agent exited before this turn finished.");
                end_open_turn(engine, message)
            }
            Some(STANDING_PERMISSION) => {
                if let Some(rule) = note.get("rule") {
                    self.facts.remember(rule);
                }
                Vec::new()
            }
            Some(FORGET_PERMISSION) => {
                if let Some(key) = note.get("key").and_then(Value::as_str) {
                    self.facts.forget(key);
                }
                Vec::new()
            }
            Some(SESSION_CWD) => {
                if let Some(cwd) = note.get("cwd").and_then(Value::as_str) {
                    self.facts.cwd = Some(cwd.to_string());
                }
                Vec::new()
            }
            Some(AUTHOR) => {
                let user = note.get("user").and_then(Value::as_str).unwrap_or_default();
                let applied = match (
                    note.get("prompt").and_then(Value::as_str),
                    note.get("permission").and_then(Value::as_str),
                ) {
                    (Some(id), _) => engine.apply_prompt_author(id, user),
                    (None, Some(id)) => engine.apply_permission_author(id, user),
                    // An action without a line of its own: the log keeps who did it.
                    (None, None) => return Vec::new(),
                };
                for diagnostic in &applied.diagnostics {
                    tracing::debug!(
                        code = diagnostic.code,
                        "author note: {}",
                        diagnostic.message
                    );
                }
                applied.ops
            }
            Some(kind @ (CHECKPOINT_TAKEN | CHECKPOINT_RESTORED)) => {
                self.facts.checkpoints.note(kind, &note);
                Vec::new()
            }
            Some(crate::prompt_queue::QUEUE_NOTE) => {
                self.facts.queue.apply(&note);
                Vec::new()
            }
            // Notes of a newer server are kept in the log and skipped here.
            _ => Vec::new(),
        }
    }
}

/// Applies a local line with its ids scoped like the agent lines of the same process.
fn scoped_apply(
    process: u32,
    line: &str,
    apply: impl FnOnce(&str) -> spindle_engine::Applied,
) -> Vec<RenderOp> {
    let scoped = if process > 1 {
        scope_ids(line, process)
    } else {
        None
    };
    apply(scoped.as_deref().unwrap_or(line)).ops
}

/// Ends the open turn (if any) as failed, the way its protocol version ends a failed turn: a v1
/// error response to the prompt, a v2 `idle` with `stopReason: "error"`.
fn end_open_turn(engine: &mut TranscriptEngine, message: &str) -> Vec<RenderOp> {
    if !engine.transcript().state.turn_open {
        return Vec::new();
    }
    let error = json!({ "code": -32603, "message": message });
    if engine.transcript().protocol >= 2 {
        // No sessionId: the note belongs to whatever session the transcript follows.
        let params = json!({ "update": {
            "sessionUpdate": STATE_UPDATE, "state": "idle", "stopReason": stop_reasons::ERROR, "error": error,
        } });
        engine.apply_session_update(&params.to_string()).ops
    } else {
        engine.apply_prompt_response(Err(&error.to_string())).ops
    }
}

/// For an `initialize` request: `Some` with its id when that is a string.
fn initialize_id(line: &str) -> Option<Option<String>> {
    #[derive(serde::Deserialize)]
    struct Request<'a> {
        #[serde(borrow, default)]
        method: Option<std::borrow::Cow<'a, str>>,
        #[serde(default)]
        id: Option<Value>,
    }
    if !line.contains(spindle_wire::client_methods::INITIALIZE) {
        return None;
    }
    let request = serde_json::from_str::<Request<'_>>(line).ok()?;
    (request.method.as_deref() == Some(spindle_wire::client_methods::INITIALIZE))
        .then(|| request.id.and_then(|id| id.as_str().map(str::to_string)))
}

/// The line with the string value of every [`SCOPED_KEYS`] member prefixed by `a{process}:`, or
/// `None` when it has none. This runs for every line of a session that outlived an agent
/// process, so it scans the text instead of parsing it: inside a JSON string a quote is always
/// escaped, so `"messageId"` whose quote is not preceded by a backslash, followed by `:` and a
/// quote, is a member name with a string value. (A member name spelled with `\u` escapes is not
/// recognised; a line that is not JSON is left to the engine's diagnostics either way.)
fn scope_ids(line: &str, process: u32) -> Option<String> {
    let bytes = line.as_bytes();
    let skip_space = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    // Byte offsets just after the opening quote of each id value.
    let mut inserts = Vec::new();
    for key in SCOPED_KEYS {
        let mut from = 0;
        while let Some(found) = line[from..].find(key) {
            let start = from + found;
            from = start + key.len();
            let name = start >= 1
                && bytes[start - 1] == b'"'
                && (start < 2 || bytes[start - 2] != b'\\')
                && bytes.get(from) == Some(&b'"');
            if !name {
                continue;
            }
            let colon = skip_space(from + 1);
            if bytes.get(colon) != Some(&b':') {
                continue;
            }
            let value = skip_space(colon + 1);
            if bytes.get(value) == Some(&b'"') {
                inserts.push(value + 1);
            }
        }
    }
    if inserts.is_empty() {
        return None;
    }
    inserts.sort_unstable();
    let prefix = format!("a{process}:");
    let mut scoped = String::with_capacity(line.len() + inserts.len() * prefix.len());
    let mut copied = 0;
    for at in inserts {
        scoped.push_str(&line[copied..at]);
        scoped.push_str(&prefix);
        copied = at;
    }
    scoped.push_str(&line[copied..]);
    Some(scoped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_engine::EngineConfig;

    fn texts(engine: &TranscriptEngine) -> Vec<(String, String)> {
        engine
            .transcript()
            .entries
            .iter()
            .map(|e| (e.kind.as_str().to_string(), e.text().to_string()))
            .collect()
    }

    fn initialize(id: u32) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":"i{id}","method":"initialize","params":{{"protocolVersion":1}}}}"#
        )
    }

    fn prompt(id: u32, text: &str) -> String {
        json!({"jsonrpc": "2.0", "id": format!("p{id}"), "method": "session/prompt",
            "params": {"sessionId": "s", "prompt": [{"type": "text", "text": text}]}})
        .to_string()
    }

    fn chunk(message_id: &str, text: &str) -> String {
        json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
            "update": {"sessionUpdate": "agent_message_chunk", "messageId": message_id,
                "content": {"type": "text", "text": text}}}})
        .to_string()
    }

    #[test]
    fn each_agent_process_has_its_own_ids_and_an_exit_ends_the_open_turn() {
        let log = [
            (Direction::Client, initialize(1)),
            (Direction::Client, prompt(1, "crash")),
            (Direction::Agent, chunk("msg_a1", "in the middle of a")),
            (
                Direction::Server,
                agent_exited_note("The agent exited (status 3)."),
            ),
            (Direction::Client, initialize(2)),
            (Direction::Client, prompt(2, "again")),
            (Direction::Agent, chunk("msg_a1", "You said again")),
            (
                Direction::Agent,
                r#"{"jsonrpc":"2.0","id":"p2","result":{"stopReason":"end_turn"}}"#.into(),
            ),
        ];
        let mut engine = TranscriptEngine::new(EngineConfig::default());
        let mut feed = EngineFeed::default();
        for (direction, line) in &log {
            feed.apply(&mut engine, *direction, line);
        }
        assert_eq!(
            texts(&engine),
            [
                ("user_message", "crash"),
                ("agent_message", "in the middle of a"),
                ("turn_end", ""),
                ("user_message", "again"),
                ("agent_message", "You said again"),
                ("turn_end", ""),
            ]
            .map(|(k, t)| (k.to_string(), t.to_string()))
        );
        // The exit ends the first turn as failed, with the note's message.
        let crashed = engine.transcript().entries[2].view();
        assert_eq!(crashed.fields["outcome"], "error");
        assert_eq!(
            crashed.fields["error"]["message"],
            "The agent exited (status 3)."
        );
        let turns = engine.turn_replies();
        assert_eq!(turns.len(), 2);
        assert!(turns[0].finished && turns[0].stop_reason.is_none());
        assert_eq!(turns[1].stop_reason.as_deref(), Some("end_turn"));
        assert!(engine.transcript().diagnostics.is_empty());
    }

    #[test]
    fn author_notes_reach_the_transcript_and_actions_stay_in_the_log_only() {
        let log = [
            (Direction::Client, initialize(1)),
            (Direction::Client, prompt(1, "hello")),
            (
                Direction::Server,
                author_note("alice", Authored::Prompt("\"p1\"")),
            ),
            (
                Direction::Server,
                author_note("bob", Authored::Action("cancel", json!({}))),
            ),
            (
                Direction::Server,
                author_note("eve", Authored::Prompt("\"p9\"")),
            ),
        ];
        let mut engine = TranscriptEngine::new(EngineConfig::default());
        let mut feed = EngineFeed::default();
        let ops: Vec<Vec<RenderOp>> = log
            .iter()
            .map(|(direction, line)| feed.apply(&mut engine, *direction, line))
            .collect();
        assert_eq!(ops[2].len(), 1, "the prompt entry is updated: {:?}", ops[2]);
        assert!(ops[3].is_empty() && ops[4].is_empty());
        let prompt = engine.transcript().entries[0].view();
        assert_eq!(prompt.fields["author"], "alice");
    }

    /// What [`scope_ids`] must do, done on the parsed value.
    fn scope_value(value: &mut Value, prefix: &str) {
        match value {
            Value::Object(map) => {
                for (key, field) in map.iter_mut() {
                    match field {
                        Value::String(id) if SCOPED_KEYS.contains(&key.as_str()) => {
                            id.insert_str(0, prefix)
                        }
                        _ => scope_value(field, prefix),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| scope_value(item, prefix)),
            _ => {}
        }
    }

    #[test]
    fn the_text_scan_scopes_exactly_the_id_members_a_parser_finds() {
        let lines = [
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg_a3","content":{"type":"text","text":"say \"messageId\":\"x\" and toolCallId"}}}}"#,
            r#"{ "id" : 1 , "result" : { "messageId" : "m" , "x" : { "toolCallId":"t","terminalId": "term"} } }"#,
            r#"{"a":["messageId","toolCallId"],"messageId":null,"planId":7,"compactionId":"c","b":"\\","toolCallId":"t2"}"#,
            r#"{"text":"ends with a backslash \\","messageId":"m\"q"}"#,
            r#"{"messageId":"été","t":"😀","text":"\\\"messageId\": \"no\""}"#,
        ];
        for line in lines {
            let mut expected: Value = serde_json::from_str(line).unwrap();
            scope_value(&mut expected, "a2:");
            let scoped = scope_ids(line, 2).unwrap_or_else(|| line.to_string());
            let actual: Value = serde_json::from_str(&scoped).unwrap();
            assert_eq!(actual, expected, "{line}");
        }
    }

    #[test]
    fn ids_are_scoped_anywhere_in_the_line_and_lines_without_ids_pass_unchanged() {
        let line =
            r#"{"id":1,"result":{"messageId":"m","nested":[{"toolCallId":"t","title":"x"}]}}"#;
        assert_eq!(
            scope_ids(line, 3).as_deref(),
            Some(
                r#"{"id":1,"result":{"messageId":"a3:m","nested":[{"toolCallId":"a3:t","title":"x"}]}}"#
            )
        );
        assert_eq!(scope_ids(r#"{"id":1,"result":{}}"#, 2), None);
        assert_eq!(scope_ids("not json messageId", 2), None);
        assert_eq!(initialize_id(&initialize(1)), Some(Some("i1".into())));
        assert_eq!(
            initialize_id(r#"{"method":"session/new","params":{"x":"initialize"}}"#),
            None
        );
    }

    #[test]
    fn a_retried_initialize_is_the_same_process_and_old_logs_count_every_initialize() {
        let initialize = |id: &str| {
            json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {}}).to_string()
        };
        let mut feed = EngineFeed::default();
        let first = request_id_prefix(7, 1);
        assert!(feed.starts_a_process(&initialize(&format!("{first}0"))));
        assert!(!feed.starts_a_process(&initialize(&format!("{first}1"))));
        assert!(feed.starts_a_process(&initialize(&format!("{}0", request_id_prefix(7, 2)))));
        assert!(feed.starts_a_process(&initialize(&format!("{}0", request_id_prefix(8, 1)))));
        // Ids of older servers (`w{generation}-{n}`) and of anything else.
        assert!(feed.starts_a_process(&initialize("w8-1")));
        assert!(feed.starts_a_process(&initialize("w8-5")));
        assert!(feed.starts_a_process(&initialize("i1")));
    }
}
