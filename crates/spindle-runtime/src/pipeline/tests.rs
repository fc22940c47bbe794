//! The pipeline's ordering without threads: the writer's group commits and backlog over a
//! recording sink, the ledger's answers, and a hub that holds output until its lines' commit.

use std::cell::RefCell;
use std::sync::Arc;

use super::*;
use crate::hub::{Frame, Hub, HubLimits};

/// A sink that records every call and fails while `failing` is set.
#[derive(Default)]
struct Recording {
    calls: RefCell<Vec<String>>,
    failing: std::cell::Cell<bool>,
}

impl LogSink for Recording {
    fn append_lines(
        &self,
        _session: i64,
        first_seq: i64,
        lines: &[(Direction, &str)],
    ) -> Result<(), StoreError> {
        let texts: Vec<&str> = lines.iter().map(|(_, l)| *l).collect();
        let failing = self.failing.get();
        let mark = if failing { " (failed)" } else { "" };
        self.calls
            .borrow_mut()
            .push(format!("append {first_seq}: {}{mark}", texts.join(",")));
        if failing {
            Err(StoreError::Write("disk full".into()))
        } else {
            Ok(())
        }
    }

    fn save_materialized(&self, _session: i64, save: &Save) -> Result<(), StoreError> {
        self.calls
            .borrow_mut()
            .push(format!("save upto {}: {}", save.upto, save.replay.shell));
        Ok(())
    }
}

fn lines(first_seq: i64, texts: &[&str]) -> Job {
    Job::Lines {
        first_seq,
        lines: texts
            .iter()
            .map(|t| (Direction::Agent, (*t).to_owned()))
            .collect::<Vec<_>>()
            .into(),
    }
}

fn save(upto: i64) -> Job {
    Job::Save(Box::new(Save {
        upto,
        replay: spindle_store::ReplaySave::whole(format!("transcript@{upto}")),
        replies: Vec::new(),
        turns: 0,
    }))
}

fn committed(jobs: usize, through: i64) -> Outcome {
    Outcome::Committed { jobs, through }
}

fn failed(jobs: usize, through: i64, unsaved_lines: usize, unsaved_bytes: usize) -> Outcome {
    Outcome::Failed {
        jobs,
        through,
        error: "cannot write: disk full".into(),
        unsaved_lines,
        unsaved_bytes,
    }
}

/// Each case: runs of jobs (each run is what the writer finds queued when it wakes), whether
/// the sink fails during that run, then the sink's calls and the outcomes, in order.
#[test]
fn the_writer_groups_queued_batches_and_keeps_failed_ones_first() {
    type Run = (bool, Vec<Job>);
    type Case = (&'static str, Vec<Run>, Vec<&'static str>, Vec<Outcome>);
    let cases: Vec<Case> = vec![
        (
            "batches queued together are one transaction",
            vec![(false, vec![lines(1, &["a", "b"]), lines(3, &["c"])])],
            vec!["append 1: a,b,c"],
            vec![committed(2, 3)],
        ),
        (
            "a save goes after the lines before it, and splits the group",
            vec![(
                false,
                vec![
                    lines(1, &["a"]),
                    save(1),
                    lines(2, &["b"]),
                    lines(3, &["c"]),
                ],
            )],
            vec!["append 1: a", "save upto 1: transcript@1", "append 2: b,c"],
            vec![committed(1, 1), Outcome::Saved(Ok(())), committed(2, 3)],
        ),
        (
            "a failed batch stays first; a save waits while it does; a retry commits it",
            vec![
                (true, vec![lines(1, &["a"])]),
                (true, vec![lines(2, &["bb"]), save(2)]),
                (false, vec![Job::Retry, save(2)]),
            ],
            vec![
                "append 1: a (failed)",
                "append 1: a,bb (failed)",
                "append 1: a,bb",
                "save upto 2: transcript@2",
            ],
            vec![
                failed(1, 1, 1, 1),
                failed(1, 2, 2, 3),
                Outcome::Saved(Err("earlier lines are not saved yet".into())),
                committed(1, 2),
                Outcome::Saved(Ok(())),
            ],
        ),
        (
            "the next batch after a failure carries the backlog in its transaction",
            vec![
                (true, vec![lines(5, &["x"])]),
                (false, vec![lines(6, &["y"]), lines(7, &["z"])]),
            ],
            vec!["append 5: x (failed)", "append 5: x,y,z"],
            vec![failed(1, 5, 1, 1), committed(2, 7)],
        ),
        (
            "a retry with nothing to write commits nothing",
            vec![(false, vec![Job::Retry])],
            vec![],
            vec![committed(1, 0)],
        ),
    ];
    for (name, runs, calls, outcomes) in cases {
        let sink = Recording::default();
        let mut writer = LogWriter::new(7, 1);
        let mut got = Vec::new();
        for (failing, jobs) in runs {
            sink.failing.set(failing);
            got.extend(writer.run(&sink, jobs));
        }
        let got = got
            .into_iter()
            .map(|o| match o {
                Outcome::Failed {
                    jobs,
                    through,
                    unsaved_lines,
                    unsaved_bytes,
                    ..
                } => failed(jobs, through, unsaved_lines, unsaved_bytes),
                other => other,
            })
            .collect::<Vec<_>>();
        assert_eq!(*sink.calls.borrow(), calls, "{name}");
        assert_eq!(got, outcomes, "{name}");
    }
}

fn delivered(rx: &mut tokio::sync::mpsc::Receiver<Frame>) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(frame) = rx.try_recv() {
        if let Frame::Ops { data, .. } = frame {
            out.push(data.to_string());
        }
    }
    out
}

/// The core's use of the ledger and its hub, step by step: output is held while its lines are
/// unanswered and released in order, a failure releases it too (shown anyway) with the news,
/// and the first commit after failures says storage recovered.
#[test]
fn held_output_goes_out_only_after_the_writer_answers_for_its_lines() {
    let mut ledger = Ledger::new(1);
    let mut hub = Hub::new(1, HubLimits::default());
    let mut rx = hub.subscribe(None, String::new);
    let _reset = rx.try_recv();
    let publish = |hub: &mut Hub, text: &str| {
        hub.publish(Arc::from(text));
    };
    let hand_over = |ledger: &mut Ledger, hub: &mut Hub, count: usize| {
        let first = ledger.hand_over(count, count * 10);
        hub.hold_until(ledger.next_seq() - 1);
        first
    };
    let answer = |ledger: &mut Ledger, hub: &mut Hub, outcome: Outcome| {
        let step = ledger.answer(&outcome);
        if let Step::Release { through, .. } = &step {
            hub.release_through(*through);
        }
        step
    };

    // Nothing in flight: published at once.
    publish(&mut hub, "before");
    assert_eq!(delivered(&mut rx), ["before"]);

    assert_eq!(hand_over(&mut ledger, &mut hub, 2), 1);
    publish(&mut hub, "ops of 1-2");
    assert_eq!(hand_over(&mut ledger, &mut hub, 3), 3);
    publish(&mut hub, "ops of 3-5");
    assert!(delivered(&mut rx).is_empty(), "held until committed");
    assert_eq!(ledger.in_flight_bytes(), 50);

    let step = answer(&mut ledger, &mut hub, committed(1, 2));
    assert_eq!(
        step,
        Step::Release {
            through: 2,
            news: None
        }
    );
    assert_eq!(delivered(&mut rx), ["ops of 1-2"]);
    assert_eq!((ledger.committed(), ledger.in_flight_bytes()), (2, 30));
    // Published now, it goes after what is still held.
    publish(&mut hub, "banner");
    assert!(delivered(&mut rx).is_empty());

    // The commit of 3-5 fails: their output is shown anyway, with the news.
    let step = answer(&mut ledger, &mut hub, failed(1, 5, 3, 30));
    assert!(
        matches!(
            step,
            Step::Release {
                through: 5,
                news: Some(News::Failed { .. })
            }
        ),
        "{step:?}"
    );
    assert_eq!(delivered(&mut rx), ["ops of 3-5", "banner"]);
    assert!(!hub.holding() && !ledger.in_flight());
    assert_eq!(
        (ledger.committed(), ledger.unsaved(), ledger.failing()),
        (2, (3, 30), true)
    );

    // The next batch is committed with the backlog: storage recovered, once.
    assert_eq!(hand_over(&mut ledger, &mut hub, 1), 6);
    publish(&mut hub, "ops of 6");
    let step = answer(&mut ledger, &mut hub, committed(1, 6));
    assert_eq!(
        step,
        Step::Release {
            through: 6,
            news: Some(News::Recovered)
        }
    );
    assert_eq!(delivered(&mut rx), ["ops of 6"]);
    assert_eq!((ledger.committed(), ledger.unsaved()), (6, (0, 0)));
    let step = answer(&mut ledger, &mut hub, committed(1, 6));
    assert_eq!(
        step,
        Step::Release {
            through: 6,
            news: None
        }
    );
}

/// A batch counted while nobody listened ([`Hub::skip`]) and held keeps its place: a resume
/// from before it gets a reset, not the batches around the gap.
#[test]
fn a_skip_while_holding_empties_the_ring_in_its_turn() {
    let mut hub: Hub = Hub::new(1, HubLimits::default());
    hub.hold_until(1);
    hub.publish(Arc::from("a"));
    let seen = hub.skip();
    hub.publish(Arc::from("b"));
    hub.release_through(1);
    assert!(!hub.holding());
    let mut rx = hub.subscribe(
        Some(crate::hub::EventId {
            generation: 1,
            counter: 1,
        }),
        || "snapshot".into(),
    );
    assert!(matches!(rx.try_recv(), Ok(Frame::Reset { .. })));
    let mut rx = hub.subscribe(Some(seen), || "snapshot".into());
    assert_eq!(delivered(&mut rx), ["b"]);
}

/// Through the session core and a real store: a page that subscribes while the agent's lines
/// wait for the writer gets a snapshot cut after their commit (the log holds them), and no live
/// batch repeats what that snapshot shows; a page that was there gets them as one batch.
#[test]
fn a_snapshot_waits_for_the_writer_and_no_batch_repeats_it() {
    use crate::core::SessionCore;
    use crate::feed::EngineFeed;
    use crate::store::Store;
    use spindle_engine::{EngineConfig, TranscriptEngine};

    let dir = std::env::temp_dir().join(format!(
        "spindle-pipeline-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let store = Store::open(&dir.join("pipeline.db")).unwrap();
    let session = store.create_session("s", None).unwrap();
    let engine = (
        TranscriptEngine::new(EngineConfig::default()),
        EngineFeed::default(),
    );
    let hub = Hub::new(1, HubLimits::default());
    let mut core = SessionCore::new(session, engine, hub, store.clone(), 1);
    let prompt = r#"{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}"#;
    let chunk = serde_json::json!({
        "jsonrpc": "2.0", "method": "session/update",
        "params": { "sessionId": "s", "update": {
            "sessionUpdate": "agent_message_chunk", "messageId": "a1",
            "content": { "type": "text", "text": "Hello from the stream" } } },
    })
    .to_string();
    let mut early = core.subscribe(None);
    core.record(vec![(Direction::Client, prompt.to_owned())]);
    core.record_agent_lines(vec![(Direction::Agent, chunk.clone())]);
    let mut late = core.subscribe(None);
    let (logged, _) = store.lines(session).unwrap();
    assert_eq!(logged.len(), 2, "committed before the snapshot");
    let mut frames = Vec::new();
    while let Ok(frame) = late.try_recv() {
        frames.push(frame);
    }
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert!(
        matches!(&frames[0], Frame::Reset { data, .. } if data.contains("Hello from the stream")),
        "{frames:?}"
    );
    let mut seen = String::new();
    while let Ok(frame) = early.try_recv() {
        if let Frame::Ops { data, .. } = frame {
            seen.push_str(&data);
        }
    }
    assert_eq!(seen.matches("Hello from the stream").count(), 1, "{seen}");
    // Nothing more arrives for either page once the writer has answered everything.
    core.settle();
    assert!(late.try_recv().is_err());
}

/// A commit's answer is handed on before the save queued after it is written: the output it
/// releases (a turn's end) does not wait for the whole transcript's write.
#[test]
fn a_commit_is_answered_before_the_save_after_it_is_written() {
    let sink = Recording::default();
    let mut writer = LogWriter::new(1, 1);
    writer.run_each(&sink, vec![lines(1, &["a", "b"]), save(2)], |outcome| {
        sink.calls.borrow_mut().push(format!("answer {outcome:?}"));
    });
    assert_eq!(
        sink.calls.into_inner(),
        [
            "append 1: a,b",
            "answer Committed { jobs: 1, through: 2 }",
            "save upto 2: transcript@2",
            "answer Saved(Ok(()))",
        ]
    );
}
