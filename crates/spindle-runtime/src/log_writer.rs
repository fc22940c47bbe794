//! The thread that commits one session's wire log ([`crate::pipeline::LogWriter`]) while the
//! session task goes on: jobs go in through a channel; outcomes come back in a queue the core
//! takes them from, with a condition variable for a core that must wait (it settles before a
//! snapshot, before a client line goes to the agent) and a [`tokio::sync::Notify`] that wakes
//! the session task. Started with the session's first job; it ends when the core drops its
//! handle, after the jobs already queued.
//!
//! The saves of the materialized transcript run on this thread too, and so do the SQLite store's
//! WAL checkpoints: when the queue stayed empty for [`IDLE`] (`Store::checkpoint_idle`), or at
//! the commit that takes the WAL past its bound.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};

use crate::pipeline::{Job, LogWriter, Outcome};
use crate::store::Store;
use crate::sync::lock;

#[derive(Debug, Default)]
struct Shared {
    outcomes: Mutex<Answers>,
    ready: Condvar,
    wake: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Answers {
    queue: VecDeque<Outcome>,
    /// The thread ended (a panic in the store): nothing more will be answered.
    gone: bool,
}

/// What the session task awaits: a new outcome to take ([`WriterHandle::take`]).
#[derive(Debug, Clone)]
pub(crate) struct WriterWake(Arc<Shared>);

impl WriterWake {
    /// Returns once the writer answered something since the last call (at once if it did).
    pub(crate) async fn answered(&self) {
        self.0.wake.notified().await;
    }
}

/// The core's handle on its session's writer thread.
#[derive(Debug)]
pub(crate) struct WriterHandle {
    session: i64,
    store: Store,
    /// The first `seq` of the first batch (for a writer started later).
    next_seq: i64,
    jobs: Option<mpsc::Sender<Job>>,
    shared: Arc<Shared>,
}

impl WriterHandle {
    pub(crate) fn new(session: i64, store: Store, next_seq: i64) -> WriterHandle {
        WriterHandle {
            session,
            store,
            next_seq,
            jobs: None,
            shared: Arc::new(Shared::default()),
        }
    }

    pub(crate) fn wake(&self) -> WriterWake {
        WriterWake(self.shared.clone())
    }

    /// Hands a job over (the thread starts with the first); `false` when the writer is gone (its
    /// thread ended: nothing it was given will be answered).
    pub(crate) fn send(&mut self, job: Job) -> bool {
        let sender = self.jobs.get_or_insert_with(|| {
            spawn(
                self.session,
                self.store.clone(),
                self.next_seq,
                &self.shared,
            )
        });
        sender.send(job).is_ok() && !self.gone()
    }

    /// Whether the thread ended (see [`WriterHandle::send`]).
    pub(crate) fn gone(&self) -> bool {
        lock(&self.shared.outcomes).gone
    }

    /// The outcomes answered so far, in order (without waiting).
    pub(crate) fn take(&self) -> Vec<Outcome> {
        lock(&self.shared.outcomes).queue.drain(..).collect()
    }

    /// Waits for at least one outcome (none when the writer is gone) and takes them.
    pub(crate) fn wait(&self) -> Vec<Outcome> {
        let mut answers = lock(&self.shared.outcomes);
        while answers.queue.is_empty() && !answers.gone {
            answers = self
                .shared
                .ready
                .wait(answers)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        answers.queue.drain(..).collect()
    }
}

/// How long the writer's queue stays empty before it calls [`crate::store::Store`]'s
/// `checkpoint_idle`.
const IDLE: std::time::Duration = std::time::Duration::from_millis(50);

fn spawn(session: i64, store: Store, next_seq: i64, shared: &Arc<Shared>) -> mpsc::Sender<Job> {
    let (sender, receiver) = mpsc::channel::<Job>();
    let shared = shared.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("spindle-log-{session}"))
        .spawn({
            let shared = shared.clone();
            move || {
                let _gone = Gone(shared.clone());
                let mut writer = LogWriter::new(session, next_seq);
                let mut store = store;
                let mut idle = true;
                loop {
                    let first = if idle {
                        receiver.recv().ok()
                    } else {
                        match receiver.recv_timeout(IDLE) {
                            Ok(job) => Some(job),
                            Err(mpsc::RecvTimeoutError::Timeout) => {
                                // Nothing to write a moment: the store's deferred work (the
                                // SQLite WAL checkpoint), off the commits of a streaming turn.
                                if let Err(error) = store.checkpoint_idle() {
                                    tracing::warn!(session, "checkpoint: {error}");
                                }
                                idle = true;
                                continue;
                            }
                            Err(mpsc::RecvTimeoutError::Disconnected) => None,
                        }
                    };
                    let Some(first) = first else { break };
                    idle = false;
                    let mut jobs = vec![first];
                    jobs.extend(receiver.try_iter());
                    run(&mut writer, &mut store, jobs, |outcome| {
                        lock(&shared.outcomes).queue.push_back(outcome);
                        shared.ready.notify_all();
                        shared.wake.notify_one();
                    });
                }
            }
        });
    if let Err(error) = spawned {
        tracing::error!(session, "cannot start the log writer: {error}");
        lock(&shared.outcomes).gone = true;
    }
    sender
}

#[cfg(not(test))]
fn run(writer: &mut LogWriter, store: &mut Store, jobs: Vec<Job>, answer: impl FnMut(Outcome)) {
    writer.run_each(store, jobs, answer);
}

/// [`Job::UseStore`] changes the store between the jobs around it.
#[cfg(test)]
fn run(writer: &mut LogWriter, store: &mut Store, jobs: Vec<Job>, mut answer: impl FnMut(Outcome)) {
    let mut run = Vec::new();
    for job in jobs {
        if let Job::UseStore(next) = job {
            writer.run_each(store, std::mem::take(&mut run), &mut answer);
            *store = next;
        } else {
            run.push(job);
        }
    }
    writer.run_each(store, run, answer);
}

/// Marks the writer gone when its thread ends, however it ends, and wakes whoever waits.
struct Gone(Arc<Shared>);

impl Drop for Gone {
    fn drop(&mut self) {
        lock(&self.0.outcomes).gone = true;
        self.0.ready.notify_all();
        self.0.wake.notify_one();
    }
}
