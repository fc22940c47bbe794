//! The pipelined, group commit of a session's wire log, without I/O: what the session core
//! keeps about the batches it handed over ([`Ledger`]) and what the log writer does with the jobs
//! it finds queued ([`LogWriter`], over any [`LogSink`]). The thread that runs the writer is
//! `log_writer.rs`; the core that holds the output until its lines are committed is `core.rs`.
//!
//! The order, for one session:
//! 1. The core numbers a batch (`seq`s are given at hand-over, in order) and hands it to the
//!    writer ([`Job::Lines`]); it applies the batch to the engine and the `/acp` feed at once, but
//!    its hubs hold what that publishes until the batch is answered.
//! 2. The writer takes every job queued when it wakes and commits the consecutive batches among
//!    them in one transaction (group commit), after the backlog of earlier failed batches; a save
//!    of the materialized transcript ([`Job::Save`]) is made after the lines before it, never when
//!    some of them wait in the backlog.
//! 3. Each run of batches gets one [`Outcome`], in order: committed through a `seq`, or failed
//!    (the lines stay in the writer's backlog, retried first by the next commit or a
//!    [`Job::Retry`]). Either way the core then releases the output held for those lines: a
//!    failed commit still shows the lines, with the storage banner, as before the pipeline.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::store::{Direction, StoreError, StoredReply};

/// One batch of lines as handed to the writer; the core shows the same batch.
pub(crate) type Lines = Arc<[(Direction, String)]>;

/// What the core hands the writer; answered in order.
#[derive(Debug)]
pub(crate) enum Job {
    /// Lines numbered from `first_seq` (the `seq` after the last line handed over before).
    Lines { first_seq: i64, lines: Lines },
    /// Try the backlog again, without new lines.
    Retry,
    /// The materialized transcript and replies as of the log's `upto` seq.
    Save(Box<Save>),
    /// Write to another store from now on (tests of storage failures).
    #[cfg(test)]
    UseStore(crate::store::Store),
}

/// A save of the materialized transcript ([`crate::store::Store::save_materialized`]).
#[derive(Debug)]
pub(crate) struct Save {
    pub(crate) upto: i64,
    /// The replay JSON in parts: its shell and the entries and turns that changed.
    pub(crate) replay: spindle_store::ReplaySave,
    /// The replies that changed since the last save (all of them after a failed one).
    pub(crate) replies: Vec<StoredReply>,
    /// How many turns there are.
    pub(crate) turns: i64,
}

/// The writer's answer to a run of jobs, in the order of the jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// `jobs` jobs of lines and retries, committed in one transaction with the backlog before
    /// them: the log holds every line through `through`.
    Committed { jobs: usize, through: i64 },
    /// Their commit failed: the backlog now holds `unsaved_lines` lines (`unsaved_bytes`),
    /// every line through `through` not yet committed.
    Failed {
        jobs: usize,
        through: i64,
        error: String,
        unsaved_lines: usize,
        unsaved_bytes: usize,
    },
    /// One [`Job::Save`]: done, or why not.
    Saved(Result<(), String>),
}

impl Outcome {
    /// How many jobs this answers.
    pub(crate) fn jobs(&self) -> usize {
        match self {
            Outcome::Committed { jobs, .. } | Outcome::Failed { jobs, .. } => *jobs,
            Outcome::Saved(_) => 1,
        }
    }
}

/// What the writer calls: [`crate::store::Store`] in the server, a recording fake in tests.
pub(crate) trait LogSink {
    fn append_lines(
        &self,
        session: i64,
        first_seq: i64,
        lines: &[(Direction, &str)],
    ) -> Result<(), StoreError>;

    fn save_materialized(&self, session: i64, save: &Save) -> Result<(), StoreError>;
}

impl LogSink for crate::store::Store {
    fn append_lines(
        &self,
        session: i64,
        first_seq: i64,
        lines: &[(Direction, &str)],
    ) -> Result<(), StoreError> {
        (**self).append_lines(session, first_seq, lines)
    }

    fn save_materialized(&self, session: i64, save: &Save) -> Result<(), StoreError> {
        (**self).save_materialized(session, save.upto, &save.replay, &save.replies, save.turns)
    }
}

/// The writer's state: the backlog of lines whose commit failed, oldest first.
#[derive(Debug)]
pub(crate) struct LogWriter {
    session: i64,
    backlog: Vec<Lines>,
    /// The last `seq` handed to this writer.
    last_seq: i64,
}

impl LogWriter {
    /// A writer whose first batch starts at `next_seq`.
    pub(crate) fn new(session: i64, next_seq: i64) -> LogWriter {
        LogWriter {
            session,
            backlog: Vec::new(),
            last_seq: next_seq - 1,
        }
    }

    /// Carries out the jobs found queued at once; returns their outcomes in order. Consecutive
    /// batches of lines (and retries) are one transaction.
    #[cfg(test)]
    pub(crate) fn run(&mut self, sink: &impl LogSink, jobs: Vec<Job>) -> Vec<Outcome> {
        let mut outcomes = Vec::new();
        self.run_each(sink, jobs, |outcome| outcomes.push(outcome));
        outcomes
    }

    /// [`Self::run`], handing each outcome to `answer` as soon as it is known: a commit's answer
    /// (the output it releases, a turn's end among it) does not wait for a save queued after it,
    /// which writes the whole transcript.
    pub(crate) fn run_each(
        &mut self,
        sink: &impl LogSink,
        jobs: Vec<Job>,
        mut answer: impl FnMut(Outcome),
    ) {
        let mut group = 0;
        for job in jobs {
            match job {
                Job::Lines { first_seq, lines } => {
                    if self.backlog.is_empty() {
                        // The core may have followed lines another replica logged meanwhile.
                        self.last_seq = first_seq - 1;
                    }
                    debug_assert_eq!(first_seq, self.last_seq + 1, "batches out of order");
                    self.last_seq += i64::try_from(lines.len()).unwrap_or(i64::MAX);
                    if !lines.is_empty() {
                        self.backlog.push(lines);
                    }
                    group += 1;
                }
                Job::Retry => group += 1,
                Job::Save(save) => {
                    if group > 0 {
                        answer(self.commit(sink, std::mem::take(&mut group)));
                    }
                    answer(Outcome::Saved(self.save(sink, &save)));
                }
                #[cfg(test)]
                Job::UseStore(_) => unreachable!("handled by the writer's thread"),
            }
        }
        if group > 0 {
            answer(self.commit(sink, group));
        }
    }

    /// Commits the backlog (which holds the group's lines last) in one transaction.
    fn commit(&mut self, sink: &impl LogSink, jobs: usize) -> Outcome {
        let through = self.last_seq;
        if self.backlog.is_empty() {
            return Outcome::Committed { jobs, through };
        }
        let pending: Vec<(Direction, &str)> = self
            .backlog
            .iter()
            .flat_map(|batch| batch.iter().map(|(d, l)| (*d, l.as_str())))
            .collect();
        let count = i64::try_from(pending.len()).unwrap_or(i64::MAX);
        match sink.append_lines(self.session, through - count + 1, &pending) {
            Ok(()) => {
                drop(pending);
                self.backlog.clear();
                Outcome::Committed { jobs, through }
            }
            Err(error) => Outcome::Failed {
                jobs,
                through,
                error: error.to_string(),
                unsaved_lines: pending.len(),
                unsaved_bytes: pending.iter().map(|(_, l)| l.len()).sum(),
            },
        }
    }

    fn save(&self, sink: &impl LogSink, save: &Save) -> Result<(), String> {
        if !self.backlog.is_empty() {
            // The transcript would say more than the log holds; saved again once it does.
            return Err("earlier lines are not saved yet".into());
        }
        sink.save_materialized(self.session, save)
            .map_err(|e| e.to_string())
    }
}

/// What the core does on an outcome ([`Ledger::answer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Output held for lines up to `through` may go out; `news` for the storage banner.
    Release { through: i64, news: Option<News> },
    /// A save failed (the core saves again on its next occasion).
    SaveFailed(String),
    /// A save was made.
    Saved,
}

/// A change of the storage's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum News {
    /// Every line is committed again after failures.
    Recovered,
    /// A commit failed; the backlog's size now.
    Failed { error: String },
}

/// The core's side: the `seq`s given out, the jobs not answered yet and the backlog the writer
/// reported.
#[derive(Debug)]
pub(crate) struct Ledger {
    next_seq: i64,
    committed: i64,
    /// Bytes of each unanswered job, oldest first (0 for a save or a retry).
    unanswered: VecDeque<usize>,
    in_flight_bytes: usize,
    unsaved_lines: usize,
    unsaved_bytes: usize,
    failing: bool,
}

impl Ledger {
    /// A ledger whose log holds every line before `next_seq`.
    pub(crate) fn new(next_seq: i64) -> Ledger {
        Ledger {
            next_seq,
            committed: next_seq - 1,
            unanswered: VecDeque::new(),
            in_flight_bytes: 0,
            unsaved_lines: 0,
            unsaved_bytes: 0,
            failing: false,
        }
    }

    /// Numbers a batch of `count` lines (`bytes` long) handed to the writer: its first `seq`.
    pub(crate) fn hand_over(&mut self, count: usize, bytes: usize) -> i64 {
        let first = self.next_seq;
        self.next_seq += i64::try_from(count).unwrap_or(i64::MAX);
        self.unanswered.push_back(bytes);
        self.in_flight_bytes += bytes;
        first
    }

    /// A job without lines was handed over (a save, a retry).
    pub(crate) fn other_job(&mut self) {
        self.unanswered.push_back(0);
    }

    /// Takes an outcome of the writer (outcomes come in the order of the jobs).
    pub(crate) fn answer(&mut self, outcome: &Outcome) -> Step {
        for _ in 0..outcome.jobs() {
            let Some(bytes) = self.unanswered.pop_front() else {
                break;
            };
            self.in_flight_bytes -= bytes;
        }
        match outcome {
            Outcome::Committed { through, .. } => {
                self.committed = self.committed.max(*through);
                self.unsaved_lines = 0;
                self.unsaved_bytes = 0;
                let news = std::mem::take(&mut self.failing).then_some(News::Recovered);
                Step::Release {
                    through: *through,
                    news,
                }
            }
            Outcome::Failed {
                through,
                error,
                unsaved_lines,
                unsaved_bytes,
                ..
            } => {
                self.unsaved_lines = *unsaved_lines;
                self.unsaved_bytes = *unsaved_bytes;
                self.failing = true;
                Step::Release {
                    through: *through,
                    news: Some(News::Failed {
                        error: error.clone(),
                    }),
                }
            }
            Outcome::Saved(Ok(())) => Step::Saved,
            Outcome::Saved(Err(error)) => Step::SaveFailed(error.clone()),
        }
    }

    /// The `seq` the next line gets.
    pub(crate) fn next_seq(&self) -> i64 {
        self.next_seq
    }

    /// The last `seq` the log holds (as far as the writer reported).
    pub(crate) fn committed(&self) -> i64 {
        self.committed
    }

    /// Whether jobs wait for the writer's answer.
    pub(crate) fn in_flight(&self) -> bool {
        !self.unanswered.is_empty()
    }

    /// Bytes of the lines handed over and not answered.
    pub(crate) fn in_flight_bytes(&self) -> usize {
        self.in_flight_bytes
    }

    /// Lines (and their bytes) in the writer's backlog, as last reported.
    pub(crate) fn unsaved(&self) -> (usize, usize) {
        (self.unsaved_lines, self.unsaved_bytes)
    }

    /// Lines another replica logged were applied: the log holds every line through `last`.
    pub(crate) fn followed(&mut self, last: i64) {
        debug_assert!(!self.in_flight());
        self.next_seq = self.next_seq.max(last + 1);
        self.committed = self.committed.max(last);
    }

    /// Whether the last commit failed (until one succeeds).
    pub(crate) fn failing(&self) -> bool {
        self.failing
    }
}

#[cfg(test)]
mod tests;
