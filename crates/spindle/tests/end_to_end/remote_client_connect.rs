//! `spindle chat --connect URL` (and `--attach URL SESSION`) against the
//! `/acp` endpoint of `spindle serve` and `spindle bridge --listen`, over
//! WebSocket and HTTP+SSE: the same replies, transcript and exit status as
//! the same scenario over stdio.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use spindle_agent::scenarios;

use crate::harness::TempDir;
use crate::serve_support::{Served, reference_agent_with, start_serve};

pub const SPINDLE: &str = env!("CARGO_BIN_EXE_spindle");

/// `spindle serve --protocol 1` over the reference agent (no delay), for its `/acp`.
pub fn serve_acp(dir: &TempDir, agent_extra: &[&str]) -> Served {
    start_serve(
        &dir.join("db.sqlite"),
        &["--protocol", "1"],
        &reference_agent_with(1, agent_extra),
        None,
        &[],
    )
}

/// The `/acp` URL of a served instance, in `scheme`.
pub fn acp_url(served: &Served, scheme: &str) -> String {
    format!("{scheme}://{}/acp", served.addr)
}

/// `spindle chat FLAGS` with nothing on stdin; its output.
pub fn chat(flags: &[&str]) -> Output {
    Command::new(SPINDLE)
        .arg("chat")
        .args(flags)
        .stdin(Stdio::null())
        .output()
        .expect("run spindle chat")
}

/// `spindle replay FILE` as JSON.
pub fn replay(path: &Path) -> Value {
    let out = Command::new(SPINDLE)
        .arg("replay")
        .arg(path)
        .output()
        .expect("run spindle replay");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("replay JSON")
}

/// A transcript as (kind, text) per entry, without ids and times, so runs
/// over different transports (and session ids) compare equal.
pub fn shape(transcript: &Value) -> Vec<(String, String)> {
    let entries = transcript["entries"]
        .as_array()
        .or_else(|| transcript.as_array())
        .cloned()
        .unwrap_or_default();
    entries
        .iter()
        .map(|e| {
            let kind = e["kind"].as_str().unwrap_or_default().to_owned();
            let text = e["text"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| e["title"].as_str().map(str::to_owned))
                .unwrap_or_default();
            (kind, text)
        })
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One prompt over stdio and over each transport to `url_of(scheme)`:
/// the reply, the exit status and the recorded transcript are the same.
fn same_as_stdio(prompt: &str, remote_urls: &[(&str, String)], flags: &[&str]) {
    let dir = TempDir::new("remote-client-same");
    let stdio_rec = dir.join("stdio.jsonl");
    let mut stdio_flags = vec!["--prompt", prompt, "--record", stdio_rec.to_str().unwrap()];
    stdio_flags.extend_from_slice(flags);
    stdio_flags.extend_from_slice(&["--", SPINDLE, "agent", "--delay-ms", "0", "--protocol", "1"]);
    let stdio = chat(&stdio_flags);
    assert_eq!(stdio.status.code(), Some(0), "{}", text(&stdio.stderr));
    let stdio_shape = shape(&replay(&stdio_rec));
    assert!(!stdio_shape.is_empty());
    for (transport, url) in remote_urls {
        let rec = dir.join(&format!("{transport}.jsonl"));
        let mut remote_flags = vec![
            "--connect",
            url.as_str(),
            "--transport",
            transport,
            "--prompt",
            prompt,
            "--record",
            rec.to_str().unwrap(),
        ];
        remote_flags.extend_from_slice(flags);
        let remote = chat(&remote_flags);
        assert_eq!(
            remote.status.code(),
            Some(0),
            "{transport}: {}",
            text(&remote.stderr)
        );
        assert_eq!(text(&remote.stdout), text(&stdio.stdout), "{transport}");
        assert_eq!(shape(&replay(&rec)), stdio_shape, "{transport}");
    }
}

#[test]
fn remote_client_connect_to_serve_over_ws_and_http_replies_as_over_stdio() {
    let dir = TempDir::new("remote-client-serve");
    let served = serve_acp(&dir, &[]);
    let urls = [
        ("ws", acp_url(&served, "ws")),
        ("http", acp_url(&served, "http")),
    ];
    same_as_stdio("/scenario thoughts", &urls, &[]);
    same_as_stdio("/scenario tools", &urls, &["--yes"]);
    served.stop();
}

#[test]
fn remote_client_a_url_without_path_gets_acp_and_a_bad_url_is_a_usage_error() {
    let dir = TempDir::new("remote-client-url");
    let served = serve_acp(&dir, &[]);
    let bare = format!("http://{}", served.addr);
    let out = chat(&["--connect", &bare, "--prompt", "hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).trim().is_empty());
    served.stop();

    let out = chat(&["--connect", "ftp://127.0.0.1:1/acp", "--prompt", "hello"]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("scheme"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn remote_client_an_unreachable_endpoint_is_reported_not_hung() {
    // A port nobody listens on: bind, note it, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("ws://127.0.0.1:{port}/acp");
    let out = chat(&["--connect", &url, "--prompt", "hello", "--timeout", "60"]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("could not connect"),
        "{}",
        text(&out.stderr)
    );
    let url = format!("http://127.0.0.1:{port}/acp");
    let out = chat(&[
        "--connect",
        &url,
        "--transport",
        "http",
        "--prompt",
        "hello",
        "--timeout",
        "60",
    ]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("unreachable") || text(&out.stderr).contains("closed"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn remote_client_attach_as_observer_sees_the_session_and_cannot_prompt() {
    let dir = TempDir::new("remote-client-attach");
    let served = serve_acp(&dir, &[]);
    // A session made by a first client, with one finished turn.
    let session = served.create_session();
    served.prompt(session, "/scenario thoughts");
    served.wait_finished_turns(session, 1);
    let url = acp_url(&served, "http");
    let session = session.to_string();
    for transport in ["ws", "http"] {
        let out = chat(&[
            "--attach",
            &url,
            &session,
            "--transport",
            transport,
            "--role",
            "observer",
            "--prompt",
            "hello",
        ]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{transport}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("observer"),
            "{transport}: {}",
            text(&out.stderr)
        );
    }
    // Interactively (here piped), an observer's line is not sent: the chat says why.
    let out = chat_with_input(
        &["--attach", &url, &session, "--role", "observer"],
        "hello\n",
    );
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("not sent: an observer does not prompt"),
        "{said}"
    );
    assert!(!said.contains("The agent ended the turn"), "{said}");
    // As controller the prompt is a turn of the same session: the page sees it.
    let out = chat(&["--attach", &url, &session, "--prompt", "/scenario thoughts"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), scenarios::THOUGHTS_REPLY);
    served.wait_finished_turns(session.parse().unwrap(), 2);
    served.stop();
}

/// `spindle chat FLAGS` with `input` on stdin (then closed); its output.
fn chat_with_input(flags: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(SPINDLE)
        .arg("chat")
        .args(flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run spindle chat");
    let mut stdin = child.stdin.take().expect("stdin piped");
    stdin
        .write_all(input.as_bytes())
        .expect("write the prompts");
    drop(stdin);
    child.wait_with_output().expect("wait for spindle chat")
}

/// `--attach URL SESSION` opens the running session at start: with
/// `--history full` its turns so far are shown first, then
/// `[attached to session N]`, then the new turn; the history's updates belong to
/// a session the client knows (no "unknown session" diagnostic, before or
/// after the first prompt). With `--history none` nothing of before is
/// shown and the new turn works the same.
#[test]
fn remote_client_attach_shows_the_history_first_without_unknown_session_diagnostics() {
    let dir = TempDir::new("remote-client-attach-history");
    let served = serve_acp(&dir, &[]);
    let session = served.create_session();
    served.prompt(session, "/scenario thoughts");
    served.wait_finished_turns(session, 1);
    let url = acp_url(&served, "http");
    let id = session.to_string();
    let mut finished = 1;
    for transport in ["http", "ws"] {
        let out = chat_with_input(
            &["--attach", &url, &id, "--transport", transport],
            "/scenario notice\n",
        );
        let stdout = text(&out.stdout);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{transport}: {stderr}");
        for stream in [&stdout, &stderr] {
            assert!(
                !stream.contains("unknown session") && !stream.contains("diagnostic"),
                "{transport}:\n{stdout}\n{stderr}"
            );
        }
        // The history (the first turn, and the turns attached clients
        // added since), the marker, the new turn.
        let history = stdout
            .find(scenarios::THOUGHTS_REPLY)
            .unwrap_or_else(|| panic!("{transport}: no history\n{stdout}"));
        let loaded = stdout
            .find(&format!("[attached to session {id}]"))
            .unwrap_or_else(|| panic!("{transport}: no marker\n{stdout}"));
        let reply = stdout
            .rfind(scenarios::NOTICE_REPLY)
            .unwrap_or_else(|| panic!("{transport}: no reply\n{stdout}"));
        assert!(history < loaded && loaded < reply, "{transport}:\n{stdout}");
        assert_eq!(stdout.matches(scenarios::THOUGHTS_REPLY).count(), 1);
        finished += 1;
        served.wait_finished_turns(session, finished);
    }
    let out = chat_with_input(
        &["--attach", &url, &id, "--history", "none"],
        "/scenario notice\n",
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!stdout.contains(scenarios::THOUGHTS_REPLY), "{stdout}");
    assert_eq!(
        stdout.matches(scenarios::NOTICE_REPLY).count(),
        1,
        "{stdout}"
    );
    assert!(!text(&out.stderr).contains("unknown session"));
    served.stop();
}
