//! The state of one web session that observers see: the transcript engine, the fan-out hub and
//! the server's own view facts (banner, open permission questions), kept under one lock so that a
//! snapshot and the batches after it are cut at the same point.
//!
//! Invariant (durability): every op an observer sees derives from lines committed to the wire
//! log. The commit is pipelined (`pipeline.rs`, `log_writer.rs`): a batch is numbered and handed
//! to the session's log writer, applied to the engine and the `/acp` feed at once, and what that
//! publishes is held in the hubs until the writer answers for the batch; a snapshot is cut only
//! with nothing held ([`SessionCore::settle`] first). [`SessionCore::record`] waits for the
//! commit, [`SessionCore::record_agent_lines`] (the agent's stream) does not.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use spindle_engine::{RenderOp, ReplayCache, TranscriptEngine, TurnReply};

use crate::acp_feed::{AcpFeed, HistoryPolicy};
use crate::feed::EngineFeed;
use crate::hub::{Hub, HubStats};
use crate::log_writer::{WriterHandle, WriterWake};
use crate::page_ops::PageOp;
use crate::pipeline::{Job, Ledger, Lines, News, Outcome, Save, Step};
use crate::store::{Direction, Store, StoredReply};

mod page_state;

/// The server facts a snapshot ends with, one op each, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum PageFact {
    /// `web_standing_permissions`.
    StandingPermissions,
    /// `web_status`.
    Status,
    /// `web_checkpoints`.
    Checkpoints,
    /// `web_queue`.
    Queue,
}

/// A banner shown above the transcript (server facts: agent exited, storage failing, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Banner {
    /// Kept when a turn ends well (a fact about the session, not a failure that passes).
    pub(crate) lasting: bool,
    pub(crate) level: &'static str,
    pub(crate) text: String,
}

#[derive(Debug)]
pub(crate) struct SessionCore {
    pub(crate) session: i64,
    pub(crate) engine: TranscriptEngine,
    /// How logged lines reach `engine` (per-agent-process id scopes); the same state a rebuild
    /// from the log reaches.
    feed: EngineFeed,
    pub(crate) hub: Hub,
    /// What `/acp` clients attached to this session receive (a second hub, same lines).
    pub(crate) acp: AcpFeed,
    /// For reads (history, the wire inspector, following other replicas); writes go through
    /// `writer`.
    store: Store,
    /// The `seq`s given out, the jobs the writer has not answered, its backlog.
    ledger: Ledger,
    /// The session's log writer (a thread of its own).
    writer: WriterHandle,
    /// The bound of the writer's backlog in bytes (F6).
    unsaved_limit: usize,
    /// A save of the materialized transcript failed: made again at the next occasion.
    save_again: bool,
    /// What the last save derived from the engine, so that the next one serializes and sends
    /// only what changed.
    replay_cache: ReplayCache,
    /// A save handed to the writer and not answered yet. Another is not built meanwhile: a save
    /// writes the whole transcript's JSON, so back-to-back turns would queue one per turn start
    /// and end; the writer's answer wakes the task, which saves then what is due by then.
    save_in_flight: bool,
    banner: Option<Banner>,
    /// Banners raised so far ([`Self::banners_raised`]).
    banners_raised: u64,
    /// Open permission questions by key, as the `web_permission` op that shows them.
    permissions: BTreeMap<String, Value>,
    /// Open file-write reviews by key, as the `web_review` op that shows them.
    reviews: BTreeMap<String, Value>,
    /// Open elicitations by key, as the `web_elicitation` op that shows them.
    elicitations: BTreeMap<String, Value>,
    /// Server facts shown by one op each (`web_standing_permissions`, `web_status`):
    /// the latest op of each is part of every snapshot.
    facts: BTreeMap<PageFact, Value>,
    /// What the last saved replies looked like (count, finished count, total text length), to
    /// save again only when a turn ended or a reply changed.
    /// `turn_progress()` at the last save of the materialized transcript and replies.
    saved_turns: (usize, usize),
    pub(crate) diagnostics: u64,
    /// The last committed `seq`, for wire inspectors (`wire_view.rs`); `None` once closed.
    logged: Option<tokio::sync::watch::Sender<i64>>,
}

impl SessionCore {
    pub(crate) fn new(
        session: i64,
        (engine, feed): (TranscriptEngine, EngineFeed),
        hub: Hub,
        store: Store,
        next_seq: i64,
    ) -> SessionCore {
        let saved_turns = engine.turn_progress();
        let acp = AcpFeed::new(session, hub.last_id().generation, hub.limits(), 2);
        let mut core = SessionCore {
            session,
            engine,
            feed,
            hub,
            acp,
            writer: WriterHandle::new(session, store.clone(), next_seq),
            store,
            ledger: Ledger::new(next_seq),
            unsaved_limit: unsaved_limit(),
            save_again: false,
            save_in_flight: false,
            replay_cache: ReplayCache::default(),
            banner: None,
            banners_raised: 0,
            permissions: BTreeMap::new(),
            reviews: BTreeMap::new(),
            elicitations: BTreeMap::new(),
            facts: BTreeMap::new(),
            saved_turns,
            diagnostics: 0,
            logged: Some(tokio::sync::watch::channel(next_seq - 1).0),
        };
        if core.feed.facts.checkpoints.take_changed() {
            core.set_fact(core.feed.facts.checkpoints.page_op());
        }
        core
    }

    /// Logs `lines` (after any earlier unsaved ones), applies them to the engine and publishes
    /// the resulting ops as one batch, and returns once the writer answered for them. When the commit fails the lines are still shown
    /// (the agent does not wait for the disk), kept for the next attempt, and a banner says so.
    /// The callers keep that backlog bounded: see [`Self::backlog_full`].
    pub(crate) fn record(&mut self, lines: Vec<(Direction, String)>) {
        if lines.is_empty() {
            return;
        }
        self.record_unsaved(lines);
        self.save_replies_if_changed();
    }

    /// [`Self::record`] without the save of the materialized transcript and replies that a turn's
    /// start makes due: for a prompt, which goes to the agent first (building a long session's
    /// transcript takes a while; the agent works meanwhile), the caller saves after it
    /// ([`Self::save_replies_if_changed`]).
    pub(crate) fn record_unsaved(&mut self, mut lines: Vec<(Direction, String)>) {
        if lines.is_empty() {
            return;
        }
        // Invariant: the user's MCP secrets go to the agent only, never to the log, the page or
        // `/acp` observers. Only a client's session requests carry them.
        for (direction, line) in &mut lines {
            if *direction == Direction::Client
                && let Some(redacted) = spindle_host::mcp_servers::redact_mcp_secrets(line)
            {
                *line = redacted;
            }
        }
        let lines = self.hand_over(lines);
        self.show(&lines);
        self.settle();
    }

    /// The agent's lines ([`Direction::Agent`], [`Direction::AgentReplay`]: nothing in them to
    /// redact), handed to the log writer and applied at once, their output held until the writer
    /// answers (see the module's header): the task goes on with the next batch meanwhile. Waits
    /// only while more than [`MAX_IN_FLIGHT_BYTES`] are unanswered. Without the save of the
    /// materialized transcript and replies: the caller makes it ([`Self::save_replies_if_changed`],
    /// due when [`Self::save_due`]) once the turn's end went out, so that it reaches observers
    /// before the turn's whole transcript is built. Returns the lines, for the caller to decode.
    pub(crate) fn record_agent_lines(&mut self, lines: Vec<(Direction, String)>) -> Lines {
        debug_assert!(
            lines
                .iter()
                .all(|(d, _)| matches!(d, Direction::Agent | Direction::AgentReplay))
        );
        let lines = self.hand_over(lines);
        self.show(&lines);
        self.take_answers();
        lines
    }

    /// Whether more than [`MAX_IN_FLIGHT_BYTES`] wait for the writer's answer: the caller then
    /// waits ([`Self::wait_for_room`]) before it reads more of the agent's output.
    pub(crate) fn over_in_flight(&self) -> bool {
        self.ledger.in_flight_bytes() > MAX_IN_FLIGHT_BYTES
    }

    /// Waits until at most [`MAX_IN_FLIGHT_BYTES`] wait for the writer's answer.
    pub(crate) fn wait_for_room(&mut self) {
        while self.over_in_flight() {
            self.wait_answers();
        }
    }

    /// Whether a turn started or ended since the last save ([`Self::save_replies_if_changed`]),
    /// or a save failed, and the lines it would cover are out (nothing held).
    pub(crate) fn save_due(&self) -> bool {
        !self.hub.holding() && !self.save_in_flight && self.save_wanted()
    }

    /// A turn started or ended since the last save, or a save failed while the log is written.
    fn save_wanted(&self) -> bool {
        self.engine.turn_progress() != self.saved_turns
            || (self.save_again && !self.ledger.failing())
    }

    /// Numbers `lines` and hands them to the log writer; the hubs hold what is published from
    /// now on until the writer answers for them.
    fn hand_over(&mut self, lines: Vec<(Direction, String)>) -> Lines {
        let lines: Lines = lines.into();
        if lines.is_empty() {
            return lines;
        }
        let bytes = lines.iter().map(|(_, l)| l.len()).sum();
        let first_seq = self.ledger.hand_over(lines.len(), bytes);
        let last = self.ledger.next_seq() - 1;
        self.hub.hold_until(last);
        self.acp.hub.hold_until(last);
        let job = Job::Lines {
            first_seq,
            lines: lines.clone(),
        };
        if !self.writer.send(job) {
            self.writer_gone();
        }
        lines
    }

    /// What the task awaits to take the writer's answers ([`Self::take_answers`]).
    pub(crate) fn writer_wake(&self) -> WriterWake {
        self.writer.wake()
    }

    /// Takes the writer's answers so far (without waiting): releases the output held for the
    /// lines they cover, in order, and raises or clears the storage banner.
    pub(crate) fn take_answers(&mut self) {
        for outcome in self.writer.take() {
            self.answer(&outcome);
        }
    }

    /// Waits for the writer's next answers and takes them.
    fn wait_answers(&mut self) {
        let outcomes = self.writer.wait();
        if outcomes.is_empty() {
            self.writer_gone();
        }
        for outcome in outcomes {
            self.answer(&outcome);
        }
    }

    /// Waits until the writer answered every job handed to it, so that nothing is held: before a
    /// snapshot, a client line written to the agent, a read of the log.
    pub(crate) fn settle(&mut self) {
        self.take_answers();
        while self.ledger.in_flight() {
            self.wait_answers();
        }
    }

    /// The writer's thread ended without answering (a bug): its jobs count as failed commits,
    /// so their output is shown, the banner raised, and the backlog grows to its bound.
    fn writer_gone(&mut self) {
        self.save_in_flight = false;
        let (lines, bytes) = self.ledger.unsaved();
        let outcome = Outcome::Failed {
            jobs: usize::MAX,
            through: self.ledger.next_seq() - 1,
            error: "the log writer stopped".into(),
            unsaved_lines: lines + 1,
            unsaved_bytes: bytes.max(self.unsaved_limit),
        };
        self.answer(&outcome);
    }

    fn answer(&mut self, outcome: &Outcome) {
        match self.ledger.answer(outcome) {
            Step::Release { through, news } => {
                self.hub.release_through(through);
                self.acp.hub.release_through(through);
                self.tell_inspectors();
                match news {
                    Some(News::Recovered) => {
                        self.set_banner(Some(Banner {
                            lasting: false,
                            level: "info",
                            text: "Storage recovered: every line is saved again.".into(),
                        }));
                    }
                    Some(News::Failed { error }) => self.storage_failed(&error),
                    None => {}
                }
            }
            Step::Saved => self.save_in_flight = false,
            Step::SaveFailed(error) => {
                self.save_in_flight = false;
                // The items and replies it carried were not stored: the next save carries them
                // all.
                self.replay_cache.forget_saved();
                tracing::error!(session = self.session, "transcript not saved: {error}");
                self.save_again = true;
            }
        }
    }

    fn storage_failed(&mut self, error: &str) {
        tracing::error!(session = self.session, "{error}");
        let (lines, bytes) = self.ledger.unsaved();
        let mut text = format!(
            "Not saved to disk ({error}); {lines} lines ({} KiB) wait in memory and will be \
             written when the database accepts writes again.",
            bytes.div_ceil(1024),
        );
        if self.backlog_full() {
            text.push_str(
                " That is as much as the server keeps: the agent's output is paused and \
                 new prompts are refused until then. A server stop now loses these lines.",
            );
        }
        self.set_banner(Some(Banner {
            lasting: false,
            level: "error",
            text,
        }));
    }

    /// Writes to `store` from now on (tests of a database that fails and recovers).
    #[cfg(test)]
    pub(crate) fn use_store(&mut self, store: Store) {
        self.store = store.clone();
        self.writer.send(Job::UseStore(store));
    }

    /// The engine with every line handed to the writer answered for (for reads shown to users).
    pub(crate) fn settled_engine(&mut self) -> &TranscriptEngine {
        self.settle();
        &self.engine
    }

    /// Applies the lines another replica logged after this core's last one, as a rebuild does,
    /// and publishes their ops: how a replica that does not run the session follows it, and how
    /// one catches up before it takes the session over. Returns how many lines it applied
    /// (none while this core has lines of its own waiting for the database).
    pub(crate) fn follow(&mut self) -> Result<usize, crate::store::StoreError> {
        self.follow_to(i64::MAX)
    }

    /// [`Self::follow`] when the log may hold lines up to `seq` this core has not applied (a
    /// notice of the owner's own commit reads nothing).
    pub(crate) fn follow_to(&mut self, seq: i64) -> Result<usize, crate::store::StoreError> {
        if seq < self.ledger.next_seq() {
            return Ok(0);
        }
        // Own lines the writer has not answered for, or that wait in its backlog: the log's
        // next `seq`s are this core's.
        self.settle();
        if self.has_backlog() {
            return Ok(0);
        }
        let (logged, _) = self
            .store
            .lines_after(self.session, self.ledger.next_seq() - 1)?;
        let Some(last) = logged.last() else {
            return Ok(0);
        };
        self.ledger.followed(last.seq);
        self.tell_inspectors();
        let lines: Vec<(Direction, String)> =
            logged.into_iter().map(|l| (l.direction, l.line)).collect();
        self.show(&lines);
        // The owner saves the materialized transcript; a follower only keeps its count.
        self.saved_turns = self.engine.turn_progress();
        Ok(lines.len())
    }

    /// Feeds logged `lines` to the engine and the `/acp` feed and publishes the ops.
    fn show(&mut self, lines: &[(Direction, String)]) {
        self.acp.on_lines(lines);
        let mut ops = Vec::new();
        for (direction, line) in lines {
            ops.extend(self.feed.apply(&mut self.engine, *direction, line));
        }
        self.diagnostics = self.engine.transcript().diagnostics.len() as u64;
        if self.feed.facts.checkpoints.take_changed() {
            self.set_fact(self.feed.facts.checkpoints.page_op());
        }
        if lines
            .iter()
            .any(|(d, l)| *d == Direction::Server && l.contains("\"queue\""))
        {
            // Every replica shows the queue its log tells (`crate::prompt_queue`).
            self.set_fact(self.feed.facts.queue.page_op());
        }
        if !ops.is_empty() {
            // One batch is one SSE frame the page applies at once: its states in between are
            // never seen, so a fast stream's batch goes out as about one op per entry it touched.
            self.publish_ops(&spindle_engine::coalesce_render_ops(ops));
        }
    }

    /// Tries again to write the lines whose commit failed (the session task calls this on a
    /// timer while there are any, so that storage recovers without new lines).
    pub(crate) fn retry_unsaved(&mut self) {
        if self.has_backlog() {
            self.ledger.other_job();
            if !self.writer.send(Job::Retry) {
                self.writer_gone();
            }
            self.settle();
            self.save_replies_if_changed();
        }
    }

    /// Whether lines wait in memory for the database (as the writer last reported).
    pub(crate) fn has_backlog(&self) -> bool {
        self.ledger.unsaved().0 > 0
    }

    /// Whether the unsaved backlog reached its bound (F6): the session task then stops reading
    /// the agent's output (its pipe fills and the agent blocks) and refuses prompts, until a
    /// retry commits the backlog. The backlog can exceed the bound by at most the batch that
    /// reached it (itself bounded by the agent link's queue).
    pub(crate) fn backlog_full(&self) -> bool {
        self.ledger.unsaved().1 >= self.unsaved_limit
    }

    fn tell_inspectors(&self) {
        if let Some(logged) = &self.logged {
            logged.send_replace(self.ledger.committed());
        }
    }

    /// Where a wire inspector reads this session's log and hears of its commits.
    pub(crate) fn wire_source(&self) -> crate::wire_view::WireSource {
        let logged = match &self.logged {
            Some(sender) => sender.subscribe(),
            // Closed: a receiver whose sender is gone ends the inspector's stream at once.
            None => tokio::sync::watch::channel(self.ledger.committed()).1,
        };
        crate::wire_view::WireSource::new(self.store.clone(), self.session, logged)
    }

    /// Ends every observer's stream: the page's and `/acp` hubs and the wire inspectors.
    pub(crate) fn close_observers(&mut self) {
        self.hub.close_all();
        self.acp.hub.close_all();
        self.logged = None;
    }

    fn publish_ops(&mut self, ops: &[RenderOp]) {
        // `{"ops":[...]}` written straight from the ops: no `Value` tree in between, and no
        // second pass over the bytes to check them as UTF-8 (`to_string` knows they are).
        #[derive(serde::Serialize)]
        struct OpsFrame<'a> {
            ops: &'a [RenderOp],
        }
        match serde_json::to_string(&OpsFrame { ops }) {
            Ok(data) => {
                self.hub.publish(Arc::from(data));
            }
            Err(error) => tracing::error!("render ops not serializable: {error}"),
        }
    }

    fn publish_web_op(&mut self, op: impl Into<Value>) {
        let data = json!({ "ops": [op.into()] }).to_string();
        self.hub.publish(Arc::from(data));
    }

    /// Persists the materialized transcript and the replies when a turn started or finished
    /// since the last save, or the last save failed.
    pub(crate) fn save_replies_if_changed(&mut self) {
        // Saved when a turn starts or finishes, not for every streamed chunk: this runs once per
        // batch, so it compares turn counts and builds the save only when one is due.
        if self.save_in_flight || !self.save_wanted() {
            return;
        }
        self.save_materialized();
    }

    /// Saves the materialized transcript and replies and waits until the writer answered
    /// (the agent exited, the session stops). A save in flight is answered first: when it
    /// failed, this one carries every reply.
    pub(crate) fn save_now(&mut self) {
        self.settle();
        self.save_materialized();
        self.settle();
    }

    /// Hands the save to the log writer, after the lines it covers (it is not made while some of
    /// them wait in the writer's backlog: made again then, see [`Self::save_due`]). Built from
    /// the cache of the last save ([`ReplayCache`]): only the entries and turns that changed
    /// since are serialized, only the replies that changed are sent.
    fn save_materialized(&mut self) {
        let materialized = self.replay_cache.materialize(&self.engine);
        let upto = self.ledger.next_seq() - 1;
        self.saved_turns = self.engine.turn_progress();
        self.save_again = false;
        self.ledger.other_job();
        self.save_in_flight = true;
        let list = |part: spindle_engine::ListPart| spindle_store::ListSave {
            at: part.at,
            count: part.count,
            changed: part.changed,
        };
        let save = Save {
            upto,
            replay: spindle_store::ReplaySave {
                shell: materialized.shell,
                lists: vec![list(materialized.entries), list(materialized.turn_list)],
            },
            replies: materialized
                .changed_replies
                .into_iter()
                .map(stored_reply)
                .collect(),
            turns: i64::try_from(materialized.turns).unwrap_or(i64::MAX),
        };
        if !self.writer.send(Job::Save(Box::new(save))) {
            self.writer_gone();
        }
    }

    /// A turn ended well: the banners of earlier failures (a rejected prompt, an agent that
    /// exited or could not start) no longer apply. Only a banner raised before the turn's prompt
    /// was sent (`banners_before`, [`Self::banners_raised`] then) is cleared: one the turn itself
    /// raised (storage recovered while it ran) is news the user has not seen yet. A storage
    /// failure's banner stays until storage recovers, a lasting one (what the agent's start
    /// changed) until another replaces it.
    pub(crate) fn clear_banner(&mut self, banners_before: u64) {
        if !self.ledger.failing()
            && self.banners_raised == banners_before
            && self.banner.as_ref().is_some_and(|b| !b.lasting)
        {
            self.set_banner(None);
        }
    }

    /// How many banners were raised so far (a banner replaced by another counts again).
    pub(crate) fn banners_raised(&self) -> u64 {
        self.banners_raised
    }

    pub(crate) fn set_banner(&mut self, banner: Option<Banner>) {
        if self.banner == banner {
            return;
        }
        if banner.is_some() {
            self.banners_raised += 1;
        }
        self.banner = banner;
        let op = banner_op(self.banner.as_ref());
        self.publish_web_op(op);
    }

    /// The `reset` payload: the engine's snapshot (its last [`crate::snapshot::TAIL_ENTRIES`]
    /// entries, see [`crate::snapshot::tail_json`]), then the server's own view facts. Written op
    /// by op: the snapshot of a long session is never held as values.
    pub(crate) fn snapshot_json(engine: &TranscriptEngine, extra: &[Value]) -> String {
        crate::snapshot::tail_json(engine, extra, crate::snapshot::TAIL_ENTRIES)
    }

    /// A page of older entries (see [`crate::snapshot::entries_page_json`]), cut at the last
    /// published batch.
    pub(crate) fn entries_page(&mut self, before: Option<usize>, limit: usize) -> String {
        self.settle();
        crate::snapshot::entries_page_json(&self.engine, self.hub.last_id(), before, limit)
    }

    /// Attaches an observer (see [`Hub::subscribe`]).
    pub(crate) fn subscribe(
        &mut self,
        last_seen: Option<crate::hub::EventId>,
    ) -> tokio::sync::mpsc::Receiver<crate::hub::Frame> {
        self.settle();
        let extra = self.view_facts();
        let engine = &self.engine;
        self.hub
            .subscribe(last_seen, || Self::snapshot_json(engine, &extra))
    }

    /// The server's view facts a snapshot ends with (banner, open questions, status).
    fn view_facts(&self) -> Vec<Value> {
        let mut extra = Vec::new();
        if self.banner.is_some() {
            extra.push(banner_op(self.banner.as_ref()).to_value());
        }
        extra.extend(self.permissions.values().cloned());
        extra.extend(self.reviews.values().cloned());
        extra.extend(self.elicitations.values().cloned());
        extra.extend(self.facts.values().cloned());
        extra
    }

    /// The `reset` payload as of now and the id of the last batch it includes: for a page whose
    /// live batches come through a stream another tab opened (see `assets/feed.js`).
    pub(crate) fn snapshot_now(&mut self) -> (crate::hub::EventId, String) {
        self.settle();
        let extra = self.view_facts();
        (
            self.hub.last_id(),
            Self::snapshot_json(&self.engine, &extra),
        )
    }

    /// Subscribes an `/acp` client stream (see [`AcpFeed::subscribe`]); a snapshot, when one is
    /// needed, holds the history `policy` asks for, read from the wire log.
    pub(crate) fn acp_subscribe(
        &mut self,
        last_seen: Option<crate::hub::EventId>,
        policy: HistoryPolicy,
        version: u16,
    ) -> crate::acp_feed::Subscription {
        self.settle();
        let history = self.acp.history(policy, last_seen, version);
        let store = self.store.clone();
        let session = self.session;
        self.acp.subscribe(
            last_seen,
            move || {
                let logged = if history.needs_log() {
                    match store.lines(session) {
                        Ok((lines, _)) => {
                            lines.into_iter().map(|l| (l.direction, l.line)).collect()
                        }
                        Err(error) => {
                            tracing::error!(session, "history for an /acp client: {error}");
                            Vec::new()
                        }
                    }
                } else {
                    Vec::new()
                };
                history.lines(&logged)
            },
            version,
        )
    }

    /// Where an `/acp` client attaching now starts: the history `policy` asks for and the id
    /// of the last message it covers, cut together.
    pub(crate) fn acp_attach_point(
        &mut self,
        policy: HistoryPolicy,
        version: u16,
    ) -> (Option<String>, crate::hub::EventId) {
        self.settle();
        let history = self.acp.history(policy, None, version);
        let text = (policy != HistoryPolicy::None).then(|| {
            let logged = if history.needs_log() {
                self.logged_lines()
            } else {
                Vec::new()
            };
            history.lines(&logged)
        });
        (text, self.acp.hub.last_id())
    }

    fn logged_lines(&self) -> Vec<(Direction, String)> {
        match self.store.lines(self.session) {
            Ok((lines, _)) => lines.into_iter().map(|l| (l.direction, l.line)).collect(),
            Err(error) => {
                tracing::error!(
                    session = self.session,
                    "history for an /acp client: {error}"
                );
                Vec::new()
            }
        }
    }

    pub(crate) fn stats(&self) -> Value {
        let HubStats {
            observers,
            dropped_slow,
            resumed,
            resets,
        } = self.hub.stats();
        let acp = self.acp.hub.stats();
        json!({
            "acpObservers": acp.observers,
            "acpDroppedSlow": acp.dropped_slow,
            "acpResumed": acp.resumed,
            "acpResets": acp.resets,
            "observers": observers,
            "droppedSlow": dropped_slow,
            "resumed": resumed,
            "resets": resets,
            "lastEventId": self.hub.last_id().to_string(),
            "loggedLines": self.ledger.committed(),
            "unsavedLines": self.ledger.unsaved().0,
            "unsavedBytes": self.ledger.unsaved().1,
            "unsavedLimit": self.unsaved_limit,
            "diagnostics": self.diagnostics,
            "entries": self.engine.transcript().entries.len(),
        })
    }
}

/// How many bytes of the agent's lines may wait for the log writer's answer before the session
/// task waits for it ([`SessionCore::record_agent_lines`]): the bound of the memory the pipeline
/// holds (lines and their held output) and of one group commit.
const MAX_IN_FLIGHT_BYTES: usize = 8 << 20;

/// The default bound of a session's unsaved backlog: 32 MiB.
const UNSAVED_LIMIT: usize = 32 << 20;

/// The bound of a session's unsaved backlog: [`UNSAVED_LIMIT`], or
/// `SPINDLE_SERVE_MAX_UNSAVED_BYTES` from the environment (for small machines and for tests).
fn unsaved_limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        std::env::var("SPINDLE_SERVE_MAX_UNSAVED_BYTES")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|n| *n > 0)
            .unwrap_or(UNSAVED_LIMIT)
    })
}

/// The engine's per-turn replies in the store's shape.
fn stored_reply(reply: TurnReply) -> StoredReply {
    StoredReply {
        turn: i64::from(reply.turn),
        text: reply.reply,
        finished: reply.finished,
        stop_reason: reply.stop_reason,
    }
}

fn banner_op(banner: Option<&Banner>) -> PageOp {
    match banner {
        Some(b) => PageOp::WebBanner {
            level: b.level.to_string(),
            text: Some(b.text.clone()),
        },
        None => PageOp::WebBanner {
            level: "info".to_string(),
            text: None,
        },
    }
}

#[cfg(test)]
mod tests;
