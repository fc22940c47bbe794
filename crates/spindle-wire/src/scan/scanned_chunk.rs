//! A plain chunk kept after its line is gone: [`ScannedChunk`] holds each
//! field of a [`PlainChunk`] as a byte range into the params text it was
//! scanned from (or, for a string that had escapes, its unescaped copy), so
//! a runtime can store the params text once and hand the scanned fields on
//! with it instead of scanning the params again.

use std::borrow::Cow;

use super::plain_chunk::PlainChunk;

/// One scanned string: a range of the params text (start and end, 32-bit
/// offsets: a field is 16 bytes, so an update event stays small enough to
/// be moved without a `memcpy` call), or its unescaped text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Field {
    Span(u32, u32),
    Unescaped(Box<str>),
}

impl Field {
    /// `value` as a range of `params` when it lies inside it (a string the
    /// scanner borrowed) at offsets that fit 32 bits, else the string on its
    /// own (one the scanner unescaped is moved, not copied; it cannot
    /// overlap `params`).
    fn new(value: Cow<'_, str>, params: &str) -> Field {
        let start = (value.as_ptr() as usize).wrapping_sub(params.as_ptr() as usize);
        if start <= params.len()
            && value.len() <= params.len() - start
            && let (Ok(from), Ok(to)) = (u32::try_from(start), u32::try_from(start + value.len()))
        {
            return Field::Span(from, to);
        }
        Field::Unescaped(value.into_owned().into_boxed_str())
    }

    fn view<'a>(&'a self, params: &'a str) -> Cow<'a, str> {
        match self {
            Field::Span(from, to) => Cow::Borrowed(&params[*from as usize..*to as usize]),
            Field::Unescaped(s) => Cow::Borrowed(s),
        }
    }
}

/// The fields of a [`PlainChunk`] detached from the text they were read
/// from; [`ScannedChunk::view`] over the same params text gives them back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedChunk {
    session_id: Option<Field>,
    tag: Field,
    message_id: Option<Field>,
    text: Field,
}

impl ScannedChunk {
    /// Detaches `chunk`, scanned from `params` (or from a line `params` is a
    /// copy of the params slice of: then pass that slice). Strings the
    /// scanner unescaped move in without a copy.
    pub fn new(chunk: PlainChunk<'_>, params: &str) -> ScannedChunk {
        ScannedChunk {
            session_id: chunk.session_id.map(|s| Field::new(s, params)),
            tag: Field::new(chunk.tag, params),
            message_id: chunk.message_id.map(|s| Field::new(s, params)),
            text: Field::new(chunk.text, params),
        }
    }

    /// The `sessionId` alone, borrowing from `params` as [`Self::view`] does.
    pub fn session_id<'a>(&'a self, params: &'a str) -> Option<Cow<'a, str>> {
        self.session_id.as_ref().map(|f| f.view(params))
    }

    /// The chunk again, borrowing from `params`: the same text
    /// [`ScannedChunk::new`] was given (or an identical copy of it).
    pub fn view<'a>(&'a self, params: &'a str) -> PlainChunk<'a> {
        PlainChunk {
            session_id: self.session_id.as_ref().map(|f| f.view(params)),
            tag: self.tag.view(params),
            message_id: self.message_id.as_ref().map(|f| f.view(params)),
            text: self.text.view(params),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::plain_chunk_notification;

    #[test]
    fn a_detached_chunk_views_the_same_over_a_copy_of_the_params() {
        for text in [r#""plain""#, r#""esc\naped \u00e9""#] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{{"type":"text","text":{text}}}}}}}}}"#
            );
            let n = plain_chunk_notification(&line).expect("plain chunk");
            let scanned =
                ScannedChunk::new(plain_chunk_notification(&line).unwrap().chunk, n.params);
            let copy = n.params.to_owned();
            assert_eq!(scanned.view(&copy), n.chunk);
        }
    }
}
