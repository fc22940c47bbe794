//! The remote transport's vocabulary (RFD "Streamable HTTP & WebSocket transport"): the endpoint,
//! its headers, and Spindle's extensions of it (multi-client attach after the open proposal
//! "Multi-Client Session Attach", event ids for resumption).
//!
//! A peer opts into the extensions by listing their names in `_meta.spindle.remote` of its
//! `initialize` request (e.g. `["attach", "event_ids"]`); Spindle emits the extension
//! notifications only to peers that did.

/// The one endpoint path.
pub const ACP_PATH: &str = "/acp";
/// The connection id header (returned by `initialize`, required on every later request).
pub const HEADER_CONNECTION_ID: &str = "acp-connection-id";
/// The session id header (session-scoped POSTs and the session-scoped GET stream).
pub const HEADER_SESSION_ID: &str = "acp-session-id";
/// The SSE resume header (standard `Last-Event-ID`).
pub const HEADER_LAST_EVENT_ID: &str = "last-event-id";
/// The media type of POST bodies and of the `initialize` answer.
pub const JSON_MIME: &str = "application/json";
/// The media type a GET must accept.
pub const EVENT_STREAM_MIME: &str = "text/event-stream";
/// The largest POST body (the reference implementations' limit): 16 MiB.
pub const MAX_POST_BODY: usize = 16 << 20;

/// The member of `_meta.spindle` listing the remote extensions a peer opts into.
pub const REMOTE_OPT_IN_KEY: &str = "remote";
/// Opt-in name: `session/attach`, `session/detach`, roles and `_spindle/permission_resolved`.
pub const OPT_IN_ATTACH: &str = "attach";
/// Opt-in name: event ids (`_spindle/event_id` on WebSocket) and `_spindle/stream_dropped`.
pub const OPT_IN_EVENT_IDS: &str = "event_ids";
/// Opt-in name (with [`OPT_IN_EVENT_IDS`]): one `_spindle/event_id` may announce a run of
/// messages ([`EVENT_ID_COUNT`]) instead of coming before each.
pub const OPT_IN_EVENT_ID_RUNS: &str = "event_id_runs";
/// Opt-in name: `_meta.spindle.cwd` in `session/new`, `session/load`, `session/resume` and
/// `session/attach` results: the directory the session runs in on the server (which is not the
/// client's own when the server refused the client's `cwd`).
pub const OPT_IN_SESSION_CWD: &str = "session_cwd";
/// The member of `_meta.spindle` of a session result naming the session's directory.
pub const SESSION_CWD: &str = "cwd";

/// `session/attach` (proposal): join a running session as controller or observer.
pub const SESSION_ATTACH: &str = "session/attach";
/// `session/detach` (proposal): leave a session; it goes on for the others.
pub const SESSION_DETACH: &str = "session/detach";
/// The notification telling every other client how a permission question was settled.
pub const PERMISSION_RESOLVED: &str = "_spindle/permission_resolved";
/// The notification telling a WebSocket peer the event id of the session message before it.
pub const EVENT_ID_NOTIFICATION: &str = "_spindle/event_id";
/// The notification telling a peer that its stream was dropped (it fell behind).
pub const STREAM_DROPPED: &str = "_spindle/stream_dropped";
/// The notification telling a resuming peer that what follows is a snapshot (the buffer no
/// longer held what it missed): it should clear what it shows of the session first.
pub const SNAPSHOT_NOTIFICATION: &str = "_spindle/snapshot";

/// `role` of `session/attach`.
pub const ROLE: &str = "role";
/// Role: may prompt, cancel and answer permission questions.
pub const ROLE_CONTROLLER: &str = "controller";
/// Role: receives the session read-only.
pub const ROLE_OBSERVER: &str = "observer";
/// `historyPolicy` of `session/attach`.
pub const HISTORY_POLICY: &str = "historyPolicy";
/// History policy: the whole session first (the default).
pub const HISTORY_FULL: &str = "full";
/// History policy: only the open permission questions first.
pub const HISTORY_PENDING_ONLY: &str = "pending_only";
/// History policy: nothing first, live messages only.
pub const HISTORY_NONE: &str = "none";
/// `resumeFrom` of `session/attach` (WebSocket resumption): the last event id seen.
pub const RESUME_FROM: &str = "resumeFrom";
/// `eventId` (of `_spindle/event_id`).
pub const EVENT_ID: &str = "eventId";
/// `count` (of `_spindle/event_id`, to peers that opted into [`OPT_IN_EVENT_ID_RUNS`]): the next
/// `count` messages on the socket are the session's, with the ids `G-N`, `G-(N+1)`, ... from
/// the announced `G-N`. Absent: 1.
pub const EVENT_ID_COUNT: &str = "count";
/// `requestId` (of `_spindle/permission_resolved`).
pub const REQUEST_ID: &str = "requestId";
/// `outcome` (of `_spindle/permission_resolved`).
pub const OUTCOME: &str = "outcome";
/// `reason` (of `_spindle/stream_dropped`).
pub const REASON: &str = "reason";
/// `toolCallId` (of `_spindle/permission_resolved`, as the proposal's `permission_resolved`).
pub const TOOL_CALL_ID: &str = "toolCallId";
/// `chosenOptionId` (of `_spindle/permission_resolved`, as the proposal's).
pub const CHOSEN_OPTION_ID: &str = "chosenOptionId";
/// `previousConnectionId` of `session/attach`: the connection (closed) whose pending answers
/// this one takes over (WebSocket reattach).
pub const PREVIOUS_CONNECTION_ID: &str = "previousConnectionId";
/// `connectedClients` of the `session/attach` result (the proposal's).
pub const CONNECTED_CLIENTS: &str = "connectedClients";
/// `session/attach` error: no such session (the proposal's code).
pub const ERROR_SESSION_NOT_FOUND: i64 = -32001;
