//! The session task's state and the values it exchanges: the task itself ([`SessionTask`]), the
//! commands front ends send it, its queued prompts, the agent it runs and the host's answers.
//! Every other module of the task uses these; this one uses none of them, so the task's files
//! import each other one way only.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use spindle_host::{Host, HostEvent, HostReply, PendingWrite};
use spindle_protocol::RequestId;
use tokio::sync::{mpsc, oneshot};

use crate::agent_link::AgentLink;
use crate::core::SessionCore;
use crate::error::SessionError;
use crate::handshake::{AgentClient, AgentSettings, OpenMode, Startup};
use crate::replica::{LeaseHold, Replica};
use crate::store::Store;

/// The answer an HTTP handler waits for.
pub(crate) type Reply = oneshot::Sender<Result<(), SessionError>>;

/// The answer an HTTP handler waits for, with a JSON value.
pub(crate) type ValueReply = oneshot::Sender<Result<Value, SessionError>>;

/// A mode or option change waiting for the agent session to open (`idle.rs`).
#[derive(Debug)]
pub(crate) enum DeferredSetting {
    Mode(String, ValueReply),
    Config(String, Value, ValueReply),
}

/// The answer to a prompt: what became of it.
pub(crate) type PromptReply = oneshot::Sender<Result<PromptOutcome, SessionError>>;

/// What became of a prompt the session accepted.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PromptOutcome {
    /// Written to the agent (or waiting for the agent to start).
    Sent,
    /// A v1 agent's turn runs: queued, sent when the turn ends. The item as the API shows it
    /// (`{id, text, position, images, acp}`, see `crate::prompt_queue`).
    Queued(Value),
    /// Sent to the replica that runs the session (it queues it when a turn runs there).
    Forwarded,
}

/// A change of the prompt queue asked for by a front end (see `task/queue.rs`).
#[derive(Debug)]
pub(crate) enum QueueChange {
    /// The item's text becomes `text`.
    Edit { id: String, text: String },
    /// The item leaves the queue unsent.
    Remove { id: String },
    /// The running turn is cancelled and the item sent next.
    SendNow { id: String },
}

/// What HTTP handlers ask of a session task.
#[derive(Debug)]
pub(crate) enum Command {
    StartAgent,
    Prompt {
        text: String,
        images: Vec<PromptImage>,
        /// An `/acp` client's prompt (see [`Command::RemotePrompt`]).
        remote: Option<(Value, RemoteTarget)>,
        reply: PromptReply,
    },
    /// A prompt from an `/acp` client: its blocks as sent; the agent's answer goes to the
    /// client's stream (`SessionCore::acp`), in order with the updates.
    RemotePrompt {
        blocks: Value,
        target: RemoteTarget,
        reply: PromptReply,
    },
    /// Edit, remove or send now a queued prompt.
    Queue {
        change: QueueChange,
        reply: ValueReply,
    },
    /// `command` on behalf of `author` (`spindle serve --users`: see `task/authors.rs`).
    As {
        author: String,
        command: Box<Command>,
    },
    Cancel(Reply),
    Permission {
        key: String,
        option_id: Option<String>,
        reply: Reply,
    },
    /// Answer an elicitation: `accept` (with `content` for a form), `decline` or `cancel`.
    Elicitation {
        key: String,
        action: String,
        content: Option<Value>,
        reply: Reply,
    },
    /// Forget a standing ("always") permission rule.
    ForgetPermission {
        key: String,
        reply: Reply,
    },
    /// Accept or reject a pending file write (named by any of the keys).
    Review {
        keys: Vec<String>,
        accept: bool,
        reply: Reply,
    },
    Authenticate {
        method_id: String,
        reply: ValueReply,
    },
    SetMode {
        mode_id: String,
        reply: ValueReply,
    },
    SetConfig {
        config_id: String,
        value: Value,
        reply: ValueReply,
    },
    /// What the agent offers and how the session is set up.
    AgentInfo(oneshot::Sender<Value>),
    /// Answered when the agent session is open (true) or cannot open now (false): at once when
    /// it is open, or when no agent is starting.
    WhenAgentSessionOpen(oneshot::Sender<bool>),
    Stop(oneshot::Sender<()>),
    /// Another replica queued commands for this session in the database (see
    /// [`crate::replica`]): taken when this replica runs the session.
    TakeForwarded,
    /// Nobody runs the session and it has work left (see [`crate::replica::takeover`]): claim
    /// it and start the agent, unless another replica is quicker. With the lease its last
    /// owner let expire, if any.
    TakeOver(Option<spindle_store::Lease>),
    /// Lines another replica logged were applied, and this task waits for some (the answers
    /// to `/acp` prompts it forwarded; see `forward.rs`).
    Followed,
    /// The user named the session: its first prompt no longer titles it.
    Renamed,
    /// `session/fork` of the open agent session (`task/lifecycle.rs`).
    ForkAgentSession(ValueReply),
    /// `session/delete` of the session's agent session.
    DeleteAgentSession(ValueReply),
    /// `logout` (v2 `auth/logout`); the session then needs a sign-in.
    Logout(ValueReply),
    /// The session's checkpoints: list, diff or restore (`task/checkpoint.rs`).
    Checkpoints {
        request: CheckpointRequest,
        reply: ValueReply,
    },
}

/// What a front end asks of the session's checkpoints; a checkpoint is named by its path
/// segment (`N` or `restore-K`, see `crate::checkpoints`).
#[derive(Debug)]
pub enum CheckpointRequest {
    /// The checkpoints and restores the log noted.
    List,
    /// What restoring the checkpoint would change.
    Diff(String),
    /// Put the files back as the checkpoint holds them.
    Restore(String),
}

/// A checkpoint job that ran off the task (the `git` binary can take long).
#[derive(Debug)]
pub(crate) enum CheckpointDone {
    /// The snapshot before the turn `turn` the next prompt opens.
    Snapshot {
        turn: u64,
        result: Result<spindle_host::checkpoints::Checkpoint, String>,
    },
    /// A diff, answered.
    Diffed {
        result: Result<Value, SessionError>,
        reply: ValueReply,
    },
    /// A restore.
    Restored {
        target: spindle_host::checkpoints::CheckpointId,
        result: Result<spindle_host::checkpoints::Restored, SessionError>,
        reply: ValueReply,
    },
}

/// The session task's side of checkpoints (see `task/checkpoint.rs`).
#[derive(Debug)]
pub(crate) struct CheckpointJobs {
    /// The session's checkpoint directory, once known.
    pub(super) dir: Option<PathBuf>,
    /// A snapshot or a restore runs: prompts wait for it, restores are refused.
    pub(super) running: bool,
    /// While `flush_queued` runs after a snapshot: the turn it was taken for and the
    /// checkpoint (or why there is none), for the prompt sent next.
    pub(super) taken: Option<(u64, Result<spindle_host::checkpoints::Checkpoint, String>)>,
    pub(super) done: (
        mpsc::UnboundedSender<CheckpointDone>,
        mpsc::UnboundedReceiver<CheckpointDone>,
    ),
}

/// The session task takes the agent link's queued reads for one batch until they hold this many
/// lines (a batch is whole reads: it may end past it by one read's lines), so that a fast stream
/// is handed to the log writer and the engine in as few batches as the agent's pace allows.
pub(super) const MAX_BATCH: usize = 1024;

/// The reads of the agent's output (up to 64 KiB each) the agent link queues ahead of the
/// session task. Beyond them the link stops reading and the agent blocks on its pipe: the agent
/// goes at the session's pace instead of taking the CPU the session's `/acp` writers need (with
/// 1,024 reads queued, a fast agent ran tens of megabytes ahead and a `/acp` client reading
/// as fast as it could was dropped as too slow).
pub(super) const LINK_QUEUE_READS: usize = 2;

/// One agent process: the pipe, the ACP client state and the host of that process.
pub(super) struct RunningAgent {
    pub(super) link: AgentLink,
    pub(super) client: AgentClient,
    pub(super) host: Host,
    pub(super) host_events: mpsc::UnboundedReceiver<HostEvent>,
    /// Which of the task's processes this is (host answers of an earlier one are dropped).
    pub(super) process: u64,
}

/// A prompt waiting for the agent to be ready (the prompts waiting for a v1 turn to end are
/// the log's, see `crate::prompt_queue`).
#[derive(Debug)]
pub(super) struct QueuedPrompt {
    pub(super) text: String,
    pub(super) images: Vec<PromptImage>,
    /// An `/acp` client's prompt: its blocks and where the answer goes.
    pub(super) remote: Option<(Value, RemoteTarget)>,
    /// An `/acp` prompt another replica forwarded: its blocks (the answer goes to the log, see
    /// `forward.rs`).
    pub(super) acp_forwarded: Option<Value>,
    /// The id of the forwarded command this prompt came from (taken here from the database):
    /// the line that sends it to the agent goes to the log with a note naming the command.
    pub(super) command: Option<String>,
    /// An item of the log's queue being sent: its text, images or blocks are read from the
    /// queue when the prompt is sent (an edit until then counts), and the note that it left the
    /// queue is logged with the prompt request.
    pub(super) queue_item: Option<String>,
    /// Who sent it (`spindle serve --users`), noted in the log with its request.
    pub(super) author: Option<String>,
    pub(super) reply: PromptReply,
}

/// Which `/acp` request a prompt answers: the connection and the client's request id.
#[derive(Debug, Clone)]
pub struct RemoteTarget {
    /// The connection that sent the prompt.
    pub connection: Arc<str>,
    /// The client's request id.
    pub id: Value,
}

pub(crate) struct SessionTask {
    pub(super) id: i64,
    pub(super) core: Arc<Mutex<SessionCore>>,
    pub(super) store: Store,
    pub(super) settings: Arc<AgentSettings>,
    /// The agent the session runs, as recorded (`None`: the default one).
    pub(super) recorded_agent: Option<spindle_store::SessionAgent>,
    pub(super) generation: u64,
    pub(super) agent: Option<RunningAgent>,
    /// Agent processes started by this task, for request ids unique in the log.
    pub(super) processes: u64,
    pub(super) startup: Startup,
    /// Prompts waiting for the agent to be ready.
    pub(super) queued: VecDeque<QueuedPrompt>,
    /// Who waits for the agent session to open (an `/acp` `session/new` answered with the
    /// agent's modes and options): true when it opened, false when it cannot yet (the start
    /// failed, the agent wants a sign-in, the agent exited).
    pub(super) opening_waiters: Vec<oneshot::Sender<bool>>,
    /// Mode and option changes waiting for the agent session to open (`idle.rs`).
    pub(super) deferred_settings: Vec<DeferredSetting>,
    pub(super) v1_turn_running: bool,
    /// Where the answers of the `/acp` prompts held in the log's queue go, by item id (lost
    /// with this process: a restart sends such an item with its answer in the log only).
    pub(super) queued_targets: HashMap<String, RemoteTarget>,
    /// "Send now" cancelled the turn: the item the turn's end sends although it was cancelled.
    pub(super) send_next: Option<String>,
    /// Queue notes logged in the next batch of the client's lines (an item's `sent` note with
    /// the prompt request it became).
    pub(super) queue_notes: Vec<String>,
    /// Open agent requests (permission questions) by key: the JSON text of the id.
    pub(super) agent_requests: HashMap<String, RequestId>,
    /// Open `elicitation/create` requests by key, with what they ask.
    pub(super) elicitations: HashMap<String, (RequestId, spindle_host::Elicitation)>,
    /// File writes waiting for the user's decision, by key (the JSON text of the request id).
    pub(super) reviews: HashMap<String, (RequestId, PendingWrite)>,
    /// Requests asked for from the page, answered when the agent answers.
    pub(super) waiting: HashMap<RequestId, ValueReply>,
    /// Prompts of `/acp` clients in flight, by the agent request's id.
    pub(super) remote_prompts: HashMap<RequestId, RemoteTarget>,
    /// The working directory of the agent session: the host's root.
    pub(super) root: PathBuf,
    pub(super) host_done: (
        mpsc::UnboundedSender<HostDone>,
        mpsc::UnboundedReceiver<HostDone>,
    ),
    pub(super) titled: bool,
    /// The agent's title (`session_info_update`) last written to the store as the session's.
    pub(super) agent_title: Option<String>,
    pub(super) startup_deadline: Option<tokio::time::Instant>,
    /// The last line between the session and its agent, or terminal output (`idle.rs`).
    pub(super) last_agent_activity: tokio::time::Instant,
    /// This replica, and the session's lease while the agent runs here.
    pub(super) replica: Arc<Replica>,
    pub(super) lease: Option<LeaseHold>,
    /// The other replica's lease the queued prompts wait on, and when to claim again.
    pub(super) lease_wait: Option<(spindle_store::Lease, tokio::time::Instant)>,
    /// Set while a takeover claims the lease: the replica that ran the session, if known.
    pub(super) taking_over: Option<Option<String>>,
    /// `/acp` prompts this replica forwarded, by command id, until the owner's note names the
    /// agent request they became; then by that request's key, until its answer is logged.
    pub(super) forwarded_acp: HashMap<String, RemoteTarget>,
    pub(super) forwarded_turns: HashMap<String, RemoteTarget>,
    /// The last line of the log read for those answers.
    pub(super) forward_cursor: i64,
    /// Set while answers of forwarded prompts are awaited: the follower then tells the task
    /// when lines were logged (shared with the session's `LiveSession`).
    pub(super) awaits_log: Arc<AtomicBool>,
    /// Notes naming forwarded commands taken here, (command id, note), logged in the batch of
    /// the lines the commands led to (see `forward.rs`).
    pub(super) command_notes: Vec<(String, String)>,
    /// Commands whose notes were recorded and are not yet marked finished in the database.
    pub(super) noted_commands: Vec<String>,
    /// Forwarded prompts taken here, until they were sent to the agent or refused.
    /// The user the command being handled is for (`task/authors.rs`).
    pub(super) acting: Option<String>,
    pub(super) command_outcomes: Vec<(
        String,
        oneshot::Receiver<Result<PromptOutcome, SessionError>>,
    )>,
    /// Checkpoints before turns, restores.
    pub(super) checkpoints: CheckpointJobs,
}

/// How a session task starts.
#[derive(Debug)]
pub(crate) struct TaskStart {
    pub(crate) id: i64,
    pub(crate) generation: u64,
    /// The agent session to continue or open.
    pub(crate) agent_session_id: Option<String>,
    pub(crate) open: OpenMode,
    /// The session's working directory.
    pub(crate) root: PathBuf,
    /// The agent the session runs, as recorded (`None`: the default one).
    pub(crate) agent: Option<spindle_store::SessionAgent>,
    /// Its MCP servers, extra directories and parent, as recorded.
    pub(crate) setup: spindle_store::SessionSetup,
}

/// The key of an agent request in the page: the JSON text of its id.
pub(super) fn request_key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_else(|_| id.to_string())
}

/// An image of a prompt, as the page sent it.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptImage {
    /// `image/png`, ...
    pub mime_type: String,
    /// Base64.
    pub data: String,
}

/// A host request finished.
#[derive(Debug)]
pub(crate) struct HostDone {
    /// The agent process that asked.
    pub(super) process: u64,
    pub(super) request_id: RequestId,
    pub(super) reply: HostReply,
}
