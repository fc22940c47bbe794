//! The interface both stores implement.

use crate::listen::LogChange;
use crate::replay_save::ReplaySave;
use crate::types::{
    Direction, Lease, LeaseSurvey, LoggedLine, SessionAgent, SessionSetup, StoreError, StoredReply,
    StoredSession, TakenCommand, TitleSource, WirePage, WireWindow,
};

/// The tables whose rows belong to one session (`session_id`), deleted with it.
pub(crate) const SESSION_TABLES: [&str; 7] = [
    "commands",
    "session_leases",
    "replies",
    "transcript_items",
    "transcripts",
    "wire_log",
    "wire_batches",
];

/// The storage of `spindle serve`. Every method is one transaction: it commits whole or not at
/// all. Implementations are shared between threads (`&self` methods); writes to one session come
/// from one writer at a time (its session task).
pub trait Store: Send + Sync + std::fmt::Debug {
    /// What the store is, for messages: `SQLite file PATH` or `PostgreSQL at HOST:PORT/DB`
    /// (never a password).
    fn describe(&self) -> String;

    /// The schema version the database is at (the highest applied migration).
    fn schema_version(&self) -> Result<i64, StoreError>;

    /// Increments and returns the server generation: a number that changes at every start, so
    /// that event ids from a previous run are recognised as stale.
    fn next_generation(&self) -> Result<u64, StoreError>;

    /// Creates a web session running `agent` (`None`: unrecorded, the server's default) and
    /// returns its id (ids only grow). The session and its agent are written together: another
    /// replica never sees the session without its agent.
    fn create_session(&self, title: &str, agent: Option<&SessionAgent>) -> Result<i64, StoreError> {
        self.create_session_with(title, agent, &SessionSetup::default())
    }

    /// [`Store::create_session`] with the session's setup (its MCP servers, extra directories,
    /// parent), written in the same statement.
    fn create_session_with(
        &self,
        title: &str,
        agent: Option<&SessionAgent>,
        setup: &SessionSetup,
    ) -> Result<i64, StoreError>;

    /// Records the agent a session runs (its version changes when the agent was updated).
    fn set_session_agent(&self, session: i64, agent: &SessionAgent) -> Result<(), StoreError>;

    /// Records the ACP session id the agent gave the web session.
    fn set_agent_session_id(&self, session: i64, agent_session_id: &str) -> Result<(), StoreError>;

    /// Sets the display title as the user's rename ([`TitleSource::User`]); `false` when the
    /// store holds no session `session`. Announced to other servers ([`LogChange::renamed`]).
    fn set_title(&self, session: i64, title: &str) -> Result<bool, StoreError>;

    /// Sets a derived title (`source` is [`TitleSource::Prompt`] or [`TitleSource::Agent`]) in
    /// one conditional write, only where it may replace the title there (see [`TitleSource`]);
    /// returns whether it did. Announced like a rename when it did.
    fn set_derived_title(
        &self,
        session: i64,
        title: &str,
        source: TitleSource,
    ) -> Result<bool, StoreError>;

    /// Deletes a session and everything stored for it (log, transcript, replies, lease,
    /// commands) in one transaction; `false` when the store holds no session `session`.
    /// Announced to other servers ([`LogChange::deleted`]). The caller stops the session's task
    /// first: a line logged afterwards is refused (the log's rows reference the session).
    fn delete_session(&self, session: i64) -> Result<bool, StoreError>;

    /// All sessions, oldest first.
    fn sessions(&self) -> Result<Vec<StoredSession>, StoreError>;

    /// The session `id`, if the store holds it.
    fn session(&self, id: i64) -> Result<Option<StoredSession>, StoreError> {
        Ok(self.sessions()?.into_iter().find(|s| s.id == id))
    }

    /// The highest `seq` logged for a session (0 when none).
    fn last_seq(&self, session: i64) -> Result<i64, StoreError>;

    /// Appends lines to a session's log in one transaction, numbering them from `first_seq`, and
    /// returns once they are committed. Either all of them are committed or none.
    ///
    /// Retrying a batch is safe: a line whose `seq` already holds the same direction and text
    /// counts as committed (a commit whose answer was lost, e.g. a dropped connection, is
    /// retried without doubling anything); a `seq` that holds a different line fails the whole
    /// batch with [`StoreError::Write`].
    fn append_lines(
        &self,
        session: i64,
        first_seq: i64,
        lines: &[(Direction, &str)],
    ) -> Result<(), StoreError>;

    /// A session's log in order, from `seq` 1. Rows with an unknown direction (written by a
    /// newer version) are skipped and counted in the second value.
    fn lines(&self, session: i64) -> Result<(Vec<LoggedLine>, usize), StoreError> {
        self.lines_after(session, 0)
    }

    /// The lines of a session's log with `seq > after`, in order (as [`Store::lines`]).
    fn lines_after(&self, session: i64, after: i64)
    -> Result<(Vec<LoggedLine>, usize), StoreError>;

    /// At most `limit` lines of a session's log at one end of `window`, oldest first, read by
    /// one bounded query on the `(session_id, seq)` key (the wire inspector pages a log of any
    /// length this way, never reading it whole).
    fn wire_page(
        &self,
        session: i64,
        window: WireWindow,
        limit: usize,
    ) -> Result<WirePage, StoreError>;

    /// Stores the materialized transcript (the log read up to `upto_seq`): its shell replacing
    /// the previous one, and of its lists the items that changed (a whole text replaces every
    /// item; see `replay_save.rs`); and the replies of the turns in `replies` (new or changed since the last
    /// save; the others stay as stored), in one transaction. The session has `turns` turns:
    /// rows of later turns are deleted. A reply equal to its row is not written again.
    fn save_materialized(
        &self,
        session: i64,
        upto_seq: i64,
        replay: &ReplaySave,
        replies: &[StoredReply],
        turns: i64,
    ) -> Result<(), StoreError>;

    /// The persisted replies of a session, by turn.
    fn replies(&self, session: i64) -> Result<Vec<StoredReply>, StoreError>;

    /// The materialized transcript of a session, if one was saved.
    fn transcript(&self, session: i64) -> Result<Option<String>, StoreError>;

    /// Claims the lease of `session` for `owner` for `ttl`, in one conditional write: it
    /// succeeds when nobody holds the lease, when it has expired, or when `owner` already holds
    /// it; otherwise nothing changes. A granted claim gets a new epoch ([`Lease::epoch`]).
    /// Returns the lease as it stands afterwards, so the caller holds the session exactly when
    /// the returned `owner` is its own id. Two replicas claiming at once never both get it.
    fn claim_lease(
        &self,
        session: i64,
        owner: &str,
        ttl: std::time::Duration,
    ) -> Result<Lease, StoreError>;

    /// Extends the lease of `session` by `ttl` from now if `owner` still holds it under `epoch`
    /// (even past its time: nobody claimed it meanwhile). Returns the lease as it stands
    /// afterwards (another holder's, or `None` when nobody holds it): renewed exactly when its
    /// owner and epoch are the caller's.
    fn renew_lease(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
        ttl: std::time::Duration,
    ) -> Result<Option<Lease>, StoreError>;

    /// Gives the lease of `session` up if `owner` holds it (a graceful hand-over: another
    /// replica may claim it at once). Returns whether it was held.
    fn release_lease(&self, session: i64, owner: &str) -> Result<bool, StoreError>;

    /// Every lease row, expired ones included, by session.
    fn leases(&self) -> Result<Vec<Lease>, StoreError>;

    /// Every lease, split by whether its time passed on the database's clock, and the sessions
    /// with commands no live lease answers for, read in one transaction: what a replica needs to
    /// find sessions whose owner stopped without handing them over.
    fn lease_survey(&self) -> Result<LeaseSurvey, StoreError>;

    /// Queues a command (a JSON `body`) for the replica that runs `session`, under the sender's
    /// unique `id`: sending the same id again queues nothing more. Announced like lines
    /// ([`LogChange::is_command`]).
    fn submit_command(&self, id: &str, session: i64, body: &str) -> Result<(), StoreError>;

    /// Takes the commands waiting for `session`, oldest first, marking them taken by `owner`
    /// under `epoch` (with the log's last `seq`) in the same statement: each command is taken
    /// once, by one caller, and only while `owner` holds a live lease of that epoch (a replica
    /// that lost the lease takes nothing; a claim by another replica waits for a take under way
    /// to commit, so the new holder sees what was taken).
    fn take_commands(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
    ) -> Result<Vec<TakenCommand>, StoreError>;

    /// The commands of `session` taken and not finished ([`Store::finish_commands`]), oldest
    /// first: after a takeover, the ones taken under another lease may never have been logged.
    fn unfinished_commands(&self, session: i64) -> Result<Vec<TakenCommand>, StoreError>;

    /// Takes the unfinished commands `ids` of `session` again for `owner` under `epoch`, with the
    /// same condition as [`Store::take_commands`] (a live lease of that epoch); returns those it
    /// took, oldest first.
    fn retake_commands(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
        ids: &[String],
    ) -> Result<Vec<TakenCommand>, StoreError>;

    /// Marks commands finished: what they led to is committed to the log, so no later owner
    /// takes them again. Finishing a finished command changes nothing.
    fn finish_commands(&self, session: i64, ids: &[String]) -> Result<(), StoreError>;

    /// The server notes ([`Direction::Server`] lines) of a session's log with `seq > after`, in
    /// order: where an owner looks for the notes of commands a previous owner took.
    fn server_notes_after(&self, session: i64, after: i64) -> Result<Vec<LoggedLine>, StoreError>;

    /// The changes other servers commit to this database, as they commit them: sessions
    /// created and lines logged (each write of this store announces itself too), beginning
    /// with [`LogChange::RESYNC`] and again after every lost connection. `None` for a store
    /// only one server uses (SQLite), where there is nobody else to hear from.
    fn changes(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<LogChange>> {
        None
    }

    /// Work a store defers off its commits, done when a writer has nothing to write (the session
    /// log writer of `spindle serve` calls it once its queue stayed empty a moment): SQLite's WAL
    /// checkpoint. Nothing by default.
    fn checkpoint_idle(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Whether a call waits on another process (a database server's round trip and commit:
    /// milliseconds) rather than on a local file (microseconds). A caller on an async worker
    /// then hands the worker's other tasks over before it calls (`tokio::task::block_in_place`).
    fn waits_on_server(&self) -> bool {
        false
    }
}
