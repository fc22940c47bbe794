//! `spindle serve` as a daily client (issue #14), end to end through the real binary and the
//! reference agent's client scenarios: files with review, terminals shown in the tool call,
//! authentication, modes and config options across a restart, mentions and images, the agent's
//! session history, remembered permissions and `@`-completion. The browser side of the same
//! features is tested in tests/browser.

use serde_json::{Value, json};

use crate::harness::{require_python, write_script};
use crate::serve_support::{
    entry_texts, reference_agent_v1_with, reference_agent_with, serve_in, serve_version, temp_dir,
    transcript, wait_transcript,
};

const NEW_FILE_TEXT: &str =
    "Hello from the Spindle reference agent.\nThis file was created through fs/write_text_file.\n";
const APPENDED_LINE: &str = "Edited by the Spindle reference agent.";
const TERMINAL_OUTPUT: &str = "spindle terminal: ok\ntwo\nthree\n";

fn prompt_path(session: i64) -> String {
    format!("/api/sessions/{session}/prompt")
}

#[test]
fn serve_features_fs_ask_review_accept_writes_and_reject_leaves_the_file() {
    let dir = temp_dir("fs-ask");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let served = serve_in(&dir, &work, &["--fs", "ask"], &reference_agent_v1_with(&[]));
    let session = served.create_session();
    let info = served.wait_agent_info(session, "ready", |i| i["status"] == "ready");
    assert_eq!(info["fsPolicy"], "ask");
    let mut sse = served.sse(session, None);
    served.prompt(session, "/scenario client-fs");
    let review = sse
        .wait_op(|op| op["op"] == "web_review")
        .expect("a review card");
    assert_eq!(review["path"], "spindle-demo.txt", "{review}");
    assert_eq!(review["oldText"], Value::Null);
    assert_eq!(review["newText"], NEW_FILE_TEXT);
    assert!(
        !work.join("spindle-demo.txt").exists(),
        "written before the decision"
    );
    // A decision for a request that is not waiting is refused; an unknown decision too.
    let reviews = format!("/api/sessions/{session}/review");
    let (status, _) = served.post_value(
        &reviews,
        &json!({"requestId": "\"nope\"", "decision": "accept"}),
    );
    assert_eq!(status, 409);
    let key = review["requestId"].as_str().unwrap();
    let (status, _) = served.post_value(&reviews, &json!({"requestId": key, "decision": "maybe"}));
    assert_eq!(status, 400);
    let (status, body) =
        served.post_value(&reviews, &json!({"requestId": key, "decision": "accept"}));
    assert_eq!(status, 200, "{body}");
    let resolved = sse.wait_op(|op| op["op"] == "web_review_resolved").unwrap();
    assert_eq!(resolved["decision"], "accept");
    served.reply_with(session, "I created spindle-demo.txt");
    assert_eq!(
        std::fs::read_to_string(work.join("spindle-demo.txt")).unwrap(),
        NEW_FILE_TEXT
    );

    // The second run edits the file: the card shows the old text; a rejection leaves it.
    served.prompt(session, "/scenario client-fs");
    let review = sse.wait_op(|op| op["op"] == "web_review").unwrap();
    assert_eq!(review["oldText"], NEW_FILE_TEXT);
    assert!(review["newText"].as_str().unwrap().contains(APPENDED_LINE));
    // Named by the agent's request id itself, as the engine's write view gives it.
    let key = review["requestId"].as_str().unwrap();
    let id: Value = serde_json::from_str(key).unwrap();
    let (status, body) =
        served.post_value(&reviews, &json!({"requestId": id, "decision": "reject"}));
    assert_eq!(status, 200, "{body}");
    served.reply_with(session, "You rejected the change");
    assert_eq!(
        std::fs::read_to_string(work.join("spindle-demo.txt")).unwrap(),
        NEW_FILE_TEXT
    );
    // Answered once only.
    let (status, _) = served.post_value(&reviews, &json!({"requestId": key, "decision": "accept"}));
    assert_eq!(status, 409);
    served.stop();

    // After a restart the tool calls still show both writes as diffs with their outcomes
    // (rebuilt from the log: the agent's requests, the text each replaced, the answers).
    let served = serve_in(&dir, &work, &["--fs", "ask"], &reference_agent_v1_with(&[]));
    let mut sse = served.sse(session, None);
    let reset = sse.next_event().unwrap();
    let writes: Vec<Value> = reset
        .ops()
        .iter()
        .filter(|op| op["op"] == "insert_entry")
        .filter_map(|op| op["entry"]["diffs"].as_array().cloned())
        .flatten()
        .filter(|diff| diff["write"].is_object())
        .collect();
    let statuses: Vec<&str> = writes
        .iter()
        .filter_map(|d| d["write"]["status"].as_str())
        .collect();
    assert_eq!(statuses, ["written", "rejected"], "{writes:#?}");
    assert!(
        writes.iter().all(|d| d["write"]["oldTextKnown"] != false),
        "{writes:#?}"
    );
    served.stop();
}

#[test]
fn serve_features_fs_policies_allow_read_only_and_off_are_advertised_and_enforced() {
    for (policy, expect) in [
        ("allow", "I wrote notes.txt"),
        ("read-only", "does not let me write files"),
        ("off", "offers no file system access"),
    ] {
        let dir = temp_dir(&format!("fs-{policy}"));
        let work = dir.join("work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
        let served = serve_in(
            &dir,
            &work,
            &["--fs", policy],
            &reference_agent_v1_with(&[]),
        );
        let session = served.create_session();
        served.prompt(session, "/scenario client-fs notes.txt");
        let reply = served.reply_with(session, expect);
        let text = std::fs::read_to_string(work.join("notes.txt")).unwrap();
        if policy == "allow" {
            assert!(text.ends_with(&format!("{APPENDED_LINE}\n")), "{text}");
            assert!(reply.contains("\"two\""), "line 2 alone: {reply}");
        } else {
            assert_eq!(text, "one\ntwo\nthree\n", "{policy}");
        }
        assert_eq!(served.agent_info(session)["fsPolicy"], policy);
        served.stop();
    }
}

#[test]
fn serve_features_terminal_output_shows_in_the_tool_call_live_and_after_a_restart() {
    let dir = temp_dir("terminal");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let agent = reference_agent_v1_with(&[]);
    let served = serve_in(&dir, &work, &[], &agent);
    let session = served.create_session();
    served.prompt(session, "/scenario client-terminal");
    let reply = served.reply_with(session, "exited with code 0");
    assert!(reply.contains("spindle terminal: ok"), "{reply}");
    let shows_output = |t: &Value| {
        entry_texts(t, "tool_call")
            .iter()
            .any(|text| text.contains(TERMINAL_OUTPUT))
    };
    wait_transcript(
        &served,
        session,
        "terminal output in the tool call",
        shows_output,
    );
    served.stop();
    // Rebuilt from the wire log: the local lines bring the output back.
    let served = serve_in(&dir, &work, &[], &agent);
    let rebuilt = transcript(&served, session);
    assert!(shows_output(&rebuilt), "{rebuilt:#}");
    served.stop();

    // With terminals off the capability is not advertised and nothing runs.
    let dir = temp_dir("terminal-off");
    let served = serve_in(&dir, &work, &["--terminals", "off"], &agent);
    let session = served.create_session();
    served.prompt(session, "/scenario client-terminal");
    served.reply_with(session, "The client offers no terminals");
    assert_eq!(served.agent_info(session)["terminals"], false);
    served.stop();
}

#[test]
fn serve_features_auth_required_waits_for_authenticate_then_the_session_opens() {
    for protocol in [1, 2] {
        auth_flow(protocol);
    }
}

fn auth_flow(protocol: u8) {
    let dir = temp_dir(&format!("auth-v{protocol}"));
    let served = serve_version(
        &dir,
        &dir.path,
        protocol,
        &[],
        &reference_agent_with(protocol, &["--require-auth"]),
    );
    let session = served.create_session();
    let info = served.wait_agent_info(session, "needs_auth", |i| i["needsAuth"] == true);
    assert_eq!(info["status"], "needs_auth");
    assert_eq!(info["protocol"], protocol);
    let methods = info["authMethods"].as_array().unwrap().clone();
    assert!(!methods.is_empty(), "{info}");
    // A prompt now is refused with a clear message instead of waiting forever.
    let (status, body) = served.post_value(&prompt_path(session), &json!({"text": "hello"}));
    assert_eq!(status, 409, "{body}");
    assert!(body["error"].as_str().unwrap().contains("authentication"));
    let auth = format!("/api/sessions/{session}/authenticate");
    let (status, body) = served.post_value(&auth, &json!({"methodId": "no-such-method"}));
    assert_eq!(status, 400, "{body}");
    let method = methods[0]["id"].as_str().unwrap();
    let (status, body) = served.post_value(&auth, &json!({"methodId": method}));
    assert_eq!(status, 200, "{body}");
    served.wait_agent_info(session, "ready after authenticate", |i| {
        i["status"] == "ready" && i["needsAuth"] == false
    });
    served.prompt(session, "hello");
    served.wait_finished_turns(session, 1);
    served.stop();
}

#[test]
fn serve_features_modes_and_config_options_survive_a_restart() {
    let dir = temp_dir("modes");
    let agent = reference_agent_v1_with(&[]);
    let served = serve_in(&dir, &dir.path, &[], &agent);
    let session = served.create_session();
    let info = served.wait_agent_info(session, "modes", |i| i["modes"].is_object());
    let available = info["modes"]["availableModes"].as_array().unwrap();
    assert_eq!(available.len(), 2, "{info}");
    assert_eq!(info["currentModeId"], "default");
    assert!(info["configOptions"].is_array(), "{info}");
    let mode = format!("/api/sessions/{session}/mode");
    let (status, body) = served.post_value(&mode, &json!({"modeId": "plan"}));
    assert_eq!(status, 200, "{body}");
    let (status, body) = served.post_value(&mode, &json!({"modeId": "no-such-mode"}));
    assert_eq!(status, 502, "{body}");
    served.wait_agent_info(session, "plan mode", |i| {
        i["currentModeId"] == "plan" && i["modes"]["currentModeId"] == "plan"
    });
    let config = format!("/api/sessions/{session}/config");
    let (status, body) = served.post_value(&config, &json!({"configId": "mode", "value": "plan"}));
    assert_eq!(status, 200, "{body}");
    let (status, _) = served.post_value(&config, &json!({"configId": "mode", "value": 3}));
    assert_eq!(status, 400);
    let current_value = |options: &Value| {
        options
            .as_array()
            .and_then(|o| {
                o.iter()
                    .find(|o| o["id"] == "mode" || o["configId"] == "mode")
            })
            .map(|o| o["currentValue"].clone())
    };
    served.wait_agent_info(session, "config", |i| {
        current_value(&i["configOptions"]) == Some(json!("plan"))
    });
    served.stop();

    // After a restart, before any agent runs again, the pickers are rebuilt from the log.
    let served = serve_in(&dir, &dir.path, &[], &agent);
    let info = served.agent_info(session);
    assert_eq!(info["status"], "no_agent", "{info}");
    assert_eq!(info["currentModeId"], "plan", "{info}");
    assert_eq!(info["modes"]["availableModes"].as_array().unwrap().len(), 2);
    assert_eq!(current_value(&info["configOptions"]), Some(json!("plan")));
    let mut sse = served.sse(session, None);
    let reset = sse.next_event().unwrap();
    assert_eq!(reset.event, "reset");
    let ops = reset.ops();
    let session_info = ops
        .iter()
        .rev()
        .find(|op| op["op"] == "set_session_info")
        .expect("set_session_info in the snapshot");
    assert_eq!(
        session_info["info"]["currentModeId"], "plan",
        "{session_info}"
    );
    assert!(session_info["info"]["configOptions"].is_array());
    // The mode list comes from the session/new result, kept by the engine from the log.
    assert_eq!(
        session_info["info"]["availableModes"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{session_info}"
    );
    let snapshot = transcript(&served, session);
    assert_eq!(
        snapshot["sessionInfo"]["currentModeId"], "plan",
        "{snapshot}"
    );
    // The slash commands (with their input hints) are back as well, for the palette.
    let commands = snapshot["commands"]
        .as_array()
        .expect("commands after a restart");
    assert!(
        commands
            .iter()
            .any(|c| c["name"] == "scenario" && c["input"].is_object()),
        "{commands:?}"
    );
    assert!(ops.iter().any(|op| op["op"] == "set_commands"), "{ops:?}");
    served.stop();
}

#[test]
fn serve_features_v2_config_options_survive_a_restart_and_set_mode_is_refused() {
    let dir = temp_dir("config-v2");
    let agent = reference_agent_with(2, &[]);
    let served = serve_version(&dir, &dir.path, 2, &[], &agent);
    let session = served.create_session();
    let info = served.wait_agent_info(session, "config options", |i| {
        i["configOptions"].is_array() && i["status"] == "ready"
    });
    assert_eq!(info["protocol"], 2);
    let (status, body) = served.post_value(
        &format!("/api/sessions/{session}/mode"),
        &json!({"modeId": "plan"}),
    );
    assert_eq!(status, 400, "v2 has no session/set_mode: {body}");
    let (status, body) = served.post_value(
        &format!("/api/sessions/{session}/config"),
        &json!({"configId": "mode", "value": "plan"}),
    );
    assert_eq!(status, 200, "{body}");
    let current = |i: &Value| {
        i["configOptions"]
            .as_array()
            .and_then(|o| o.iter().find(|o| o["configId"] == "mode"))
            .map(|o| o["currentValue"].clone())
    };
    served.wait_agent_info(session, "plan", |i| current(i) == Some(json!("plan")));
    served.stop();
    let served = serve_version(&dir, &dir.path, 2, &[], &agent);
    assert_eq!(current(&served.agent_info(session)), Some(json!("plan")));
    served.stop();
}

#[test]
fn serve_features_mentions_and_images_reach_the_agent_and_bad_ones_are_refused() {
    let dir = temp_dir("content");
    let work = dir.join("work");
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::write(work.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(work.join("with space.txt"), "spaced\n").unwrap();
    std::fs::write(dir.join("secret.txt"), "outside\n").unwrap();
    let served = serve_in(&dir, &work, &[], &reference_agent_v1_with(&[]));
    let session = served.create_session();
    let info = served.wait_agent_info(session, "ready", |i| i["status"] == "ready");
    assert_eq!(info["promptCapabilities"]["image"], true, "{info}");
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let body = json!({
        "text": "/scenario echo-content look at @src/main.rs and @\"with space.txt\"",
        "images": [{"mimeType": "image/png", "data": png}],
    });
    let (status, answer) = served.post_value(&prompt_path(session), &body);
    assert_eq!(status, 202, "{answer}");
    let reply = served.reply_with(session, "I received");
    assert!(reply.contains("I received 4 content blocks"), "{reply}");
    assert!(reply.contains("src/main.rs"), "{reply}");
    assert!(
        reply.contains("with%20space.txt") || reply.contains("with space.txt"),
        "{reply}"
    );
    assert!(reply.contains("image: mimeType=image/png"), "{reply}");
    for (text, images, why) in [
        ("see @../secret.txt", json!([]), "outside"),
        ("see @/etc/passwd", json!([]), "etc"),
        ("see @missing.rs", json!([]), "missing"),
        (
            "an image",
            json!([{"mimeType": "text/html", "data": "PGI+"}]),
            "not an image",
        ),
        (
            "an image",
            json!([{"mimeType": "image/png", "data": "%%%"}]),
            "base64",
        ),
    ] {
        let (status, answer) = served.post_value(
            &prompt_path(session),
            &json!({"text": text, "images": images}),
        );
        assert_eq!(status, 400, "{why}: {answer}");
        assert!(
            answer["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{why}"
        );
    }
    assert_eq!(
        served.replies(session).len(),
        1,
        "a refused prompt never reached the agent"
    );
    served.stop();
}

#[test]
fn serve_features_at_completion_lists_files_under_the_session_directory_only() {
    let dir = temp_dir("files");
    let work = dir.join("work");
    std::fs::create_dir_all(work.join("src/deep")).unwrap();
    std::fs::write(work.join("src/main.rs"), "").unwrap();
    std::fs::write(work.join("src/map.rs"), "").unwrap();
    std::fs::write(work.join(".hidden"), "").unwrap();
    let served = serve_in(&dir, &work, &[], &reference_agent_v1_with(&[]));
    let session = served.create_session();
    let files = |prefix: &str| {
        served.request(
            "GET",
            &format!("/api/sessions/{session}/files?prefix={prefix}"),
            None,
        )
    };
    let listed: Value = serde_json::from_str(&files("src%2Fma").body).unwrap();
    assert_eq!(listed["files"], json!(["src/main.rs", "src/map.rs"]));
    let listed: Value = serde_json::from_str(&files("").body).unwrap();
    assert_eq!(listed["files"], json!(["src/"]));
    assert_eq!(files("..%2F").status, 400);
    std::os::unix::fs::symlink(&dir.path, work.join("out")).unwrap();
    assert_eq!(
        files("out%2F").status,
        400,
        "a symlink out of the directory"
    );
    assert_eq!(files("%2Fetc%2F").status, 400);
    // A session may have a directory of its own inside the server's, never outside it.
    let (status, _) = served.post_value("/api/sessions", &json!({"cwd": "../"}));
    assert_eq!(status, 400);
    let inner = served.create_session_with(&json!({"cwd": "src"}));
    let listed: Value = serde_json::from_str(
        &served
            .request(
                "GET",
                &format!("/api/sessions/{inner}/files?prefix=m"),
                None,
            )
            .body,
    )
    .unwrap();
    assert_eq!(listed["files"], json!(["main.rs", "map.rs"]));
    served.stop();
}

#[test]
fn serve_features_agent_sessions_are_listed_and_loaded_into_a_new_web_session() {
    for protocol in [1, 2] {
        history_flow(protocol);
    }
}

fn history_flow(protocol: u8) {
    let dir = temp_dir(&format!("history-v{protocol}"));
    let state = dir.join("agent-state");
    std::fs::create_dir_all(&state).unwrap();
    let agent = reference_agent_with(protocol, &["--state-dir", state.to_str().unwrap()]);
    let served = serve_version(&dir, &dir.path, protocol, &[], &agent);
    let first = served.create_session();
    served.prompt(first, "remember the word marmalade");
    served.wait_finished_turns(first, 1);
    let agent_session = served.wait_agent_info(first, "agent session", |i| {
        i["agentSessionId"].is_string()
    })["agentSessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let list = served.get_json("/api/agent-sessions");
    assert_eq!(list["supported"], true, "{list}");
    let listed = list["sessions"].as_array().unwrap();
    assert!(
        listed
            .iter()
            .any(|s| s["sessionId"] == agent_session.as_str()),
        "{list}"
    );
    let (status, _) = served.post_value("/api/sessions", &json!({"open": "load"}));
    assert_eq!(status, 400, "open without agentSessionId");
    let loaded = served.create_session_with(&json!({
        "agentSessionId": agent_session, "open": "load",
    }));
    let t = wait_transcript(&served, loaded, "the loaded history", |t| {
        entry_texts(t, "user_message")
            .iter()
            .any(|m| m.contains("marmalade"))
    });
    assert!(!entry_texts(&t, "agent_message").is_empty(), "{t:#}");
    let summary = served.get_json("/api/sessions")["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == loaded)
        .cloned()
        .unwrap();
    assert_eq!(summary["agentSessionId"], agent_session.as_str());

    // Resumed instead: no replay, the same agent session, and it goes on.
    let resumed = served.create_session_with(&json!({
        "agentSessionId": agent_session, "open": "resume",
    }));
    served.wait_agent_info(resumed, "resumed", |i| {
        i["status"] == "ready" && i["agentSessionId"] == agent_session.as_str()
    });
    assert!(entry_texts(&transcript(&served, resumed), "user_message").is_empty());
    served.prompt(resumed, "and now?");
    served.wait_finished_turns(resumed, 1);
    served.stop();
}

/// The reference agent's `/scenario tools` edit, allowed or rejected: its reply says which.
const TOOLS_ALLOWED: &str = "I changed the greeting in src/main.rs.";
const TOOLS_REJECTED: &str = "I left src/main.rs unchanged.";

/// The text of the session's `n`th finished reply (1-based), once it finished.
fn nth_reply(served: &crate::serve_support::Served, session: i64, n: usize) -> String {
    let replies = served.wait_finished_turns(session, n);
    replies
        .iter()
        .filter(|r| r["finished"] == true)
        .nth(n - 1)
        .and_then(|r| r["text"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn serve_features_always_permissions_are_remembered_shown_answered_and_forgettable() {
    let dir = temp_dir("always");
    let agent = reference_agent_v1_with(&[]);
    let served = serve_in(&dir, &dir.path, &[], &agent);
    let session = served.create_session();
    let mut sse = served.sse(session, None);
    served.prompt(session, "/scenario tools");
    let question = sse.wait_op(|op| op["op"] == "web_permission").unwrap();
    assert_eq!(question["ruleKey"], "edit:Edit", "{question}");
    let permission = format!("/api/sessions/{session}/permission");
    let (status, body) = served.post_value(
        &permission,
        &json!({"key": question["key"], "optionId": "allow_always"}),
    );
    assert_eq!(status, 200, "{body}");
    assert!(nth_reply(&served, session, 1).contains(TOOLS_ALLOWED));
    let rules = served.agent_info(session)["standingPermissions"].clone();
    assert_eq!(rules.as_array().unwrap().len(), 1, "{rules}");
    assert_eq!(rules[0]["key"], "edit:Edit");
    assert_eq!(rules[0]["kind"], "allow_always");

    // The agent asks again (it remembers nothing); the server answers, and the page is told.
    served.prompt(session, "/scenario tools");
    let auto = sse.wait_op(|op| op["op"] == "web_permission_auto").unwrap();
    assert_eq!(auto["optionId"], "allow_always", "{auto}");
    assert_eq!(auto["ruleKey"], "edit:Edit", "{auto}");
    assert!(nth_reply(&served, session, 2).contains(TOOLS_ALLOWED));
    served.stop();

    // Remembered across a restart (the rule is in the log); forgetting it asks again.
    let served = serve_in(&dir, &dir.path, &[], &agent);
    let rules = served.agent_info(session)["standingPermissions"].clone();
    assert_eq!(rules.as_array().unwrap().len(), 1, "{rules}");
    let forget = format!("/api/sessions/{session}/permission/forget");
    let (status, _) = served.post_value(&forget, &json!({"key": "nope"}));
    assert_eq!(status, 404);
    let (status, _) = served.post_value(&forget, &json!({"key": "edit:Edit"}));
    assert_eq!(status, 200);
    assert_eq!(served.agent_info(session)["standingPermissions"], json!([]));
    let mut sse = served.sse(session, None);
    served.prompt(session, "/scenario tools");
    let question = sse.wait_op(|op| op["op"] == "web_permission").unwrap();
    // "Always reject" replaces the forgotten rule, and from then on rejects unasked.
    let (status, _) = served.post_value(
        &format!("/api/sessions/{session}/permission"),
        &json!({"key": question["key"], "optionId": "reject_always"}),
    );
    assert_eq!(status, 200);
    assert!(nth_reply(&served, session, 3).contains(TOOLS_REJECTED));
    let rules = served.agent_info(session)["standingPermissions"].clone();
    assert_eq!(rules[0]["kind"], "reject_always", "{rules}");
    served.prompt(session, "/scenario tools");
    let auto = sse.wait_op(|op| op["op"] == "web_permission_auto").unwrap();
    assert_eq!(auto["optionId"], "reject_always", "{auto}");
    assert!(nth_reply(&served, session, 4).contains(TOOLS_REJECTED));
    served.stop();
}

/// A v1 agent that offers no `session/load` (the reference agent always does).
const NO_LOAD_AGENT_PY: &str = r##"import json, sys
def send(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "sess_no_load"}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "method not found"}})
"##;

#[test]
fn serve_features_opening_a_session_of_an_agent_without_load_starts_a_new_one_and_says_so() {
    if !require_python() {
        return;
    }
    let dir = temp_dir("no-load");
    let script = write_script(&dir, "no_load_agent.py", NO_LOAD_AGENT_PY);
    let agent = vec!["python3".into(), script.into_os_string()];
    let served = serve_in(&dir, &dir.path, &[], &agent);
    let opened = served.create_session_with(&json!({"agentSessionId": "gone", "open": "load"}));
    served.wait_agent_info(opened, "a new agent session", |i| {
        i["status"] == "ready" && i["agentSessionId"] == "sess_no_load"
    });
    let mut sse = served.sse(opened, None);
    let banner = sse
        .wait_op(|op| op["op"] == "web_banner" && op["text"].is_string())
        .unwrap();
    assert!(
        banner["text"]
            .as_str()
            .unwrap()
            .contains("cannot load sessions"),
        "{banner}"
    );
    served.stop();
}
