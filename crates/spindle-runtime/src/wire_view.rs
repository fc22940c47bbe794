//! The wire inspector's view of a session's log: bounded pages of its raw lines, each with what
//! a row shows (direction, time, size, method or id), secrets masked ([`crate::wire_mask`]), and
//! a live tail that follows the log's commits without touching the session's own streams.
//!
//! Directions are Spindle's: `out` is a line Spindle wrote to the agent, `in` one it read from
//! the agent (history replayed for `session/load` included), `local` a line of Spindle's own that
//! was never on the wire (a client terminal's output, the text a write replaced, a note such as
//! the agent's exit).
//!
//! How the tail keeps out of the way: the session core only stores the last committed `seq` in a
//! `watch` channel (a write that never waits and never queues); each inspector reads the lines
//! from the store itself, when its stream is polled. A slow inspector is polled less, reads
//! bigger pages later, and holds nothing up.

use serde::Serialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::sync::watch;

use crate::error::SessionError;
use crate::store::{Direction, LoggedLine, Store};
pub use spindle_store::WireWindow;

/// The most lines one page holds (a larger `limit` is cut to it).
pub const MAX_PAGE_LINES: usize = 1000;

/// The lines a page holds when the caller names no `limit`.
pub const DEFAULT_PAGE_LINES: usize = 200;

/// The most bytes of one line a page carries; a longer line is cut there (`cut`, with its whole
/// `size`), so that a page of 1000 lines stays readable whatever the agent sent.
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// How many lines one live frame carries at most.
const LIVE_PAGE_LINES: usize = 500;

/// One row of the inspector.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WireLine {
    /// Position in the session's log, from 1.
    pub seq: i64,
    /// `in`, `out` or `local` (see the module's notes).
    pub dir: &'static str,
    /// The stored direction: `agent`, `client`, `agent_replay`, `server` or `local`.
    pub source: &'static str,
    /// When the line was committed, in milliseconds since the Unix epoch.
    pub at: i64,
    /// The line's length in bytes, as logged.
    pub size: usize,
    /// `request`, `response`, `error` (a response with an error), `notification`, `note` (a local
    /// line) or `invalid` (not a JSON object).
    pub kind: &'static str,
    /// A request's or notification's method; a local line's event (`terminalOutput`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// A `session/update`'s `sessionUpdate` tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<String>,
    /// A request's or response's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// The line as logged, secrets masked; its first [`MAX_LINE_BYTES`] when `cut`.
    pub line: String,
    /// Whether a secret was masked.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub masked: bool,
    /// Whether `line` is only the start of the logged line.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}

/// A page of rows, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WireLinesPage {
    /// The rows, in `seq` order.
    pub lines: Vec<WireLine>,
    /// Whether the log holds lines beyond the page: older ones for a `before` page, newer ones
    /// for an `after` page.
    pub more: bool,
    /// The lowest and highest `seq` the page read (rows of unknown direction included):
    /// `?before=first` reads the page before it, `?after=last` the lines after it.
    pub first: Option<i64>,
    /// See `first`.
    pub last: Option<i64>,
    /// The limit applied.
    pub limit: usize,
}

/// Where an inspector reads a session's log from, and how it hears of new lines.
#[derive(Debug)]
pub struct WireSource {
    store: Store,
    session: i64,
    logged: watch::Receiver<i64>,
}

impl WireSource {
    pub(crate) fn new(store: Store, session: i64, logged: watch::Receiver<i64>) -> WireSource {
        WireSource {
            store,
            session,
            logged,
        }
    }

    /// The last `seq` committed to the log as this server knows it.
    pub fn last_seq(&self) -> i64 {
        *self.logged.borrow()
    }

    /// One page of rows (`limit` cut to [`MAX_PAGE_LINES`]), read off the async workers.
    pub async fn page(
        &self,
        window: WireWindow,
        limit: usize,
    ) -> Result<WireLinesPage, SessionError> {
        let limit = limit.min(MAX_PAGE_LINES);
        let (store, session) = (self.store.clone(), self.session);
        let page = tokio::task::spawn_blocking(move || store.wire_page(session, window, limit))
            .await
            .map_err(|e| SessionError::Internal(format!("reading the wire log: {e}")))?
            .map_err(SessionError::storage)?;
        let (first, last) = match window {
            WireWindow::Before(_) => (page.edge, page.lines.last().map(|l| l.seq)),
            WireWindow::After(_) => (page.lines.first().map(|l| l.seq), page.edge),
        };
        Ok(WireLinesPage {
            lines: page.lines.iter().map(wire_line).collect(),
            more: page.more,
            first: first.or(page.edge),
            last: last.or(page.edge),
            limit,
        })
    }

    /// The next rows after `after`, once the log holds some: the live tail's next frame. `None`
    /// once the session's observers are closed (the session was deleted, the server stops).
    pub async fn next_after(&mut self, after: i64) -> Option<WireLinesPage> {
        loop {
            let committed = *self.logged.borrow_and_update();
            if committed > after {
                match self.page(WireWindow::After(after), LIVE_PAGE_LINES).await {
                    Ok(page) if page.last.is_some() => return Some(page),
                    Ok(_) => {}
                    // Tried again at the next commit.
                    Err(error) => tracing::warn!(session = self.session, "wire tail: {error}"),
                }
            }
            self.logged.changed().await.ok()?;
        }
    }
}

impl WireSource {
    /// One line of the log whole (masked, never cut): what a row [`WireLine::cut`] at
    /// [`MAX_LINE_BYTES`] holds in full. `None` when the log has no line `seq`.
    pub async fn whole_line(&self, seq: i64) -> Result<Option<WireLine>, SessionError> {
        if seq < 1 {
            return Ok(None);
        }
        let (store, session) = (self.store.clone(), self.session);
        let page = tokio::task::spawn_blocking(move || {
            store.wire_page(session, WireWindow::After(seq - 1), 1)
        })
        .await
        .map_err(|e| SessionError::Internal(format!("reading the wire log: {e}")))?
        .map_err(SessionError::storage)?;
        Ok(page
            .lines
            .iter()
            .find(|logged| logged.seq == seq)
            .map(|logged| row(logged, usize::MAX)))
    }
}

/// A logged line as a row: summarised, masked, cut at [`MAX_LINE_BYTES`].
pub fn wire_line(logged: &LoggedLine) -> WireLine {
    row(logged, MAX_LINE_BYTES)
}

/// A logged line as a row, its masked text cut at `max_bytes` (on a character boundary).
fn row(logged: &LoggedLine, max_bytes: usize) -> WireLine {
    let (dir, source) = match logged.direction {
        Direction::Client => ("out", "client"),
        Direction::Agent => ("in", "agent"),
        Direction::AgentReplay => ("in", "agent_replay"),
        Direction::Server => ("local", "server"),
        Direction::Local => ("local", "local"),
    };
    let summary = summarise(&logged.line, dir == "local");
    let masked = crate::wire_mask::mask_secrets(&logged.line);
    let mut line = masked.clone().unwrap_or_else(|| logged.line.clone());
    let cut = line.len() > max_bytes;
    if cut {
        let mut end = max_bytes;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
    }
    WireLine {
        seq: logged.seq,
        dir,
        source,
        at: logged.at,
        size: logged.line.len(),
        kind: summary.kind,
        method: summary.method,
        update: summary.update,
        id: summary.id,
        line,
        masked: masked.is_some(),
        cut,
    }
}

struct Summary {
    kind: &'static str,
    method: Option<String>,
    update: Option<String>,
    id: Option<Value>,
}

/// What a row shows of a line, read without keeping its payload (params, results and content
/// are skipped, not built).
#[derive(serde::Deserialize)]
struct Envelope {
    method: Option<String>,
    id: Option<Value>,
    params: Option<Params>,
    result: Option<IgnoredAny>,
    error: Option<IgnoredAny>,
    /// A local line: `{"local": {"<event>": {...}}}`.
    local: Option<std::collections::BTreeMap<String, IgnoredAny>>,
    /// A server note: `{"spindle": "<note>", ...}`.
    spindle: Option<String>,
}

#[derive(serde::Deserialize)]
struct Params {
    update: Option<Update>,
}

#[derive(serde::Deserialize)]
struct Update {
    #[serde(rename = "sessionUpdate")]
    tag: Option<String>,
}

fn summarise(line: &str, local: bool) -> Summary {
    let invalid = Summary {
        kind: "invalid",
        method: None,
        update: None,
        id: None,
    };
    let Ok(envelope) = serde_json::from_str::<Envelope>(line) else {
        return invalid;
    };
    let update = envelope
        .params
        .and_then(|p| p.update)
        .and_then(|u| u.tag)
        .filter(|_| {
            envelope.method.as_deref() == Some(spindle_wire::client_methods::SESSION_UPDATE)
        });
    if local {
        let event = envelope
            .local
            .and_then(|events| events.into_keys().next())
            .or(envelope.spindle);
        return Summary {
            kind: "note",
            method: event,
            ..invalid
        };
    }
    let kind = match (&envelope.method, &envelope.id) {
        (Some(_), Some(_)) => "request",
        (Some(_), None) => "notification",
        (None, Some(_)) if envelope.error.is_some() => "error",
        (None, Some(_)) if envelope.result.is_some() => "response",
        _ => "invalid",
    };
    Summary {
        kind,
        method: envelope.method,
        update,
        id: envelope.id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(direction: Direction, line: &str) -> WireLine {
        wire_line(&LoggedLine {
            seq: 7,
            direction,
            at: 1_700_000_000_000,
            line: line.into(),
        })
    }

    /// (direction, line) -> (dir, kind, method, update, id) of the row.
    #[test]
    fn each_kind_of_line_is_summarised() {
        type Expected = (
            &'static str,
            &'static str,
            Option<&'static str>,
            Option<&'static str>,
            Option<Value>,
        );
        let cases: &[(Direction, &str, Expected)] = &[
            (
                Direction::Client,
                r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}"#,
                (
                    "out",
                    "request",
                    Some("session/prompt"),
                    None,
                    Some(1.into()),
                ),
            ),
            (
                Direction::Agent,
                r#"{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}"#,
                ("in", "response", None, None, Some(1.into())),
            ),
            (
                Direction::Agent,
                r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"m"}}"#,
                ("in", "error", None, None, Some("x".into())),
            ),
            (
                Direction::AgentReplay,
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#,
                (
                    "in",
                    "notification",
                    Some("session/update"),
                    Some("agent_message_chunk"),
                    None,
                ),
            ),
            (
                Direction::Local,
                r#"{"local":{"terminalOutput":{"sessionId":"s","terminalId":"t","text":"x"}}}"#,
                ("local", "note", Some("terminalOutput"), None, None),
            ),
            (
                Direction::Server,
                r#"{"spindle":"agent_exited","message":"m"}"#,
                ("local", "note", Some("agent_exited"), None, None),
            ),
            (
                Direction::Agent,
                "not json",
                ("in", "invalid", None, None, None),
            ),
            (
                Direction::Agent,
                "[1,2]",
                ("in", "invalid", None, None, None),
            ),
            (
                Direction::Agent,
                r#"{"jsonrpc":"2.0"}"#,
                ("in", "invalid", None, None, None),
            ),
        ];
        for (direction, line, expected) in cases {
            let row = row(*direction, line);
            let got = (
                row.dir,
                row.kind,
                row.method.as_deref(),
                row.update.as_deref(),
                row.id.clone(),
            );
            assert_eq!(&got, expected, "{line}");
            assert_eq!(row.line, *line, "shown as logged");
            assert_eq!(
                (row.size, row.at, row.seq),
                (line.len(), 1_700_000_000_000, 7)
            );
        }
    }

    #[test]
    fn a_secret_is_masked_and_a_long_line_cut_at_a_character() {
        let row = row(
            Direction::Client,
            r#"{"jsonrpc":"2.0","id":0,"method":"authenticate","params":{"methodId":"k","apiKey":"sk-live-1"}}"#,
        );
        assert!(
            row.masked && !row.line.contains("sk-live-1"),
            "{}",
            row.line
        );
        let long = format!("{{\"x\":\"{}\"}}", "é".repeat(MAX_LINE_BYTES));
        let row = wire_line(&LoggedLine {
            seq: 1,
            direction: Direction::Agent,
            at: 0,
            line: long.clone(),
        });
        assert!(row.cut);
        assert_eq!(row.size, long.len());
        assert!(row.line.len() <= MAX_LINE_BYTES && long.starts_with(&row.line));
    }
}
