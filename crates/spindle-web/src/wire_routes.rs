//! The wire inspector's routes: `GET /api/sessions/{id}/wire` (a bounded page of the session's
//! raw lines, secrets masked), `GET /api/sessions/{id}/wire/{seq}` (one line whole, for a row
//! the page cut) and `GET /api/sessions/{id}/wire/events` (the lines committed after
//! a `seq`, live, over SSE). What a row holds and how the tail keeps out of the session's way is
//! `spindle_runtime::wire_view`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, RawPathParams};
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream, StreamExt};
use spindle_runtime::wire_view::{DEFAULT_PAGE_LINES, MAX_PAGE_LINES, WireWindow};

use crate::errors::WebError;
use crate::extract::SessionRoute;

/// `GET /api/sessions/{id}/wire?limit=N&before=SEQ` (or `&after=SEQ`): see [`parse_page_query`].
pub(crate) async fn wire_page(
    SessionRoute(session): SessionRoute,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, WebError> {
    let Ok(Query(query)) = query else {
        return Err(WebError::bad_request("the query string could not be read"));
    };
    let (window, limit) = parse_page_query(&query).map_err(WebError::bad_request)?;
    let page = session.wire().page(window, limit).await?;
    Ok(axum::Json(page).into_response())
}

/// `GET /api/sessions/{id}/wire/{seq}`: the row of line `seq` with its whole text (masked; a
/// page cuts a line at `MAX_LINE_BYTES`). 404 when the log has no such line.
pub(crate) async fn wire_line(
    SessionRoute(session): SessionRoute,
    params: RawPathParams,
) -> Result<Response, WebError> {
    let text = params
        .iter()
        .find(|(name, _)| *name == "seq")
        .map_or("", |(_, value)| value);
    let seq = text
        .parse::<i64>()
        .ok()
        .filter(|seq| *seq >= 1)
        .ok_or_else(|| WebError::bad_request("seq must be a line number (1 or more)"))?;
    match session.wire().whole_line(seq).await? {
        Some(line) => Ok(axum::Json(line).into_response()),
        None => Err(WebError::new(
            StatusCode::NOT_FOUND,
            format!("the session's log has no line {seq}"),
        )),
    }
}

/// `GET /api/sessions/{id}/wire/events?after=SEQ`: `lines` events, each a page of the lines
/// committed after the last one sent (its id is the last `seq` it read, so a reconnect resumes
/// after it through `Last-Event-ID`). Without `after`, it starts at the log's end.
pub(crate) async fn wire_events(
    SessionRoute(session): SessionRoute,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, WebError> {
    let Ok(Query(query)) = query else {
        return Err(WebError::bad_request("the query string could not be read"));
    };
    let source = session.wire();
    let resumed = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|seq| *seq >= 0);
    let after = match (resumed, parse_after(&query).map_err(WebError::bad_request)?) {
        (Some(seq), _) | (None, Some(seq)) => seq,
        (None, None) => source.last_seq(),
    };
    let retry = stream::once(async { Ok(Event::default().retry(Duration::from_millis(1000))) });
    let frames = stream::unfold((source, after), |(mut source, after)| async move {
        let page = source.next_after(after).await?;
        let last = page.last.unwrap_or(after);
        let event = Event::default()
            .event("lines")
            .id(last.to_string())
            .json_data(&page)
            .unwrap_or_else(|_| Event::default().comment("unserializable page"));
        Some((Ok(event), (source, last)))
    });
    Ok(
        Sse::new(retry.chain(frames))
            .keep_alive(KeepAlive::new().interval(Duration::from_secs(15))),
    )
}

/// The parameters of a page: `limit` (1 or more, default [`DEFAULT_PAGE_LINES`], cut to
/// [`MAX_PAGE_LINES`]) and at most one of `before` (the newest lines below that `seq`, the
/// default being the log's end) and `after` (the oldest lines above it). Anything else is refused
/// with a message that says what is wrong.
pub(crate) fn parse_page_query(
    query: &HashMap<String, String>,
) -> Result<(WireWindow, usize), String> {
    if let Some(name) = query
        .keys()
        .find(|k| !matches!(k.as_str(), "limit" | "before" | "after"))
    {
        return Err(format!(
            "unknown parameter {:?}: the wire takes limit, before and after",
            name.chars().take(40).collect::<String>()
        ));
    }
    let limit = match query.get("limit") {
        None => DEFAULT_PAGE_LINES,
        Some(text) => match text.parse::<u64>() {
            Ok(n) if n >= 1 => usize::try_from(n).unwrap_or(usize::MAX).min(MAX_PAGE_LINES),
            // Past what a u64 holds: as many as a page holds.
            Err(_) if text.bytes().all(|b| b.is_ascii_digit()) && !text.is_empty() => {
                MAX_PAGE_LINES
            }
            _ => {
                return Err(format!(
                    "limit must be a whole number of lines, 1 or more (at most \
                     {MAX_PAGE_LINES} are returned)"
                ));
            }
        },
    };
    let before = match query.get("before") {
        None => None,
        Some(text) => match text.parse::<i64>() {
            Ok(seq) if seq >= 1 => Some(seq),
            _ => return Err("before must be a line's seq, 1 or more".into()),
        },
    };
    let window = match (before, parse_after(query)?) {
        (Some(_), Some(_)) => return Err("give before or after, not both".into()),
        (Some(seq), None) => WireWindow::Before(seq),
        (None, Some(seq)) => WireWindow::After(seq),
        (None, None) => WireWindow::Before(i64::MAX),
    };
    Ok((window, limit))
}

fn parse_after(query: &HashMap<String, String>) -> Result<Option<i64>, String> {
    match query.get("after") {
        None => Ok(None),
        Some(text) => match text.parse::<i64>() {
            Ok(seq) if seq >= 0 => Ok(Some(seq)),
            _ => Err("after must be a line's seq, 0 or more".into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (query string, what it reads as, or the start of its refusal).
    #[test]
    fn page_parameters_are_read_or_refused_with_a_reason() {
        type Read = Result<(WireWindow, usize), &'static str>;
        let cases: &[(&str, Read)] = &[
            ("", Ok((WireWindow::Before(i64::MAX), DEFAULT_PAGE_LINES))),
            ("limit=5", Ok((WireWindow::Before(i64::MAX), 5))),
            (
                "limit=5000",
                Ok((WireWindow::Before(i64::MAX), MAX_PAGE_LINES)),
            ),
            (
                "limit=99999999999999999999999",
                Ok((WireWindow::Before(i64::MAX), MAX_PAGE_LINES)),
            ),
            ("limit=10&before=42", Ok((WireWindow::Before(42), 10))),
            ("after=0", Ok((WireWindow::After(0), DEFAULT_PAGE_LINES))),
            ("after=17&limit=3", Ok((WireWindow::After(17), 3))),
            ("limit=0", Err("limit must be")),
            ("limit=-1", Err("limit must be")),
            ("limit=ten", Err("limit must be")),
            ("before=0", Err("before must be")),
            ("before=x", Err("before must be")),
            ("after=-2", Err("after must be")),
            ("before=5&after=2", Err("give before or after")),
            ("befor=5", Err("unknown parameter \"befor\"")),
        ];
        for (text, expected) in cases {
            let query: HashMap<String, String> = text
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (k, v) = p.split_once('=').unwrap();
                    (k.to_string(), v.to_string())
                })
                .collect();
            match (parse_page_query(&query), expected) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "{text}"),
                (Err(got), Err(want)) => assert!(got.starts_with(want), "{text}: {got}"),
                (got, want) => panic!("{text}: got {got:?}, expected {want:?}"),
            }
        }
    }
}
