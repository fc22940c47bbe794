//! Fan-out of one session's render-op batches to its SSE observers.
//!
//! Every published batch gets the next event id of the session. The hub keeps the most recent
//! batches in a bounded ring so that a reconnecting observer (`Last-Event-ID`) gets exactly the
//! batches it missed: no loss, no duplicate. An id older than the ring, or from a previous server
//! run (another generation), gets a `reset` frame instead: the full render snapshot, after which
//! the observer continues live.
//!
//! Publishing never waits for an observer. Each observer has a bounded queue; an observer whose
//! queue is full is dropped (its stream ends), and the browser's EventSource reconnects with its
//! last id and catches up from the ring or a reset. So a stalled tab costs at most its queue and
//! never slows the agent reader or the other tabs.
//!
//! Holding: while lines a batch derives from are not yet committed to the wire log
//! (`pipeline.rs`), the session holds its hubs ([`Hub::hold_until`]): a batch published then gets
//! its id at once but reaches the ring and the observers only when [`Hub::release_through`] says
//! the log is committed through the `seq` it was held for. Held batches are released in the order
//! they were published; a subscription is made only with nothing held (the session settles first).

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::mpsc;

/// An SSE event id: the server generation and a per-session counter. Rendered as `G-N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventId {
    /// Changes at every server start.
    pub generation: u64,
    /// Per session, from 1, increasing by one per published batch.
    pub counter: u64,
}

impl EventId {
    /// Parses a `Last-Event-ID` header value. `None` for anything malformed.
    pub fn parse(text: &str) -> Option<EventId> {
        let (generation, counter) = text.trim().split_once('-')?;
        Some(EventId {
            generation: generation.parse().ok()?,
            counter: counter.parse().ok()?,
        })
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.generation, self.counter)
    }
}

/// What a hub carries: cloned for every observer; its size counts against the byte bounds.
/// The page's hub carries JSON text (`Arc<str>`); the `/acp` fan-out an item that may differ
/// by protocol version (`acp::AcpItem`).
pub trait HubItem: Clone {
    /// The bytes it holds.
    fn size(&self) -> usize;
}

impl HubItem for Arc<str> {
    fn size(&self) -> usize {
        self.len()
    }
}

/// One frame for an observer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<T = Arc<str>> {
    /// A batch of render ops, as JSON (`{"ops":[...]}`).
    Ops {
        /// The batch's id.
        id: EventId,
        /// JSON payload.
        data: T,
    },
    /// Clear the view and apply this snapshot (`{"ops":[...]}`); the id is the last batch the
    /// snapshot includes.
    Reset {
        /// The last batch included in the snapshot.
        id: EventId,
        /// JSON payload.
        data: Arc<str>,
    },
}

impl<T> Frame<T> {
    /// The frame's event id.
    pub fn id(&self) -> EventId {
        match self {
            Frame::Ops { id, .. } | Frame::Reset { id, .. } => *id,
        }
    }
}

/// Limits of a hub.
#[derive(Debug, Clone, Copy)]
pub struct HubLimits {
    /// How many recent batches are kept for reconnects.
    pub ring_batches: usize,
    /// How many bytes of recent batches are kept for reconnects (a hostile agent's huge lines
    /// must not pin gigabytes); the newest batch is always kept.
    pub ring_bytes: usize,
    /// How many frames one observer may have queued before it is dropped.
    pub observer_queue: usize,
}

impl Default for HubLimits {
    fn default() -> Self {
        HubLimits {
            ring_batches: 4096,
            ring_bytes: 32 << 20,
            observer_queue: 1024,
        }
    }
}

#[derive(Debug)]
struct Observer<T> {
    sender: mpsc::Sender<Frame<T>>,
    /// For a byte-bounded observer: the bytes of live batches queued and not yet taken (the
    /// receiver subtracts what it takes, see [`Hub::subscribe_bounded`]) and the bound.
    bytes: Option<(Arc<std::sync::atomic::AtomicUsize>, usize)>,
}

/// Counters for tests, the benchmark and the status endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HubStats {
    /// Observers currently attached.
    pub observers: usize,
    /// Observers dropped because their queue was full.
    pub dropped_slow: u64,
    /// Reconnects served from the ring.
    pub resumed: u64,
    /// Subscriptions served with a reset snapshot.
    pub resets: u64,
}

/// The fan-out state of one session. Not synchronized: the session keeps it under the same lock
/// as its engine, so that a snapshot and the batches after it are cut at the same point.
#[derive(Debug)]
pub struct Hub<T = Arc<str>> {
    generation: u64,
    last_counter: u64,
    ring: VecDeque<(u64, T)>,
    ring_bytes: usize,
    observers: Vec<Observer<T>>,
    limits: HubLimits,
    stats: HubStats,
    /// Batches published while holding, in order, each with the `seq` it waits for.
    held: VecDeque<(i64, Held<T>)>,
    /// While holding: the `seq` a batch published now waits for.
    hold_tag: Option<i64>,
}

/// A batch held back, or a [`Hub::skip`] made while holding (it empties the ring at release).
#[derive(Debug)]
enum Held<T> {
    Batch(u64, T),
    Skip,
}

impl Hub {
    /// An empty hub of JSON text for a server generation.
    pub fn new(generation: u64, limits: HubLimits) -> Hub {
        Hub::with_items(generation, limits)
    }
}

impl<T: HubItem> Hub<T> {
    /// An empty hub of `T` items for a server generation.
    pub fn with_items(generation: u64, limits: HubLimits) -> Hub<T> {
        Hub {
            generation,
            last_counter: 0,
            ring: VecDeque::new(),
            ring_bytes: 0,
            observers: Vec::new(),
            limits: HubLimits {
                ring_batches: limits.ring_batches.max(1),
                ring_bytes: limits.ring_bytes,
                observer_queue: limits.observer_queue.max(1),
            },
            stats: HubStats::default(),
            held: VecDeque::new(),
            hold_tag: None,
        }
    }

    /// Holds batches published from now on until the log is committed through `seq` (see the
    /// module's header). `seq`s only grow.
    pub fn hold_until(&mut self, seq: i64) {
        self.hold_tag = Some(self.hold_tag.map_or(seq, |tag| tag.max(seq)));
    }

    /// Delivers, in order, the held batches that waited for a `seq` up to `seq`; stops holding
    /// once nothing waits for a later one.
    pub fn release_through(&mut self, seq: i64) {
        while let Some((tag, _)) = self.held.front() {
            if *tag > seq {
                break;
            }
            match self.held.pop_front() {
                Some((_, Held::Batch(counter, data))) => self.deliver(counter, data),
                Some((_, Held::Skip)) => self.clear_ring(),
                None => break,
            }
        }
        if self.held.is_empty() && self.hold_tag.is_some_and(|tag| tag <= seq) {
            self.hold_tag = None;
        }
    }

    /// Whether batches wait for a commit (or would, if published now).
    pub fn holding(&self) -> bool {
        self.hold_tag.is_some()
    }

    /// The id of the last published batch.
    pub fn last_id(&self) -> EventId {
        EventId {
            generation: self.generation,
            counter: self.last_counter,
        }
    }

    /// Counters.
    pub fn stats(&self) -> HubStats {
        HubStats {
            observers: self.observers.len(),
            ..self.stats
        }
    }

    /// The hub's limits.
    pub fn limits(&self) -> HubLimits {
        self.limits
    }

    /// Counts a batch that nobody was sent (no observer was attached) without keeping it: the
    /// ring is emptied, so that no later resume skips over the gap (it gets a reset instead).
    pub fn skip(&mut self) -> EventId {
        self.last_counter += 1;
        match self.hold_tag {
            Some(tag) => self.held.push_back((tag, Held::Skip)),
            None => self.clear_ring(),
        }
        self.last_id()
    }

    fn clear_ring(&mut self) {
        self.ring.clear();
        self.ring_bytes = 0;
    }

    /// Detaches every observer (their streams end). Used at shutdown.
    pub fn close_all(&mut self) {
        self.observers.clear();
        self.held.clear();
        self.hold_tag = None;
    }

    /// Publishes one batch (a JSON payload) to every observer; drops observers that are full or
    /// gone. Never waits.
    pub fn publish(&mut self, data: T) -> EventId {
        self.last_counter += 1;
        match self.hold_tag {
            Some(tag) => self
                .held
                .push_back((tag, Held::Batch(self.last_counter, data))),
            None => self.deliver(self.last_counter, data),
        }
        self.last_id()
    }

    /// Puts batch `counter` in the ring and sends it to every observer.
    fn deliver(&mut self, counter: u64, data: T) {
        let id = EventId {
            generation: self.generation,
            counter,
        };
        let size = data.size();
        self.ring.push_back((counter, data.clone()));
        self.ring_bytes += size;
        while self.ring.len() > 1
            && (self.ring.len() > self.limits.ring_batches
                || self.ring_bytes > self.limits.ring_bytes)
        {
            if let Some((_, old)) = self.ring.pop_front() {
                self.ring_bytes -= old.size();
            }
        }
        let frame = Frame::Ops { id, data };
        let mut dropped = 0;
        self.observers.retain(|observer| {
            use std::sync::atomic::Ordering;
            if let Some((queued, limit)) = &observer.bytes {
                let now = queued.load(Ordering::Acquire);
                // An empty queue takes any batch, however large.
                if now > 0 && now + size > *limit {
                    dropped += 1;
                    return false;
                }
            }
            match observer.sender.try_send(frame.clone()) {
                Ok(()) => {
                    if let Some((queued, _)) = &observer.bytes {
                        queued.fetch_add(size, Ordering::AcqRel);
                    }
                    true
                }
                Err(mpsc::error::TrySendError::Full(_)) => {
                    dropped += 1;
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
        self.stats.dropped_slow += dropped;
    }

    /// Attaches an observer. With a `last_seen` id of this generation that the ring still covers,
    /// the observer first receives exactly the batches after it; otherwise it first receives a
    /// reset built by `snapshot` (called only then). Then it receives live batches.
    pub fn subscribe(
        &mut self,
        last_seen: Option<EventId>,
        snapshot: impl FnOnce() -> String,
    ) -> mpsc::Receiver<Frame<T>> {
        self.subscribe_with(last_seen, snapshot, None)
    }

    /// [`Hub::subscribe`] with the observer's queue bounded by bytes as well: live batches are
    /// counted in the returned counter, and the receiver subtracts the size of each `Ops` frame
    /// whose counter is above the returned start (what was queued at subscription is not
    /// counted); once a batch would take the queue over `max_bytes`, the observer is dropped.
    pub fn subscribe_bounded(
        &mut self,
        last_seen: Option<EventId>,
        snapshot: impl FnOnce() -> String,
        max_bytes: usize,
    ) -> (
        mpsc::Receiver<Frame<T>>,
        Arc<std::sync::atomic::AtomicUsize>,
        u64,
    ) {
        let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let start = self.last_counter;
        let receiver = self.subscribe_with(last_seen, snapshot, Some((queued.clone(), max_bytes)));
        (receiver, queued, start)
    }

    fn subscribe_with(
        &mut self,
        last_seen: Option<EventId>,
        snapshot: impl FnOnce() -> String,
        bytes: Option<(Arc<std::sync::atomic::AtomicUsize>, usize)>,
    ) -> mpsc::Receiver<Frame<T>> {
        // The session settles before it subscribes: a snapshot never runs ahead of the batches.
        debug_assert!(self.held.is_empty(), "subscribed while batches are held");
        let backlog: Option<Vec<Frame<T>>> = last_seen.and_then(|seen| self.backlog_after(seen));
        let queued = backlog.as_ref().map_or(1, Vec::len);
        let (sender, receiver) = mpsc::channel(queued + self.limits.observer_queue);
        match backlog {
            Some(frames) => {
                self.stats.resumed += 1;
                for frame in frames {
                    // Cannot fail: the channel was sized for the backlog and nobody else sends.
                    let _ = sender.try_send(frame);
                }
            }
            None => {
                self.stats.resets += 1;
                let _ = sender.try_send(Frame::Reset {
                    id: self.last_id(),
                    data: Arc::from(snapshot()),
                });
            }
        }
        self.observers.push(Observer { sender, bytes });
        receiver
    }

    fn backlog_after(&self, seen: EventId) -> Option<Vec<Frame<T>>> {
        if seen.generation != self.generation || seen.counter > self.last_counter {
            return None;
        }
        if seen.counter == self.last_counter {
            return Some(Vec::new());
        }
        let oldest = self.ring.front().map(|(counter, _)| *counter)?;
        if seen.counter + 1 < oldest {
            return None;
        }
        Some(
            self.ring
                .iter()
                .filter(|(counter, _)| *counter > seen.counter)
                .map(|(counter, data)| Frame::Ops {
                    id: EventId {
                        generation: self.generation,
                        counter: *counter,
                    },
                    data: data.clone(),
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(receiver: &mut mpsc::Receiver<Frame>) -> Vec<Frame> {
        let mut frames = Vec::new();
        while let Ok(frame) = receiver.try_recv() {
            frames.push(frame);
        }
        frames
    }

    fn ops_counters(frames: &[Frame]) -> Vec<u64> {
        frames
            .iter()
            .map(|f| match f {
                Frame::Ops { id, .. } => id.counter,
                Frame::Reset { .. } => panic!("unexpected reset"),
            })
            .collect()
    }

    fn limits(ring: usize, queue: usize) -> HubLimits {
        HubLimits {
            ring_batches: ring,
            ring_bytes: usize::MAX,
            observer_queue: queue,
        }
    }

    #[test]
    fn the_ring_is_bounded_in_bytes_and_keeps_the_newest_batch() {
        let mut hub = Hub::new(
            1,
            HubLimits {
                ring_batches: 100,
                ring_bytes: 10,
                observer_queue: 4,
            },
        );
        hub.publish(Arc::from("aaaa"));
        hub.publish(Arc::from("bbbb"));
        hub.publish(Arc::from("cccc"));
        // 12 bytes > 10: the oldest went; resuming after it is still exact.
        let mut rx = hub.subscribe(
            Some(EventId {
                generation: 1,
                counter: 1,
            }),
            || panic!("no snapshot needed"),
        );
        assert_eq!(ops_counters(&drain(&mut rx)), vec![2, 3]);
        hub.publish(Arc::from("x".repeat(50)));
        let mut rx = hub.subscribe(
            Some(EventId {
                generation: 1,
                counter: 3,
            }),
            || panic!("no snapshot needed"),
        );
        assert_eq!(ops_counters(&drain(&mut rx)), vec![4]);
        let mut rx = hub.subscribe(
            Some(EventId {
                generation: 1,
                counter: 2,
            }),
            || "snap".into(),
        );
        assert!(matches!(drain(&mut rx)[0], Frame::Reset { .. }));
    }

    #[test]
    fn event_ids_round_trip_and_reject_garbage() {
        let id = EventId {
            generation: 3,
            counter: 42,
        };
        assert_eq!(EventId::parse(&id.to_string()), Some(id));
        for bad in [
            "",
            "3",
            "-1",
            "a-b",
            "3-",
            "1-2-3",
            "99999999999999999999999-1",
        ] {
            assert_eq!(EventId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_new_observer_gets_a_reset_then_live_batches() {
        let mut hub = Hub::new(7, limits(8, 8));
        hub.publish(Arc::from("a"));
        let mut rx = hub.subscribe(None, || "snap".into());
        hub.publish(Arc::from("b"));
        let frames = drain(&mut rx);
        assert_eq!(
            frames[0],
            Frame::Reset {
                id: EventId {
                    generation: 7,
                    counter: 1
                },
                data: Arc::from("snap")
            }
        );
        assert_eq!(ops_counters(&frames[1..]), vec![2]);
    }

    #[test]
    fn a_reconnect_within_the_ring_resumes_without_loss_or_duplicate() {
        let mut hub = Hub::new(1, limits(8, 8));
        for n in 0..5 {
            hub.publish(Arc::from(format!("{n}")));
        }
        let seen = EventId {
            generation: 1,
            counter: 2,
        };
        let mut rx = hub.subscribe(Some(seen), || panic!("no snapshot needed"));
        hub.publish(Arc::from("live"));
        assert_eq!(ops_counters(&drain(&mut rx)), vec![3, 4, 5, 6]);
        // Fully caught up: nothing replayed.
        let mut rx = hub.subscribe(Some(hub.last_id()), || panic!("no snapshot needed"));
        assert!(drain(&mut rx).is_empty());
        assert_eq!(hub.stats().resumed, 2);
    }

    #[test]
    fn ids_older_than_the_ring_from_another_generation_or_the_future_get_a_reset() {
        let mut hub = Hub::new(2, limits(3, 8));
        for n in 0..10 {
            hub.publish(Arc::from(format!("{n}")));
        }
        for seen in [
            EventId {
                generation: 2,
                counter: 5,
            },
            EventId {
                generation: 1,
                counter: 10,
            },
            EventId {
                generation: 2,
                counter: 11,
            },
        ] {
            let mut rx = hub.subscribe(Some(seen), || "snap".into());
            let frames = drain(&mut rx);
            assert_eq!(frames.len(), 1);
            assert!(matches!(&frames[0], Frame::Reset { id, .. } if id.counter == 10));
        }
        // The oldest id the ring can still continue from: counter 7 is in the ring, so 6 resumes.
        let mut rx = hub.subscribe(
            Some(EventId {
                generation: 2,
                counter: 7,
            }),
            || panic!("no snapshot needed"),
        );
        assert_eq!(ops_counters(&drain(&mut rx)), vec![8, 9, 10]);
    }

    #[test]
    fn a_stalled_observer_is_dropped_and_never_blocks_the_others() {
        let mut hub = Hub::new(1, limits(64, 4));
        let stalled = hub.subscribe(None, String::new);
        let mut live = hub.subscribe(None, String::new);
        let mut seen = Vec::new();
        for n in 0..20 {
            hub.publish(Arc::from(format!("{n}")));
            seen.extend(drain(&mut live));
        }
        assert_eq!(seen.len(), 21, "reset + 20 batches");
        assert_eq!(hub.stats().observers, 1);
        assert_eq!(hub.stats().dropped_slow, 1);
        drop(stalled);
    }

    #[test]
    fn a_byte_bounded_observer_is_dropped_past_its_bytes_and_not_before() {
        use std::sync::atomic::Ordering;
        let mut hub = Hub::new(1, limits(64, 1000));
        hub.publish(Arc::from("old"));
        let (mut rx, queued, start) = hub.subscribe_bounded(None, || "snapshot".into(), 10);
        assert_eq!(start, 1);
        hub.publish(Arc::from("aaaa"));
        hub.publish(Arc::from("bbbb"));
        assert_eq!(queued.load(Ordering::Acquire), 8);
        // Taking a live frame frees its bytes (the reset before it was never counted).
        assert!(matches!(rx.try_recv(), Ok(Frame::Reset { .. })));
        if let Ok(Frame::Ops { id, data }) = rx.try_recv() {
            assert!(id.counter > start);
            queued.fetch_sub(data.len(), Ordering::AcqRel);
        }
        hub.publish(Arc::from("cccccc"));
        assert_eq!(hub.stats().observers, 1, "4 + 6 bytes fit");
        hub.publish(Arc::from("d"));
        assert_eq!(hub.stats().observers, 0, "11 bytes do not");
        assert_eq!(hub.stats().dropped_slow, 1);
    }

    #[test]
    fn closed_observers_are_forgotten() {
        let mut hub = Hub::new(1, limits(4, 4));
        let rx = hub.subscribe(None, String::new);
        drop(rx);
        hub.publish(Arc::from("x"));
        assert_eq!(hub.stats().observers, 0);
        assert_eq!(hub.stats().dropped_slow, 0);
    }
}
