//! The client-method scenarios (`client-fs`, `client-terminal`,
//! `client-terminal-forever`, `echo-content`, `client-all`) against a test
//! client that answers `fs/*` and `terminal/*` itself: what the agent asks
//! for, in which order, that it uses only what the client advertised, and
//! that its reply reports every outcome. Every agent line is schema-checked
//! by `Peer`.

use serde_json::{Value, json};
use spindle_agent::scenarios::{
    CLIENT_FS_NEW_FILE_TEXT, CLIENT_FS_V2_REPLY, CLIENT_TERMINAL_FOREVER_SCRIPT,
    CLIENT_TERMINAL_NONE_REPLY, CLIENT_TERMINAL_OUTPUT, CLIENT_TERMINAL_SCRIPT,
    CLIENT_TERMINAL_V2_REPLY, client_fs_changed,
};

use crate::common::{Model, Peer};

/// A v1 session whose client advertises these capabilities.
async fn v1_session(read: bool, write: bool, terminal: bool) -> (Peer, String) {
    let mut peer = Peer::fast();
    peer.initialize_with(json!({
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": read, "writeTextFile": write}, "terminal": terminal},
    }))
    .await;
    let (sid, _) = peer.new_session().await;
    (peer, sid)
}

/// What happened in a turn driven by a test client.
struct Run {
    /// The agent's requests to the client, in order.
    requests: Vec<Value>,
    /// The session updates.
    updates: Vec<Value>,
    /// The prompt response.
    response: Value,
}

impl Run {
    fn methods(&self) -> Vec<&str> {
        self.requests
            .iter()
            .map(|r| r["method"].as_str().unwrap())
            .collect()
    }

    fn reply(&self) -> String {
        let mut m = Model::default();
        for u in &self.updates {
            m.apply(u);
        }
        m.agent_messages()
            .iter()
            .map(|m| m.text.clone())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Sends `prompt` (v1) and answers each agent request with `answer(request)`
/// (`None`: leave it unanswered) until the prompt response.
async fn run(
    peer: &mut Peer,
    sid: &str,
    prompt: Value,
    mut answer: impl FnMut(&Value) -> Option<Result<Value, (i64, &'static str)>>,
) -> Run {
    let id = peer
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": prompt}),
        )
        .await;
    let mut run = Run {
        requests: Vec::new(),
        updates: Vec::new(),
        response: Value::Null,
    };
    loop {
        let msg = peer.recv().await;
        if msg["id"] == json!(id) && msg.get("method").is_none() {
            run.response = msg;
            return run;
        }
        if msg["method"] == "session/update" {
            run.updates.push(msg["params"]["update"].clone());
            continue;
        }
        if msg.get("method").is_some() && msg.get("id").is_some() {
            run.requests.push(msg.clone());
            match answer(&msg) {
                Some(Ok(result)) => {
                    peer.send(&json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
                        .await;
                }
                Some(Err((code, message))) => {
                    peer.send(&json!({"jsonrpc": "2.0", "id": msg["id"],
                        "error": {"code": code, "message": message}}))
                        .await;
                }
                None => {}
            }
        }
    }
}

fn text_prompt(text: &str) -> Value {
    json!([{"type": "text", "text": text}])
}

const OLD: &str = "first line\nsecond line\nthird line\n";

/// A file system holding `/tmp/notes.txt` = [`OLD`].
fn fs_answer(request: &Value) -> Option<Result<Value, (i64, &'static str)>> {
    let params = &request["params"];
    match request["method"].as_str()? {
        "fs/read_text_file" if params["path"] == "/tmp/notes.txt" => {
            Some(Ok(match params["line"].as_u64() {
                Some(2) => json!({"content": "second line\n"}),
                _ => json!({"content": OLD}),
            }))
        }
        "fs/read_text_file" => Some(Err((-32002, "Resource not found: no such file"))),
        "fs/write_text_file" => Some(Ok(json!({}))),
        _ => Some(Err((-32601, "method not found"))),
    }
}

#[tokio::test]
async fn client_fs_reads_whole_and_by_line_then_writes_the_change() {
    let (mut peer, sid) = v1_session(true, true, false).await;
    let run = run(
        &mut peer,
        &sid,
        text_prompt("/scenario client-fs notes.txt"),
        fs_answer,
    )
    .await;
    assert_eq!(run.response["result"]["stopReason"], "end_turn");
    assert_eq!(
        run.methods(),
        [
            "fs/read_text_file",
            "fs/read_text_file",
            "fs/write_text_file"
        ]
    );
    let [whole, by_line, write] = &run.requests[..] else {
        unreachable!()
    };
    assert_eq!(
        whole["params"],
        json!({"sessionId": sid, "path": "/tmp/notes.txt"})
    );
    assert_eq!(by_line["params"]["line"], 2);
    assert_eq!(by_line["params"]["limit"], 1);
    assert_eq!(write["params"]["content"], client_fs_changed(OLD));
    // The change is shown as a diff before it is written.
    let diff = run
        .updates
        .iter()
        .find_map(|u| {
            u["content"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "diff")
                .cloned()
        })
        .expect("a diff");
    assert_eq!(diff["oldText"], OLD);
    assert_eq!(diff["newText"], client_fs_changed(OLD));
    let reply = run.reply();
    assert!(reply.contains("I read notes.txt: 3 lines"), "{reply}");
    assert!(reply.contains("\"second line\""), "{reply}");
    assert!(reply.contains("I wrote notes.txt: 4 lines."), "{reply}");
}

#[tokio::test]
async fn client_fs_reports_rejection_refusal_and_creates_a_missing_file() {
    // The user rejects the write.
    let (mut peer, sid) = v1_session(true, true, false).await;
    let run = run(
        &mut peer,
        &sid,
        text_prompt("/scenario client-fs notes.txt"),
        |r| {
            if r["method"] == "fs/write_text_file" {
                Some(Err((-32603, "the user rejected the write")))
            } else {
                fs_answer(r)
            }
        },
    )
    .await;
    assert!(
        run.reply().contains("You rejected the change to notes.txt"),
        "{}",
        run.reply()
    );
    // The client refuses a path outside its workspace: no write is tried.
    let run = run_again(&mut peer, &sid, "/scenario client-fs /etc/passwd", |r| {
        assert_eq!(r["params"]["path"], "/etc/passwd");
        Some(Err((-32602, "/etc/passwd is outside the workspace")))
    })
    .await;
    assert_eq!(run.methods(), ["fs/read_text_file"]);
    assert!(
        run.reply().contains(
            "The client refused to read /etc/passwd: /etc/passwd is outside the workspace."
        ),
        "{}",
        run.reply()
    );
    // A missing file is created (the default name).
    let run = run_again(&mut peer, &sid, "/scenario client-fs", fs_answer).await;
    assert_eq!(run.methods(), ["fs/read_text_file", "fs/write_text_file"]);
    assert_eq!(run.requests[1]["params"]["path"], "/tmp/spindle-demo.txt");
    assert_eq!(
        run.requests[1]["params"]["content"],
        CLIENT_FS_NEW_FILE_TEXT
    );
    assert!(
        run.reply().contains("I created spindle-demo.txt"),
        "{}",
        run.reply()
    );
}

async fn run_again(
    peer: &mut Peer,
    sid: &str,
    text: &str,
    answer: impl FnMut(&Value) -> Option<Result<Value, (i64, &'static str)>>,
) -> Run {
    run(peer, sid, text_prompt(text), answer).await
}

#[tokio::test]
async fn client_fs_uses_only_what_the_client_advertised() {
    // Read only: reads, never writes.
    let (mut peer, sid) = v1_session(true, false, false).await;
    let r = run(
        &mut peer,
        &sid,
        text_prompt("/scenario client-fs notes.txt"),
        fs_answer,
    )
    .await;
    assert_eq!(r.methods(), ["fs/read_text_file", "fs/read_text_file"]);
    assert!(
        r.reply().contains("fs.writeTextFile is false"),
        "{}",
        r.reply()
    );
    // Nothing: says so and asks for nothing.
    let (mut peer, sid) = v1_session(false, false, false).await;
    let r = run(
        &mut peer,
        &sid,
        text_prompt("/scenario client-fs"),
        fs_answer,
    )
    .await;
    assert!(r.requests.is_empty());
    assert!(
        r.reply()
            .contains("The client offers no file system access"),
        "{}",
        r.reply()
    );
    // v2 has no client file system at all, whatever v1 fields ride along.
    let (mut peer, sid) = Peer::ready(2, &[]).await;
    let turn = peer.prompt(&sid, "/scenario client-fs").await;
    assert!(
        !peer
            .log
            .iter()
            .any(|l| l["method"].as_str().is_some_and(|m| m.starts_with("fs/")))
    );
    assert_eq!(turn.reply(), CLIENT_FS_V2_REPLY);
}

fn terminal_answer(request: &Value) -> Option<Result<Value, (i64, &'static str)>> {
    Some(Ok(match request["method"].as_str()? {
        "terminal/create" => json!({"terminalId": "term-1"}),
        "terminal/wait_for_exit" => json!({"exitCode": 0, "signal": null}),
        "terminal/output" => json!({"output": CLIENT_TERMINAL_OUTPUT, "truncated": false,
                                    "exitStatus": {"exitCode": 0, "signal": null}}),
        "terminal/release" => json!({}),
        _ => return Some(Err((-32601, "method not found"))),
    }))
}

#[tokio::test]
async fn client_terminal_creates_embeds_waits_reads_and_releases() {
    let (mut peer, sid) = v1_session(false, false, true).await;
    let r = run(
        &mut peer,
        &sid,
        text_prompt("/scenario client-terminal"),
        terminal_answer,
    )
    .await;
    assert_eq!(
        r.methods(),
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    let create = &r.requests[0]["params"];
    assert_eq!(create["command"], "sh");
    assert_eq!(create["args"], json!(["-c", CLIENT_TERMINAL_SCRIPT]));
    assert_eq!(create["cwd"], "/tmp");
    assert_eq!(
        create["env"],
        json!([{"name": "SPINDLE_DEMO", "value": "ok"}])
    );
    for later in &r.requests[1..] {
        assert_eq!(later["params"]["terminalId"], "term-1");
    }
    // The terminal is embedded in the tool call before the agent waits on it.
    let embed = r
        .updates
        .iter()
        .position(|u| u["content"] == json!([{"type": "terminal", "terminalId": "term-1"}]))
        .expect("the terminal embedded");
    assert_eq!(r.updates[embed]["status"], "in_progress");
    let last_status = r
        .updates
        .iter()
        .rev()
        .find_map(|u| u["status"].as_str())
        .unwrap();
    assert_eq!(last_status, "completed");
    let reply = r.reply();
    assert!(reply.contains("exited with code 0"), "{reply}");
    assert!(
        reply.contains(&format!("{} bytes", CLIENT_TERMINAL_OUTPUT.len())),
        "{reply}"
    );
    // No terminal capability (or v2): nothing is run.
    let (mut peer, sid) = v1_session(true, true, false).await;
    let r = run(
        &mut peer,
        &sid,
        text_prompt("/scenario client-terminal"),
        terminal_answer,
    )
    .await;
    assert!(r.requests.is_empty());
    assert_eq!(r.reply(), CLIENT_TERMINAL_NONE_REPLY);
    let (mut peer, sid) = Peer::ready(2, &[]).await;
    assert_eq!(
        peer.prompt(&sid, "/scenario client-terminal").await.reply(),
        CLIENT_TERMINAL_V2_REPLY
    );
}

#[tokio::test]
async fn a_never_ending_command_is_killed_and_released_on_cancel() {
    let (mut peer, sid) = v1_session(false, false, true).await;
    let id = peer
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": text_prompt("/scenario client-terminal-forever")}),
        )
        .await;
    // Answer the create; hold the wait.
    let mut waiting = false;
    while !waiting {
        let msg = peer.recv().await;
        match msg["method"].as_str() {
            Some("terminal/create") => {
                assert_eq!(
                    msg["params"]["args"],
                    json!(["-c", CLIENT_TERMINAL_FOREVER_SCRIPT])
                );
                peer.send(
                    &json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"terminalId": "t9"}}),
                )
                .await;
            }
            Some("terminal/wait_for_exit") => waiting = true,
            _ => {}
        }
    }
    peer.notify("session/cancel", json!({"sessionId": sid}))
        .await;
    let mut cleanup = Vec::new();
    let response = loop {
        let msg = peer.recv().await;
        if msg["id"] == json!(id) && msg.get("method").is_none() {
            break msg;
        }
        if let Some(method) = msg["method"]
            .as_str()
            .filter(|m| m.starts_with("terminal/"))
        {
            assert_eq!(msg["params"]["terminalId"], "t9");
            cleanup.push(method.to_owned());
            peer.send(&json!({"jsonrpc": "2.0", "id": msg["id"], "result": {}}))
                .await;
        }
    };
    assert_eq!(cleanup, ["terminal/kill", "terminal/release"]);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    // The session goes on.
    let turn = peer.prompt(&sid, "hello").await;
    assert_eq!(turn.stop_reason, "end_turn");
}

#[tokio::test]
async fn echo_content_describes_every_block_and_audio_is_refused() {
    for version in [1, 2] {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let prompt = json!([
            {"type": "text", "text": "/scenario echo-content @a.txt"},
            {"type": "resource_link", "uri": "file:///tmp/a.txt", "name": "a.txt", "mimeType": "text/plain", "size": 5},
            {"type": "resource", "resource": {"uri": "file:///tmp/b.md", "mimeType": "text/markdown", "text": "# b\n"}},
            {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
        ]);
        let id = peer
            .request(
                "session/prompt",
                json!({"sessionId": sid, "prompt": prompt}),
            )
            .await;
        let turn = peer.finish_turn(id).await;
        let reply = turn.reply();
        assert!(reply.starts_with("I received 4 content blocks:"), "{reply}");
        assert!(
            reply.contains(
                "2. resource_link: uri=file:///tmp/a.txt, name=a.txt, mimeType=text/plain, size=5"
            ),
            "{reply}"
        );
        assert!(
            reply.contains(
                "3. resource: uri=file:///tmp/b.md, mimeType=text/markdown, text 4 bytes"
            ),
            "{reply}"
        );
        assert!(
            reply.contains("4. image: mimeType=image/png, data 12 base64 chars (8 bytes)"),
            "{reply}"
        );
        let (resp, _) = peer
            .call(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [
                {"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}]}),
            )
            .await;
        assert_eq!(resp["error"]["code"], -32602);
        assert!(resp["error"]["message"].as_str().unwrap().contains("audio"));
    }
}

#[tokio::test]
async fn client_all_chains_fs_terminal_and_echo() {
    let (mut peer, sid) = v1_session(true, true, true).await;
    let r = run(
        &mut peer,
        &sid,
        text_prompt("/scenario client-all"),
        |req| {
            if req["method"].as_str()?.starts_with("terminal/") {
                terminal_answer(req)
            } else {
                fs_answer(req)
            }
        },
    )
    .await;
    assert_eq!(
        r.methods(),
        [
            "fs/read_text_file",
            "fs/write_text_file",
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    let reply = r.reply();
    assert!(reply.contains("I created spindle-demo.txt"), "{reply}");
    assert!(reply.contains("exited with code 0"), "{reply}");
    assert!(reply.contains("I received 1 content block:"), "{reply}");
}

#[tokio::test]
async fn a_terminal_created_after_the_cancel_is_killed_and_released() {
    let (mut peer, sid) = v1_session(false, false, true).await;
    let id = peer
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": text_prompt("/scenario client-terminal-forever")}),
        )
        .await;
    let create = loop {
        let msg = peer.recv().await;
        if msg["method"] == "terminal/create" {
            break msg;
        }
    };
    // Cancelled while the client is still creating the terminal.
    peer.notify("session/cancel", json!({"sessionId": sid}))
        .await;
    let (response, _) = peer.response_to(id).await;
    assert_eq!(response["result"]["stopReason"], "cancelled");
    peer.send(&json!({"jsonrpc": "2.0", "id": create["id"], "result": {"terminalId": "late"}}))
        .await;
    let mut cleanup = Vec::new();
    while cleanup.len() < 2 {
        let msg = peer.recv().await;
        if let Some(method) = msg["method"].as_str() {
            assert_eq!(msg["params"]["terminalId"], "late");
            cleanup.push(method.to_owned());
        }
    }
    assert_eq!(cleanup, ["terminal/kill", "terminal/release"]);
}
