use super::*;
use crate::hub::{Frame, HubLimits};
use spindle_engine::EngineConfig;

const PROMPT: &str = r#"{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}"#;

fn chunk(text: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0", "method": "session/update",
        "params": { "sessionId": "s", "update": {
            "sessionUpdate": "agent_message_chunk", "messageId": "a1",
            "content": { "type": "text", "text": text } } },
    })
    .to_string()
}

#[test]
fn the_reset_snapshot_is_the_engine_snapshot_then_the_server_ops() {
    let mut engine = TranscriptEngine::new(EngineConfig::default());
    engine.apply_client_line(PROMPT);
    engine.apply_agent_line(&chunk("Hello"));
    engine.apply_agent_line(&chunk(" <b>world</b> \u{1F600}"));
    let extra = vec![serde_json::json!({"op": "web_banner", "text": "note"})];
    let written: serde_json::Value =
        serde_json::from_str(&SessionCore::snapshot_json(&engine, &extra)).unwrap();
    let mut expected: Vec<serde_json::Value> = engine
        .render_snapshot()
        .iter()
        .map(|op| serde_json::to_value(op).unwrap())
        .collect();
    expected.extend(extra);
    assert_eq!(written, serde_json::json!({ "ops": expected }));
    let empty = TranscriptEngine::new(EngineConfig::default());
    let written: serde_json::Value =
        serde_json::from_str(&SessionCore::snapshot_json(&empty, &[])).unwrap();
    assert_eq!(written["ops"].as_array().unwrap().len(), 2, "{written}");
}

/// A session's core on `store`, with an empty engine.
fn new_core(session: i64, store: Store) -> SessionCore {
    let engine = TranscriptEngine::new(EngineConfig::default());
    let hub = Hub::new(1, HubLimits::default());
    SessionCore::new(session, (engine, EngineFeed::default()), hub, store, 1)
}

/// A session created in `path`, and its core on a store of it that refuses every write.
fn core_on_a_read_only_disk(path: &std::path::Path) -> (i64, SessionCore) {
    let session = Store::open(path)
        .unwrap()
        .create_session("s", None)
        .unwrap();
    (session, new_core(session, Store::open_read_only(path)))
}

fn temp_db() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "spindle-web-core-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("core.db")
}

fn frames(rx: &mut tokio::sync::mpsc::Receiver<Frame>) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    while let Ok(frame) = rx.try_recv() {
        if let Frame::Ops { data, .. } = frame {
            out.push(serde_json::from_str(&data).unwrap());
        }
    }
    out
}

#[test]
fn a_failing_disk_keeps_the_session_live_and_the_log_complete_once_it_recovers() {
    let path = temp_db();
    let (session, mut core) = core_on_a_read_only_disk(&path);
    let mut rx = core.subscribe(None);
    core.record(vec![(Direction::Client, PROMPT.to_string())]);
    core.record(vec![(Direction::Agent, chunk("Hel"))]);
    // Shown anyway, with an error banner, and kept in memory.
    let shown = frames(&mut rx);
    let text = serde_json::to_string(&shown).unwrap();
    assert!(text.contains("Hel"), "{text}");
    assert!(text.contains("Not saved to disk"), "{text}");
    assert_eq!(core.stats()["unsavedLines"], 2);

    // The database accepts writes again: the backlog goes first, in order.
    core.use_store(Store::open(&path).unwrap());
    core.record(vec![(Direction::Agent, chunk("lo"))]);
    assert_eq!(core.stats()["unsavedLines"], 0);
    let text = serde_json::to_string(&frames(&mut rx)).unwrap();
    assert!(text.contains("Storage recovered"), "{text}");
    let (lines, _) = Store::open(&path).unwrap().lines(session).unwrap();
    let logged: Vec<_> = lines.iter().map(|l| (l.seq, l.line.clone())).collect();
    assert_eq!(
        logged,
        vec![(1, PROMPT.to_string()), (2, chunk("Hel")), (3, chunk("lo"))]
    );
    // Replaying the log gives the transcript the live engine has.
    let mut replayed = TranscriptEngine::new(EngineConfig::default());
    let mut feed = EngineFeed::default();
    for line in &lines {
        feed.apply(&mut replayed, line.direction, &line.line);
    }
    assert_eq!(replayed.replay_json(), core.engine.replay_json());
}

#[test]
fn the_unsaved_backlog_is_bounded_and_a_retry_writes_it_without_new_lines() {
    let path = temp_db();
    let writable = Store::open(&path).unwrap();
    let session = writable.create_session("s", None).unwrap();
    drop(writable);
    let read_only = Store::open_read_only(&path);
    let engine = (
        TranscriptEngine::new(EngineConfig::default()),
        EngineFeed::default(),
    );
    let mut core = SessionCore::new(
        session,
        engine,
        Hub::new(1, HubLimits::default()),
        read_only,
        1,
    );
    core.unsaved_limit = 1000;
    let mut rx = core.subscribe(None);
    core.record(vec![(Direction::Client, PROMPT.to_string())]);
    let mut sent = vec![PROMPT.to_string()];
    while !core.backlog_full() {
        let line = chunk("x");
        sent.push(line.clone());
        core.record(vec![(Direction::Agent, line)]);
    }
    let bytes = core.stats()["unsavedBytes"].as_u64().unwrap();
    assert!(
        (1000..1000 + chunk("x").len() as u64).contains(&bytes),
        "{bytes}"
    );
    let text = serde_json::to_string(&frames(&mut rx)).unwrap();
    assert!(text.contains("the agent's output is paused"), "{text}");
    // Still failing: nothing changes.
    core.retry_unsaved();
    assert!(core.backlog_full());
    // The database accepts writes again: a retry alone writes the backlog, in order.
    core.use_store(Store::open(&path).unwrap());
    core.retry_unsaved();
    assert!(!core.has_backlog() && !core.backlog_full());
    assert_eq!(core.stats()["unsavedBytes"], 0);
    let text = serde_json::to_string(&frames(&mut rx)).unwrap();
    assert!(text.contains("Storage recovered"), "{text}");
    let (lines, _) = Store::open(&path).unwrap().lines(session).unwrap();
    let logged: Vec<String> = lines.into_iter().map(|l| l.line).collect();
    assert_eq!(logged, sent);
}

#[test]
fn a_good_turn_clears_only_the_banners_raised_before_its_prompt() {
    let store = Store::open(&temp_db()).unwrap();
    let session = store.create_session("s", None).unwrap();
    let engine = TranscriptEngine::new(EngineConfig::default());
    let mut core = SessionCore::new(
        session,
        (engine, EngineFeed::default()),
        Hub::new(1, HubLimits::default()),
        store,
        1,
    );
    let banner = |text: &str| Banner {
        lasting: false,
        level: "info",
        text: text.into(),
    };
    // A failure of an earlier turn: the next good turn clears it.
    core.set_banner(Some(banner("The agent rejected the prompt: busy")));
    let before = core.banners_raised();
    core.clear_banner(before);
    assert_eq!(core.banner, None);
    // News raised while the turn ran (storage recovered) outlives that turn's end...
    let before = core.banners_raised();
    core.set_banner(Some(banner(
        "Storage recovered: every line is saved again.",
    )));
    core.clear_banner(before);
    assert!(core.banner.is_some());
    // ...and goes with the next good turn.
    let before = core.banners_raised();
    core.clear_banner(before);
    assert_eq!(core.banner, None);
    // A lasting banner stays whatever the turns.
    core.set_banner(Some(Banner {
        lasting: true,
        ..banner("A new agent session was started")
    }));
    let before = core.banners_raised();
    core.clear_banner(before);
    assert!(core.banner.is_some());
}

#[test]
fn garbage_from_the_agent_is_logged_and_diagnosed_never_fatal() {
    let path = temp_db();
    let store = Store::open(&path).unwrap();
    let session = store.create_session("s", None).unwrap();
    let engine = TranscriptEngine::new(EngineConfig::default());
    let mut core = SessionCore::new(
        session,
        (engine, EngineFeed::default()),
        Hub::new(1, HubLimits::default()),
        store,
        1,
    );
    core.record(vec![
        (Direction::Agent, "not json at all".into()),
        (
            Direction::Agent,
            "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\"}".into(),
        ),
        (Direction::Agent, "[1,2,3]".into()),
    ]);
    assert!(core.stats()["diagnostics"].as_u64().unwrap() >= 2);
    assert_eq!(core.stats()["loggedLines"], 3);
}

#[test]
fn a_save_is_not_built_while_another_is_in_flight_and_the_due_one_follows_its_answer() {
    let path = temp_db();
    let store = Store::open(&path).unwrap();
    let session = store.create_session("s", None).unwrap();
    let mut core = new_core(session, store.clone());
    let stored = |store: &Store| -> Vec<(i64, String, bool)> {
        let replies = store.replies(session).unwrap();
        replies
            .into_iter()
            .map(|r| (r.turn, r.text, r.finished))
            .collect()
    };

    // The prompt is logged; the turn's start makes a save due, handed to the writer.
    core.record_unsaved(vec![(Direction::Client, PROMPT.to_string())]);
    assert!(core.save_due());
    core.save_replies_if_changed();
    assert!(core.save_in_flight && !core.save_due());
    // The turn ends before the writer's answer was taken (the engine alone sees the lines: no
    // answer is taken): no second save is built meanwhile.
    let end = r#"{"jsonrpc":"2.0","id":"p1","result":{"stopReason":"end_turn"}}"#;
    core.engine.apply_agent_line(&chunk("Hello"));
    core.engine.apply_agent_line(end);
    core.save_replies_if_changed();
    assert!(core.save_in_flight && !core.save_due());
    core.settle();
    assert_eq!(
        stored(&store),
        vec![(1, String::new(), false)],
        "the turn start's save"
    );
    // The answer taken, the due save is made: it covers the turn's end.
    assert!(!core.save_in_flight && core.save_due());
    core.save_replies_if_changed();
    core.settle();
    assert_eq!(stored(&store), vec![(1, "Hello".to_string(), true)]);
    assert!(!core.save_due());
}

#[test]
fn after_a_failed_save_the_next_one_carries_every_reply_and_every_entry() {
    let path = temp_db();
    let (session, mut core) = core_on_a_read_only_disk(&path);
    let end = |id: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{{"stopReason":"end_turn"}}}}"#)
    };
    // Turn 1 while the disk refuses writes: its saves fail.
    core.record(vec![(Direction::Client, PROMPT.to_string())]);
    core.record(vec![
        (Direction::Agent, chunk("Hello")),
        (Direction::Agent, end("p1")),
    ]);
    core.settle();
    let writable = Store::open(&path).unwrap();
    assert!(writable.replies(session).unwrap().is_empty());
    // The disk is back; turn 2 starts: its save carries turn 1's reply too.
    core.use_store(writable.clone());
    core.record(vec![(
        Direction::Client,
        PROMPT.replace("\"p1\"", "\"p2\""),
    )]);
    core.settle();
    let stored: Vec<(i64, String, bool)> = writable
        .replies(session)
        .unwrap()
        .into_iter()
        .map(|r| (r.turn, r.text, r.finished))
        .collect();
    assert_eq!(
        stored,
        vec![(1, "Hello".to_string(), true), (2, String::new(), false)]
    );
    // And every entry: the stored transcript, assembled from its pieces, is the engine's.
    assert_eq!(
        writable.transcript(session).unwrap(),
        Some(core.engine.replay_json().to_string())
    );
}

#[test]
fn without_a_page_the_engine_makes_no_render_ops_and_the_rest_is_unchanged() {
    // `spindle bridge --listen` (RuntimeConfig::page false) starts its engines with render ops
    // off: nothing is published for a page, while the /acp feed, the log and the transcript
    // are those of a session with a page.
    let run = |page: bool| {
        let path = temp_db();
        let store = Store::open(&path).unwrap();
        let session = store.create_session("s", None).unwrap();
        let mut core = new_core(session, store);
        core.engine.set_render_ops(page);
        let mut page_rx = core.subscribe(None);
        frames(&mut page_rx); // the snapshot
        let mut acp = core.acp_subscribe(None, HistoryPolicy::None, 1);
        core.record(vec![(Direction::Client, PROMPT.to_string())]);
        core.record(vec![
            (Direction::Agent, chunk("Hel")),
            (Direction::Agent, chunk("lo")),
        ]);
        core.settle();
        let shown = serde_json::to_string(&frames(&mut page_rx)).unwrap();
        let mut relayed = String::new();
        while let Some(frame) = acp.try_recv() {
            relayed.push_str(&format!("{frame:?}"));
        }
        let (lines, _) = Store::open(&path).unwrap().lines(session).unwrap();
        (shown, relayed, lines.len(), core.engine.replay_json())
    };
    let (shown_with, relayed_with, logged_with, transcript_with) = run(true);
    let (shown_without, relayed_without, logged_without, transcript_without) = run(false);
    assert!(shown_with.contains("Hel"), "{shown_with}");
    assert!(!shown_without.contains("Hel"), "{shown_without}");
    assert!(
        relayed_without.contains("Hel") && relayed_without.contains("lo"),
        "{relayed_without}"
    );
    assert_eq!(relayed_with, relayed_without);
    assert_eq!((logged_with, logged_without), (3, 3));
    assert_eq!(transcript_with, transcript_without);
}
