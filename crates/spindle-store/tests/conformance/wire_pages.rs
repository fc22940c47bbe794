//! Bounded pages of the wire log ([`Store::wire_page`]), what the wire inspector reads: either end
//! of a window, the flag that says there is more, the edge to go on from, rows of unknown
//! directions, and the time of each line.

use spindle_store::{Direction, LoggedLine, Store, StoreError, WirePage, WireWindow};

use crate::Backend;

fn seqs(page: &WirePage) -> Vec<i64> {
    page.lines.iter().map(|l| l.seq).collect()
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// 25 lines in three batches; another session's lines beside them.
fn logged_25(store: &dyn Store) -> (i64, i64, i64) {
    let id = store.create_session("s", None).unwrap();
    let other = store.create_session("other", None).unwrap();
    let text: Vec<String> = (1..=25).map(|i| format!("{{\"n\":{i}}}")).collect();
    let direction = |i: usize| match i % 3 {
        0 => Direction::Client,
        1 => Direction::Agent,
        _ => Direction::Local,
    };
    let started = now_ms();
    for (first, range) in [(1, 0..10), (11, 10..20), (21, 20..25)] {
        let batch: Vec<(Direction, &str)> =
            range.map(|i| (direction(i), text[i].as_str())).collect();
        store.append_lines(id, first, &batch).unwrap();
    }
    store
        .append_lines(other, 1, &[(Direction::Agent, "elsewhere")])
        .unwrap();
    (id, other, started)
}

pub fn wire_pages_read_either_end_of_a_window_in_order(backend: &Backend) {
    let store = backend.open();
    let (id, other, started) = logged_25(store.as_ref());
    let ended = now_ms();

    // Newest first, page by page, back to the start.
    let newest = store
        .wire_page(id, WireWindow::Before(i64::MAX), 10)
        .unwrap();
    assert_eq!(seqs(&newest), (16..=25).collect::<Vec<_>>());
    assert!(newest.more);
    assert_eq!(newest.edge, Some(16));
    let older = store.wire_page(id, WireWindow::Before(16), 10).unwrap();
    assert_eq!(seqs(&older), (6..=15).collect::<Vec<_>>());
    assert!(older.more);
    let oldest = store.wire_page(id, WireWindow::Before(6), 10).unwrap();
    assert_eq!(seqs(&oldest), (1..=5).collect::<Vec<_>>());
    assert!(!oldest.more);
    assert_eq!(oldest.edge, Some(1));
    // A page that ends exactly at the first line says there is nothing older.
    let exact = store.wire_page(id, WireWindow::Before(11), 10).unwrap();
    assert_eq!(seqs(&exact), (1..=10).collect::<Vec<_>>());
    assert!(!exact.more);
    assert_eq!(
        store.wire_page(id, WireWindow::Before(1), 10).unwrap(),
        WirePage::default()
    );

    // Oldest first, from a seq on: what a live tail reads.
    let head = store.wire_page(id, WireWindow::After(0), 10).unwrap();
    assert_eq!(seqs(&head), (1..=10).collect::<Vec<_>>());
    assert!(head.more);
    assert_eq!(head.edge, Some(10));
    let tail = store.wire_page(id, WireWindow::After(20), 10).unwrap();
    assert_eq!(seqs(&tail), (21..=25).collect::<Vec<_>>());
    assert!(!tail.more);
    assert_eq!(tail.edge, Some(25));
    assert_eq!(
        store.wire_page(id, WireWindow::After(25), 10).unwrap(),
        WirePage::default()
    );

    // Each line as written, with the time of its commit.
    let line = &tail.lines[0];
    assert_eq!(line.line, "{\"n\":21}");
    assert_eq!(line.direction, Direction::Local);
    assert_eq!(tail.lines[1].direction, Direction::Client);
    assert_eq!(tail.lines[2].direction, Direction::Agent);
    for line in newest.lines.iter().chain(&head.lines) {
        assert!((started..=ended).contains(&line.at), "{line:?}");
    }
    // The whole log reads the same times.
    let (all, _) = store.lines(id).unwrap();
    assert_eq!(all[20..], tail.lines[..]);

    // Another session's log and a session without lines.
    let elsewhere = store
        .wire_page(other, WireWindow::Before(i64::MAX), 10)
        .unwrap();
    assert_eq!(elsewhere.lines.len(), 1);
    assert_eq!(elsewhere.lines[0].line, "elsewhere");
    assert_eq!(
        store
            .wire_page(other + 1000, WireWindow::Before(i64::MAX), 10)
            .unwrap(),
        WirePage::default()
    );
    // A page of none only says whether there is any.
    let none = store
        .wire_page(id, WireWindow::Before(i64::MAX), 0)
        .unwrap();
    assert!(none.lines.is_empty() && none.more && none.edge.is_none());
}

pub fn wire_pages_skip_unknown_directions_and_go_on_past_them(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    store
        .append_lines(id, 1, &[(Direction::Agent, "a"), (Direction::Client, "b")])
        .unwrap();
    // Rows a newer version wrote, at the low end of the newest page.
    let line = |text: &str| backend.line_literal(text);
    backend.sql(&format!(
        "INSERT INTO wire_log(session_id, seq, direction, line, at) VALUES
         ({id}, 3, 'future', {}, 0), ({id}, 4, 'future', {}, 0)",
        line("x"),
        line("y")
    ));
    store
        .append_lines(id, 5, &[(Direction::Server, "{\"spindle\":\"note\"}")])
        .unwrap();
    let newest = store
        .wire_page(id, WireWindow::Before(i64::MAX), 3)
        .unwrap();
    assert_eq!(seqs(&newest), vec![5]);
    assert_eq!(newest.skipped, 2);
    assert!(newest.more);
    assert_eq!(newest.edge, Some(3));
    let older = store.wire_page(id, WireWindow::Before(3), 3).unwrap();
    assert_eq!(seqs(&older), vec![1, 2]);
    assert_eq!((older.skipped, older.more), (0, false));
    let after = store.wire_page(id, WireWindow::After(2), 2).unwrap();
    assert!(after.lines.is_empty());
    assert_eq!((after.skipped, after.more, after.edge), (2, true, Some(4)));
}

/// A log of many small batches (PostgreSQL keeps a row per batch) read page by page from either
/// end, every limit: the pages put together are the whole log, each page the log's own slice.
pub fn wire_pages_of_many_small_batches_are_slices_of_the_whole_log(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    let texts: Vec<String> = (1..=200).map(|i| format!("{{\"n\":{i}}}")).collect();
    let mut next = 0;
    for size in (0..).map(|b| b % 7 + 1) {
        if next == texts.len() {
            break;
        }
        let end = (next + size).min(texts.len());
        let batch: Vec<(Direction, &str)> = texts[next..end]
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let direction = if (next + i) % 5 == 0 {
                    Direction::Server
                } else {
                    Direction::Agent
                };
                (direction, t.as_str())
            })
            .collect();
        store.append_lines(id, next as i64 + 1, &batch).unwrap();
        next = end;
    }
    let whole = store.lines(id).unwrap().0;
    assert_eq!(whole.len(), texts.len());
    for limit in [1, 2, 3, 5, 8, 13, 40, 199, 200, 400] {
        let mut backward = Vec::new();
        let mut edge = i64::MAX;
        loop {
            let page = store
                .wire_page(id, WireWindow::Before(edge), limit)
                .unwrap();
            assert!(page.lines.len() <= limit);
            let below: Vec<_> = whole.iter().filter(|l| l.seq < edge).cloned().collect();
            let expected = below[below.len().saturating_sub(limit)..].to_vec();
            assert_eq!(page.lines, expected, "before {edge}, limit {limit}");
            backward.splice(0..0, page.lines.iter().cloned());
            match (page.more, page.edge) {
                (true, Some(seq)) => edge = seq,
                _ => break,
            }
        }
        assert_eq!(backward, whole, "limit {limit}, newest first");
        let mut forward = Vec::new();
        let mut edge = 0;
        loop {
            let page = store.wire_page(id, WireWindow::After(edge), limit).unwrap();
            let expected: Vec<_> = whole
                .iter()
                .filter(|l| l.seq > edge)
                .take(limit)
                .cloned()
                .collect();
            assert_eq!(page.lines, expected, "after {edge}, limit {limit}");
            forward.extend(page.lines.iter().cloned());
            match (page.more, page.edge) {
                (true, Some(seq)) => edge = seq,
                _ => break,
            }
        }
        assert_eq!(forward, whole, "limit {limit}, oldest first");
    }
    for after in [0, 1, 7, 8, 100, 199, 200] {
        let tail = store.lines_after(id, after).unwrap().0;
        assert_eq!(tail, whole[after as usize..].to_vec(), "after {after}");
        let notes = store.server_notes_after(id, after).unwrap();
        let expected: Vec<_> = whole[after as usize..]
            .iter()
            .filter(|l| l.direction == Direction::Server)
            .cloned()
            .collect();
        assert_eq!(notes, expected, "notes after {after}");
    }
}

/// Lines written before the log went to batches (rows of `wire_log`, written here by
/// hand on both stores) are read, paged, checked by a retry and counted with the new ones.
pub fn lines_logged_before_the_batches_are_read_with_new_ones(backend: &Backend) {
    let store = backend.open();
    let id = store.create_session("s", None).unwrap();
    let only_old = store.create_session("old", None).unwrap();
    let line = |text: &str| backend.line_literal(text);
    backend.sql(&format!(
        "INSERT INTO wire_log(session_id, seq, direction, line, at) VALUES
         ({id}, 1, 'client', {}, 1), ({id}, 2, 'agent', {}, 1), ({id}, 3, 'server', {}, 1),
         ({id}, 4, 'agent', {}, 1), ({only_old}, 1, 'agent', {}, 1)",
        line("old 1"),
        line("old 2"),
        line("note 3"),
        line("old 4"),
        line("only old"),
    ));
    assert_eq!(store.last_seq(only_old).unwrap(), 1);
    assert_eq!(store.last_seq(id).unwrap(), 4);
    // A retry across the old rows: the same line passes and adds what is new, another fails.
    store
        .append_lines(
            id,
            4,
            &[(Direction::Agent, "old 4"), (Direction::Agent, "new 5")],
        )
        .unwrap();
    let error = store
        .append_lines(id, 5, &[(Direction::Agent, "old 4")])
        .unwrap_err();
    assert!(matches!(error, StoreError::Write(_)), "{error:?}");
    let error = store
        .append_lines(id, 3, &[(Direction::Agent, "note 3")])
        .unwrap_err();
    assert!(matches!(error, StoreError::Write(_)), "{error:?}");
    store
        .append_lines(
            id,
            6,
            &[(Direction::Server, "note 6"), (Direction::Agent, "new 7")],
        )
        .unwrap();
    assert_eq!(store.last_seq(id).unwrap(), 7);
    let texts = |lines: &[LoggedLine]| -> Vec<(i64, String)> {
        lines.iter().map(|l| (l.seq, l.line.clone())).collect()
    };
    let all: Vec<(i64, String)> = [
        "old 1", "old 2", "note 3", "old 4", "new 5", "note 6", "new 7",
    ]
    .iter()
    .enumerate()
    .map(|(i, t)| (i as i64 + 1, t.to_string()))
    .collect();
    assert_eq!(texts(&store.lines(id).unwrap().0), all);
    assert_eq!(
        texts(&store.lines_after(id, 3).unwrap().0),
        all[3..].to_vec()
    );
    assert_eq!(
        texts(&store.lines_after(id, 5).unwrap().0),
        all[5..].to_vec()
    );
    let notes = store.server_notes_after(id, 0).unwrap();
    assert_eq!(texts(&notes), vec![all[2].clone(), all[5].clone()]);
    assert_eq!(
        texts(&store.server_notes_after(id, 3).unwrap()),
        vec![all[5].clone()]
    );
    let newest = store
        .wire_page(id, WireWindow::Before(i64::MAX), 4)
        .unwrap();
    assert_eq!(texts(&newest.lines), all[3..].to_vec());
    assert!(newest.more);
    let older = store.wire_page(id, WireWindow::Before(4), 4).unwrap();
    assert_eq!(texts(&older.lines), all[..3].to_vec());
    assert!(!older.more);
    let middle = store.wire_page(id, WireWindow::After(2), 3).unwrap();
    assert_eq!(texts(&middle.lines), all[2..5].to_vec());
    assert!(middle.more);
}
