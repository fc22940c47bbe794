//! The SSE form of `/acp` streams: the events ready at once go out together (one write), in body
//! frames (HTTP chunks) of about [`FRAME_BYTES`] each; a comment keeps an idle stream open.
//!
//! Event ids (`id:`) are a Spindle extension (the RFD has no stream resumption): only a peer that
//! opted into `event_ids` gets them, and with them `Last-Event-ID` resumption. Others get the
//! messages alone, which is also less for their SSE parser to read.

use std::convert::Infallible;
use std::io::Write;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream, StreamExt};
use spindle_runtime::gateway::KEEPALIVE;
use spindle_runtime::gateway::streams::Out;
use spindle_wire::remote::EVENT_STREAM_MIME;

/// At most this many ready events are taken for one write.
const EVENTS_PER_WRITE: usize = 256;

/// A body frame closes once it holds this many bytes. Common SSE parsers (the official Rust
/// client's among them) keep an unread frame in one buffer and copy what is left of it after
/// every line they read, so a frame's cost to them grows with the square of its size; frames of
/// this size keep that copying small while one write still carries many events.
const FRAME_BYTES: usize = 16 * 1024;

/// One event of an `/acp` SSE stream.
#[derive(Debug)]
pub(super) enum SseEvent {
    /// An item of a session stream.
    Session(Out),
    /// A message of the connection stream with its counter.
    Connection(u64, Arc<str>),
}

impl SseEvent {
    /// About the bytes the event takes written (its message, plus room for the field names).
    fn size_hint(&self) -> usize {
        match self {
            SseEvent::Session(Out::Message { text, .. }) | SseEvent::Connection(_, text) => {
                text.len() + 40
            }
            _ => 40,
        }
    }

    /// Appends the event in the SSE format: `id:` when it has one and `ids` (the peer opted into
    /// event ids), the message as `data:` lines (a line break inside it starts another `data:`
    /// line), a blank line. A mark (an id without a message) is nothing without `ids`.
    fn write_to(&self, ids: bool, out: &mut Vec<u8>) {
        match self {
            SseEvent::Session(Out::Message { id, text }) => {
                if let Some(id) = id.filter(|_| ids) {
                    let _ = writeln!(out, "id: {id}");
                }
                write_data(out, text);
            }
            SseEvent::Session(Out::Mark(id)) => {
                if ids {
                    let _ = write!(out, "id: {id}\n: id\n\n");
                }
            }
            SseEvent::Session(Out::Comment(text)) => {
                out.extend_from_slice(b": ");
                out.extend_from_slice(text.as_bytes());
                out.extend_from_slice(b"\n\n");
            }
            SseEvent::Connection(n, text) => {
                if ids {
                    let _ = writeln!(out, "id: {n}");
                }
                write_data(out, text);
            }
        }
    }
}

fn write_data(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(b"data: ");
    let mut rest = text.as_bytes();
    // Most messages have no line break: one word-at-a-time search over the whole message.
    while let Some(n) = memchr::memchr2(b'\n', b'\r', rest) {
        out.extend_from_slice(&rest[..n]);
        out.extend_from_slice(b"\ndata: ");
        // CR LF is one line break.
        let skip = if rest[n] == b'\r' && rest.get(n + 1) == Some(&b'\n') {
            2
        } else {
            1
        };
        rest = &rest[n + skip..];
    }
    out.extend_from_slice(rest);
    out.extend_from_slice(b"\n\n");
}

/// The events ready together, as body frames of about [`FRAME_BYTES`] (an event is never split).
fn frames(events: &[SseEvent], ids: bool) -> Vec<Bytes> {
    // Each frame is allocated for what is left to write, up to a frame's size (one small event
    // ready alone takes a small buffer).
    let mut left: usize = events.iter().map(SseEvent::size_hint).sum();
    let mut frames = Vec::new();
    let mut out = Vec::new();
    for event in events {
        if out.is_empty() {
            out.reserve(left.min(FRAME_BYTES + 64));
        }
        event.write_to(ids, &mut out);
        left = left.saturating_sub(event.size_hint());
        if out.len() >= FRAME_BYTES {
            frames.push(Bytes::from(std::mem::take(&mut out)));
        }
    }
    if !out.is_empty() {
        frames.push(Bytes::from(out));
    }
    frames
}

/// The `text/event-stream` response of `events`; `ids`: the peer opted into event ids.
pub(super) fn response(
    events: impl Stream<Item = SseEvent> + Send + 'static,
    ids: bool,
) -> Response {
    let batches = Box::pin(events.ready_chunks(EVENTS_PER_WRITE));
    let body = stream::unfold(batches, move |mut batches| async move {
        let frames = match tokio::time::timeout(KEEPALIVE, batches.next()).await {
            Ok(Some(batch)) => frames(&batch, ids),
            Ok(None) => return None,
            Err(_) => vec![Bytes::from_static(b": keepalive\n\n")],
        };
        Some((stream::iter(frames), batches))
    })
    .flatten()
    .map(Ok::<_, Infallible>);
    (
        [
            (header::CONTENT_TYPE, EVENT_STREAM_MIME),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_runtime::hub::EventId;

    fn sample() -> Vec<SseEvent> {
        let id = EventId {
            generation: 3,
            counter: 7,
        };
        vec![
            SseEvent::Session(Out::Message {
                id: Some(id),
                text: Arc::from("{\"a\":1}"),
            }),
            SseEvent::Session(Out::Message {
                id: None,
                text: Arc::from("x\ny\r\nz\rw"),
            }),
            SseEvent::Session(Out::Mark(id)),
            SseEvent::Session(Out::Comment("dropped")),
            SseEvent::Connection(12, Arc::from("{}")),
        ]
    }

    #[test]
    fn events_are_written_in_the_sse_format_with_ids_only_for_a_peer_that_opted_in() {
        let cases: [(bool, &[u8]); 2] = [
            (
                true,
                b"id: 3-7\ndata: {\"a\":1}\n\n\
                  data: x\ndata: y\ndata: z\ndata: w\n\n\
                  id: 3-7\n: id\n\n\
                  : dropped\n\n\
                  id: 12\ndata: {}\n\n",
            ),
            (
                false,
                b"data: {\"a\":1}\n\n\
                  data: x\ndata: y\ndata: z\ndata: w\n\n\
                  : dropped\n\n\
                  data: {}\n\n",
            ),
        ];
        for (ids, expected) in cases {
            assert_eq!(
                frames(&sample(), ids),
                vec![Bytes::from_static(expected)],
                "ids: {ids}"
            );
        }
    }

    #[test]
    fn a_frame_closes_after_the_event_that_fills_it_and_no_event_is_split() {
        let text: Arc<str> = Arc::from(format!("\"{}\"", "x".repeat(1000)));
        let events: Vec<SseEvent> = (0..40)
            .map(|n| SseEvent::Connection(n, text.clone()))
            .collect();
        let event_bytes = "data: ".len() + text.len() + 2;
        let per_frame = FRAME_BYTES.div_ceil(event_bytes);
        let sizes: Vec<usize> = frames(&events, false).iter().map(Bytes::len).collect();
        assert_eq!(
            sizes,
            vec![
                per_frame * event_bytes,
                per_frame * event_bytes,
                (40 - 2 * per_frame) * event_bytes
            ]
        );
        assert!(frames(&[], true).is_empty());
    }
}
