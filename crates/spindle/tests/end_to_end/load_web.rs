//! Load through the real `spindle serve` and the reference agent: many
//! sessions streaming at once, and many SSE observers of one session. Every
//! observer must end with exactly the reply the agent's generator promises
//! (length and FNV-1a hash), and the server's peak RSS is reported.
//!
//! The small sizes run in every `cargo test`; the full sizes are `#[ignore]`d:
//!
//! ```text
//! cargo test -p spindle --release --test end_to_end load_web:: -- --ignored --nocapture --test-threads 1
//! ```
//!
//! The web engineer's `cargo bench -p spindle-web --bench sse_fanout`
//! (BENCHMARKS.md, web section) measures the same loads with a minimal agent; these
//! go through the shipped binary end to end.

use crate::harness;
use crate::serve_support;

use std::time::Instant;

use harness::TempDir;
use serve_support::{Served, SseReader, TextView, proc_status_kib, transcript};
use spindle_agent::{StreamMix, Version, expected_reply};

fn fnv1a64(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Reads one session's events until an agent message with the expected
/// hash is on screen; returns the number of events read.
fn observe_until(reader: &mut SseReader, expected_hash: u64) -> usize {
    let mut view = TextView::default();
    let mut events = 0;
    loop {
        let event = reader
            .next_event()
            .expect("the stream ended before the reply was complete");
        events += 1;
        view.apply_event(&event);
        let check = event.ops().iter().any(|op| op["op"] == "set_state") || events % 64 == 0;
        if check
            && view
                .texts_of("agent_message")
                .iter()
                .any(|t| fnv1a64(t) == expected_hash)
        {
            return events;
        }
    }
}

struct Figures {
    seconds: f64,
    peak_kib: u64,
    events: usize,
}

impl Figures {
    /// Prints the figures of the run described by `what`; returns them.
    fn report(self, what: &str) -> Figures {
        eprintln!(
            "serve, {what}: {:.2} s, {} SSE events, server peak RSS {} KiB",
            self.seconds, self.events, self.peak_kib
        );
        self
    }
}

/// `sessions` sessions, each with `observers_per_session` SSE observers,
/// each session prompted with `/stream n mixed` at once.
fn stream_sessions(sessions: usize, observers_per_session: usize, n: u64) -> Figures {
    let dir = TempDir::new("load-web");
    let served = Served::start(&dir.join("db.sqlite"), &[], 0);
    let expected = expected_reply(Version::V2, StreamMix::Mixed, n);
    let ids: Vec<i64> = (0..sessions).map(|_| served.create_session()).collect();
    let mut observers = Vec::new();
    for &id in &ids {
        for _ in 0..observers_per_session {
            let reader = served.sse(id, None);
            observers.push((id, reader));
        }
    }
    let started = Instant::now();
    let handles: Vec<_> = observers
        .into_iter()
        .map(|(id, mut reader)| {
            let hash = expected.fnv1a64;
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || (id, observe_until(&mut reader, hash)))
                .expect("spawn observer")
        })
        .collect();
    for &id in &ids {
        served.prompt(id, &format!("/stream {n} mixed"));
    }
    let mut events = 0;
    for handle in handles {
        let (_, seen) = handle.join().expect("observer");
        events += seen;
    }
    let seconds = started.elapsed().as_secs_f64();
    for &id in &ids {
        let t = transcript(&served, id);
        let reply = t["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "agent_message")
            .filter_map(|e| e["text"].as_str())
            .find(|text| fnv1a64(text) == expected.fnv1a64);
        let reply = reply.unwrap_or_else(|| panic!("session {id}: reply not in the transcript"));
        assert_eq!(reply.len() as u64, expected.bytes);
    }
    let peak_kib = proc_status_kib(served.child.id(), "VmHWM").unwrap_or(0);
    served.stop();
    Figures {
        seconds,
        peak_kib,
        events,
    }
}

#[test]
fn load_web_10_sessions_streaming_at_once() {
    stream_sessions(10, 1, 500).report("10 sessions x /stream 500 mixed, 1 observer each");
}

#[test]
fn load_web_50_observers_of_one_session() {
    stream_sessions(1, 50, 500).report("1 session x /stream 500 mixed, 50 observers");
}

#[test]
#[ignore = "load: run with --ignored (see the module docs)"]
fn load_web_100_sessions_streaming_at_once() {
    let f =
        stream_sessions(100, 1, 1000).report("100 sessions x /stream 1000 mixed, 1 observer each");
    assert!(f.peak_kib < 1024 * 1024, "peak RSS {} KiB", f.peak_kib);
}

#[test]
#[ignore = "load: run with --ignored (see the module docs)"]
fn load_web_1000_observers_of_one_session() {
    let f =
        stream_sessions(1, 1000, 2000).report("1 session x /stream 2000 mixed, 1,000 observers");
    assert!(f.peak_kib < 1024 * 1024, "peak RSS {} KiB", f.peak_kib);
}
