//! `--script` playback, including every example under `examples/scripts/`.

use crate::common;

use std::sync::Arc;

use common::Peer;
use spindle_agent::{AgentConfig, Script};

fn scripted(text: &str) -> Peer {
    let script = Script::parse(text).expect("script parses");
    Peer::start(AgentConfig {
        script: Some(Arc::new(script)),
        script_sleeps: false,
        ..Default::default()
    })
}

async fn session(peer: &mut Peer) -> String {
    let (resp, _) = peer.call("session/new", peer.new_session_params()).await;
    resp["result"]["sessionId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn segments_play_per_prompt_then_scenarios_take_over() {
    for version in common::VERSIONS {
        let mut peer = scripted(concat!(
            "{\"sessionUpdate\":\"usage_update\",\"used\":7,\"size\":100}\n",
            "{\"wait_for_prompt\":true}\n",
            "{\"sessionUpdate\":\"agent_message_chunk\",\"messageId\":\"m1\",\"content\":{\"type\":\"text\",\"text\":\"scripted\"}}\n",
            "{\"sleep_ms\":5000}\n",
            "{\"end_turn\":\"max_tokens\"}\n",
            "{\"sessionUpdate\":\"usage_update\",\"used\":8,\"size\":100}\n",
            "{\"wait_for_prompt\":true}\n",
            "{\"raw\":{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"sess_1\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"messageId\":\"m2\",\"content\":{\"type\":\"text\",\"text\":\"raw line\"}}}}}\n",
        ));
        peer.initialize(version, &[]).await;
        let sid = session(&mut peer).await;
        // The opening segment replaces the built-in session start.
        let opening = peer.recv().await;
        assert_eq!(opening["params"]["update"]["used"], 7);

        let turn = peer.prompt(&sid, "anything").await;
        assert_eq!(turn.stop_reason, "max_tokens");
        assert_eq!(turn.reply(), "scripted");
        // The line after end_turn runs after the turn.
        let after = peer.recv().await;
        assert_eq!(after["params"]["update"]["used"], 8);

        let turn = peer.prompt(&sid, "again").await;
        assert_eq!(turn.stop_reason, "end_turn", "implicit end_turn");
        assert_eq!(turn.reply(), "raw line");

        // Script exhausted: the built-in agent answers.
        let turn = peer.prompt(&sid, "/scenario speculative").await;
        assert_eq!(turn.reply(), spindle_agent::scenarios::SPECULATIVE_REPLY);
    }
}

#[tokio::test]
async fn script_exit_directive_exits() {
    let mut peer = scripted("{\"wait_for_prompt\":true}\n{\"exit\":9}\n");
    peer.initialize(1, &[]).await;
    let sid = session(&mut peer).await;
    peer.send_prompt(&sid, "bye").await;
    while peer.try_recv().await.is_some() {}
    assert_eq!(peer.exit_code().await, 9);
}

#[tokio::test]
async fn example_scripts_play_and_validate() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/scripts");
    let mut played = 0;
    for entry in std::fs::read_dir(dir).expect("examples/scripts exists") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".jsonl") {
            continue;
        }
        let version = if name.contains("-v2") { 2 } else { 1 };
        let text = std::fs::read_to_string(&path).unwrap();
        let mut peer = scripted(&text);
        let exts = [
            "agent_message_clear",
            "agent_thought_clear",
            "session_cleared",
        ];
        peer.initialize(version, &exts).await;
        let sid = session(&mut peer).await;
        let prompts = text.matches("wait_for_prompt").count();
        for i in 0..prompts {
            let turn = peer.prompt(&sid, &format!("prompt {i}")).await;
            assert!(!turn.stop_reason.is_empty(), "{name}");
        }
        // Background lines after the last turn are validated on the way out.
        assert_eq!(peer.shutdown().await, 0, "{name}");
        played += 1;
    }
    assert!(played >= 4, "found {played} example scripts");
}
