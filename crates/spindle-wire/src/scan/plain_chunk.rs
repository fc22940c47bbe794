//! The plain-chunk view of the shared scanner (the engine's hot path): a
//! strict single pass over the one update shape that dominates every
//! stream, a plain text chunk,
//! `{"sessionId":..,"update":{"sessionUpdate":"agent_message_chunk","messageId":..,"content":{"type":"text","text":..}}}`
//! (keys in any order, optionally inside the JSON-RPC envelope).
//!
//! It accepts only that exact shape, with no other keys anywhere and no
//! duplicate keys, and validates every byte it consumes; on anything else it
//! returns `None` and the line takes the serde probes, which are the
//! reference. So the scanner can only make the common case cheaper: it never
//! decides what an unusual line means. The walks are written out with the
//! lexer's `key` / `next_member` steps (not its `members` closure walk): the
//! engine's per-chunk cost, measured with cachegrind, is lower that way.

use std::borrow::Cow;
use std::ops::Range;

use super::lexer::Cursor;
use crate::tags::{MessageKind, UpdateTag};

/// Accepts every tag.
fn any_tag(_: &str) -> bool {
    true
}

/// The fields of a plain text chunk.
#[derive(Debug, PartialEq)]
pub struct PlainChunk<'a> {
    pub session_id: Option<Cow<'a, str>>,
    pub tag: Cow<'a, str>,
    pub message_id: Option<Cow<'a, str>>,
    pub text: Cow<'a, str>,
}

/// Scans `session/update` params holding a plain text chunk.
pub fn plain_chunk_params(params: &str) -> Option<PlainChunk<'_>> {
    let mut c = Cursor::new(params);
    if let Ok(chunk) = compact_params(&mut c, any_tag)
        && c.end().is_some()
    {
        return Some(chunk);
    }
    let mut c = Cursor::new(params);
    let chunk = chunk_params(&mut c, any_tag)?;
    c.end()?;
    Some(chunk)
}

/// Scans a whole `session/update` notification line holding a plain text chunk.
pub fn plain_chunk_line(line: &str) -> Option<PlainChunk<'_>> {
    scan_line(line, false, any_tag).map(|(chunk, _)| chunk)
}

/// A plain text chunk notification as a JSON-RPC runtime accepts it: the
/// chunk and its `params` slice of the line (from its `{` to its `}`, the
/// text a serde `RawValue` of the params holds), for a runtime that hands
/// the params on without decoding them again.
#[derive(Debug, PartialEq)]
pub struct ChunkNotification<'a> {
    pub chunk: PlainChunk<'a>,
    pub params: &'a str,
}

/// [`plain_chunk_line`], stricter on the envelope the way a JSON-RPC 2.0
/// runtime is: `"jsonrpc"` must be present and exactly `"2.0"` (no escapes).
pub fn plain_chunk_notification(line: &str) -> Option<ChunkNotification<'_>> {
    notification(line, any_tag)
}

/// [`plain_chunk_notification`] of a message chunk only: a tag
/// [`MessageKind::of_chunk`] knows. Any other update is refused as soon as
/// its tag is read, without the rest of the line being walked (what a
/// client's reader wants of the lines that are not chunks).
pub fn message_chunk_notification(line: &str) -> Option<ChunkNotification<'_>> {
    notification(line, |tag| {
        UpdateTag::parse(tag)
            .and_then(MessageKind::of_chunk)
            .is_some()
    })
}

fn notification(line: &str, tag_ok: impl Fn(&str) -> bool) -> Option<ChunkNotification<'_>> {
    let (chunk, params) = scan_line(line, true, tag_ok)?;
    Some(ChunkNotification {
        chunk,
        params: &line[params],
    })
}

/// The line scan: the chunk and the byte range of its params. With
/// `strict_version`, `"jsonrpc":"2.0"` is required verbatim; a tag `tag_ok`
/// refuses ends the scan with `None`.
fn scan_line(
    line: &str,
    strict_version: bool,
    tag_ok: impl Fn(&str) -> bool,
) -> Option<(PlainChunk<'_>, Range<usize>)> {
    let mut c = Cursor::new(line);
    if c.lit(br#"{"jsonrpc":"2.0","method":"session/update","params":"#)
        .is_some()
    {
        let start = c.pos();
        match compact_params(&mut c, &tag_ok) {
            Ok(chunk) => {
                let end = c.pos();
                if c.lit(b"}").is_some() && c.end().is_some() {
                    return Some((chunk, start..end));
                }
            }
            // The walk would read the same tag: it cannot do better.
            Err(CompactMiss::Tag) => return None,
            Err(CompactMiss::Shape) => {}
        }
    }
    let mut c = Cursor::new(line);
    c.eat(b'{')?;
    let (mut version, mut method, mut chunk) = (false, false, None);
    loop {
        match c.key()? {
            "jsonrpc" if !version => {
                version = true;
                if strict_version {
                    c.ws();
                    c.lit(br#""2.0""#)?;
                } else {
                    c.string()?;
                }
            }
            "method" if !method => {
                method = true;
                if c.string()? != crate::client_methods::SESSION_UPDATE {
                    return None;
                }
            }
            "params" if chunk.is_none() => {
                c.ws();
                let start = c.pos();
                let params = chunk_params(&mut c, &tag_ok)?;
                chunk = Some((params, start..c.pos()));
            }
            _ => return None,
        }
        if c.next_member()? {
            break;
        }
    }
    c.end()?;
    if !method || (strict_version && !version) {
        return None;
    }
    chunk
}

/// Params in the compact key order every known agent writes (`sessionId`,
/// `update` with `sessionUpdate`, `messageId`, `content` with `type` then
/// `text`, no whitespace): literal comparisons instead of a key-by-key walk.
/// `None` sends the params to [`chunk_params`].
/// Each literal ends with a string's opening quote, so the strings are read
/// from their first byte (a `null` or spaced `messageId` takes the walk).
fn compact_params<'a>(
    c: &mut Cursor<'a>,
    tag_ok: impl Fn(&str) -> bool,
) -> Result<PlainChunk<'a>, CompactMiss> {
    let shape = CompactMiss::Shape;
    c.lit(br#"{"sessionId":""#).ok_or(shape)?;
    let session_id = c.string_rest().ok_or(shape)?;
    c.lit(br#","update":{"sessionUpdate":""#).ok_or(shape)?;
    let tag = c.string_rest().ok_or(shape)?;
    if !tag_ok(&tag) {
        return Err(CompactMiss::Tag);
    }
    let message_id = if c.lit(br#","messageId":""#).is_some() {
        Some(c.string_rest().ok_or(shape)?)
    } else {
        None
    };
    c.lit(br#","content":{"type":"text","text":""#)
        .ok_or(shape)?;
    let text = c.string_rest().ok_or(shape)?;
    c.lit(b"}}}").ok_or(shape)?;
    Ok(PlainChunk {
        session_id: Some(session_id),
        tag,
        message_id,
        text,
    })
}

/// Why [`compact_params`] did not read a chunk.
#[derive(Debug, Clone, Copy)]
enum CompactMiss {
    /// The params are not in the compact shape: the walk decides them.
    Shape,
    /// The tag was refused.
    Tag,
}

/// `{"sessionId": .., "update": {..}}`.
fn chunk_params<'a>(c: &mut Cursor<'a>, tag_ok: impl Fn(&str) -> bool) -> Option<PlainChunk<'a>> {
    c.eat(b'{')?;
    let (mut session_id, mut update, mut seen_session) = (None, None, false);
    loop {
        match c.key()? {
            "sessionId" if !seen_session => {
                seen_session = true;
                session_id = Some(c.string()?);
            }
            "update" if update.is_none() => update = Some(chunk_update(c, &tag_ok)?),
            _ => return None,
        }
        if c.next_member()? {
            break;
        }
    }
    let (tag, message_id, text) = update?;
    Some(PlainChunk {
        session_id,
        tag,
        message_id,
        text,
    })
}

/// The update object: its tag, messageId and text.
#[allow(clippy::type_complexity)]
fn chunk_update<'a>(
    c: &mut Cursor<'a>,
    tag_ok: impl Fn(&str) -> bool,
) -> Option<(Cow<'a, str>, Option<Cow<'a, str>>, Cow<'a, str>)> {
    c.eat(b'{')?;
    let (mut tag, mut message_id, mut seen_id, mut text) = (None, None, false, None);
    loop {
        match c.key()? {
            "sessionUpdate" if tag.is_none() => {
                let read = c.string()?;
                if !tag_ok(&read) {
                    return None;
                }
                tag = Some(read);
            }
            "messageId" if !seen_id => {
                seen_id = true;
                if !c.null() {
                    message_id = Some(c.string()?);
                }
            }
            "content" if text.is_none() => text = Some(text_block(c)?),
            _ => return None,
        }
        if c.next_member()? {
            break;
        }
    }
    Some((tag?, message_id, text?))
}

/// `{"type": "text", "text": ..}` with no other keys.
fn text_block<'a>(c: &mut Cursor<'a>) -> Option<Cow<'a, str>> {
    c.eat(b'{')?;
    let (mut is_text, mut text) = (None, None);
    loop {
        match c.key()? {
            "type" if is_text.is_none() => is_text = Some(c.string()? == "text"),
            "text" if text.is_none() => text = Some(c.string()?),
            _ => return None,
        }
        if c.next_member()? {
            break;
        }
    }
    if is_text? { text } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(text: &str) -> String {
        format!(
            r#"{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{{"type":"text","text":{text}}}}}}}"#
        )
    }

    #[test]
    fn plain_chunks_scan_with_borrowed_or_unescaped_text() {
        let hello = chunk(r#""Hello""#);
        let p = plain_chunk_params(&hello).expect("plain");
        assert_eq!(p.session_id.as_deref(), Some("s"));
        assert_eq!(p.tag, "agent_message_chunk");
        assert_eq!(p.message_id.as_deref(), Some("m"));
        assert!(matches!(p.text, Cow::Borrowed("Hello")));
        for raw in [
            r#""a\"b\\c\/d\n\t\r\b\f""#,
            r#""\u00e9\u20ac\ud83d\ude00 x""#,
            r#""caf\u00E9 ok""#,
            r#""é😀 raw""#,
        ] {
            let params = chunk(raw);
            let p = plain_chunk_params(&params).expect(raw);
            let expected: String = serde_json::from_str(raw).expect("valid JSON string");
            assert_eq!(p.text, expected, "{raw}");
        }
        // Longer than one 8-byte word: escapes and the end found word by word.
        let long = format!(r#""{}\n{}""#, "a".repeat(40), "b".repeat(40));
        let params = chunk(&long);
        let p = plain_chunk_params(&params).expect("long string");
        assert_eq!(p.text, format!("{}\n{}", "a".repeat(40), "b".repeat(40)));
        let raw_tab = format!("\"{}\t\"", "a".repeat(40));
        assert!(plain_chunk_params(&chunk(&raw_tab)).is_none());
        let spaced = " { \"update\" : { \"content\" : { \"text\" : \"x\" , \"type\" : \"text\" } , \"messageId\" : null , \"sessionUpdate\" : \"agent_thought_chunk\" } } \n";
        let p = plain_chunk_params(spaced).expect("whitespace and key order");
        assert_eq!(
            (p.session_id, p.message_id, p.text),
            (None, None, Cow::Borrowed("x"))
        );
        let line = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{}}}"#,
            chunk(r#""hi""#)
        );
        assert_eq!(plain_chunk_line(&line).expect("line").text, "hi");
    }

    #[test]
    fn a_notification_gives_its_params_slice_and_wants_jsonrpc_2_0_verbatim() {
        let params = chunk(r#""x""#);
        for line in [
            format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{params}}}"#),
            format!(r#"{{ "params" : {params} , "method":"session/update", "jsonrpc" : "2.0" }}"#),
        ] {
            let n = plain_chunk_notification(&line).expect("plain chunk notification");
            assert_eq!(n.params, params);
            assert_eq!(n.chunk, plain_chunk_params(&params).expect("plain"));
        }
        for line in [
            format!(r#"{{"method":"session/update","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"1.0","method":"session/update","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2\u002e0","method":"session/update","params":{params}}}"#),
        ] {
            assert!(plain_chunk_line(&line).is_some(), "{line}");
            assert!(plain_chunk_notification(&line).is_none(), "{line}");
        }
    }

    /// A message chunk notification is a plain chunk notification whose tag
    /// names a message chunk, whatever the line's shape; every other line
    /// (a refused tag read on the compact path included) is `None`.
    #[test]
    fn a_message_chunk_notification_is_a_plain_one_with_a_chunk_tag() {
        let envelope = |params: &str| {
            format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{params}}}"#)
        };
        let update = |update: &str| envelope(&format!(r#"{{"sessionId":"s","update":{update}}}"#));
        let text = r#""content":{"type":"text","text":"x\ny"}"#;
        let mut lines = Vec::new();
        for tag in [
            "agent_message_chunk",
            "agent_thought_chunk",
            "user_message_chunk",
            r"agent_message\u005fchunk",
            "tool_call",
            "plan",
            "future_chunk",
            "agent_message",
        ] {
            lines.push(update(&format!(
                r#"{{"sessionUpdate":"{tag}","messageId":"m",{text}}}"#
            )));
            lines.push(update(&format!(r#"{{"sessionUpdate":"{tag}",{text}}}"#)));
            lines.push(update(&format!(
                r#"{{"sessionUpdate":"{tag}","messageId":null,{text}}}"#
            )));
            lines.push(update(&format!(
                r#"{{{text},"messageId":"m","sessionUpdate":"{tag}"}}"#
            )));
            lines.push(update(&format!(
                r#"{{"sessionUpdate":"{tag}","toolCallId":"t","title":"Read"}}"#
            )));
            lines.push(envelope(&format!(
                r#"{{ "update" : {{ "sessionUpdate" : "{tag}" , {text} }} , "sessionId" : "s" }}"#
            )));
            lines.push(format!(
                r#"{{"method":"session/update","jsonrpc":"2.0","params":{{"sessionId":"s","update":{{"sessionUpdate":"{tag}",{text}}}}}}}"#
            ));
        }
        let mut accepted = 0;
        for line in &lines {
            let expected = plain_chunk_notification(line).filter(|n| {
                UpdateTag::parse(&n.chunk.tag)
                    .and_then(MessageKind::of_chunk)
                    .is_some()
            });
            accepted += usize::from(expected.is_some());
            assert_eq!(message_chunk_notification(line), expected, "{line}");
        }
        // Four chunk tags (one escaped) in six plain shapes each.
        assert_eq!(accepted, 24);
    }

    proptest::proptest! {
        // Any string serde_json writes (escapes included) scans back exactly.
        #[test]
        fn scanned_text_equals_serde_text(text in "\\PC*|[\\x00-\\x20\"\\\\/\u{e9}\u{1F600}]*") {
            let params = chunk(&serde_json::to_string(&text).expect("a string serializes"));
            let scanned = plain_chunk_params(&params).expect("plain");
            proptest::prop_assert_eq!(scanned.text, text);
        }
    }

    // Everything outside the exact shape goes to the serde probes.
    #[test]
    fn anything_else_is_left_to_the_serde_path() {
        for raw in [
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\ud83d\u0041""#,
            r#""\x""#,
            r#""\u12g4""#,
            "\"tab\there\"",
            r#""unterminated"#,
            "5",
            "null",
        ] {
            assert!(plain_chunk_params(&chunk(raw)).is_none(), "{raw}");
        }
        for odd in [
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","annotations":{}}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","text":"x"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","_meta":{},"content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}},"update":{}}"#,
            r#"{"sessionId":"s","sessionId":"t","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":7,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":3,"content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}} x"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"},}}"#,
            r#"{"sessionId":"s","upd\u0061te":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
            r#"{"sessionId":"s""#,
            "",
        ] {
            assert!(plain_chunk_params(odd).is_none(), "{odd}");
        }
        let params = chunk(r#""x""#);
        for line in [
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"session/update","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":"session/other","params":{params}}}"#),
            format!(r#"{{"jsonrpc":"2.0","params":{params}}}"#),
            format!(r#"{{"sent":{{}},"method":"session/update","params":{params}}}"#),
            format!(r#"{{"jsonrpc":2,"method":"session/update","params":{params}}}"#),
        ] {
            assert!(plain_chunk_line(&line).is_none(), "{line}");
        }
    }
}
