//! `spindle serve` as a new user starts it (issue #25, "defaults that work"): protocol 1 unless
//! `--protocol 2` asks for the draft; the agent facts say what the negotiated version allows
//! (v2 has no client files or terminals); the reference agent's permission request carries the
//! edit's diff, shown before the answer; an edit is one diff per file in either version.

use serde_json::{Value, json};

use crate::serve_support::{
    Served, reference_agent, reference_agent_with, serve_version, start_serve, temp_dir,
    wait_transcript,
};

/// The session's agent facts once its handshake is done.
fn ready_info(served: &Served, session: i64) -> Value {
    served.wait_agent_info(session, "ready", |i| {
        i["status"] == "ready" && i["protocol"].is_number()
    })
}

#[test]
fn serve_defaults_ask_for_protocol_1_and_show_files_and_terminals_as_negotiated() {
    let dir = temp_dir("defaults-protocol");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let cwd = work.to_str().unwrap();
    // The agent answers whatever it is asked for (`--protocol auto`, its default).
    let served = start_serve(
        &dir.join("db.sqlite"),
        &["--cwd", cwd, "--fs", "allow"],
        &reference_agent(0),
        None,
        &[],
    );
    let session = served.create_session();
    let info = ready_info(&served, session);
    assert_eq!(info["protocol"], 1, "{info}");
    assert_eq!(info["hostInProtocol"], true, "{info}");
    assert_eq!(info["fsPolicy"], "allow");
    assert_eq!(info["terminals"], true);
    // And the files work: the default setup reads and writes.
    served.prompt(session, "/scenario client-fs notes.txt");
    served.reply_with(session, "I wrote notes.txt");
    served.stop();

    // The draft, asked for: no client files or terminals, and the facts say so.
    let dir = temp_dir("defaults-protocol-2");
    let served = start_serve(
        &dir.join("db.sqlite"),
        &["--cwd", cwd, "--protocol", "2"],
        &reference_agent(0),
        None,
        &[],
    );
    let session = served.create_session();
    let info = ready_info(&served, session);
    assert_eq!(info["protocol"], 2, "{info}");
    assert_eq!(info["hostInProtocol"], false, "{info}");
    served.stop();
}

/// The diffs of the session's entries as the page gets them (the engine's view in the first
/// event of a new event stream): only the edit has any.
fn view_diffs(served: &Served, session: i64) -> Vec<Value> {
    let mut sse = served.sse(session, None);
    let reset = sse.next_event().unwrap();
    reset
        .ops()
        .iter()
        .filter(|op| op["op"] == "insert_entry")
        .filter_map(|op| op["entry"]["diffs"].as_array().cloned())
        .flatten()
        .collect()
}

/// Waits until the edit's entry has a diff and its tool call `status`; returns its diffs.
fn edit_diffs(served: &Served, session: i64, status: &str) -> Vec<Value> {
    wait_transcript(served, session, status, |t| {
        t["entries"].as_array().is_some_and(|entries| {
            entries.iter().any(|e| {
                e["toolCall"]["title"] == "Edit src/main.rs" && e["toolCall"]["status"] == status
            })
        })
    });
    view_diffs(served, session)
}

#[test]
fn serve_defaults_the_permission_request_shows_the_diff_and_an_edit_is_one_diff_per_file() {
    for protocol in [1u8, 2] {
        let dir = temp_dir(&format!("defaults-diff-v{protocol}"));
        let served = serve_version(
            &dir,
            &dir.path,
            protocol,
            &[],
            &reference_agent_with(protocol, &[]),
        );
        let session = served.create_session();
        let mut sse = served.sse(session, None);
        served.prompt(session, "/scenario tools");
        let question = sse.wait_op(|op| op["op"] == "web_permission").unwrap();
        // Before the answer the edit's entry already holds its diff (from the request).
        let diffs = edit_diffs(&served, session, "pending");
        assert_eq!(diffs.len(), 1, "v{protocol}: {diffs:#?}");
        assert_eq!(diffs[0]["path"], "/workspace/src/main.rs");
        let lines = diffs[0]["hunks"][0]["lines"].clone();
        assert_eq!(
            lines,
            json!([
                " fn main() {",
                "-    println!(\"hello\");",
                "+    println!(\"hello, spindle\");",
                " }"
            ]),
            "v{protocol}: only the changed line, with its context"
        );
        let (status, body) = served.post_value(
            &format!("/api/sessions/{session}/permission"),
            &json!({"key": question["key"], "optionId": "allow"}),
        );
        assert_eq!(status, 200, "{body}");
        served.reply_with(session, "I changed the greeting");
        // After the edit: still one diff for the one file (v2's `changes` and `patch` together).
        let diffs = edit_diffs(&served, session, "completed");
        assert_eq!(diffs.len(), 1, "v{protocol}: {diffs:#?}");
        assert_eq!(diffs[0]["path"], "/workspace/src/main.rs");
        assert_eq!(diffs[0]["hunks"][0]["lines"], lines, "v{protocol}");
        served.stop();
    }
}

#[test]
fn serve_refuses_client_files_and_terminals_to_a_v2_agent_whatever_the_policy() {
    if !crate::harness::require_python() {
        return;
    }
    let dir = temp_dir("v2-host-refused");
    let agent = crate::harness::fake_agent_command(&dir, "v2-host");
    let cwd = dir.path.to_str().unwrap().to_owned();
    let served = start_serve(
        &dir.join("db.sqlite"),
        &["--cwd", &cwd, "--protocol", "2", "--fs", "allow"],
        &agent,
        None,
        &[],
    );
    let session = served.create_session();
    served.prompt(session, "hi");
    let reply = served.reply_with(session, "answers:");
    assert_eq!(
        reply,
        "answers: fs/read_text_file -32601, terminal/create -32601"
    );
    served.stop();
}
