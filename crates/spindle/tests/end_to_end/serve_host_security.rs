//! `spindle serve`'s client services under attack, end to end: an agent's paths that escape
//! the session's directory (absolute, `..`, a symlink, `/proc/self`), a huge write, a terminal
//! command that never exits (killed on cancel and when the server stops), no route that lets a
//! browser start a command, body limits and wrong session ids.

use serde_json::{Value, json};

use crate::harness::{require_python, write_script};
use crate::serve_support::{
    reference_agent_v1_with, serve_in, temp_dir, wait_descendant, wait_gone,
};

#[test]
fn serve_host_security_paths_outside_the_session_directory_are_refused_end_to_end() {
    let dir = temp_dir("escape");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(dir.join("outside.txt"), "outside\n").unwrap();
    std::os::unix::fs::symlink(&dir.path, work.join("link")).unwrap();
    let passwd = std::fs::read("/etc/passwd").ok();
    let served = serve_in(
        &dir,
        &work,
        &["--fs", "allow"],
        &reference_agent_v1_with(&[]),
    );
    let session = served.create_session();
    for (n, target) in [
        "/etc/passwd",
        "../outside.txt",
        "link/outside.txt",
        "/proc/self/environ",
        "../created-outside.txt",
        "link/created-through-link.txt",
    ]
    .iter()
    .enumerate()
    {
        served.prompt(session, &format!("/scenario client-fs {target}"));
        let replies = served.wait_finished_turns(session, n + 1);
        let reply = replies[n]["text"].as_str().unwrap_or_default().to_string();
        assert!(
            reply.contains("refused to read") || reply.contains("refused to write"),
            "{target}: {reply}"
        );
        assert!(!reply.contains("PATH="), "{target} leaked: {reply}");
        assert!(!reply.contains("root:"), "{target} leaked: {reply}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("outside.txt")).unwrap(),
        "outside\n"
    );
    assert!(!dir.join("created-outside.txt").exists());
    assert!(!dir.join("created-through-link.txt").exists());
    assert_eq!(std::fs::read("/etc/passwd").ok(), passwd);
    served.stop();
}

/// A v1 agent that asks the client to write a file of 17 MiB and reports the answer.
const HUGE_WRITE_AGENT_PY: &str = r##"import json, sys
def send(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
SID = "sess_huge"
cwd = "/"
lines = iter(sys.stdin)
for line in lines:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
    elif method == "session/new":
        cwd = msg["params"]["cwd"]
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": SID}})
    elif method == "session/prompt":
        send({"jsonrpc": "2.0", "id": 77, "method": "fs/write_text_file", "params": {"sessionId": SID, "path": cwd + "/huge.txt", "content": "x" * (17 << 20)}})
        for answer in lines:
            a = json.loads(answer)
            if a.get("id") == 77 and "method" not in a:
                break
        text = "write answer: " + json.dumps(a.get("error") or a.get("result"))[:400]
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SID, "update": {"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": text}}}})
        send({"jsonrpc": "2.0", "id": rid, "result": {"stopReason": "end_turn"}})
"##;

#[test]
fn serve_host_security_a_huge_write_is_refused_with_a_clear_error() {
    if !require_python() {
        return;
    }
    let dir = temp_dir("huge-write");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let script = write_script(&dir, "huge_agent.py", HUGE_WRITE_AGENT_PY);
    let agent = vec!["python3".into(), script.into_os_string()];
    let served = serve_in(&dir, &work, &["--fs", "allow"], &agent);
    let session = served.create_session();
    served.prompt(session, "write a lot");
    let reply = served.reply_with(session, "write answer:");
    assert!(reply.contains("\"code\""), "an error answer: {reply}");
    assert!(!work.join("huge.txt").exists());
    served.stop();
}

#[test]
fn serve_host_security_a_terminal_that_never_exits_is_killed_on_cancel_agent_exit_and_shutdown() {
    let dir = temp_dir("forever");
    let served = serve_in(&dir, &dir.path, &[], &reference_agent_v1_with(&[]));
    let serve_pid = served.child.id();
    let session = served.create_session();
    served.prompt(session, "/scenario client-terminal-forever");
    let pid = wait_descendant(serve_pid, "sleep 1000");
    let (status, _) = served.post_value(&format!("/api/sessions/{session}/cancel"), &json!({}));
    assert_eq!(status, 200);
    wait_gone(pid, "the terminal after cancel");
    let replies = served.wait_finished_turns(session, 1);
    assert_eq!(replies[0]["stopReason"], "cancelled", "{replies:?}");

    // The agent process ends (its session with it): its terminals go too.
    served.prompt(session, "/scenario client-terminal-forever");
    let pid = wait_descendant(serve_pid, "sleep 1000");
    let agent = wait_descendant(serve_pid, " agent --delay-ms");
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &agent.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_gone(pid, "the terminal after the agent exited");
    served.wait_finished_turns(session, 2);

    served.prompt(session, "/scenario client-terminal-forever");
    let pid = wait_descendant(serve_pid, "sleep 1000");
    served.stop();
    wait_gone(pid, "the terminal after the server stopped");
}

#[test]
fn serve_host_security_no_route_takes_a_command_from_the_browser() {
    let dir = temp_dir("no-command");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let served = serve_in(&dir, &work, &[], &reference_agent_v1_with(&[]));
    let session = served.create_session();
    let marker = work.join("PWNED");
    let command = json!({
        "command": "sh", "args": ["-c", format!("touch {}", marker.display())],
        "terminalId": "t1", "sessionId": "sess_1", "text": "hello", "modeId": "x",
        "configId": "x", "value": "x", "key": "x", "requestId": "x", "decision": "accept",
        "methodId": "x",
    });
    // Every route that takes a body: none runs anything it is given.
    for route in [
        "prompt",
        "cancel",
        "permission",
        "permission/forget",
        "authenticate",
        "mode",
        "config",
        "review",
    ] {
        let response = served.post_json(
            &format!("/api/sessions/{session}/{route}"),
            &command.to_string(),
        );
        assert!(
            response.status < 500 || response.status == 502,
            "{route}: {}",
            response.body
        );
    }
    // Routes a browser might try for terminals or commands do not exist.
    for path in [
        format!("/api/sessions/{session}/terminal"),
        format!("/api/sessions/{session}/terminals"),
        format!("/api/sessions/{session}/terminal/create"),
        format!("/api/sessions/{session}/exec"),
        format!("/api/sessions/{session}/run"),
        format!("/api/sessions/{session}/command"),
        "/api/terminal/create".to_string(),
        "/api/exec".to_string(),
    ] {
        let response = served.post_json(&path, &command.to_string());
        assert_eq!(response.status, 404, "{path}");
    }
    served.wait_finished_turns(session, 1);
    assert!(!marker.exists(), "a command from the browser ran");
    served.stop();
}

#[test]
fn serve_host_security_body_limits_and_wrong_session_ids_are_clear_refusals() {
    let dir = temp_dir("limits");
    let served = serve_in(&dir, &dir.path, &[], &reference_agent_v1_with(&[]));
    let session = served.create_session();
    // The prompt route takes images up to 16 MiB; every other route 1 MiB.
    let big = "A".repeat(2 << 20);
    let body = json!({"text": "/scenario echo-content", "images": [{"mimeType": "image/png", "data": big}]});
    let (status, answer) = served.post_value(&format!("/api/sessions/{session}/prompt"), &body);
    assert_eq!(status, 202, "{answer}");
    served.reply_with(session, "image: mimeType=image/png");
    let huge = "A".repeat(17 << 20);
    let body = json!({"text": "x", "images": [{"mimeType": "image/png", "data": huge}]});
    let response = served.post_json(
        &format!("/api/sessions/{session}/prompt"),
        &body.to_string(),
    );
    assert_eq!(
        response.status,
        413,
        "{}",
        &response.body[..response.body.len().min(200)]
    );
    let body = json!({"modeId": big}).to_string();
    let response = served.post_json(&format!("/api/sessions/{session}/mode"), &body);
    assert_eq!(response.status, 413);

    for (method, path, status) in [
        ("GET", "/api/sessions/abc/agent", 400),
        ("GET", "/api/sessions/999/agent", 404),
        ("GET", "/api/sessions/999/files?prefix=", 404),
        ("GET", "/api/sessions/-1/agent", 404),
        ("POST", "/api/sessions/999/review", 404),
        ("POST", "/api/sessions/999/mode", 404),
        ("POST", "/api/sessions/999/authenticate", 404),
        ("POST", "/api/sessions/1.5/config", 400),
    ] {
        let body = match path.rsplit('/').next() {
            Some("review") => r#"{"requestId":"1","decision":"accept"}"#,
            Some("mode") => r#"{"modeId":"plan"}"#,
            Some("authenticate") => r#"{"methodId":"x"}"#,
            _ => r#"{"configId":"mode","value":"plan"}"#,
        };
        let response = served.request(method, path, (method == "POST").then_some(body));
        assert_eq!(
            response.status, status,
            "{method} {path}: {}",
            response.body
        );
        let answer: Value = serde_json::from_str(&response.body).unwrap_or(Value::Null);
        assert!(answer["error"].is_string(), "{path}: {}", response.body);
    }
    // A request id of one session is nothing in another.
    let other = served.create_session();
    let (status, _) = served.post_value(
        &format!("/api/sessions/{other}/review"),
        &json!({"requestId": "0", "decision": "accept"}),
    );
    assert_eq!(status, 409);
    served.stop();
}
