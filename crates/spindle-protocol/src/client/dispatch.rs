//! The tokio side of [`AcpClient`](super::AcpClient): the state it shares
//! with its clones (a [`ClientCore`] behind a mutex) and the dispatch task
//! that feeds the core what the connection receives, sends what the core
//! answers, resolves waiters and hands events to the application.

use std::sync::{Mutex, MutexGuard};

use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use super::core::{ClientCore, Completion};
use super::types::{ClientError, ClientEvent, WireDirection, WireRecord};
use crate::jsonrpc::Message;
use crate::transport::{ChildHandle, Incoming, MessageReceiver, WeakMessageSender};

/// What `AcpClient` attaches to a request: who waits for the answer.
pub(super) type Waiter = Option<oneshot::Sender<Result<Box<RawValue>, ClientError>>>;

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) core: Mutex<ClientCore<Waiter>>,
    pub(super) wire_tap: Option<mpsc::UnboundedSender<WireRecord>>,
    pub(super) events: mpsc::UnboundedSender<Vec<ClientEvent>>,
}

/// Most events handed over at once.
pub(super) const EVENT_BATCH: usize = 256;

/// What one step of the core produced, taken out under the lock.
pub(super) struct Step {
    pub(super) outgoing: Vec<Message>,
    pub(super) events: Vec<ClientEvent>,
    pub(super) completions: Vec<Completion<Waiter>>,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, ClientCore<Waiter>> {
        self.core.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the core and takes out what it produced.
    pub(super) fn step<R>(&self, f: impl FnOnce(&mut ClientCore<Waiter>) -> R) -> (R, Step) {
        let mut core = self.lock();
        let r = f(&mut core);
        let step = Step {
            outgoing: core.take_outgoing(),
            events: core.take_events(),
            completions: core.take_completions(),
        };
        (r, step)
    }

    pub(super) fn tap(&self, direction: WireDirection, message: &Message) {
        self.tap_json(direction, || message.to_json());
    }

    /// Records `json()` when a wire tap is installed (built only then).
    pub(super) fn tap_json(&self, direction: WireDirection, json: impl FnOnce() -> String) {
        if let Some(tap) = &self.wire_tap {
            let _ = tap.send(WireRecord {
                direction,
                json: json(),
            });
        }
    }

    pub(super) fn emit_all(&self, events: &mut Vec<ClientEvent>) {
        // The application may have dropped its receiver; nothing to do then.
        // The next batch starts at full size: no regrowth per batch.
        if !events.is_empty() {
            let batch = std::mem::replace(events, Vec::with_capacity(EVENT_BATCH));
            let _ = self.events.send(batch);
        }
    }
}

/// Resolves the waiters of answered requests.
pub(super) fn complete(completions: Vec<Completion<Waiter>>) {
    for c in completions {
        if let Some(waiter) = c.data {
            let _ = waiter.send(c.result);
        }
    }
}

pub(super) async fn dispatch_loop(
    shared: std::sync::Arc<Shared>,
    sender: WeakMessageSender,
    mut receiver: MessageReceiver,
    child: Option<ChildHandle>,
) {
    // Events are handed over in batches while input is queued: one channel
    // operation per batch instead of per update.
    let mut out: Vec<ClientEvent> = Vec::with_capacity(EVENT_BATCH);
    'read: while let Some(first) = receiver.recv().await {
        // Everything already queued goes through the core under one lock,
        // until the core has something to send or to complete (those leave
        // the lock first, in order) or a batch of events is full.
        let mut next = Some(first);
        let (outgoing, completions, closed) = {
            let mut core = shared.lock();
            let mut closed = false;
            while let Some(incoming) = next.take() {
                match &incoming {
                    Incoming::Message(message) => shared.tap(WireDirection::Received, message),
                    Incoming::ScannedUpdate(params) => {
                        shared.tap_json(WireDirection::Received, || params.notification_json());
                    }
                    Incoming::Malformed { .. } => {}
                    Incoming::Closed { reason } => {
                        tracing::debug!("agent connection closed: {reason}");
                        closed = true;
                        break;
                    }
                }
                core.receive(incoming);
                core.drain_events_into(&mut out);
                if core.has_output() || out.len() >= EVENT_BATCH {
                    break;
                }
                next = receiver.try_recv();
            }
            (core.take_outgoing(), core.take_completions(), closed)
        };
        if !outgoing.is_empty()
            && let Some(sender) = sender.upgrade()
        {
            for reply in outgoing {
                shared.tap(WireDirection::Sent, &reply);
                let _ = sender.send(reply).await;
            }
        }
        complete(completions);
        if closed {
            break 'read;
        }
        if !receiver.has_ready() || out.len() >= EVENT_BATCH {
            shared.emit_all(&mut out);
        }
    }
    let ((), step) = shared.step(ClientCore::close);
    out.extend(step.events);
    shared.emit_all(&mut out);
    complete(step.completions);
    let (status, stderr_tail) = match child {
        Some(c) => (Some(c.wait().await), c.stderr_tail()),
        None => (None, String::new()),
    };
    shared.emit_all(&mut vec![ClientEvent::AgentExited {
        status,
        stderr_tail,
    }]);
}
