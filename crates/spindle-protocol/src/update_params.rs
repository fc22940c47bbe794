//! [`UpdateParams`]: the params of one `session/update` notification as the
//! client runtime hands them on. For a plain text chunk (the shape that
//! dominates every stream) the framer scanned the whole line once with
//! `spindle_wire::scan` and keeps the scanned fields beside the params text,
//! so a consumer (the transcript engine) does not read the text again; any
//! other update is the params text alone, as serde validated it.

use serde_json::value::RawValue;
use spindle_wire::scan::{ChunkNotification, PlainChunk, ScannedChunk};

/// The params of a `session/update` notification: the JSON text (with
/// `sessionId` and `update`) and, for a plain text chunk, its fields.
#[derive(Debug, Clone)]
pub struct UpdateParams {
    json: Box<str>,
    chunk: Option<ScannedChunk>,
}

impl UpdateParams {
    /// Params decoded by serde: the text only.
    pub fn from_raw(raw: Box<RawValue>) -> UpdateParams {
        UpdateParams {
            json: raw.into(),
            chunk: None,
        }
    }

    /// A plain text chunk notification the scanner validated: its params
    /// slice is copied as it is, its fields kept as ranges of the copy.
    pub fn from_chunk(n: &ChunkNotification<'_>) -> UpdateParams {
        UpdateParams {
            json: n.params.into(),
            chunk: Some(ScannedChunk::new(&n.chunk, n.params)),
        }
    }

    /// The scanned chunk's `sessionId` (`None` for an update that was not
    /// scanned, or a scanned one without it), without viewing the other
    /// fields.
    pub fn scanned_session_id(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.chunk.as_ref()?.session_id(&self.json)
    }

    /// The params as JSON text, exactly as the agent wrote them.
    pub fn get(&self) -> &str {
        &self.json
    }

    /// The scanned fields when the update is a plain text chunk read by the
    /// scanner; `None` for every other update (decode [`Self::get`]).
    pub fn plain_chunk(&self) -> Option<PlainChunk<'_>> {
        self.chunk.as_ref().map(|c| c.view(&self.json))
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
            self.json
        )
    }
}

impl std::fmt::Display for UpdateParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.json)
    }
}
