//! What `/acp` clients learn of a session's setup: the agent's modes and config options in the
//! `session/new`, `session/load`, `session/resume` and `session/attach` results, in each
//! client's version, and their mode and option requests reaching an agent of the other version
//! (a v2 client's mode option is a v1 agent's `session/set_mode`, a v1 client's
//! `session/set_mode` a v2 agent's mode option). `session/new` is answered once the agent's own session is open, before any
//! of the session's updates.

use std::process::Command;

use serde_json::{Value, json};

use crate::remote_support::{AcpHttp, AcpWs};
use crate::serve_support::{Served, reference_agent_with, serve_from, temp_dir};

/// `spindle bridge --listen` in front of the reference agent speaking `protocol`.
fn bridge(db: &std::path::Path, protocol: u8) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_spindle"));
    command
        .args(["bridge", "--listen", "127.0.0.1:0", "--agent-protocol"])
        .arg(protocol.to_string())
        .arg("--db")
        .arg(db)
        .arg("--")
        .args(reference_agent_with(protocol, &[]));
    serve_from(command)
}

fn v2_initialize() -> Value {
    json!({ "protocolVersion": 2, "info": { "name": "setup-test", "version": "1" },
            "capabilities": {} })
}

/// Sends `session/new` and returns its answer, checking that nothing of the new session came
/// before it.
fn new_session(ws: &mut AcpWs) -> Value {
    let id = ws.send_request("session/new", json!({ "cwd": "/", "mcpServers": [] }));
    let seen = ws.collect_until(|m| m.get("method").is_none() && m["id"] == json!(id));
    let answer = seen.last().unwrap().clone();
    let session = &answer["result"]["sessionId"];
    assert!(session.is_string(), "{answer}");
    assert!(
        seen.iter().all(|m| m["params"]["sessionId"] != *session),
        "updates of session {session} before its session/new answer: {seen:?}"
    );
    answer["result"].clone()
}

/// The option with this id (`id` in v1, `configId` in v2).
fn option<'a>(options: &'a Value, key: &str, id: &str) -> &'a Value {
    options
        .as_array()
        .unwrap_or_else(|| panic!("configOptions: {options}"))
        .iter()
        .find(|o| o[key] == id)
        .unwrap_or_else(|| panic!("no option {id} in {options}"))
}

fn mode_ids(result: &Value) -> Vec<&str> {
    result["modes"]["availableModes"]
        .as_array()
        .unwrap_or_else(|| panic!("modes: {result}"))
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect()
}

#[test]
fn remote_setup_a_v1_agents_modes_and_options_reach_v1_and_v2_clients_and_their_changes_reach_it() {
    let dir = temp_dir("remote-setup-v1");
    let served = bridge(&dir.join("bridge.db"), 1);

    // A v1 client gets the agent's modes and options as the agent gave them.
    let (mut v1, _) = AcpWs::connect(&served, &[]);
    let created = new_session(&mut v1);
    let session = created["sessionId"].as_str().unwrap().to_string();
    assert_eq!(created["modes"]["currentModeId"], "default", "{created}");
    assert_eq!(mode_ids(&created), ["default", "plan"]);
    assert_eq!(
        option(&created["configOptions"], "id", "model")["currentValue"],
        "spindle-fast"
    );

    // A v2 client of the same agent: no `modes` (v2 has none); the modes are a mode option
    // (`_spindle_mode`: the agent has an option named `mode` of its own), options renamed.
    let (mut v2, init) = AcpWs::connect_with(&served, v2_initialize());
    assert_eq!(init["result"]["protocolVersion"], 2, "{init}");
    let resume = v2.send_request(
        "session/resume",
        json!({ "sessionId": session, "cwd": "/" }),
    );
    let resumed = v2.response(resume)["result"].clone();
    assert!(resumed.get("modes").is_none(), "{resumed}");
    let options = &resumed["configOptions"];
    assert_eq!(
        option(options, "configId", "model")["currentValue"],
        "spindle-fast"
    );
    let modes = option(options, "configId", "_spindle_mode");
    assert_eq!(modes["category"], "mode");
    assert_eq!(modes["currentValue"], "default");

    // The v2 client sets the mode option: the v1 agent gets `session/set_mode`, the v2 client
    // the options with the new value, and a v1 client joining later sees the mode.
    let set = v2.send_request(
        "session/set_config_option",
        json!({ "sessionId": session, "configId": "_spindle_mode", "type": "id",
                "value": "plan" }),
    );
    let answer = v2.response(set);
    assert_eq!(
        option(
            &answer["result"]["configOptions"],
            "configId",
            "_spindle_mode"
        )["currentValue"],
        "plan",
        "{answer}"
    );
    let (mut late, _) = AcpWs::connect(&served, &[]);
    let load = late.send_request(
        "session/load",
        json!({ "sessionId": session, "cwd": "/", "mcpServers": [] }),
    );
    let loaded = late.response(load)["result"].clone();
    assert_eq!(loaded["modes"]["currentModeId"], "plan", "{loaded}");
    // So does a client attaching to the running session (Spindle's attach extension), with
    // the attach result's own fields.
    let (mut watcher, _) = AcpWs::connect(&served, &["attach"]);
    let attach = watcher.send_request(
        "session/attach",
        json!({ "sessionId": session, "role": "observer", "historyPolicy": "none" }),
    );
    let attached = watcher.response(attach)["result"].clone();
    assert_eq!(attached["modes"]["currentModeId"], "plan", "{attached}");
    assert_eq!(mode_ids(&attached), ["default", "plan"]);
    assert_eq!(
        option(&attached["configOptions"], "id", "model")["currentValue"],
        "spindle-fast"
    );
    assert_eq!(attached["role"], "observer", "{attached}");
    assert_eq!(attached["sessionId"], json!(session), "{attached}");
    assert!(attached["connectedClients"].is_array(), "{attached}");
    // Where the session runs: only to a client that opted into `session_cwd`.
    assert!(created.get("_meta").is_none(), "{created}");
    assert!(attached.get("_meta").is_none(), "{attached}");
    let (mut located, _) = AcpWs::connect(&served, &["session_cwd"]);
    let load = located.send_request(
        "session/load",
        json!({ "sessionId": session, "cwd": "/", "mcpServers": [] }),
    );
    let loaded = located.response(load)["result"].clone();
    let served_cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
    assert_eq!(
        loaded["_meta"]["spindle"]["cwd"],
        json!(served_cwd.display().to_string()),
        "{loaded}"
    );

    // An option of the agent's own, by a v1 client: passed as is, answered as the agent does.
    let set = v1.send_request(
        "session/set_config_option",
        json!({ "sessionId": session, "configId": "model", "value": "spindle-deep" }),
    );
    let answer = v1.response(set);
    assert_eq!(
        option(&answer["result"]["configOptions"], "id", "model")["currentValue"],
        "spindle-deep",
        "{answer}"
    );
    // Over HTTP+SSE, a new session's answer carries the setup too.
    let mut client = AcpHttp::connect(&served, &[]);
    let mut connection = client.connection_stream(None);
    let (id, status) = client.request("session/new", json!({ "cwd": "/", "mcpServers": [] }), None);
    assert_eq!(status, 202);
    let answer = connection.response(id);
    assert_eq!(mode_ids(&answer["result"]), ["default", "plan"], "{answer}");
    served.stop();
}

#[test]
fn remote_setup_a_v2_agents_mode_option_is_a_v1_clients_modes_and_set_mode_reaches_it() {
    let dir = temp_dir("remote-setup-v2");
    let served = bridge(&dir.join("bridge.db"), 2);

    // The v2 agent greets its new sessions: the answer still comes first (checked by
    // `new_session`), then the greeting.
    let (mut v1, _) = AcpWs::connect(&served, &[]);
    let created = new_session(&mut v1);
    let session = created["sessionId"].as_str().unwrap().to_string();
    assert_eq!(created["modes"]["currentModeId"], "default", "{created}");
    assert_eq!(mode_ids(&created), ["default", "plan"]);
    let mode = option(&created["configOptions"], "id", "mode");
    assert!(mode.get("configId").is_none(), "v1 names it id: {mode}");
    v1.until(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .expect("the greeting after the answer");
    // The greeting follows the agent's answer at once: more sessions, the same order.
    for _ in 0..30 {
        new_session(&mut v1);
    }

    // `session/set_mode` becomes the agent's mode option.
    let set = v1.send_request(
        "session/set_mode",
        json!({ "sessionId": session, "modeId": "plan" }),
    );
    let answer = v1
        .until(|m| m.get("method").is_none() && m["id"] == json!(set))
        .unwrap();
    assert_eq!(answer["result"], json!({}), "{answer}");

    let (mut v2, _) = AcpWs::connect_with(&served, v2_initialize());
    let resume = v2.send_request(
        "session/resume",
        json!({ "sessionId": session, "cwd": "/" }),
    );
    let resumed = v2.response(resume)["result"].clone();
    assert_eq!(
        option(&resumed["configOptions"], "configId", "mode")["currentValue"],
        "plan",
        "{resumed}"
    );
    served.stop();
}
