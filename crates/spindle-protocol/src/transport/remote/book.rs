//! What a remote transport must remember about the conversation it carries,
//! without I/O: which requests are waiting for an answer, which sessions are
//! open (so their streams can be opened and, after the server lost the
//! connection, resumed or loaded again), and the `initialize` line to repeat.
//!
//! Both profiles (HTTP+SSE and WebSocket) feed it every line they carry; it
//! answers with what to do. Lines pass through verbatim: it only looks.

use std::collections::VecDeque;

use serde::Deserialize;
use serde_json::value::RawValue;
use spindle_wire::client_methods::{self as methods, capabilities as capability, fields as field};
use spindle_wire::hash::{FxHashMap, FxHashSet};

/// Prefix of the ids of requests the transport sends on its own (to open a
/// session again after a restart). The client's own ids are numbers.
const OWN_ID_PREFIX: &str = "spindle-remote-";

/// The parts of a JSON-RPC line the transport routes by. Borrowed; `params`
/// members other than `sessionId` and `cwd` are skipped, never copied.
#[derive(Debug, Default, Deserialize)]
struct Probe<'a> {
    #[serde(borrow, default)]
    method: Option<&'a str>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<ProbeParams<'a>>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

#[derive(Debug, Default, Deserialize)]
struct ProbeParams<'a> {
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    cwd: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "requestId", borrow, default)]
    request_id: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
struct SessionResult<'a> {
    #[serde(rename = "sessionId", borrow)]
    session_id: Option<std::borrow::Cow<'a, str>>,
}

/// A line the client sends, as the transport routes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outgoing {
    /// The line, verbatim (no newline).
    pub line: String,
    /// Its method, for requests and notifications.
    pub method: Option<String>,
    /// Its id as JSON text, for requests.
    pub id: Option<String>,
    /// `params.sessionId`, for requests and notifications.
    pub session_id: Option<String>,
    /// A response to a request of the server (not ordered behind requests).
    pub is_response: bool,
}

impl Outgoing {
    /// Whether this is the `initialize` request.
    pub fn is_initialize(&self) -> bool {
        self.method.as_deref() == Some(methods::INITIALIZE)
    }
}

/// What the transport does with a line from the server.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum IncomingAction {
    /// Hand it to the client.
    Deliver,
    /// Keep it from the client: the answer to a request of the transport, or
    /// the replay of a session the transport loaded again.
    Swallow,
    /// Hand the client this line instead: `_spindle/permission_resolved`
    /// (another client answered a permission question first) becomes the
    /// `$/cancel_request` of that question, which every ACP client already
    /// takes as "drop the question".
    Replace(String),
}

/// A session whose streams and state the transport keeps.
#[derive(Debug, Clone)]
struct OpenSession {
    cwd: String,
}

/// A request of the client still waiting for its response.
#[derive(Debug, Clone)]
struct Pending {
    method: String,
    session_id: Option<String>,
    cwd: Option<String>,
}

/// The transport's memory of the conversation (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Book {
    initialize_line: Option<String>,
    /// What the agent answered to `initialize` (its capabilities).
    can_resume: bool,
    can_load: bool,
    pending: FxHashMap<String, Pending>,
    sessions: FxHashMap<String, OpenSession>,
    /// Requests of the transport: id -> the session it reopens.
    own_requests: FxHashMap<String, String>,
    /// Sessions whose updates are kept from the client until the
    /// transport's own `session/load` is answered (the replay duplicates
    /// what the client already has).
    muted: FxHashSet<String>,
    /// Sessions whose history the server is sending again as a snapshot
    /// (`_spindle/snapshot`: a resume past its buffer): kept from the
    /// client, which shows that history already, until the message with
    /// the snapshot's event id.
    in_snapshot: FxHashSet<String>,
    /// Sessions attached again from an event id over WebSocket: kept from
    /// the client until the server announces the first event id, which
    /// says whether it resumed (same generation) or sends a snapshot.
    awaiting_event_id: FxHashSet<String>,
    next_own_id: u64,
    /// Sessions opened by responses since the last call of
    /// [`Book::take_opened_sessions`].
    opened: VecDeque<String>,
}

/// A session the transport reopens after the server lost the connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reopen {
    /// The session.
    pub session_id: String,
    /// The request line to send (`session/resume` or `session/load`).
    pub line: String,
}

impl Book {
    /// Looks at a line the client sends. `None` for a line that is not one
    /// JSON-RPC object (a batch, garbage): it is still sent, unrouted.
    pub fn outgoing(&mut self, line: String) -> Outgoing {
        let probe: Probe<'_> = serde_json::from_str(&line).unwrap_or_default();
        let method = probe.method.map(str::to_owned);
        let params = probe.params.unwrap_or_default();
        let session_id = params.session_id.map(|s| s.into_owned());
        let is_response = method.is_none() && (probe.result.is_some() || probe.error.is_some());
        if let (Some(method), Some(id)) = (&method, probe.id) {
            self.pending.insert(
                id.get().to_owned(),
                Pending {
                    method: method.clone(),
                    session_id: session_id.clone(),
                    cwd: params.cwd.map(|c| c.into_owned()),
                },
            );
        }
        let out = Outgoing {
            id: probe
                .id
                .filter(|_| method.is_some())
                .map(|id| id.get().to_owned()),
            method,
            session_id,
            is_response,
            line,
        };
        if out.is_initialize() {
            self.initialize_line = Some(out.line.clone());
        }
        out
    }

    /// Looks at a line from the server and says whether the client gets it.
    pub fn incoming(&mut self, line: &str) -> IncomingAction {
        if !self.needs_probe(line) {
            return IncomingAction::Deliver;
        }
        let Ok(probe) = serde_json::from_str::<Probe<'_>>(line) else {
            return IncomingAction::Deliver;
        };
        if let Some(method) = probe.method {
            if method == spindle_wire::remote::PERMISSION_RESOLVED
                && let Some(request_id) = probe.params.as_ref().and_then(|p| p.request_id)
            {
                return IncomingAction::Replace(format!(
                    r#"{{"jsonrpc":"2.0","method":"{}","params":{{"requestId":{}}}}}"#,
                    methods::CANCEL_REQUEST,
                    request_id.get()
                ));
            }
            if method == spindle_wire::remote::SNAPSHOT_NOTIFICATION {
                if let Some(session) = probe.params.and_then(|p| p.session_id) {
                    self.in_snapshot.insert(session.into_owned());
                }
                return IncomingAction::Swallow;
            }
            let muted = method == methods::SESSION_UPDATE
                && probe.params.and_then(|p| p.session_id).is_some_and(|s| {
                    self.muted.contains(s.as_ref())
                        || self.in_snapshot.contains(s.as_ref())
                        || self.awaiting_event_id.contains(s.as_ref())
                });
            return if muted {
                IncomingAction::Swallow
            } else {
                IncomingAction::Deliver
            };
        }
        let Some(id) = probe.id else {
            return IncomingAction::Deliver;
        };
        let ok = probe.result;
        if let Some(session) = self.own_requests.remove(id.get()) {
            self.muted.remove(&session);
            if ok.is_none() {
                self.sessions.remove(&session);
            }
            return IncomingAction::Swallow;
        }
        if let Some(pending) = self.pending.remove(id.get()) {
            self.note_answer(pending, ok);
        }
        IncomingAction::Deliver
    }

    /// The answer to `initialize` (read for the capabilities that say how a
    /// session can be opened again).
    pub fn initialize_answered(&mut self, line: &str) {
        #[derive(Deserialize)]
        struct Answer<'a> {
            #[serde(borrow, default)]
            result: Option<&'a RawValue>,
        }
        if let Some(result) = serde_json::from_str::<Answer<'_>>(line)
            .ok()
            .and_then(|a| a.result)
        {
            self.read_capabilities(result.get());
        }
    }

    fn read_capabilities(&mut self, result: &str) {
        let Ok(result) = serde_json::from_str::<serde_json::Value>(result) else {
            return;
        };
        // v1 `agentCapabilities`, v2 `capabilities`.
        let caps = result
            .get(capability::V1_AGENT)
            .or_else(|| result.get(capability::V2));
        // v2 has `session/resume` as a baseline method.
        let v2 = result.get("protocolVersion").and_then(|v| v.as_u64()) == Some(2);
        let Some(caps) = caps else {
            self.can_resume = v2;
            return;
        };
        self.can_load = caps
            .get(capability::LOAD_SESSION)
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        self.can_resume = v2
            || caps
                .get(capability::SESSION_CAPABILITIES)
                .and_then(|s| s.get(capability::RESUME))
                .is_some_and(|r| !r.is_null());
    }

    fn note_answer(&mut self, pending: Pending, result: Option<&RawValue>) {
        let Some(result) = result else { return };
        if pending.method == methods::INITIALIZE {
            self.read_capabilities(result.get());
            return;
        }
        let opens = matches!(
            pending.method.as_str(),
            methods::SESSION_NEW | methods::SESSION_LOAD | methods::SESSION_RESUME
        ) || pending.method.ends_with("/attach")
            || pending.method.ends_with("/fork");
        if opens {
            let session_id = serde_json::from_str::<SessionResult<'_>>(result.get())
                .ok()
                .and_then(|r| r.session_id.map(|s| s.into_owned()))
                .or(pending.session_id);
            if let Some(session_id) = session_id {
                let cwd = pending.cwd.unwrap_or_default();
                if self
                    .sessions
                    .insert(session_id.clone(), OpenSession { cwd })
                    .is_none()
                {
                    self.opened.push_back(session_id);
                }
            }
        } else if pending.method == methods::SESSION_CLOSE
            && let Some(session_id) = pending.session_id
        {
            self.sessions.remove(&session_id);
        }
    }

    /// Sessions a response opened since the last call (their streams are
    /// to be opened).
    pub fn take_opened_sessions(&mut self) -> Vec<String> {
        self.opened.drain(..).collect()
    }

    /// The `initialize` line the client sent, to send again to a server that
    /// lost the connection.
    pub fn initialize_line(&self) -> Option<&str> {
        self.initialize_line.as_deref()
    }

    /// Whether a line must be decoded to route it. A line with neither a
    /// `"result"` nor an `"error"` token cannot be a response (inside a
    /// JSON string a quote is escaped, so the 8 bytes `"result"` only occur
    /// as a string token); notifications are only read while a session is
    /// muted.
    fn needs_probe(&self, line: &str) -> bool {
        // Built once: every message from the server is searched (`memmem::find` would build
        // its searcher anew for each).
        static FINDERS: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 3]> =
            std::sync::LazyLock::new(|| {
                [
                    memchr::memmem::Finder::new(b"\"result\""),
                    memchr::memmem::Finder::new(b"\"error\""),
                    memchr::memmem::Finder::new(b"\"_spindle/"),
                ]
            });
        let bytes = line.as_bytes();
        if FINDERS.iter().any(|finder| finder.find(bytes).is_some()) {
            return true;
        }
        !self.muted.is_empty() || !self.in_snapshot.is_empty() || !self.awaiting_event_id.is_empty()
    }

    /// Keeps `session_id`'s updates from the client until
    /// [`Book::event_id_announced`].
    pub fn await_event_id(&mut self, session_id: &str) {
        self.awaiting_event_id.insert(session_id.to_owned());
    }

    /// The server announced an event id of `session_id`. After a
    /// reattachment, an id of another generation than the last one seen
    /// means the server restarted: what it sent before was the session's
    /// history (kept from the client) and the message this id belongs to is
    /// its last piece.
    pub fn event_id_announced(&mut self, session_id: &str, other_generation: bool) {
        if self.awaiting_event_id.remove(session_id) && other_generation {
            self.in_snapshot.insert(session_id.to_owned());
        }
    }

    /// A message of `session_id` carrying a new event id arrived: a
    /// snapshot of that session ends with it. Returns whether one did.
    pub fn event_id_seen(&mut self, session_id: &str) -> bool {
        self.in_snapshot.remove(session_id)
    }

    /// The server lost the connection (it restarted, or reaped it): the
    /// client's requests still waiting will never be answered. Returns one
    /// error response line per such request (the client sees each fail with
    /// `reason`) and forgets them.
    /// Requests in `still_queued` (not sent yet; they go to the new
    /// connection) are kept.
    pub fn fail_pending(&mut self, reason: &str, still_queued: &FxHashSet<String>) -> Vec<String> {
        let mut ids: Vec<String> = self
            .pending
            .keys()
            .filter(|id| !still_queued.contains(*id))
            .cloned()
            .collect();
        for id in &ids {
            self.pending.remove(id);
        }
        ids.sort();
        ids.into_iter()
            .map(|id| error_response(&id, reason))
            .collect()
    }

    /// Whether a request of the transport that opens `session_id` again
    /// (resume, load, attach) is still unanswered.
    pub fn reopening(&self, session_id: &str) -> bool {
        self.own_requests.values().any(|s| s == session_id)
    }

    /// The ids of the client's requests waiting for an answer, sorted.
    pub fn pending_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.pending.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Fails one waiting request of the client (its answer went to a
    /// connection the server lost): the error response line, or `None` when
    /// the request is not waiting (already answered or failed).
    pub fn fail_request(&mut self, id: &str, reason: &str) -> Option<String> {
        self.pending.remove(id)?;
        Some(error_response(id, reason))
    }

    /// The requests that open each open session again on a new connection:
    /// `session/resume` when the agent offers it, else `session/load` (whose
    /// replay is kept from the client until it is answered). Sessions the
    /// agent can do neither for are forgotten and returned in `lost`.
    pub fn reopen_sessions(&mut self) -> (Vec<Reopen>, Vec<String>) {
        let mut reopen = Vec::new();
        let mut lost = Vec::new();
        let mut ids: Vec<(String, OpenSession)> = self.sessions.drain().collect();
        ids.sort_by(|a, b| a.0.cmp(&b.0));
        for (session_id, session) in ids {
            let method = if self.can_resume {
                methods::SESSION_RESUME
            } else if self.can_load {
                methods::SESSION_LOAD
            } else {
                lost.push(session_id);
                continue;
            };
            self.next_own_id += 1;
            let id = format!("{OWN_ID_PREFIX}{}", self.next_own_id);
            let line = serde_json::json!({
                "jsonrpc": "2.0",
                "id": id,
                "method": method,
                "params": {
                    field::SESSION_ID: session_id,
                    field::CWD: session.cwd,
                    field::MCP_SERVERS: [],
                },
            })
            .to_string();
            self.own_requests.insert(
                serde_json::to_string(&id).unwrap_or_default(),
                session_id.clone(),
            );
            self.muted.insert(session_id.clone());
            self.sessions.insert(session_id.clone(), session);
            reopen.push(Reopen { session_id, line });
        }
        (reopen, lost)
    }
}

impl Book {
    /// Like [`Book::reopen_sessions`] for a server with Spindle's event ids:
    /// each open session whose last event id is known is attached again
    /// from it (`session/attach` with `resumeFrom`: the server sends what
    /// was missed, nothing twice), the others are reopened. The first
    /// attach names `previous_connection_id` (the closed connection whose
    /// answers the new one takes over; once per closed connection).
    pub fn reattach_sessions(
        &mut self,
        last_event_ids: &FxHashMap<String, String>,
        previous_connection_id: Option<&str>,
    ) -> (Vec<Reopen>, Vec<String>) {
        use spindle_wire::remote::{
            PREVIOUS_CONNECTION_ID, RESUME_FROM, ROLE, ROLE_CONTROLLER, SESSION_ATTACH,
        };
        let mut attach = Vec::new();
        let mut ids: Vec<String> = self.sessions.keys().cloned().collect();
        ids.sort();
        for session_id in ids {
            let Some(last) = last_event_ids.get(&session_id) else {
                continue;
            };
            self.next_own_id += 1;
            let id = format!("{OWN_ID_PREFIX}{}", self.next_own_id);
            let mut request = serde_json::json!({
                "jsonrpc": "2.0",
                "id": id,
                "method": SESSION_ATTACH,
                "params": {
                    field::SESSION_ID: session_id,
                    ROLE: ROLE_CONTROLLER,
                    RESUME_FROM: last,
                },
            });
            if attach.is_empty()
                && let Some(previous) = previous_connection_id
            {
                request["params"][PREVIOUS_CONNECTION_ID] = previous.into();
            }
            let line = request.to_string();
            self.own_requests.insert(
                serde_json::to_string(&id).unwrap_or_default(),
                session_id.clone(),
            );
            attach.push(Reopen { session_id, line });
        }
        let attached: FxHashSet<&str> = attach.iter().map(|r| r.session_id.as_str()).collect();
        let others: Vec<(String, OpenSession)> = self
            .sessions
            .iter()
            .filter(|(id, _)| !attached.contains(id.as_str()))
            .map(|(id, s)| (id.clone(), s.clone()))
            .collect();
        let kept: Vec<(String, OpenSession)> = self
            .sessions
            .drain()
            .filter(|(id, _)| attached.contains(id.as_str()))
            .collect();
        self.sessions.extend(others);
        let (mut reopen, lost) = self.reopen_sessions();
        self.sessions.extend(kept);
        attach.append(&mut reopen);
        (attach, lost)
    }
}

/// An error response (internal error) to the request with id `id` (JSON
/// text, as sent).
pub(crate) fn error_response(id: &str, message: &str) -> String {
    let message = serde_json::Value::String(message.to_owned());
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32603,"message":{message}}}}}"#)
}

/// The `initialize` line with the remote extensions `names` listed in
/// `params._meta.spindle.remote` (Spindle's opt-in; other members kept). A
/// line that is not an object with object params is returned as it was.
pub(crate) fn with_remote_opt_in(line: &str, names: &[&str]) -> String {
    use spindle_wire::meta::{META_KEY, SPINDLE_META_KEY};
    use spindle_wire::remote::REMOTE_OPT_IN_KEY;
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(line) else {
        return line.to_owned();
    };
    let Some(params) = value.get_mut("params").and_then(|p| p.as_object_mut()) else {
        return line.to_owned();
    };
    let meta = params
        .entry(META_KEY)
        .or_insert_with(|| serde_json::json!({}));
    let Some(spindle) = meta.as_object_mut().map(|m| {
        m.entry(SPINDLE_META_KEY)
            .or_insert_with(|| serde_json::json!({}))
    }) else {
        return line.to_owned();
    };
    let Some(spindle) = spindle.as_object_mut() else {
        return line.to_owned();
    };
    spindle.insert(REMOTE_OPT_IN_KEY.to_owned(), serde_json::json!(names));
    value.to_string()
}

/// Makes a message read off a stream one line: a raw line break in valid
/// JSON can only be whitespace between tokens (inside strings it is
/// escaped), so it becomes a space; nothing else changes.
pub(crate) fn one_line(data: &str, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(data.as_bytes());
    for b in &mut out[start..] {
        if *b == b'\n' || *b == b'\r' {
            *b = b' ';
        }
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init_result(caps: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":1,"agentCapabilities":{caps}}}}}"#
        )
    }

    #[test]
    fn a_new_session_is_open_once_answered_and_its_stream_is_asked_for() {
        let mut book = Book::default();
        let out = book.outgoing(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#
                .to_owned(),
        );
        assert_eq!(out.method.as_deref(), Some("session/new"));
        assert!(!out.is_response);
        assert_eq!(
            book.incoming(r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#),
            IncomingAction::Deliver
        );
        assert_eq!(book.take_opened_sessions(), ["s1"]);
        assert!(book.take_opened_sessions().is_empty());
    }

    #[test]
    fn after_a_restart_pending_requests_fail_and_sessions_resume_or_load() {
        let mut book = Book::default();
        book.outgoing(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#.to_owned());
        book.incoming(&init_result(r#"{"loadSession":true}"#));
        book.outgoing(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}"#.to_owned(),
        );
        book.incoming(r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#);
        let prompt = book.outgoing(
            r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#
                .to_owned(),
        );
        assert_eq!(prompt.session_id.as_deref(), Some("s1"));
        let failed = book.fail_pending("the server restarted", &FxHashSet::default());
        assert_eq!(
            failed,
            [
                r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"the server restarted"}}"#
            ]
        );
        let (reopen, lost) = book.reopen_sessions();
        assert!(lost.is_empty());
        assert_eq!(reopen.len(), 1);
        assert!(reopen[0].line.contains(r#""method":"session/load""#));
        assert!(reopen[0].line.contains(r#""cwd":"/w""#));
        // The replay is kept from the client until the load is answered.
        let update = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{}}}"#;
        assert_eq!(book.incoming(update), IncomingAction::Swallow);
        let answer = r#"{"jsonrpc":"2.0","id":"spindle-remote-1","result":{}}"#;
        assert_eq!(book.incoming(answer), IncomingAction::Swallow);
        assert_eq!(book.incoming(update), IncomingAction::Deliver);
    }

    #[test]
    fn resume_is_preferred_and_sessions_of_an_agent_that_can_neither_are_lost() {
        let mut book = Book::default();
        book.initialize_answered(&init_result(
            r#"{"loadSession":true,"sessionCapabilities":{"resume":{}}}"#,
        ));
        book.outgoing(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}"#.to_owned(),
        );
        book.incoming(r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#);
        assert!(book.reopen_sessions().0[0].line.contains("session/resume"));

        let mut plain = Book::default();
        plain.initialize_answered(&init_result("{}"));
        plain.outgoing(
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}"#.to_owned(),
        );
        plain.incoming(r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}"#);
        assert_eq!(plain.reopen_sessions(), (vec![], vec!["s1".to_owned()]));
    }

    #[test]
    fn only_the_first_reattach_names_the_closed_connection() {
        let mut book = Book::default();
        let mut last = FxHashMap::default();
        for (id, session) in [(1, "s1"), (2, "s2")] {
            book.outgoing(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"session/new","params":{{"cwd":"/w"}}}}"#
            ));
            book.incoming(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"sessionId":"{session}"}}}}"#
            ));
            last.insert(session.to_owned(), format!("g-{id}"));
        }
        book.outgoing(
            r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#
                .to_owned(),
        );
        assert_eq!(book.pending_ids(), ["3"]);
        let (attach, lost) = book.reattach_sessions(&last, Some("c0ffee"));
        assert!(lost.is_empty());
        let params: Vec<serde_json::Value> = attach
            .iter()
            .map(|r| serde_json::from_str::<serde_json::Value>(&r.line).unwrap()["params"].clone())
            .collect();
        assert_eq!(params[0]["previousConnectionId"], "c0ffee");
        assert_eq!(params[0]["resumeFrom"], "g-1");
        assert!(params[1].get("previousConnectionId").is_none());
        // The prompt still waits: its answer comes on the new connection.
        assert_eq!(book.pending_ids(), ["3"]);
    }

    #[test]
    fn a_permission_settled_elsewhere_is_withdrawn_from_this_client() {
        let mut book = Book::default();
        let resolved = r#"{"jsonrpc":"2.0","method":"_spindle/permission_resolved","params":{"sessionId":"1","requestId":"spindle-permission-1-3","outcome":{"outcome":"cancelled"}}}"#;
        assert_eq!(
            book.incoming(resolved),
            IncomingAction::Replace(
                r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"spindle-permission-1-3"}}"#
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_snapshot_is_kept_from_the_client_up_to_its_event_id() {
        let mut book = Book::default();
        let update =
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"7","update":{}}}"#;
        assert_eq!(
            book.incoming(
                r#"{"jsonrpc":"2.0","method":"_spindle/snapshot","params":{"sessionId":"7"}}"#
            ),
            IncomingAction::Swallow
        );
        assert_eq!(book.incoming(update), IncomingAction::Swallow);
        assert!(book.event_id_seen("7"));
        assert_eq!(book.incoming(update), IncomingAction::Deliver);
        assert!(!book.event_id_seen("7"));
    }

    #[test]
    fn the_opt_in_joins_the_client_extensions() {
        let line = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"_meta":{"spindle":{"extensions":["session_cleared"]}}}}"#;
        let with = with_remote_opt_in(line, &["event_ids"]);
        let value: serde_json::Value = serde_json::from_str(&with).unwrap();
        assert_eq!(
            value["params"]["_meta"]["spindle"],
            serde_json::json!({"extensions": ["session_cleared"], "remote": ["event_ids"]})
        );
        assert_eq!(with_remote_opt_in("[1]", &["event_ids"]), "[1]");
    }

    #[test]
    fn chunks_are_not_decoded_and_line_breaks_become_spaces() {
        let mut book = Book::default();
        assert!(!book.needs_probe(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"content":{"type":"text","text":"a \"result\" here"}}}}"#
        ));
        let mut out = Vec::new();
        one_line("{\"a\":\r\n 1}", &mut out);
        assert_eq!(out, b"{\"a\":   1}\n");
        // A response to an unknown id is delivered untouched.
        assert_eq!(
            book.incoming(r#"{"jsonrpc":"2.0","id":9,"result":{}}"#),
            IncomingAction::Deliver
        );
    }
}
