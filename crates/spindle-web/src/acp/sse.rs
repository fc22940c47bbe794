//! The SSE form of `/acp` streams: every event ready at once goes out in one body frame (one
//! chunk, one write), instead of one frame per message; a comment keeps an idle stream open.

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

/// At most this many events share one body frame.
const EVENTS_PER_FRAME: usize = 256;

/// One event of an `/acp` SSE stream.
#[derive(Debug)]
pub(super) enum SseEvent {
    /// An item of a session stream.
    Session(Out),
    /// A message of the connection stream with its counter.
    Connection(u64, Arc<str>),
}

impl SseEvent {
    /// Appends the event in the SSE format: `id:` when it has one, the message as `data:`
    /// lines (a line break inside it starts another `data:` line), a blank line.
    fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            SseEvent::Session(Out::Message { id, text }) => {
                if let Some(id) = id {
                    let _ = writeln!(out, "id: {id}");
                }
                write_data(out, text);
            }
            SseEvent::Session(Out::Mark(id)) => {
                let _ = write!(out, "id: {id}\n: id\n\n");
            }
            SseEvent::Session(Out::Comment(text)) => {
                out.extend_from_slice(b": ");
                out.extend_from_slice(text.as_bytes());
                out.extend_from_slice(b"\n\n");
            }
            SseEvent::Connection(n, text) => {
                let _ = writeln!(out, "id: {n}");
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

/// The events ready together, as one body frame.
fn frame(events: &[SseEvent]) -> Bytes {
    let size: usize = events
        .iter()
        .map(|event| match event {
            SseEvent::Session(Out::Message { text, .. }) | SseEvent::Connection(_, text) => {
                text.len() + 40
            }
            _ => 40,
        })
        .sum();
    let mut out = Vec::with_capacity(size);
    for event in events {
        event.write_to(&mut out);
    }
    Bytes::from(out)
}

/// The `text/event-stream` response of `events`.
pub(super) fn response(events: impl Stream<Item = SseEvent> + Send + 'static) -> Response {
    let batches = Box::pin(events.ready_chunks(EVENTS_PER_FRAME));
    let body = stream::unfold(batches, |mut batches| async move {
        let bytes = match tokio::time::timeout(KEEPALIVE, batches.next()).await {
            Ok(Some(batch)) => frame(&batch),
            Ok(None) => return None,
            Err(_) => Bytes::from_static(b": keepalive\n\n"),
        };
        Some((Ok::<_, Infallible>(bytes), batches))
    });
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

    #[test]
    fn events_are_written_in_the_sse_format() {
        let id = EventId {
            generation: 3,
            counter: 7,
        };
        let events = [
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
        ];
        assert_eq!(
            frame(&events),
            Bytes::from_static(
                b"id: 3-7\ndata: {\"a\":1}\n\n\
                  data: x\ndata: y\ndata: z\ndata: w\n\n\
                  id: 3-7\n: id\n\n\
                  : dropped\n\n\
                  id: 12\ndata: {}\n\n"
            )
        );
    }
}
