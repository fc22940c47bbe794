//! Framing: one JSON-RPC message (or batch) per `\n`-terminated line. The
//! [`LineFramer`] cuts a byte stream into lines and decodes them into
//! [`Incoming`] items without I/O; connections feed it from their read
//! buffer.

use crate::jsonrpc::{DecodeError, Frame, Message, PARSE_ERROR, decode_line};
use crate::update_params::{ReadText, UpdateParams};
use spindle_wire::scan::{UpdateNotification, message_chunk_notification, update_notification};
use spindle_wire::tags::STATE_UPDATE;

/// What a connection's receiver yields.
#[derive(Debug)]
pub enum Incoming {
    /// A well-formed message (batches arrive as their elements, in order).
    Message(Message),
    /// A `session/update` notification scanned in one pass instead of
    /// decoded (only with
    /// [`ConnectionOptions::scan_chunk_updates`](crate::ConnectionOptions)):
    /// its params with the scanned fields (all of a plain text chunk's; the
    /// `sessionId` of any other update but `state_update`).
    ScannedUpdate(UpdateParams),
    /// A line (or batch element) that could not be decoded. The connection
    /// keeps working.
    Malformed {
        /// 1-based number of the offending line.
        line_number: u64,
        /// What is wrong.
        error: DecodeError,
    },
    /// The peer's output ended. Nothing follows.
    Closed {
        /// Why.
        reason: CloseReason,
    },
}

/// Why an incoming stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// End of input.
    Eof,
    /// A read error.
    Io(String),
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CloseReason::Eof => f.write_str("end of input"),
            CloseReason::Io(e) => write!(f, "read error: {e}"),
        }
    }
}

/// Cuts bytes into lines and decodes each, without I/O. Over-long lines are
/// skipped as they stream past, never buffered whole, and reported once.
#[derive(Debug)]
pub(crate) struct LineFramer {
    max_line_bytes: usize,
    /// The start of the current line, when it did not fit in one feed.
    line: Vec<u8>,
    line_number: u64,
    /// Bytes of the current line seen so far while skipping an over-long line.
    discarding: Option<usize>,
    /// `session/update` notifications the scanners read become
    /// [`Incoming::ScannedUpdate`].
    scan_chunks: bool,
    /// Where the newlines of the bytes [`Self::feed_shared`] takes lie:
    /// found in one pass, kept for the next feed's use.
    line_ends: Vec<usize>,
}

impl LineFramer {
    pub(crate) fn new(max_line_bytes: usize) -> LineFramer {
        LineFramer {
            max_line_bytes,
            line: Vec::new(),
            line_number: 0,
            discarding: None,
            scan_chunks: false,
            line_ends: Vec::new(),
        }
    }

    /// `session/update` notifications are scanned once and reported as
    /// [`Incoming::ScannedUpdate`] instead of decoded into a message.
    pub(crate) fn scanning_chunks(mut self, on: bool) -> LineFramer {
        self.scan_chunks = on;
        self
    }

    /// Takes bytes from `available` up to and including the first newline
    /// (all of them when there is none) and returns how many it took; each
    /// finished line's items go to `out`. A framer that scans updates takes
    /// up to `lines` complete lines at once (at least one).
    pub(crate) fn feed_lines(
        &mut self,
        available: &[u8],
        lines: usize,
        out: &mut impl FnMut(Incoming),
    ) -> usize {
        if self.scan_chunks
            && self.line.is_empty()
            && self.discarding.is_none()
            && let Some(used) = self.feed_shared(available, lines.max(1), out)
        {
            return used;
        }
        let max = self.max_line_bytes;
        match memchr::memchr(b'\n', available) {
            Some(i) => {
                self.line_number += 1;
                let line_number = self.line_number;
                if let Some(skipped) = self.discarding.take() {
                    out(too_long(line_number, skipped + i, max));
                } else if self.line.len() + i > max {
                    out(too_long(line_number, self.line.len() + i, max));
                    self.line = Vec::new();
                } else if self.line.is_empty() {
                    // Fast path: the whole line is in the read buffer.
                    decode_line_into(&available[..i], line_number, self.scan_chunks, out);
                } else {
                    self.line.extend_from_slice(&available[..i]);
                    decode_line_into(&self.line, line_number, self.scan_chunks, out);
                    self.line.clear();
                }
                i + 1
            }
            None => {
                let n = available.len();
                if let Some(skipped) = self.discarding.as_mut() {
                    *skipped += n;
                } else if self.line.len() + n > max {
                    self.discarding = Some(self.line.len() + n);
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(available);
                }
                n
            }
        }
    }

    /// [`Self::feed_lines`] for a scanning framer at a line start: up to
    /// `lines` complete lines of `available` at once, when valid UTF-8, copied
    /// into one shared text that the scanned params keep ranges of (one
    /// allocation and one UTF-8 check per read instead of per line).
    /// Lines up to one that is not UTF-8 go this way; `None` (nothing
    /// taken) when there is no such complete line: then the line goes on
    /// its own, with its own diagnostic.
    fn feed_shared(
        &mut self,
        available: &[u8],
        lines: usize,
        out: &mut impl FnMut(Incoming),
    ) -> Option<usize> {
        self.line_ends.clear();
        self.line_ends
            .extend(memchr::memchr_iter(b'\n', available).take(lines));
        let mut last = *self.line_ends.last()?;
        let text = match std::str::from_utf8(&available[..last]) {
            Ok(text) => text,
            // The lines before the one that is not UTF-8.
            Err(e) => {
                last = memchr::memrchr(b'\n', &available[..e.valid_up_to()])?;
                std::str::from_utf8(&available[..last]).ok()?
            }
        };
        let buffer = ReadText(text.into());
        let max = self.max_line_bytes;
        let mut start = 0;
        let shared = &*buffer.0;
        // The newlines up to `last` (one of them) end the lines of `shared`;
        // `last` is its end.
        let ends = std::mem::take(&mut self.line_ends);
        for &end in ends.iter().take_while(|&&end| end <= last) {
            self.line_number += 1;
            if end - start > max {
                out(too_long(self.line_number, end - start, max));
            } else {
                decode_text_into(
                    &shared[start..end],
                    Some(&buffer),
                    self.line_number,
                    true,
                    out,
                );
            }
            start = end + 1;
        }
        self.line_ends = ends;
        Some(last + 1)
    }

    /// End of input: a final line without a newline still counts.
    pub(crate) fn finish(&mut self, out: &mut impl FnMut(Incoming)) {
        if let Some(skipped) = self.discarding.take() {
            self.line_number += 1;
            out(too_long(self.line_number, skipped, self.max_line_bytes));
        } else if !self.line.is_empty() {
            self.line_number += 1;
            let line = std::mem::take(&mut self.line);
            decode_line_into(&line, self.line_number, self.scan_chunks, out);
        }
    }
}

fn too_long(line_number: u64, len: usize, max: usize) -> Incoming {
    Incoming::Malformed {
        line_number,
        error: DecodeError {
            code: PARSE_ERROR,
            message: format!(
                "line of at least {len} bytes exceeds the maximum of {max} bytes; discarded"
            ),
            id: None,
            request: false,
        },
    }
}

/// Decodes one line (without its newline) into the items it stands for: a
/// message, each element of a batch, or a diagnostic. Blank lines give none.
/// With `scan_chunks`, a `session/update` notification a scanner reads (a
/// plain text chunk; any other update in the compact envelope) becomes an
/// [`Incoming::ScannedUpdate`] (the scanners validate every byte and accept
/// nothing the decoder would treat differently); every other line is
/// decoded.
pub(crate) fn decode_line_into(
    bytes: &[u8],
    line_number: u64,
    scan_chunks: bool,
    out: &mut impl FnMut(Incoming),
) {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return;
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            out(Incoming::Malformed {
                line_number,
                error: DecodeError {
                    code: PARSE_ERROR,
                    message: format!("line is not valid UTF-8: {e}"),
                    id: None,
                    request: false,
                },
            });
            return;
        }
    };
    decode_text_into(text, None, line_number, scan_chunks, out);
}

/// [`decode_line_into`] for a line known to be UTF-8; scanned params share
/// `buffer` when the line is part of it.
fn decode_text_into(
    text: &str,
    buffer: Option<&ReadText>,
    line_number: u64,
    scan_chunks: bool,
    out: &mut impl FnMut(Incoming),
) {
    let text = text.strip_suffix('\r').unwrap_or(text);
    if text.bytes().all(|b| b.is_ascii_whitespace()) {
        return;
    }
    if scan_chunks && let Some(update) = scanned_update(text, buffer) {
        return out(Incoming::ScannedUpdate(update));
    }
    match decode_line(text) {
        Ok(Frame::Single(m)) => out(Incoming::Message(m)),
        Ok(Frame::Batch(items)) => {
            for r in items {
                out(match r {
                    Ok(m) => Incoming::Message(m),
                    Err(error) => Incoming::Malformed { line_number, error },
                });
            }
        }
        Err(error) => out(Incoming::Malformed { line_number, error }),
    }
}

/// A `session/update` notification, scanned: a message chunk with a
/// `sessionId` (all its fields), else any update in the compact envelope
/// whose params open with a plain `sessionId` and never mention
/// `"state_update"` (the one tag the runtime routes on; the same condition
/// under which the runtime routes decoded params without parsing them, so
/// the events are the same). `None` leaves the line to the decoder.
fn scanned_update(text: &str, buffer: Option<&ReadText>) -> Option<UpdateParams> {
    if let Some(n) = message_chunk_notification(text)
        && n.chunk.session_id.is_some()
    {
        return Some(UpdateParams::chunk_in(n, buffer));
    }
    let n = routed_unparsed(text)?;
    Some(UpdateParams::notification_in(&n, buffer))
}

/// A `session/update` in the compact envelope whose params open with a plain `sessionId` and
/// never mention `"state_update"`: the runtime routes it on its session id alone.
fn routed_unparsed(text: &str) -> Option<UpdateNotification<'_>> {
    let n = update_notification(text)?;
    // One searcher for the process: building it costs more than the search.
    static QUOTED_STATE_UPDATE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| {
            memchr::memmem::Finder::new(format!("\"{STATE_UPDATE}\"").as_bytes()).into_owned()
        });
    if QUOTED_STATE_UPDATE.find(n.params.as_bytes()).is_some() {
        return None;
    }
    Some(n)
}

/// The session id of a line [`decode_str_into`] would report as a scanned update without
/// reading its update: what a client that leaves updates unreported needs of it. `None` for
/// any other line (a chunk in another envelope, a `state_update`, anything not an update).
pub(crate) fn unreported_update_session(text: &str) -> Option<&str> {
    routed_unparsed(text).map(|n| n.session_id)
}

/// [`decode_line_into`] for a line that is already a `str` (no second UTF-8 check).
pub(crate) fn decode_str_into(
    text: &str,
    line_number: u64,
    scan_chunks: bool,
    out: &mut impl FnMut(Incoming),
) {
    decode_text_into(text, None, line_number, scan_chunks, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    #[test]
    fn a_line_split_across_feeds_is_one_line_and_the_tail_is_kept() {
        let mut framer = LineFramer::new(64);
        let mut items = Vec::new();
        let mut push = |i: Incoming| items.push(i);
        let input =
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"b\"}";
        let (first, rest) = input.split_at(10);
        assert_eq!(framer.feed_lines(first, 1, &mut push), 10);
        let used = framer.feed_lines(rest, 1, &mut push);
        assert_eq!(
            used,
            input.iter().position(|b| *b == b'\n').unwrap() + 1 - 10
        );
        assert_eq!(
            framer.feed_lines(&rest[used..], 1, &mut push),
            rest.len() - used
        );
        framer.finish(&mut push);
        let methods: Vec<_> = items
            .iter()
            .map(|i| match i {
                Incoming::Message(m) => m.method().unwrap().to_owned(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(methods, ["a", "b"]);
    }

    /// A scanned chunk carries exactly the params text the decoder would
    /// give; every other line is decoded as before.
    #[test]
    fn a_scanning_framer_turns_plain_chunks_into_chunk_updates_only() {
        let chunk = |text: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{{"type":"text","text":{text}}}}}}}}}"#
            )
        };
        let scanned = [
            chunk(r#""hi""#),
            chunk(r#""esc\n\u00e9""#),
            r#"{ "method" : "session/update" , "params" : {"update":{"content":{"text":"x","type":"text"},"sessionUpdate":"agent_thought_chunk"},"sessionId":"s"} , "jsonrpc":"2.0" }"#.to_owned(),
        ];
        let decoded = [
            // No sessionId, not a chunk tag, not "2.0", an extra key, a batch.
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","content":{"type":"text","text":"x"}}}}"#.to_owned(),
            chunk(r#""x""#).replace("2.0", "1.0"),
            chunk(r#""x""#).replace(r#""jsonrpc":"2.0","#, r#""jsonrpc":"2.0","id":1,"#),
            format!("[{}]", chunk(r#""x""#)),
        ];
        for line in &scanned {
            let mut items = Vec::new();
            decode_line_into(line.as_bytes(), 1, true, &mut |i| items.push(i));
            let Ok(Frame::Single(Message::Notification {
                params: Some(raw), ..
            })) = decode_line(line)
            else {
                panic!("{line}");
            };
            match items.as_slice() {
                [Incoming::ScannedUpdate(p)] => {
                    assert_eq!(p.get(), raw.get(), "{line}");
                    assert!(p.plain_chunk().is_some());
                }
                other => panic!("{line}: {other:?}"),
            }
        }
        for line in &decoded {
            let mut items = Vec::new();
            decode_line_into(line.as_bytes(), 1, true, &mut |i| items.push(i));
            assert!(
                items
                    .iter()
                    .all(|i| !matches!(i, Incoming::ScannedUpdate(_))),
                "{line}"
            );
        }
        // Without the option, a chunk is a message like any other.
        let mut items = Vec::new();
        decode_line_into(scanned[0].as_bytes(), 1, false, &mut |i| items.push(i));
        assert!(matches!(items.as_slice(), [Incoming::Message(_)]));
    }

    /// What a line gives with the scanners on, where a scanned update is
    /// written as the message the decoder gives for it.
    fn items_of(line: &str, scan: bool) -> Vec<String> {
        let mut items = Vec::new();
        decode_line_into(line.as_bytes(), 7, scan, &mut |i| items.push(i));
        items
            .into_iter()
            .map(|i| match i {
                Incoming::ScannedUpdate(p) => {
                    let raw = RawValue::from_string(p.get().to_owned()).expect("JSON");
                    let method = spindle_wire::client_methods::SESSION_UPDATE.to_owned();
                    let session_id = p.scanned_session_id().map(|s| s.into_owned());
                    let m = Incoming::Message(Message::Notification {
                        method,
                        params: Some(raw),
                    });
                    format!("scanned {session_id:?} {m:?}")
                }
                other => format!("{other:?}"),
            })
            .collect()
    }

    /// Every update line, scanned or not, gives what the decoder gives:
    /// the same params text, the `sessionId` serde reads, the same
    /// diagnostics for malformed lines.
    #[test]
    fn a_scanned_update_is_the_decoded_message() {
        let env = |params: &str| {
            format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{params}}}"#)
        };
        let scanned = [
            env(
                r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"Read \"a\" \u00e9 é","rawInput":{"path":"/a b","n":[1,-2.5e3,true,null]}}}"#,
            ),
            env(
                r#"{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"x","priority":"high","status":"pending"}]}}"#,
            ),
            env(
                r#"{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":12,"size":1000,"cost":{"amount":0.5,"currency":"USD"}}}"#,
            ),
            env(
                r#"{"sessionId":"s" , "update" : { "sessionUpdate" : "tool_call_update" , "toolCallId" : "t" , "status" : "completed" } , "unknown" : 1 }"#,
            ),
            env(r#"{"sessionId":"other","update":{"sessionUpdate":"mystery","_meta":{"a":{}}}}"#),
            env(r#"{"sessionId":"s","update":{}}"#),
            env(r#"{"sessionId":"s"}"#),
            // A chunk the chunk scanner declines (an extra member): scanned all the same.
            env(
                r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi","annotations":null}}}"#,
            ),
        ];
        let decoded = [
            // state_update (anywhere), no leading plain sessionId, another envelope.
            env(r#"{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle"}}"#),
            env(r#"{"sessionId":"s","update":{"sessionUpdate":"plan","note":"state_update"}}"#),
            env(r#"{"update":{"sessionUpdate":"plan","entries":[]},"sessionId":"s"}"#),
            env(r#"{"sessionId":"\u0073","update":{"sessionUpdate":"plan","entries":[]}}"#),
            env(r#"{"sessionId":7,"update":{"sessionUpdate":"plan","entries":[]}}"#),
            env(r#"[1]"#),
            env("3"),
            r#"{"method":"session/update","jsonrpc":"2.0","params":{"sessionId":"s","update":{}}}"#
                .to_owned(),
            format!("{} ", env(r#"{"sessionId":"s","update":{}}"#)),
            // Malformed: the decoder's diagnostics, unchanged.
            env(r#"{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[1,]}}"#),
            env(r#"{"sessionId":"s","update":{"a":"\q"}}"#),
            env(r#"{"sessionId":"s","update":{"a":01}}"#),
            env(r#"{"sessionId":"s","update":{"a":1}"#),
            env("{\"sessionId\":\"s\",\"update\":{\"a\":\"raw\ttab\"}}"),
        ];
        for line in scanned.iter().chain(&decoded) {
            let on = items_of(line, true);
            let off = items_of(line, false);
            let expect_scanned = scanned.contains(line);
            assert_eq!(on.len(), 1, "{line}");
            assert_eq!(
                on[0].starts_with("scanned"),
                expect_scanned,
                "{line}: {on:?}"
            );
            if expect_scanned {
                let session_id = serde_json::from_str::<serde_json::Value>(line).unwrap()["params"]
                    ["sessionId"]
                    .as_str()
                    .map(str::to_owned);
                assert_eq!(
                    on[0],
                    format!("scanned {session_id:?} {}", off[0]),
                    "{line}"
                );
                assert!(off[0].starts_with("Message(Notification"), "{line}");
            } else {
                assert_eq!(on, off, "{line}");
                if line.contains(r#"entries":[1,]"#) {
                    assert!(on[0].starts_with("Malformed"), "{on:?}");
                }
            }
        }
    }

    /// What an item stands for, scanned fields included.
    fn described(item: &Incoming) -> String {
        match item {
            Incoming::ScannedUpdate(p) => format!(
                "scanned {:?} {:?} {}",
                p.scanned_session_id(),
                p.plain_chunk(),
                p.get()
            ),
            other => format!("{other:?}"),
        }
    }

    /// A scanning framer gives the same items whether a read buffer holds
    /// many lines (shared text), one, or pieces of one, whatever is wrong
    /// with some lines (not UTF-8, too long, blank, CRLF, unterminated).
    #[test]
    fn a_read_buffer_of_many_lines_gives_what_its_lines_give_one_by_one() {
        let chunk = |text: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{{"type":"text","text":"{text}"}}}}}}}}"#
            )
        };
        let tool = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"é"}}}"#;
        let mut input: Vec<u8> = Vec::new();
        for piece in [
            chunk("a").as_bytes(),
            b"\n",
            tool.as_bytes(),
            b"\r\n\n  \n",
            chunk("café \\n").as_bytes(),
            b"\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
            b"{\"bad\":\"\xff\xfe\"}\n",
            chunk("after bad").as_bytes(),
            b"\n",
            "x".repeat(300).as_bytes(),
            b"\n",
            b"{\"half\":\"\xc3\n",
            tool.as_bytes(),
            b"\nnot json\n",
            chunk("tail").as_bytes(),
        ] {
            input.extend_from_slice(piece);
        }
        let max = 256;
        // Reference: each line alone, as a non-shared decode does.
        let mut expected = Vec::new();
        let mut number = 0;
        let lines: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
        for line in &lines {
            number += 1;
            if line.len() > max {
                expected.push(describe_too_long(number, line.len(), max));
            } else {
                decode_line_into(line, number, true, &mut |i| expected.push(described(&i)));
            }
        }
        for (step, lines) in [
            (input.len(), usize::MAX),
            (input.len(), 3),
            (input.len(), 1),
            (1, usize::MAX),
            (7, 2),
            (64, usize::MAX),
            (200, usize::MAX),
            (1000, usize::MAX),
        ] {
            let mut framer = LineFramer::new(max).scanning_chunks(true);
            let mut got = Vec::new();
            let mut shared = 0;
            let mut push = |i: Incoming| {
                if format!("{i:?}").contains("Shared") {
                    shared += 1;
                }
                got.push(described(&i));
            };
            // As a read loop does: the unconsumed rest stays in the buffer.
            let mut at = 0;
            while at < input.len() {
                let end = (at + step).min(input.len());
                at += framer.feed_lines(&input[at..end], lines, &mut push);
            }
            framer.finish(&mut push);
            assert_eq!(got, expected, "step {step}, {lines} lines");
            if step == input.len() {
                assert_eq!(
                    shared, 5,
                    "the scanned lines before the last share one text"
                );
            }
        }
    }

    fn describe_too_long(line_number: u64, len: usize, max: usize) -> String {
        format!("{:?}", too_long(line_number, len, max))
    }
}
