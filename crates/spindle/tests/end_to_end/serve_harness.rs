//! Helpers for the hardening tests of `spindle serve`: start the real binary
//! with any agent command, read `/proc` memory figures, fetch transcripts.
//! It reuses the web tests' HTTP and SSE client (`serve_support`).
#![allow(dead_code, unused_imports, missing_debug_implementations)]

use crate::serve_support;

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
pub use serve_support::{Response, Served, SseReader, TextView, http};

/// `spindle serve --bind 127.0.0.1:0 --db DB ARGS -- AGENT...`, with the
/// server's stderr written to `stderr` (when given) and `env` added.
pub fn start_serve(
    db: &Path,
    serve_args: &[&str],
    agent: &[OsString],
    stderr: Option<&Path>,
    env: &[(&str, &str)],
) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_spindle"));
    command
        .arg("serve")
        .args(["--bind", "127.0.0.1:0", "--db"])
        .arg(db)
        .args(serve_args)
        .arg("--")
        .args(agent)
        .envs(env.iter().copied());
    match stderr {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("open stderr file");
            command.stderr(file);
        }
        None => {
            command.stderr(Stdio::inherit());
        }
    }
    serve_from(command)
}

/// The reference agent (this binary) streaming with `delay_ms` between pieces.
pub fn reference_agent(delay_ms: u32) -> Vec<OsString> {
    vec![
        env!("CARGO_BIN_EXE_spindle").into(),
        "agent".into(),
        "--delay-ms".into(),
        delay_ms.to_string().into(),
    ]
}

/// A field of `/proc/PID/status` in KiB (`VmHWM` is the peak RSS so far).
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

pub fn transcript(served: &Served, session: i64) -> Value {
    served.get_json(&format!("/api/sessions/{session}/transcript"))
}

pub fn replies(served: &Served, session: i64) -> Vec<Value> {
    served.get_json(&format!("/api/sessions/{session}/replies"))["replies"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Polls the transcript until `check` accepts it (60 s patience).
pub fn wait_transcript(
    served: &Served,
    session: i64,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = std::time::Instant::now() + serve_support::PATIENCE;
    loop {
        let t = transcript(served, session);
        if check(&t) {
            return t;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}: {t:#}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The texts of the transcript's entries of one kind, in order.
pub fn entry_texts(transcript: &Value, kind: &str) -> Vec<String> {
    transcript["entries"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .filter(|e| e["kind"] == kind)
                .map(|e| e["text"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Starts a prepared `spindle serve` command (its stdout is piped here) and
/// reads the URL it prints.
pub fn serve_from(mut command: Command) -> Served {
    command.stdin(Stdio::null()).stdout(Stdio::piped());
    let mut child = command.spawn().expect("spawn spindle serve");
    let stdout = child.stdout.take().expect("stdout piped");
    let mut lines = BufReader::new(stdout).lines();
    let line = match lines.next() {
        Some(Ok(line)) => line,
        other => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("spindle serve printed no URL: {other:?}");
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("authority")
        .to_string();
    Served {
        child,
        addr: authority.parse().expect("socket address"),
        url,
    }
}
