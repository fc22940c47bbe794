//! [`UpdateParams`]: the params of one `session/update` notification as the
//! client runtime hands them on. For a plain text chunk (the shape that
//! dominates every stream) the framer scanned the whole line once with
//! `spindle_wire::scan` and keeps the scanned fields beside the params text,
//! so a consumer (the transcript engine) does not read the text again; any
//! other update is the params text, as the framer's envelope scan or serde
//! validated it (with where its `sessionId` lies, when the framer scanned
//! it). A reader hands the scanned params of one read buffer on in one
//! shared copy of that buffer ([`ReadText`]) instead of one allocation per
//! line.

use serde_json::value::RawValue;
use std::ops::Range;
use std::sync::Arc;

use spindle_wire::scan::{ChunkNotification, PlainChunk, ScannedChunk, UpdateNotification};

/// The params of a `session/update` notification: the JSON text (with
/// `sessionId` and `update`) and, for a plain text chunk, its fields.
///
/// Params a connection's reader scanned share one copy of the read buffer
/// they came in (at most 256 KiB) with the other lines of that buffer, and
/// keep it allocated: to keep params for long, keep a copy of
/// [`Self::get`] instead.
#[derive(Debug, Clone)]
pub struct UpdateParams {
    json: Text,
    scanned: Option<Scanned>,
}

/// Where the params text lives.
#[derive(Debug, Clone)]
enum Text {
    /// A copy of its own.
    Own(Box<str>),
    /// A range of a read buffer shared by the lines read with it (which
    /// stays allocated while any of their params are kept): its start and
    /// end, 32-bit offsets (a read buffer is far smaller), so the params
    /// stay small enough for an event to be moved without a `memcpy` call.
    Shared(Arc<str>, u32, u32),
}

impl Text {
    /// `params`, a range of `buffer` when given (shared), else copied.
    fn of(params: &str, buffer: Option<&ReadText>) -> Text {
        if let Some(b) = buffer
            && let Some(start) = spindle_wire::scan::offset_in(&b.0, params)
            && let (Ok(from), Ok(to)) = (u32::try_from(start), u32::try_from(start + params.len()))
        {
            return Text::Shared(Arc::clone(&b.0), from, to);
        }
        Text::Own(params.into())
    }

    fn get(&self) -> &str {
        match self {
            Text::Own(s) => s,
            Text::Shared(buffer, from, to) => &buffer[*from as usize..*to as usize],
        }
    }
}

/// The complete lines of one read buffer, copied once and shared by the
/// params scanned from them.
#[derive(Debug, Clone)]
pub(crate) struct ReadText(pub(crate) Arc<str>);

/// What the framer found when it scanned the line.
#[derive(Debug, Clone)]
enum Scanned {
    /// A plain text chunk: all its fields.
    Chunk(ScannedChunk),
    /// Another update: where its plain `sessionId` lies in the params text.
    SessionId(Range<usize>),
}

impl UpdateParams {
    /// Params decoded by serde: the text only.
    pub fn from_raw(raw: Box<RawValue>) -> UpdateParams {
        UpdateParams {
            json: Text::Own(raw.into()),
            scanned: None,
        }
    }

    /// A plain text chunk notification the scanner validated: its params
    /// slice is copied as it is, its fields kept as ranges of the copy.
    pub fn from_chunk(n: ChunkNotification<'_>) -> UpdateParams {
        Self::chunk_in(n, None)
    }

    /// [`Self::from_chunk`], sharing `buffer` when the line is part of it.
    pub(crate) fn chunk_in(n: ChunkNotification<'_>, buffer: Option<&ReadText>) -> UpdateParams {
        UpdateParams {
            json: Text::of(n.params, buffer),
            scanned: Some(Scanned::Chunk(ScannedChunk::new(n.chunk, n.params))),
        }
    }

    /// Any other update notification the envelope scan validated: its
    /// params slice copied as it is, the `sessionId` kept as a range of it.
    pub fn from_notification(n: &UpdateNotification<'_>) -> UpdateParams {
        Self::notification_in(n, None)
    }

    /// [`Self::from_notification`], sharing `buffer` when the line is part
    /// of it.
    pub(crate) fn notification_in(
        n: &UpdateNotification<'_>,
        buffer: Option<&ReadText>,
    ) -> UpdateParams {
        let start = spindle_wire::scan::offset_in(n.params, n.session_id)
            .expect("the session id is a slice of the params");
        UpdateParams {
            json: Text::of(n.params, buffer),
            scanned: Some(Scanned::SessionId(start..start + n.session_id.len())),
        }
    }

    /// The `sessionId` the framer scanned (`None` for an update that was
    /// not scanned, or a scanned chunk without it), without viewing the
    /// other fields.
    pub fn scanned_session_id(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self.scanned.as_ref()? {
            Scanned::Chunk(chunk) => chunk.session_id(self.json.get()),
            Scanned::SessionId(range) => {
                Some(std::borrow::Cow::Borrowed(&self.json.get()[range.clone()]))
            }
        }
    }

    /// The params as JSON text, exactly as the agent wrote them.
    pub fn get(&self) -> &str {
        self.json.get()
    }

    /// The scanned fields when the update is a plain text chunk read by the
    /// scanner; `None` for every other update (decode [`Self::get`]).
    pub fn plain_chunk(&self) -> Option<PlainChunk<'_>> {
        match self.scanned.as_ref()? {
            Scanned::Chunk(chunk) => Some(chunk.view(self.json.get())),
            Scanned::SessionId(_) => None,
        }
    }
}

impl UpdateParams {
    /// The notification these params came in, as
    /// [`Message::to_json`](crate::Message::to_json) writes a decoded one
    /// (for the wire tap).
    pub fn notification_json(&self) -> String {
        let method = spindle_wire::client_methods::SESSION_UPDATE;
        format!(
            r#"{{"jsonrpc":"2.0","method":"{method}","params":{}}}"#,
            self.json.get()
        )
    }
}

impl std::fmt::Display for UpdateParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.json.get())
    }
}

#[cfg(test)]
mod tests {
    /// An update event is moved several times between the reader and the
    /// application (the framer's batch, the core's events, the receiver):
    /// at 128 bytes or less the compiler moves it inline instead of calling
    /// `memcpy`. This is why the params keep 32-bit offsets.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_update_event_is_small_enough_to_move_inline() {
        assert!(std::mem::size_of::<crate::ClientEvent>() <= 128);
        assert!(std::mem::size_of::<crate::Incoming>() <= 128);
    }
}
