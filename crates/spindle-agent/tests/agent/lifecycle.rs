//! Turn lifecycle: queued prompts, cancellation, several sessions, modes,
//! close, and version negotiation.

use crate::common;

use common::{Peer, PermissionAnswer, VERSIONS};
use serde_json::{Value, json};
use spindle_agent::scenarios::{self, plain_reply};
use spindle_agent::{AgentConfig, ProtocolChoice};

fn is_response_to(msg: &Value, id: u64) -> bool {
    msg["id"] == json!(id) && msg.get("method").is_none()
}

/// Reads until the permission request of a `/scenario tools` turn.
async fn until_permission(peer: &mut Peer) -> Value {
    loop {
        let msg = peer.recv().await;
        if msg["method"] == "session/request_permission" {
            return msg;
        }
    }
}

#[tokio::test]
async fn v1_prompt_during_a_turn_is_queued_until_it_ends() {
    let (mut peer, sid) = Peer::ready(1, &[]).await;
    peer.permission = PermissionAnswer::Hold;
    let first = peer.send_prompt(&sid, "/scenario tools").await;
    let request = until_permission(&mut peer).await;
    let second = peer.send_prompt(&sid, "queued question").await;
    peer.permission = PermissionAnswer::Allow;
    peer.answer_permission(&request).await;
    let turn = peer.finish_turn(first).await;
    assert_eq!(turn.stop_reason, "end_turn");
    // (The lines before the permission request were read above.)
    assert!(scenarios::TOOLS_REPLY_ALLOWED.ends_with(&turn.reply()));
    // Nothing of the queued prompt happened during the first turn.
    assert!(!turn.lines.iter().any(|m| is_response_to(m, second)));
    assert!(!turn.reply().contains("queued question"));
    // Then it runs as its own turn.
    let queued = peer.finish_turn(second).await;
    assert_eq!(queued.stop_reason, "end_turn");
    assert_eq!(queued.reply(), plain_reply("queued question"));
}

/// ACP v2: the agent answers a prompt once it is inserted, and this one
/// inserts a prompt that comes during a turn at once (answer and
/// `user_message` while the first turn still waits for its permission);
/// its work follows the first prompt's, and one `idle` ends both.
#[tokio::test]
async fn v2_prompt_during_a_turn_is_inserted_at_once_and_runs_after_it() {
    let (mut peer, sid) = Peer::ready(2, &[]).await;
    peer.permission = PermissionAnswer::Hold;
    let first = peer.send_prompt(&sid, "/scenario tools").await;
    let request = until_permission(&mut peer).await;
    let second = peer.send_prompt(&sid, "inserted question").await;
    let (answer, before) = peer.response_to(second).await;
    let message_id = answer["result"]["messageId"].as_str().expect("messageId");
    // Answered before the first turn went on: no idle in between.
    assert!(before.is_empty(), "{before:?}");
    let inserted = peer.recv().await;
    let update = &inserted["params"]["update"];
    assert_eq!(update["sessionUpdate"], "user_message", "{inserted}");
    assert_eq!(update["messageId"], message_id);
    assert_eq!(update["content"][0]["text"], "inserted question");
    peer.permission = PermissionAnswer::Allow;
    peer.answer_permission(&request).await;
    let turn = peer.finish_turn(first).await;
    assert_eq!(turn.stop_reason, "end_turn");
    // Both replies came before the one idle, the first prompt's first.
    let model = turn.model();
    let replies: Vec<&str> = model
        .agent_messages()
        .iter()
        .map(|m| m.text.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    let (last, earlier) = replies.split_last().expect("replies");
    assert_eq!(*last, plain_reply("inserted question"), "{replies:?}");
    assert!(
        earlier
            .iter()
            .any(|t| scenarios::TOOLS_REPLY_ALLOWED.ends_with(t)),
        "{replies:?}"
    );
    let idles = turn
        .updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "state_update" && u["state"] == "idle")
        .count();
    assert_eq!(idles, 1, "{:?}", turn.updates);
    // The history keeps both prompts with their replies, in order.
    let next = peer.prompt(&sid, "after").await;
    assert_eq!(next.reply(), plain_reply("after"));
}

#[tokio::test]
async fn cancel_ends_the_turn_and_what_was_sent_meanwhile() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let first = peer.send_prompt(&sid, "/scenario stall").await;
        let second = peer.send_prompt(&sid, "never run").await;
        // Let the stall text arrive, then cancel.
        let mut text = String::new();
        while text != scenarios::STALL_TEXT {
            let msg = peer.recv().await;
            if is_response_to(&msg, second) {
                // v2: inserted at once.
                assert!(msg["result"]["messageId"].is_string(), "{msg}");
                continue;
            }
            if let Some(t) = msg["params"]["update"]["content"]["text"].as_str() {
                text.push_str(t);
            }
        }
        peer.notify("session/cancel", json!({"sessionId": sid}))
            .await;
        let turn = peer.finish_turn(first).await;
        assert_eq!(turn.stop_reason, "cancelled");
        assert!(!turn.reply().contains("never run"), "{}", turn.reply());
        if version == 1 {
            // v1: the queued prompt is answered as a cancelled turn.
            let (resp, _) = peer.response_to(second).await;
            assert_eq!(resp["result"]["stopReason"], "cancelled");
        }
        // The session accepts new prompts.
        let next = peer.prompt(&sid, "after cancel").await;
        assert_eq!(next.reply(), plain_reply("after cancel"));
    }
}

#[tokio::test]
async fn cancel_while_waiting_for_permission() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        peer.permission = PermissionAnswer::Hold;
        let id = peer.send_prompt(&sid, "/scenario tools").await;
        let request = until_permission(&mut peer).await;
        peer.notify("session/cancel", json!({"sessionId": sid}))
            .await;
        let turn = peer.finish_turn(id).await;
        assert_eq!(turn.stop_reason, "cancelled");
        let edit = request["params"]
            .pointer("/toolCall/toolCallId")
            .or_else(|| request["params"].pointer("/subject/toolCall/toolCallId"))
            .unwrap()
            .clone();
        let last = turn
            .updates
            .iter()
            .rfind(|u| u["toolCallId"] == edit)
            .unwrap();
        assert_eq!(
            last["status"],
            if version == 2 { "cancelled" } else { "failed" }
        );
        // The client's required `cancelled` answer arrives late and is ignored.
        peer.permission = PermissionAnswer::Cancelled;
        peer.answer_permission(&request).await;
        let next = peer.prompt(&sid, "next").await;
        assert_eq!(next.stop_reason, "end_turn");
        assert_eq!(next.reply(), plain_reply("next"));
    }
}

#[tokio::test]
async fn cancel_without_a_turn_is_ignored() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        peer.notify("session/cancel", json!({"sessionId": sid}))
            .await;
        peer.notify("session/cancel", json!({"sessionId": "nope"}))
            .await;
        let turn = peer.prompt(&sid, "fine").await;
        assert_eq!(turn.stop_reason, "end_turn");
        // Nothing was sent in answer to the cancels.
        assert!(!turn.lines.iter().any(|m| m.get("error").is_some()));
    }
}

#[tokio::test]
async fn sessions_are_independent() {
    for version in VERSIONS {
        let (mut peer, first) = Peer::ready(version, &[]).await;
        let (second, _) = peer.new_session().await;
        assert_ne!(first, second);
        let stalled = peer.send_prompt(&first, "/scenario stall").await;
        let turn = peer.prompt(&second, "other session").await;
        assert_eq!(turn.stop_reason, "end_turn");
        let mut model = common::Model::default();
        for line in &turn.lines {
            if line["params"]["sessionId"] == second.as_str() {
                model.apply(&line["params"]["update"]);
            }
        }
        assert_eq!(model.final_reply(), plain_reply("other session"));
        peer.notify("session/cancel", json!({"sessionId": first}))
            .await;
        let cancelled = peer.finish_turn(stalled).await;
        assert_eq!(cancelled.stop_reason, "cancelled");
    }
}

#[tokio::test]
async fn close_ends_active_work() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let stalled = peer.send_prompt(&sid, "/scenario stall").await;
        let close = peer
            .request("session/close", json!({"sessionId": sid}))
            .await;
        let turn = peer.finish_turn(stalled).await;
        assert_eq!(turn.stop_reason, "cancelled");
        let (resp, _) = peer.response_to(close).await;
        assert_eq!(resp["result"], json!({}));
    }
}

#[tokio::test]
async fn v1_modes() {
    let (mut peer, sid) = Peer::ready(1, &[]).await;
    let (resp, _) = peer
        .call(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": "plan"}),
        )
        .await;
    assert_eq!(resp["result"], json!({}));
    let update = peer.recv().await;
    assert_eq!(
        update["params"]["update"]["sessionUpdate"],
        "current_mode_update"
    );
    assert_eq!(update["params"]["update"]["currentModeId"], "plan");
    let (resp, _) = peer
        .call(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": "zzz"}),
        )
        .await;
    assert_eq!(resp["error"]["code"], -32602);
}

#[tokio::test]
async fn config_options_select_the_mode() {
    for version in VERSIONS {
        let mut peer = Peer::fast();
        peer.initialize(version, &[]).await;
        let mut params = json!({"cwd": "/work"});
        if version == 1 {
            params["mcpServers"] = json!([]);
        }
        let (resp, _) = peer.call("session/new", params).await;
        let key = if version == 2 { "configId" } else { "id" };
        let option = &resp["result"]["configOptions"][0];
        assert_eq!(option[key], "mode");
        assert_eq!(option["currentValue"], "default");
        let sid = resp["result"]["sessionId"].as_str().unwrap().to_owned();
        let mut set = json!({"sessionId": sid, "configId": "mode", "value": "plan"});
        if version == 2 {
            set["type"] = json!("id");
        }
        let (resp, _) = peer.call("session/set_config_option", set).await;
        assert_eq!(resp["result"]["configOptions"][0]["currentValue"], "plan");
        let (resp, _) = peer
            .call(
                "session/set_config_option",
                json!({"sessionId": sid, "configId": "model", "value": "x"}),
            )
            .await;
        assert_eq!(resp["error"]["code"], -32602);
        if version == 2 {
            // v2 has no session/set_mode.
            let (resp, _) = peer
                .call(
                    "session/set_mode",
                    json!({"sessionId": sid, "modeId": "plan"}),
                )
                .await;
            assert_eq!(resp["error"]["code"], -32601);
        }
    }
}

#[tokio::test]
async fn v2_list_and_resume() {
    let (mut peer, sid) = Peer::ready(2, &[]).await;
    let (resp, _) = peer.call("session/list", json!({})).await;
    assert_eq!(resp["result"]["sessions"][0]["sessionId"], sid.as_str());
    assert_eq!(resp["result"]["sessions"][0]["cwd"], "/tmp");
    let (resp, before) = peer
        .call("session/resume", json!({"sessionId": sid, "cwd": "/tmp"}))
        .await;
    assert!(resp.get("result").is_some());
    // The commands and then the state snapshot precede the response.
    assert_eq!(before.len(), 2);
    assert_eq!(
        before[0]["params"]["update"]["sessionUpdate"],
        "available_commands_update"
    );
    assert_eq!(before[1]["params"]["update"]["state"], "idle");
    assert!(before[1]["params"]["update"].get("stopReason").is_none());
    let (resp, _) = peer
        .call(
            "session/resume",
            json!({"sessionId": "sess_9", "cwd": "/tmp"}),
        )
        .await;
    // Resource not found.
    assert_eq!(resp["error"]["code"], -32002);
}

#[tokio::test]
async fn version_negotiation_and_extension_echo() {
    let cases = [
        (ProtocolChoice::Auto, 1, 1),
        (ProtocolChoice::Auto, 2, 2),
        (ProtocolChoice::Auto, 5, 2),
        (ProtocolChoice::V1, 2, 1),
        (ProtocolChoice::V2, 1, 1),
        (ProtocolChoice::V2, 2, 2),
    ];
    for (choice, asked, answered) in cases {
        let mut peer = Peer::start(AgentConfig {
            protocol: choice,
            ..Default::default()
        });
        let result = peer
            .initialize(
                asked,
                &["agent_message_clear", "not_a_thing", "clearBoundary"],
            )
            .await;
        assert_eq!(
            result["protocolVersion"], answered,
            "{choice:?} asked {asked}"
        );
        assert_eq!(
            result["_meta"]["spindle"]["extensions"],
            json!(["agent_message_clear", "clear_boundary"])
        );
        if answered == 2 {
            assert_eq!(result["info"]["name"], "spindle-agent");
        } else {
            assert_eq!(result["agentInfo"]["name"], "spindle-agent");
        }
        // A v2 answer must be followed by v2 traffic, a v1 answer by v1.
        let (sid, _) = peer.new_session().await;
        let turn = peer.prompt(&sid, "hi").await;
        assert_eq!(
            turn.kinds().contains(&"state_update".to_owned()),
            answered == 2
        );
    }
}

#[tokio::test]
async fn end_of_input_finishes_running_work_then_exits() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        peer.send_prompt(&sid, "last words").await;
        // Closing our side right away: the turn still completes.
        let code = peer.shutdown().await;
        assert_eq!(code, 0);
    }
}

#[tokio::test]
async fn cancel_interrupts_a_long_stream() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let id = peer.send_prompt(&sid, "/stream 1000000000 chunks").await;
        // Some of the stream arrives, then the client cancels.
        for _ in 0..50 {
            peer.recv().await;
        }
        peer.notify("session/cancel", json!({"sessionId": sid}))
            .await;
        let turn = peer.finish_turn(id).await;
        assert_eq!(turn.stop_reason, "cancelled");
        // Far fewer than the requested billion lines were written.
        assert!(turn.lines.len() < 100_000, "{}", turn.lines.len());
        let next = peer.prompt(&sid, "after the stream").await;
        assert_eq!(next.stop_reason, "end_turn");
    }
}

/// `/scenario wait-next` (v2) ends only once another prompt was inserted: no timing decides
/// whether a prompt sent during the turn arrives before its end.
#[tokio::test]
async fn v2_wait_next_ends_once_the_next_prompt_is_inserted() {
    let (mut peer, sid) = Peer::ready(2, &[]).await;
    let first = peer.send_prompt(&sid, "/scenario wait-next").await;
    let mut text = String::new();
    while text != scenarios::WAIT_NEXT_TEXT {
        let msg = peer.recv().await;
        if let Some(t) = msg["params"]["update"]["content"]["text"].as_str() {
            text.push_str(t);
        }
    }
    let second = peer.send_prompt(&sid, "go on").await;
    let turn = peer.finish_turn(first).await;
    assert_eq!(turn.stop_reason, "end_turn");
    assert!(turn.lines.iter().any(|m| is_response_to(m, second)));
    assert_eq!(turn.reply(), plain_reply("go on"));
}
