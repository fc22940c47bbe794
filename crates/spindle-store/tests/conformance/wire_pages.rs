//! Bounded pages of the wire log ([`Store::wire_page`]), what the wire inspector reads: either end
//! of a window, the flag that says there is more, the edge to go on from, rows of unknown
//! directions, and the time of each line.

use spindle_store::{Direction, Store, WirePage, WireWindow};

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
    let line = |text: &str| {
        if backend.is_postgres() {
            format!("'{text}'::bytea")
        } else {
            format!("'{text}'")
        }
    };
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
