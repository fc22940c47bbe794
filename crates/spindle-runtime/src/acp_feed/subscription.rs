//! One `/acp` client stream's subscription to a session's ACP hub, bounded by bytes and by
//! messages: a client reading continuously never gets near the bounds, a stalled one is dropped
//! without slowing the agent or anyone else.

use std::sync::Arc;

use crate::acp_feed::item::AcpItem;
use crate::hub::{Frame, HubItem};

/// The bytes one `/acp` subscriber may have queued and not taken before it is dropped: a client
/// reading continuously never gets near it, a stalled one is dropped without slowing anyone.
/// The queued messages are the hub's, shared by every subscriber: a stalled one pins at most this
/// much beside its queue's own slots.
pub(crate) const SUBSCRIBER_BYTES: usize = 32 << 20;
/// The messages one `/acp` subscriber may have queued (beside the bytes). Twice what it was
/// (65,536) once the gateway streamed a fast agent about twice as fast: the official Rust
/// client, which reads about 100,000 messages a second, fell that far behind a 100,000-update
/// burst and was dropped (it cannot resume).
pub(crate) const SUBSCRIBER_MESSAGES: usize = 131_072;

/// One client stream's subscription to a session's hub.
#[derive(Debug)]
pub struct Subscription {
    pub(crate) receiver: tokio::sync::mpsc::Receiver<Frame<AcpItem>>,
    /// Bytes of live frames queued; the stream subtracts what it takes.
    pub(crate) queued: Arc<std::sync::atomic::AtomicUsize>,
    /// Frames with a counter above this were counted.
    pub(crate) start: u64,
}

impl Subscription {
    /// The next frame, its bytes given back.
    pub(crate) async fn recv(&mut self) -> Option<Frame<AcpItem>> {
        let frame = self.receiver.recv().await?;
        self.taken(&frame);
        Some(frame)
    }

    /// A frame already waiting, if any (to write several at once).
    pub(crate) fn try_recv(&mut self) -> Option<Frame<AcpItem>> {
        let frame = self.receiver.try_recv().ok()?;
        self.taken(&frame);
        Some(frame)
    }

    fn taken(&self, frame: &Frame<AcpItem>) {
        if let Frame::Ops { id, data } = frame
            && id.counter > self.start
        {
            self.queued
                .fetch_sub(data.size(), std::sync::atomic::Ordering::AcqRel);
        }
    }
}
