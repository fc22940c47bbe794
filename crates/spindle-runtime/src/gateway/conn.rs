//! `/acp` connections: the registry (limits, unguessable ids, idle reaping), one connection's
//! sessions (attachments with a role) and its connection-scoped outbox.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use crate::acp_feed::history::HistoryPolicy;
use crate::hub::EventId;
use crate::sync::lock;

/// Limits of the `/acp` endpoint.
#[derive(Debug, Clone, Copy)]
pub struct AcpLimits {
    /// Connections open at once; an `initialize` beyond gets 503.
    pub max_connections: usize,
    /// Sessions one connection may create or attach to.
    pub max_sessions_per_connection: usize,
    /// A connection with no open stream and no request for this long is closed.
    pub idle_timeout: Duration,
    /// Messages of the connection stream kept for a reconnect (`Last-Event-ID`).
    pub connection_ring: usize,
    /// Streams a connection may open for sessions it has not attached yet (the official client
    /// opens the session stream before `session/load`).
    pub max_pending_streams: usize,
}

impl Default for AcpLimits {
    fn default() -> Self {
        AcpLimits {
            max_connections: 256,
            max_sessions_per_connection: 64,
            idle_timeout: Duration::from_secs(300),
            connection_ring: 256,
            max_pending_streams: 16,
        }
    }
}

impl AcpLimits {
    /// The defaults, with overrides from the environment for small machines and tests:
    /// `SPINDLE_ACP_MAX_CONNECTIONS`, `SPINDLE_ACP_MAX_SESSIONS`, `SPINDLE_ACP_IDLE_MS`.
    pub fn from_env() -> AcpLimits {
        let read = |name: &str| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|n| *n > 0)
        };
        let mut limits = AcpLimits::default();
        if let Some(n) = read("SPINDLE_ACP_MAX_CONNECTIONS") {
            limits.max_connections = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(n) = read("SPINDLE_ACP_MAX_SESSIONS") {
            limits.max_sessions_per_connection = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(ms) = read("SPINDLE_ACP_IDLE_MS") {
            limits.idle_timeout = Duration::from_millis(ms);
        }
        limits
    }
}

/// What a client may do in a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Prompts, cancels, answers permission questions.
    Controller,
    /// Reads only.
    Observer,
}

impl Role {
    /// The role's wire name.
    pub fn name(self) -> &'static str {
        match self {
            Role::Controller => spindle_wire::remote::ROLE_CONTROLLER,
            Role::Observer => spindle_wire::remote::ROLE_OBSERVER,
        }
    }
}

/// One session a connection created or attached to.
#[derive(Debug)]
pub struct Attachment {
    /// What the connection may do in the session.
    pub role: Role,
    /// The history to send before the live messages (taken by the first stream).
    pub history: Option<String>,
    /// Where the session stream continues: the last event delivered (or the attach point).
    pub resume: EventId,
    /// Ends the current stream of this session when replaced or dropped.
    pub stop: Option<oneshot::Sender<()>>,
    /// The policy the client asked for (snapshots after a too-late resume are always full).
    pub policy: HistoryPolicy,
    /// Fired once the request that attached is answered (a `session/new` waits for the agent
    /// session): the session's stream sends nothing before, so the client learns the session
    /// before any of its updates. Taken by the first stream.
    pub answered: Option<oneshot::Receiver<()>>,
}

/// Where a new stream of an attached session starts (see [`Conn::start_session_stream`]).
#[derive(Debug)]
pub struct StreamStart {
    /// The history to send first, when not sent yet.
    pub history: Option<String>,
    /// The last event delivered, or the attach point.
    pub resume: EventId,
    /// Ends when a later stream replaces this one or the session is detached.
    pub stopped: oneshot::Receiver<()>,
    /// The attaching request's answer, when it is still to come.
    pub answered: Option<oneshot::Receiver<()>>,
}

/// The connection stream's messages: numbered, the recent ones kept for a reconnect.
#[derive(Debug, Default)]
struct Outbox {
    counter: u64,
    ring: VecDeque<(u64, Arc<str>)>,
    sender: Option<mpsc::Sender<(u64, Arc<str>)>>,
    /// The highest id handed to a stream.
    handed: u64,
}

/// The queue of one connection stream.
const OUTBOX_QUEUE: usize = 1024;

/// Who opened an `/acp` connection: only they may use it, and an observer may not control.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnUser {
    /// The user's name (`local` on an open server).
    pub name: String,
    /// Whether the user's role may create, prompt and attach as controller.
    pub may_control: bool,
}

/// The extensions a peer opted into in its `initialize` (`_meta.spindle.remote`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OptIns {
    /// `attach`.
    pub attach: bool,
    /// `event_ids`.
    pub event_ids: bool,
    /// `event_id_runs` (counts only with `event_ids`).
    pub event_id_runs: bool,
    /// `session_cwd`: session results say where the session runs.
    pub session_cwd: bool,
}

/// One `/acp` connection.
#[derive(Debug)]
pub struct Conn {
    /// The unguessable connection id (`Acp-Connection-Id`).
    pub id: Arc<str>,
    /// The protocol version agreed at `initialize` (0 until then, on WebSocket).
    pub protocol: Mutex<u16>,
    /// Opt-ins (`_meta.spindle.remote`): attach extension, event ids.
    pub opt_in: Mutex<OptIns>,
    state: Mutex<ConnState>,
    /// Bumped whenever a session is attached (pending streams wait on it).
    pub attached: tokio::sync::watch::Sender<u64>,
    /// Dropped when the connection ends: every stream of it ends.
    pub closed: tokio::sync::watch::Sender<bool>,
    /// The conversation's recording (`SPINDLE_ACP_RECORD_DIR`), if asked for.
    recording: Option<Mutex<std::fs::File>>,
    /// `clientInfo` (v1) or `info` (v2) of `initialize`, for `connectedClients`.
    pub client_info: Mutex<serde_json::Value>,
    /// Closed connections whose answers this one takes (`session/attach` with
    /// `previousConnectionId`, after a WebSocket reconnect).
    adopted: Mutex<Vec<Arc<str>>>,
    /// Who opened it (`None`: a connection outside the access check, in unit tests).
    user: Option<ConnUser>,
}

#[derive(Debug)]
struct ConnState {
    attachments: HashMap<String, Attachment>,
    outbox: Outbox,
    last_active: Instant,
    streams: usize,
    pending_streams: usize,
}

impl Conn {
    fn new(id: String) -> Conn {
        Conn {
            id: Arc::from(id),
            protocol: Mutex::new(0),
            opt_in: Mutex::new(OptIns::default()),
            state: Mutex::new(ConnState {
                attachments: HashMap::new(),
                outbox: Outbox::default(),
                last_active: Instant::now(),
                streams: 0,
                pending_streams: 0,
            }),
            attached: tokio::sync::watch::channel(0).0,
            closed: tokio::sync::watch::channel(false).0,
            recording: None,
            client_info: Mutex::new(serde_json::Value::Null),
            adopted: Mutex::new(Vec::new()),
            user: None,
        }
    }

    /// Who opened the connection.
    pub fn user(&self) -> Option<&ConnUser> {
        self.user.as_ref()
    }

    /// Whether the connection's user may control sessions (create, prompt, attach as
    /// controller). A connection without a user is the open server's.
    pub fn may_control(&self) -> bool {
        self.user.as_ref().is_none_or(|user| user.may_control)
    }

    /// The protocol version agreed at `initialize` (1 before it).
    pub fn protocol(&self) -> u16 {
        (*lock(&self.protocol)).max(1)
    }

    /// Whether answers addressed to `connection` are this connection's (its own, or those of
    /// a closed connection it took over).
    pub fn answers_for(&self, connection: &str) -> bool {
        &*self.id == connection || lock(&self.adopted).iter().any(|c| &**c == connection)
    }

    /// Takes over the answers of the closed connection `previous`.
    pub fn adopt(&self, previous: Arc<str>) {
        let mut adopted = lock(&self.adopted);
        if !adopted.contains(&previous) {
            adopted.push(previous);
        }
    }

    /// Records what the client sent (`{"sent": ...}`) when recording.
    pub fn record_sent(&self, message: &serde_json::Value) {
        if self.recording.is_some() {
            self.record_line(&serde_json::json!({ "sent": message }).to_string());
        }
    }

    /// Records a message Spindle sent when recording.
    pub fn record_received(&self, text: &str) {
        if self.recording.is_some() {
            self.record_line(text);
        }
    }

    fn record_line(&self, line: &str) {
        use std::io::Write;
        if let Some(file) = &self.recording {
            let _ = writeln!(lock(file), "{line}");
        }
    }

    /// A connection outside any registry (unit tests).
    #[cfg(test)]
    pub fn for_test() -> Conn {
        Conn::new("test".into())
    }

    /// Notes activity (requests keep a connection from being reaped).
    pub fn touch(&self) {
        lock(&self.state).last_active = Instant::now();
    }

    /// Whether the attach extension was opted into.
    pub fn opted_attach(&self) -> bool {
        lock(&self.opt_in).attach
    }

    /// Whether event ids were opted into.
    pub fn opted_event_ids(&self) -> bool {
        lock(&self.opt_in).event_ids
    }

    /// What the peer opted into (read once per write of a socket).
    pub fn opt_ins(&self) -> OptIns {
        *lock(&self.opt_in)
    }

    /// Queues a message on the connection stream.
    pub fn send(&self, message: String, ring_limit: usize) {
        self.record_received(&message);
        let mut state = lock(&self.state);
        let outbox = &mut state.outbox;
        outbox.counter += 1;
        let entry: (u64, Arc<str>) = (outbox.counter, Arc::from(message));
        outbox.ring.push_back(entry.clone());
        while outbox.ring.len() > ring_limit.max(1) {
            outbox.ring.pop_front();
        }
        if let Some(sender) = &outbox.sender {
            match sender.try_send(entry) {
                Ok(()) => outbox.handed = outbox.counter,
                // A stalled stream is dropped; a reconnect catches up from the ring.
                Err(_) => outbox.sender = None,
            }
        }
    }

    /// Opens the connection stream (replacing an earlier one): first the messages after
    /// `last_seen` (or those never handed to a stream), then live ones. `None` when the ring
    /// no longer holds what was missed.
    pub fn subscribe_outbox(
        &self,
        last_seen: Option<u64>,
    ) -> Option<mpsc::Receiver<(u64, Arc<str>)>> {
        let mut state = lock(&self.state);
        let outbox = &mut state.outbox;
        let after = last_seen.unwrap_or(outbox.handed).min(outbox.counter);
        let oldest = outbox.ring.front().map_or(outbox.counter + 1, |(n, _)| *n);
        if after + 1 < oldest {
            return None;
        }
        let backlog: Vec<_> = outbox
            .ring
            .iter()
            .filter(|(n, _)| *n > after)
            .cloned()
            .collect();
        let (sender, receiver) = mpsc::channel(backlog.len() + OUTBOX_QUEUE);
        for entry in backlog {
            let _ = sender.try_send(entry);
        }
        outbox.handed = outbox.counter;
        outbox.sender = Some(sender);
        Some(receiver)
    }

    /// Attaches a session (replacing an earlier attachment of the same session).
    pub fn attach(&self, session_id: &str, attachment: Attachment) {
        lock(&self.state)
            .attachments
            .insert(session_id.to_string(), attachment);
        self.attached.send_modify(|n| *n += 1);
    }

    /// Detaches a session; its stream ends. False when it was not attached.
    pub fn detach(&self, session_id: &str) -> bool {
        lock(&self.state).attachments.remove(session_id).is_some()
    }

    /// The role of an attached session.
    pub fn attachment(&self, session_id: &str) -> Option<Role> {
        lock(&self.state)
            .attachments
            .get(session_id)
            .map(|a| a.role)
    }

    /// How many sessions are attached.
    pub fn session_count(&self) -> usize {
        lock(&self.state).attachments.len()
    }

    /// Starts a stream of an attached session: its pending history, where to continue, and
    /// the receiver that ends when a later stream replaces this one or the session is detached.
    pub fn start_session_stream(&self, session_id: &str) -> Option<StreamStart> {
        let mut state = lock(&self.state);
        let attachment = state.attachments.get_mut(session_id)?;
        let (stop, stopped) = oneshot::channel();
        attachment.stop = Some(stop);
        Some(StreamStart {
            history: attachment.history.take(),
            resume: attachment.resume,
            stopped,
            answered: attachment.answered.take(),
        })
    }

    /// Records the last event a session stream delivered (a reconnect without `Last-Event-ID`
    /// continues there).
    pub fn delivered(&self, session_id: &str, id: EventId) {
        if let Some(a) = lock(&self.state).attachments.get_mut(session_id) {
            a.resume = id;
        }
    }

    /// Counts an open stream (streams keep the connection from being reaped).
    pub fn stream_opened(self: &Arc<Self>) -> StreamGuard {
        let mut state = lock(&self.state);
        state.streams += 1;
        state.last_active = Instant::now();
        StreamGuard {
            conn: self.clone(),
            pending: false,
        }
    }

    /// Counts a stream waiting for its session to be attached; `None` beyond the limit.
    pub fn pending_stream(self: &Arc<Self>, limit: usize) -> Option<StreamGuard> {
        let mut state = lock(&self.state);
        if state.pending_streams >= limit {
            return None;
        }
        state.pending_streams += 1;
        state.streams += 1;
        Some(StreamGuard {
            conn: self.clone(),
            pending: true,
        })
    }

    fn idle_since(&self) -> Option<Instant> {
        let state = lock(&self.state);
        (state.streams == 0).then_some(state.last_active)
    }

    /// Ends the connection: every stream ends, attachments are dropped.
    pub fn close(&self) {
        let _ = self.closed.send(true);
        let mut state = lock(&self.state);
        state.attachments.clear();
        state.outbox.sender = None;
    }
}

/// Held by an open stream; counts it for the idle reaper.
#[derive(Debug)]
pub struct StreamGuard {
    conn: Arc<Conn>,
    pending: bool,
}

impl StreamGuard {
    /// The pending stream's session was attached: it is an ordinary stream now.
    pub fn confirm(&mut self) {
        if self.pending {
            self.pending = false;
            lock(&self.conn.state).pending_streams -= 1;
        }
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let mut state = lock(&self.conn.state);
        state.streams -= 1;
        if self.pending {
            state.pending_streams -= 1;
        }
        state.last_active = Instant::now();
    }
}

/// Every open connection.
#[derive(Debug)]
pub struct Connections {
    map: Mutex<HashMap<String, Arc<Conn>>>,
    /// Recently closed connections, with the connections whose answers they had taken, for a
    /// reattach (`previousConnectionId`): oldest first, bounded, each for [`RETIRED_FOR`].
    retired: Mutex<VecDeque<Retired>>,
    /// The limits every connection is held to.
    pub limits: AcpLimits,
}

/// A closed connection that a reconnecting client may still take over.
#[derive(Debug)]
struct Retired {
    id: Arc<str>,
    /// The closed connections whose answers it had taken over.
    adopted: Vec<Arc<str>>,
    at: Instant,
}

/// How many closed connections may still be taken over.
const RETIRED: usize = 4096;
/// How long a closed connection may still be taken over.
const RETIRED_FOR: Duration = Duration::from_secs(600);

impl Connections {
    /// No connection yet.
    pub fn new(limits: AcpLimits) -> Connections {
        Connections {
            map: Mutex::new(HashMap::new()),
            retired: Mutex::new(VecDeque::new()),
            limits,
        }
    }

    /// A new connection with an unguessable id; `None` at the connection limit or when the
    /// system has no randomness to give.
    pub fn create(&self) -> Option<Arc<Conn>> {
        self.create_for(None)
    }

    /// [`Connections::create`] for `user`: only requests of the same user may use it.
    pub fn create_for(&self, user: Option<ConnUser>) -> Option<Arc<Conn>> {
        let id = random_id()?;
        let mut map = lock(&self.map);
        if map.len() >= self.limits.max_connections {
            return None;
        }
        let mut conn = Conn::new(id.clone());
        conn.recording = recording(&id).map(Mutex::new);
        conn.user = user;
        let conn = Arc::new(conn);
        map.insert(id, conn.clone());
        Some(conn)
    }

    /// The open connection `id`.
    pub fn get(&self, id: &str) -> Option<Arc<Conn>> {
        let conn = lock(&self.map).get(id).cloned()?;
        conn.touch();
        Some(conn)
    }

    /// Closes connection `id` and returns it.
    pub fn remove(&self, id: &str) -> Option<Arc<Conn>> {
        let conn = lock(&self.map).remove(id)?;
        conn.close();
        let mut retired = lock(&self.retired);
        retired.push_back(Retired {
            id: conn.id.clone(),
            adopted: lock(&conn.adopted).clone(),
            at: Instant::now(),
        });
        while retired.len() > RETIRED {
            retired.pop_front();
        }
        Some(conn)
    }

    /// Hands the answers of the connection `previous` (closed now if it was still open, and of
    /// those it had taken over) to `conn`, once: knowing its unguessable id proves it was the
    /// client's.
    /// False when `previous` is not a recently closed connection.
    pub fn take_over(&self, conn: &Conn, previous: &str) -> bool {
        // Its client moved on: a connection the server has not yet seen closed is closed now.
        self.remove(previous);
        let mut retired = lock(&self.retired);
        let now = Instant::now();
        retired.retain(|r| now.duration_since(r.at) < RETIRED_FOR);
        let Some(at) = retired.iter().position(|r| &*r.id == previous) else {
            return false;
        };
        let Some(Retired { id, adopted, .. }) = retired.remove(at) else {
            return false;
        };
        conn.adopt(id);
        for id in adopted {
            conn.adopt(id);
        }
        true
    }

    /// The clients attached to `session`, with their role (`connectedClients`).
    pub fn attached_to(&self, session: &str) -> Vec<serde_json::Value> {
        let conns: Vec<Arc<Conn>> = lock(&self.map).values().cloned().collect();
        conns
            .iter()
            .filter_map(|c| {
                let role = c.attachment(session)?;
                let info = lock(&c.client_info).clone();
                let mut client = serde_json::json!({
                    "name": info.get("name").and_then(|n| n.as_str()).unwrap_or("unknown"),
                    "role": role.name(),
                });
                if let Some(version) = info.get("version").and_then(|v| v.as_str()) {
                    client["version"] = serde_json::Value::String(version.to_string());
                }
                Some(client)
            })
            .collect()
    }

    /// Closes the connections idle (no stream, no request) for longer than the limit.
    pub fn reap(&self, now: Instant) -> usize {
        let idle: Vec<String> = lock(&self.map)
            .iter()
            .filter(|(_, c)| {
                c.idle_since()
                    .is_some_and(|since| now.duration_since(since) >= self.limits.idle_timeout)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &idle {
            self.remove(id);
        }
        idle.len()
    }

    /// Closes every connection `name` opened (a user removed from the users file). Returns
    /// how many.
    pub fn close_user(&self, name: &str) -> usize {
        let ids: Vec<String> = lock(&self.map)
            .iter()
            .filter(|(_, conn)| conn.user.as_ref().is_some_and(|u| u.name == name))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &ids {
            self.remove(id);
        }
        ids.len()
    }

    /// Closes every connection (server shutdown).
    pub fn close_all(&self) {
        let all: Vec<Arc<Conn>> = lock(&self.map).drain().map(|(_, c)| c).collect();
        for conn in all {
            conn.close();
        }
    }
}

/// The recording file of a connection: `SPINDLE_ACP_RECORD_DIR/agent-acp-ID.jsonl` in the
/// `spindle replay` format (what the client sent as `{"sent": ...}`, what Spindle sent bare),
/// for checking every message Spindle sends against the official schemas (`interop/run.sh`).
fn recording(id: &str) -> Option<std::fs::File> {
    let dir = std::env::var_os("SPINDLE_ACP_RECORD_DIR")?;
    let path = std::path::Path::new(&dir).join(format!("agent-acp-{id}.jsonl"));
    match std::fs::File::create(&path) {
        Ok(file) => Some(file),
        Err(error) => {
            tracing::warn!("cannot record {}: {error}", path.display());
            None
        }
    }
}

/// 128 random bits from the operating system, as hex.
fn random_id() -> Option<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(rx: &mut mpsc::Receiver<(u64, Arc<str>)>) -> Vec<u64> {
        let mut out = Vec::new();
        while let Ok((n, _)) = rx.try_recv() {
            out.push(n);
        }
        out
    }

    #[test]
    fn the_connection_stream_delivers_what_came_before_it_and_resumes_from_an_id() {
        let conn = Conn::new("c".into());
        conn.send("a".into(), 4);
        conn.send("b".into(), 4);
        let mut rx = conn.subscribe_outbox(None).unwrap();
        assert_eq!(drain(&mut rx), [1, 2]);
        conn.send("c".into(), 4);
        assert_eq!(drain(&mut rx), [3]);
        // A reconnect with its last id gets exactly what followed it.
        let mut again = conn.subscribe_outbox(Some(1)).unwrap();
        assert_eq!(drain(&mut again), [2, 3]);
        for n in 0..6 {
            conn.send(format!("{n}"), 4);
        }
        // Older than the ring: refused (the client learns it missed messages).
        assert!(conn.subscribe_outbox(Some(2)).is_none());
        let mut latest = conn.subscribe_outbox(Some(6)).unwrap();
        assert_eq!(drain(&mut latest), [7, 8, 9]);
    }

    #[test]
    fn idle_connections_are_reaped_but_not_those_with_a_stream() {
        let limits = AcpLimits {
            idle_timeout: Duration::from_millis(10),
            ..AcpLimits::default()
        };
        let conns = Connections::new(limits);
        let idle = conns.create().unwrap();
        let busy = conns.create().unwrap();
        assert_ne!(idle.id, busy.id);
        assert_eq!(idle.id.len(), 32);
        let guard = busy.stream_opened();
        let later = Instant::now() + Duration::from_secs(1);
        assert_eq!(conns.reap(later), 1);
        assert!(conns.get(&idle.id).is_none());
        assert!(conns.get(&busy.id).is_some());
        drop(guard);
        assert_eq!(conns.reap(Instant::now() + Duration::from_secs(2)), 1);
    }

    #[test]
    fn the_connection_limit_holds_and_closing_frees_a_place() {
        let limits = AcpLimits {
            max_connections: 1,
            ..AcpLimits::default()
        };
        let conns = Connections::new(limits);
        let first = conns.create().unwrap();
        assert!(conns.create().is_none());
        let mut closed = first.closed.subscribe();
        conns.remove(&first.id);
        assert!(*closed.borrow_and_update());
        assert!(conns.create().is_some());
    }
}
