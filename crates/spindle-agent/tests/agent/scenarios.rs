//! Every built-in scenario, in v1 and v2, over an in-memory duplex. Every
//! line the agent sends is validated against the official schema of the
//! negotiated version (see `common::schema`).

use crate::common;

use common::{Peer, PermissionAnswer, VERSIONS};
use serde_json::Value;
use spindle_agent::scenarios::{self, plain_reply};
use spindle_agent::stream_gen::expected_reply_text;
use spindle_agent::{StreamMix, Version};

fn v(version: u64) -> Version {
    if version == 2 {
        Version::V2
    } else {
        Version::V1
    }
}

#[tokio::test]
async fn session_start_advertises_commands_and_v2_greets() {
    for version in VERSIONS {
        let mut peer = Peer::fast();
        peer.initialize(version, &[]).await;
        let (_, updates) = peer.new_session().await;
        assert_eq!(updates[0]["sessionUpdate"], "available_commands_update");
        let names: Vec<&str> = updates[0]["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["help", "scenario", "stream", "clear", "compact"]);
        if version == 2 {
            // Entries carry the v2 tag the 1.15.1 crate needs.
            assert_eq!(updates[0]["availableCommands"][0]["type"], "command");
            assert_eq!(updates[1]["sessionUpdate"], "agent_message");
            assert!(
                updates[1]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("/help")
            );
        }
    }
}

#[tokio::test]
async fn plain_prompt_streams_word_chunks_of_a_deterministic_reply() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let turn = peer.prompt(&sid, "hello there agent").await;
        assert_eq!(turn.stop_reason, "end_turn");
        assert_eq!(turn.reply(), plain_reply("hello there agent"));
        let chunks = turn
            .updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .count();
        assert!(chunks > 5, "word-sized chunks, got {chunks}");
        assert!(turn.kinds().contains(&"usage_update".to_owned()));
        // Same prompt, same reply.
        let again = peer.prompt(&sid, "hello there agent").await;
        assert_eq!(again.reply(), turn.reply());
    }
}

#[tokio::test]
async fn v2_turn_lifecycle_acknowledges_the_prompt() {
    let (mut peer, sid) = Peer::ready(2, &[]).await;
    let id = peer.send_prompt(&sid, "hi").await;
    let (resp, _) = peer.response_to(id).await;
    let user_id = resp["result"]["messageId"].as_str().unwrap().to_owned();
    let turn = peer.finish_turn(id).await;
    let kinds = turn.kinds();
    assert_eq!(kinds[0], "user_message");
    assert_eq!(turn.updates[0]["messageId"], user_id.as_str());
    assert_eq!(turn.updates[0]["content"][0]["text"], "hi");
    assert_eq!(kinds[1], "state_update");
    assert_eq!(turn.updates[1]["state"], "running");
    let last = turn.updates.last().unwrap();
    assert_eq!(last["state"], "idle");
    assert_eq!(last["stopReason"], "end_turn");
}

#[tokio::test]
async fn help_lists_commands() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let turn = peer.prompt(&sid, "/help").await;
        assert_eq!(turn.reply(), scenarios::help_text());
        assert!(turn.reply().contains("/scenario"));
        let unknown = peer.prompt(&sid, "/nope").await;
        assert!(unknown.reply().contains("Unknown command /nope"));
        let bad = peer.prompt(&sid, "/scenario nope").await;
        assert!(bad.reply().contains("Unknown scenario"));
    }
}

#[tokio::test]
async fn thoughts_native_and_metadata_tagged() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let turn = peer.prompt(&sid, "/scenario thoughts").await;
        let model = turn.model();
        assert_eq!(model.final_reply(), scenarios::THOUGHTS_REPLY);
        assert!(model.final_reply().contains("Thought: "));
        assert!(model.thoughts().contains("Native thought chunks"));
        let kinds: Vec<&str> = model.segments.iter().map(|(k, _)| k.as_str()).collect();
        assert!(kinds.contains(&"thought") && kinds.contains(&"plan"));
        // Tagged chunks share the reply's message id (routing is per chunk).
        let tagged = turn
            .updates
            .iter()
            .find(|u| u.pointer("/_meta/spindle/segment").is_some())
            .unwrap();
        assert_eq!(tagged["segment"], tagged["_meta"]["spindle"]["segment"]);
        let reply_id = &model.agent_messages()[0].id;
        assert_eq!(tagged["messageId"], reply_id.as_str());
    }
}

fn count(turn: &common::TurnResult, kind: &str) -> usize {
    turn.kinds().iter().filter(|k| *k == kind).count()
}

#[tokio::test]
async fn refine_v2_uses_whole_message_replacement_and_empty_content() {
    let (mut peer, sid) = Peer::ready(2, &[]).await;
    let turn = peer.prompt(&sid, "/scenario refine").await;
    let model = turn.model();
    assert_eq!(model.final_reply(), scenarios::REFINE_REPLY);
    assert_eq!(model.agent_messages().len(), 1);
    let clears = turn
        .updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message" && u["content"] == Value::Array(vec![]))
        .count();
    assert_eq!(clears, 1);
    assert_eq!(count(&turn, "agent_message"), 2);
    assert_eq!(count(&turn, "agent_thought"), 1);
    assert!(model.thoughts().starts_with("No: the capital is Canberra"));
    assert!(!turn.kinds().iter().any(|k| k.ends_with("_clear")));
}

#[tokio::test]
async fn refine_v1_with_extension_clears() {
    for (ext, variant) in [
        (&["agent_message_clear", "agent_thought_clear"][..], ""),
        (&[][..], " ext"),
    ] {
        let (mut peer, sid) = Peer::ready(1, ext).await;
        let turn = peer
            .prompt(&sid, &format!("/scenario refine{variant}"))
            .await;
        let model = turn.model();
        assert_eq!(model.final_reply(), scenarios::REFINE_REPLY);
        assert_eq!(model.agent_messages().len(), 1);
        assert_eq!(count(&turn, "agent_message_clear"), 2);
        assert_eq!(count(&turn, "agent_thought_clear"), 1);
        assert!(model.thoughts().starts_with("No: the capital"));
    }
}

#[tokio::test]
async fn refine_v1_without_extension_degrades_to_a_new_message() {
    for prompt in ["/scenario refine", "/scenario refine plain"] {
        let exts: &[&str] = if prompt.ends_with("plain") {
            &["agent_message_clear", "agent_thought_clear"]
        } else {
            &[]
        };
        let (mut peer, sid) = Peer::ready(1, exts).await;
        let turn = peer.prompt(&sid, prompt).await;
        assert!(
            !turn.kinds().iter().any(|k| k.ends_with("_clear")),
            "{prompt}"
        );
        let model = turn.model();
        let messages = model.agent_messages();
        assert_eq!(messages.len(), 2);
        assert!(messages[0].text.starts_with("Draft:"));
        assert_eq!(messages[1].text, scenarios::REFINE_REPLY);
    }
}

#[tokio::test]
async fn denoise_converges_in_every_mode() {
    for (version, exts, prompt) in [
        (2, &[][..], "/scenario denoise"),
        (1, &["agent_message_clear"][..], "/scenario denoise"),
        (1, &[][..], "/scenario denoise ext"),
        (1, &[][..], "/scenario denoise"),
    ] {
        let (mut peer, sid) = Peer::ready(version, exts).await;
        let turn = peer.prompt(&sid, prompt).await;
        assert_eq!(turn.reply(), scenarios::DENOISE_REPLY, "{version} {prompt}");
        let steps = match v(version) {
            Version::V2 => count(&turn, "agent_message"),
            Version::V1 => count(&turn, "agent_message_clear"),
        };
        let expected = if version == 1 && exts.is_empty() && !prompt.ends_with("ext") {
            0
        } else if version == 2 {
            5
        } else {
            4
        };
        assert_eq!(steps, expected, "{version} {prompt}");
    }
    // The intermediate steps are masked versions of the paragraph.
    assert!(scenarios::denoise_step(0).contains('\u{2591}'));
    assert_eq!(scenarios::denoise_step(4), scenarios::DENOISE_REPLY);
}

#[tokio::test]
async fn speculative_rollback() {
    for (version, exts) in [
        (2, &[][..]),
        (1, &["agent_message_clear"][..]),
        (1, &[][..]),
    ] {
        let (mut peer, sid) = Peer::ready(version, exts).await;
        let turn = peer.prompt(&sid, "/scenario speculative").await;
        let model = turn.model();
        assert_eq!(model.final_reply(), scenarios::SPECULATIVE_REPLY);
        let rejected_seen = turn.updates.iter().any(|u| {
            u["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("42"))
        });
        assert!(rejected_seen, "the rejected draft is streamed first");
        let expected_messages = if version == 1 && exts.is_empty() {
            2
        } else {
            1
        };
        assert_eq!(model.agent_messages().len(), expected_messages);
    }
}

#[tokio::test]
async fn snapshot_chunks_carry_the_whole_text() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let turn = peer.prompt(&sid, "/scenario snapshot").await;
        assert_eq!(turn.reply(), scenarios::SNAPSHOT_REPLY);
        let chunks: Vec<&Value> = turn
            .updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .collect();
        assert!(chunks.len() > 3);
        for c in &chunks {
            assert_eq!(c["_meta"]["spindle"]["snapshot"], true);
            assert!(scenarios::SNAPSHOT_REPLY.starts_with(c["content"]["text"].as_str().unwrap()));
        }
    }
}

#[tokio::test]
async fn tools_with_permission_allowed() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let turn = peer.prompt(&sid, "/scenario tools").await;
        assert_eq!(turn.stop_reason, "end_turn");
        let model = turn.model();
        assert_eq!(model.final_reply(), scenarios::TOOLS_REPLY_ALLOWED);
        assert_eq!(peer.permission_requests.len(), 1);
        let statuses: Vec<&Vec<String>> = model.tools.values().collect();
        assert_eq!(statuses.len(), 2);
        for history in statuses {
            assert_eq!(history.first().unwrap(), "pending");
            assert_eq!(history.last().unwrap(), "completed");
        }
        assert!(model.plan.iter().all(|(_, s)| s == "completed"));
        if version == 2 {
            assert!(
                model.tool_chunks > 0,
                "v2 streams tool output as content chunks"
            );
            // requires_action while the permission is pending, running after.
            let states = &model.states;
            let ra = states.iter().position(|s| s == "requires_action").unwrap();
            assert_eq!(states[ra + 1], "running");
            assert_eq!(states.last().unwrap(), "idle");
            let req = &peer.permission_requests[0]["params"];
            assert_eq!(req["subject"]["type"], "tool_call");
            assert_eq!(req["title"], "Edit src/main.rs");
        } else {
            assert!(peer.permission_requests[0]["params"]["toolCall"]["toolCallId"].is_string());
            assert!(turn.kinds().contains(&"tool_call".to_owned()));
        }
    }
}

#[tokio::test]
async fn tools_with_permission_rejected() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        peer.permission = PermissionAnswer::Reject;
        let turn = peer.prompt(&sid, "/scenario tools").await;
        assert_eq!(turn.stop_reason, "end_turn");
        let model = turn.model();
        assert_eq!(model.final_reply(), scenarios::TOOLS_REPLY_REJECTED);
        let last_statuses: Vec<&str> = model
            .tools
            .values()
            .map(|h| h.last().unwrap().as_str())
            .collect();
        assert_eq!(last_statuses, ["completed", "failed"]);
    }
}

#[tokio::test]
async fn tools_with_permission_cancelled_ends_the_turn_cancelled() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        peer.permission = PermissionAnswer::Cancelled;
        let turn = peer.prompt(&sid, "/scenario tools").await;
        assert_eq!(turn.stop_reason, "cancelled");
        let model = turn.model();
        let edit = model.tools.values().last().unwrap();
        let expected = if version == 2 { "cancelled" } else { "failed" };
        assert_eq!(edit.last().unwrap(), expected);
        // The session still works.
        let next = peer.prompt(&sid, "still there?").await;
        assert_eq!(next.stop_reason, "end_turn");
    }
}

#[tokio::test]
async fn background_updates_arrive_after_the_turn() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let turn = peer.prompt(&sid, "/scenario background").await;
        assert_eq!(turn.reply(), scenarios::BACKGROUND_REPLY);
        // After idle / the response: the task completes and a new message arrives.
        let mut later = common::Model::default();
        for _ in 0..64 {
            let msg = peer.recv().await;
            let update = &msg["params"]["update"];
            later.apply(update);
            if update["sessionUpdate"] == "session_info_update" {
                break;
            }
        }
        assert_eq!(later.final_reply(), scenarios::BACKGROUND_LATE_MESSAGE);
        let task = later.tools.values().next().unwrap();
        assert_eq!(task.last().unwrap(), "completed");
        // No state change for background work.
        assert!(later.states.is_empty());
    }
}

#[tokio::test]
async fn slow_scenario_paces_with_the_configured_delay() {
    for version in VERSIONS {
        let mut peer = Peer::start(spindle_agent::AgentConfig {
            delay_ms: 1,
            ..Default::default()
        });
        peer.initialize(version, &[]).await;
        let (sid, _) = peer.new_session().await;
        let turn = peer.prompt(&sid, "/scenario slow").await;
        assert_eq!(turn.reply(), scenarios::SLOW_REPLY);
    }
}

#[tokio::test]
async fn hostile_input_is_delivered_verbatim() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let turn = peer.prompt(&sid, "/scenario hostile").await;
        assert_eq!(turn.stop_reason, "end_turn");
        let model = turn.model();
        let reply = model.final_reply();
        for piece in spindle_agent::HOSTILE_PIECES {
            assert!(reply.contains(piece), "{piece:?}");
        }
        assert!(reply.contains(&spindle_agent::huge_text()));
        assert!(reply.ends_with(spindle_agent::HOSTILE_END));
        assert_eq!(model.unknown.len(), 2, "unknown kind + unknown block");
    }
}

#[tokio::test]
async fn crash_exits_mid_turn() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        peer.send_prompt(&sid, "/scenario crash").await;
        let mut chunks = 0;
        while let Some(msg) = peer.try_recv().await {
            assert!(
                msg.get("result").is_none() || version == 2,
                "no prompt response in v1"
            );
            assert_ne!(msg["params"]["update"]["state"], "idle");
            if msg["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
                chunks += 1;
            }
        }
        assert!(chunks > 0);
        assert_eq!(peer.exit_code().await, scenarios::CRASH_EXIT_CODE);
    }
}

#[tokio::test]
async fn stall_waits_for_cancel() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let id = peer.send_prompt(&sid, "/scenario stall").await;
        // Read up to the last chunk of the stall text, then cancel.
        let mut text = String::new();
        while text != scenarios::STALL_TEXT {
            let msg = peer.recv().await;
            if let Some(t) = msg["params"]["update"]["content"]["text"].as_str() {
                text.push_str(t);
            }
        }
        peer.notify("session/cancel", serde_json::json!({"sessionId": sid}))
            .await;
        let turn = peer.finish_turn(id).await;
        assert_eq!(turn.stop_reason, "cancelled");
    }
}

#[tokio::test]
async fn clear_follows_seed_003() {
    for version in VERSIONS {
        for (exts, prompt, via_update) in [
            (&[][..], "/clear", false),
            (&[][..], "/clear session_cleared", true),
            (&["session_cleared"][..], "/clear", true),
            (&["session_cleared"][..], "/clear meta", false),
        ] {
            let (mut peer, sid) = Peer::ready(version, exts).await;
            let before = peer.prompt(&sid, "use some context").await;
            assert!(before.model().usage.last().copied().unwrap() > 0);
            let turn = peer.prompt(&sid, prompt).await;
            let kinds = turn.kinds();
            let model = turn.model();
            assert_eq!(model.usage, [0], "{prompt}");
            assert_eq!(model.clear_boundaries, 1, "{prompt}");
            assert_eq!(model.commands_updates, 1);
            assert_eq!(model.final_reply(), scenarios::CLEAR_REPLY);
            // Order: usage reset, boundary, commands refresh.
            let usage = kinds.iter().position(|k| k == "usage_update").unwrap();
            let commands = kinds
                .iter()
                .position(|k| k == "available_commands_update")
                .unwrap();
            let boundary = if via_update {
                kinds.iter().position(|k| k == "session_cleared").unwrap()
            } else {
                let b = turn
                    .updates
                    .iter()
                    .position(|u| u.pointer("/_meta/claudeCode/clearBoundary").is_some())
                    .unwrap();
                // The `_meta` form: the flag rides on the first chunk after the clear.
                let first_chunk = kinds
                    .iter()
                    .position(|k| k == "agent_message_chunk")
                    .unwrap();
                assert_eq!(b, first_chunk);
                b
            };
            assert!(
                usage < boundary && boundary < commands,
                "{prompt}: {kinds:?}"
            );
            assert_eq!(kinds.contains(&"session_cleared".to_owned()), via_update);
        }
    }
}

#[tokio::test]
async fn compact_native_and_fallback() {
    // v2, and v1 with the compaction capability: compaction_update lifecycle.
    for version in VERSIONS {
        let mut peer = Peer::fast();
        let mut params = serde_json::json!({"protocolVersion": version});
        if version == 2 {
            params["info"] = serde_json::json!({"name": "t", "version": "0"});
        } else {
            params["clientCapabilities"] = serde_json::json!({"session": {"compaction": {}}});
        }
        peer.initialize_with(params).await;
        let (sid, _) = peer.new_session().await;
        peer.prompt(&sid, "first").await;
        let turn = peer.prompt(&sid, "/compact").await;
        let model = turn.model();
        assert_eq!(model.compaction, ["in_progress", "completed"]);
        assert!(model.summary.starts_with("Summary of 1 earlier turn"));
        assert_eq!(model.final_reply(), scenarios::COMPACT_REPLY);
        assert_eq!(model.usage.len(), 1);
    }
    // Plain v1: the summary goes into the reply.
    let (mut peer, sid) = Peer::ready(1, &[]).await;
    let turn = peer.prompt(&sid, "/compact").await;
    assert!(!turn.kinds().iter().any(|k| k.starts_with("compaction")));
    assert!(turn.reply().starts_with(scenarios::COMPACT_REPLY));
    assert!(turn.reply().contains("Summary of"));
}

#[tokio::test]
async fn stream_command_matches_the_expected_reply() {
    for version in VERSIONS {
        for mix in StreamMix::ALL {
            let (mut peer, sid) = Peer::ready(version, &[]).await;
            let n = 2_000;
            let turn = peer
                .prompt(&sid, &format!("/stream {n} {}", mix.name()))
                .await;
            assert_eq!(turn.stop_reason, "end_turn");
            let generated = turn
                .updates
                .iter()
                .filter(|u| {
                    u["messageId"]
                        .as_str()
                        .is_some_and(|m| m.starts_with("gen_"))
                        || u["toolCallId"]
                            .as_str()
                            .is_some_and(|m| m.starts_with("gen_"))
                        || matches!(
                            u["sessionUpdate"].as_str(),
                            Some("plan" | "plan_update" | "usage_update")
                        )
                })
                .count();
            assert_eq!(generated, n);
            let model = turn.model();
            let reply = model
                .messages
                .iter()
                .find(|m| {
                    m.id == spindle_agent::stream_gen::MESSAGE_ID && m.kind == "agent_message"
                })
                .unwrap();
            assert_eq!(
                reply.text,
                expected_reply_text(v(version), mix, n as u64),
                "{mix:?}"
            );
        }
    }
}

#[tokio::test]
async fn terminal_output_in_v2_chunks_and_v1_text() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let turn = peer.prompt(&sid, "/scenario terminal").await;
        assert_eq!(turn.reply(), spindle_agent::terminal::TERMINAL_REPLY);
        if version == 2 {
            let chunks: Vec<&Value> = turn
                .updates
                .iter()
                .filter(|u| u["sessionUpdate"] == "terminal_output_chunk")
                .collect();
            assert_eq!(chunks.len(), 4);
            let exit = turn
                .updates
                .iter()
                .find(|u| u["sessionUpdate"] == "terminal_update" && u.get("exitStatus").is_some())
                .unwrap();
            assert_eq!(exit["exitStatus"]["exitCode"], 0);
            let term = peer
                .engine
                .transcript()
                .entries
                .iter()
                .any(|e| matches!(e.body, spindle_engine::EntryBody::Terminal(_)));
            assert!(term, "the engine built a terminal entry");
        } else {
            let text = turn
                .updates
                .iter()
                .find_map(|u| u.pointer("/content/0/content/text"))
                .and_then(Value::as_str)
                .unwrap();
            assert!(text.contains("3 passed"));
        }
        peer.assert_no_engine_diagnostics();
    }
}

#[tokio::test]
async fn notices_as_updates_or_text() {
    for (version, notices_cap) in [(2, false), (1, true), (1, false)] {
        let mut peer = Peer::fast();
        let mut params = serde_json::json!({"protocolVersion": version});
        if version == 2 {
            params["info"] = serde_json::json!({"name": "t", "version": "0"});
        } else if notices_cap {
            params["clientCapabilities"] = serde_json::json!({"session": {"notices": {}}});
        }
        peer.initialize_with(params).await;
        let (sid, _) = peer.new_session().await;
        let turn = peer.prompt(&sid, "/scenario notice").await;
        let notices: Vec<&Value> = turn
            .updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "notice")
            .collect();
        if version == 2 || notices_cap {
            assert_eq!(notices.len(), 2);
            assert_eq!(notices[1]["severity"], "warning");
            assert_eq!(turn.reply(), scenarios::NOTICE_REPLY);
        } else {
            assert!(notices.is_empty());
            assert!(turn.reply().contains("[warning] Rate limit close"));
        }
        assert_eq!(turn.stop_reason, "end_turn");
        peer.assert_no_engine_diagnostics();
    }
}

#[tokio::test]
async fn error_scenario_fails_the_turn() {
    for version in VERSIONS {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        let turn = peer.prompt(&sid, "/scenario error").await;
        assert_eq!(turn.stop_reason, "error");
        let last = turn.lines.last().unwrap();
        let error = match version {
            1 => &last["error"],
            _ => &last["params"]["update"]["error"],
        };
        assert_eq!(error["code"], -32603);
        assert_eq!(error["message"], scenarios::ERROR_MESSAGE);
        let t = peer.engine.transcript();
        assert!(t.state.error.is_some(), "the engine records the failure");
        assert!(!t.state.turn_open);
        // The session continues.
        let next = peer.prompt(&sid, "again").await;
        assert_eq!(next.stop_reason, "end_turn");
    }
}
