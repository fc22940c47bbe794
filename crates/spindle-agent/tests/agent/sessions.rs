//! The session lifecycle of schema 1.20.0 in v1 and v2: `session/fork`
//! (a copy of the history that later diverges), `session/delete` (gone from
//! the list, -32002 afterwards, its state file removed), `session/close`
//! (work cancelled, prompts refused until opened again), `logout`, and
//! `additionalDirectories` kept per session and reported by `session/list`.
//! Every agent line is schema-checked by `Peer`.

use serde_json::{Value, json};
use spindle_agent::AgentConfig;

use crate::common::{Peer, VERSIONS};

fn open_params(peer: &Peer, sid: &str, replay: bool) -> (&'static str, Value) {
    let mut params = json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": []});
    if peer_is_v2(peer) {
        if replay {
            params["replayFrom"] = json!({"type": "start"});
        }
        ("session/resume", params)
    } else if replay {
        ("session/load", params)
    } else {
        ("session/resume", params)
    }
}

fn peer_is_v2(peer: &Peer) -> bool {
    peer.new_session_params().get("mcpServers").is_none()
}

async fn list(peer: &mut Peer) -> Vec<Value> {
    let (resp, _) = peer.call("session/list", json!({})).await;
    resp["result"]["sessions"].as_array().unwrap().clone()
}

fn entry<'a>(sessions: &'a [Value], sid: &str) -> Option<&'a Value> {
    sessions.iter().find(|s| s["sessionId"] == sid)
}

#[tokio::test]
async fn a_fork_copies_the_history_and_then_diverges() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let init_caps = {
            let mut p = Peer::fast();
            let init = p.initialize(version, &[]).await;
            if version == 2 {
                init["capabilities"]["session"].clone()
            } else {
                init["agentCapabilities"]["sessionCapabilities"].clone()
            }
        };
        for key in ["fork", "delete", "additionalDirectories"] {
            assert_eq!(init_caps[key], json!({}), "v{version} {key}");
        }
        peer.prompt(&sid, "remember the blue door").await;
        let (resp, after) = peer
            .call(
                "session/fork",
                json!({"sessionId": sid, "cwd": "/tmp", "mcpServers": [],
                       "additionalDirectories": ["/extra"]}),
            )
            .await;
        assert!(after.is_empty());
        let fork = resp["result"]["sessionId"].as_str().unwrap().to_owned();
        assert_ne!(fork, sid);
        assert!(resp["result"]["configOptions"].is_array());
        // Commands, the fork's title, (v2) its idle state.
        let expected = if version == 2 { 3 } else { 2 };
        let mut updates = Vec::new();
        for _ in 0..expected {
            let line = peer.recv().await;
            assert_eq!(line["params"]["sessionId"], fork.as_str());
            updates.push(line["params"]["update"].clone());
        }
        assert_eq!(updates[1]["sessionUpdate"], "session_info_update");
        assert_eq!(updates[1]["title"], "remember the blue door (fork)");

        peer.prompt(&fork, "only in the fork").await;
        peer.prompt(&sid, "only in the source").await;
        let sessions = list(&mut peer).await;
        let listed = entry(&sessions, &fork).unwrap();
        assert_eq!(listed["additionalDirectories"], json!(["/extra"]));
        assert_eq!(listed["title"], "remember the blue door (fork)");
        assert!(entry(&sessions, &sid).unwrap()["additionalDirectories"].is_null());

        let (method, params) = open_params(&peer, &fork, true);
        let (resp, replayed) = peer.call(method, params).await;
        assert!(resp["result"].is_object(), "{resp}");
        let text = Value::Array(replayed).to_string();
        assert!(text.contains("remember the blue door"), "{text}");
        assert!(text.contains("only in the fork"), "{text}");
        assert!(!text.contains("only in the source"), "{text}");
        let (method, params) = open_params(&peer, &sid, true);
        let (_, replayed) = peer.call(method, params).await;
        let text = Value::Array(replayed).to_string();
        assert!(!text.contains("only in the fork"), "{text}");

        let (resp, _) = peer
            .call(
                "session/fork",
                json!({"sessionId": "sess_nope", "cwd": "/tmp"}),
            )
            .await;
        assert_eq!(resp["error"]["code"], -32002, "{resp}");
    }
}

#[tokio::test]
async fn a_deleted_session_is_gone_and_its_running_turn_cancelled() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let (other, _) = peer.new_session().await;
        let stalled = peer.send_prompt(&sid, "/scenario stall").await;
        let delete = peer
            .request("session/delete", json!({"sessionId": sid}))
            .await;
        assert_eq!(peer.finish_turn(stalled).await.stop_reason, "cancelled");
        let (resp, _) = peer.response_to(delete).await;
        assert_eq!(resp["result"], json!({}));
        let sessions = list(&mut peer).await;
        assert!(entry(&sessions, &sid).is_none());
        assert!(entry(&sessions, &other).is_some());
        let (method, params) = open_params(&peer, &sid, true);
        let (resp, _) = peer.call(method, params).await;
        assert_eq!(resp["error"]["code"], -32002, "{resp}");
        assert!(
            resp["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Resource not found")
        );
        let (resp, _) = peer.call("session/delete", json!({"sessionId": sid})).await;
        assert_eq!(resp["error"]["code"], -32002);
        let (resp, _) = peer
            .call(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}),
            )
            .await;
        assert!(resp["error"].is_object(), "{resp}");
    }
}

#[tokio::test]
async fn a_closed_session_refuses_prompts_until_it_is_opened_again() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let (resp, _) = peer.call("session/close", json!({"sessionId": sid})).await;
        assert_eq!(resp["result"], json!({}));
        let (resp, _) = peer
            .call(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}),
            )
            .await;
        let message = resp["error"]["message"].as_str().unwrap();
        assert!(message.contains("closed"), "{message}");
        let (method, params) = open_params(&peer, &sid, false);
        let (resp, _) = peer.call(method, params).await;
        assert!(resp["result"].is_object(), "{resp}");
        assert_eq!(peer.prompt(&sid, "hi").await.stop_reason, "end_turn");
    }
}

#[tokio::test]
async fn logout_requires_authentication_again_in_both_versions() {
    for version in VERSIONS {
        let mut peer = Peer::start(AgentConfig {
            require_auth: true,
            ..AgentConfig::default()
        });
        let init = peer.initialize(version, &[]).await;
        let (login, logout) = if version == 2 {
            ("auth/login", "auth/logout")
        } else {
            assert_eq!(init["agentCapabilities"]["auth"]["logout"], json!({}));
            ("authenticate", "logout")
        };
        let (resp, _) = peer.call(login, json!({"methodId": "spindle-token"})).await;
        assert_eq!(resp["result"], json!({}));
        let (sid, _) = peer.new_session().await;
        assert!(!sid.is_empty());
        let (resp, _) = peer.call(logout, json!({})).await;
        assert_eq!(resp["result"], json!({}));
        let (resp, _) = peer.call("session/new", peer.new_session_params()).await;
        assert_eq!(resp["error"]["code"], -32000, "{resp}");
        // The other version's name is not this version's method.
        let other = if version == 2 {
            "logout"
        } else {
            "auth/logout"
        };
        let (resp, _) = peer.call(other, json!({})).await;
        assert_eq!(resp["error"]["code"], -32601, "{resp}");
    }
}

#[tokio::test]
async fn additional_directories_are_kept_per_session_and_listed() {
    for version in VERSIONS {
        let (mut peer, _) = Peer::ready(version, &[]).await;
        let mut params = peer.new_session_params();
        params["additionalDirectories"] = json!(["/srv/a", "/srv/b", "/srv/a"]);
        let (resp, _) = peer.call("session/new", params).await;
        let sid = resp["result"]["sessionId"].as_str().unwrap().to_owned();
        let sessions = list(&mut peer).await;
        assert_eq!(
            entry(&sessions, &sid).unwrap()["additionalDirectories"],
            json!(["/srv/a", "/srv/b"])
        );
        // Resume with a list: the complete list from now on; without: kept.
        let (method, mut params) = open_params(&peer, &sid, false);
        params["additionalDirectories"] = json!(["/srv/c"]);
        peer.call(method, params).await;
        let sessions = list(&mut peer).await;
        assert_eq!(
            entry(&sessions, &sid).unwrap()["additionalDirectories"],
            json!(["/srv/c"])
        );
        let (method, params) = open_params(&peer, &sid, false);
        peer.call(method, params).await;
        let sessions = list(&mut peer).await;
        assert_eq!(
            entry(&sessions, &sid).unwrap()["additionalDirectories"],
            json!(["/srv/c"])
        );
    }
}

#[tokio::test]
async fn the_listed_title_follows_the_agents_session_info_update() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        peer.prompt(&sid, "first words").await;
        assert_eq!(
            entry(&list(&mut peer).await, &sid).unwrap()["title"],
            "first words"
        );
        // `/scenario background` announces the title "Indexed repository"
        // after its turn, with its background work.
        peer.prompt(&sid, "/scenario background").await;
        loop {
            let line = peer.recv().await;
            if line["params"]["update"]["sessionUpdate"] == "session_info_update" {
                break;
            }
        }
        assert_eq!(
            entry(&list(&mut peer).await, &sid).unwrap()["title"],
            "Indexed repository"
        );
    }
}

#[tokio::test]
async fn with_a_state_directory_a_fork_has_its_own_file_and_a_delete_removes_one() {
    let dir = std::env::temp_dir().join(format!(
        "spindle-agent-sessions-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let config = || AgentConfig {
        state_dir: Some(dir.clone()),
        ..AgentConfig::default()
    };
    let mut first = Peer::start(config());
    first.initialize(1, &[]).await;
    let (sid, _) = first.new_session().await;
    first.prompt(&sid, "remember the blue door").await;
    let (resp, _) = first
        .call(
            "session/fork",
            json!({"sessionId": sid, "cwd": "/tmp", "additionalDirectories": ["/extra"]}),
        )
        .await;
    let fork = resp["result"]["sessionId"].as_str().unwrap().to_owned();
    assert!(dir.join(format!("{fork}.jsonl")).exists());
    let (resp, _) = first
        .call("session/delete", json!({"sessionId": sid}))
        .await;
    assert_eq!(resp["result"], json!({}));
    first.shutdown().await;
    assert!(!dir.join(format!("{sid}.jsonl")).exists());

    // A later process knows the fork (history, title, directories), not the deleted source.
    let mut second = Peer::start(config());
    second.initialize(2, &[]).await;
    let sessions = list(&mut second).await;
    assert!(entry(&sessions, &sid).is_none());
    let listed = entry(&sessions, &fork).unwrap();
    assert_eq!(listed["additionalDirectories"], json!(["/extra"]));
    assert_eq!(listed["title"], "remember the blue door (fork)");
    let (method, params) = open_params(&second, &fork, true);
    let (_, replayed) = second.call(method, params).await;
    assert!(
        Value::Array(replayed)
            .to_string()
            .contains("remember the blue door")
    );
    let (method, params) = open_params(&second, &sid, true);
    let (resp, _) = second.call(method, params).await;
    assert_eq!(resp["error"]["code"], -32002);
    second.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
