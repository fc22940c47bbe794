//! Every scenario, v1 and v2, checked through the project's transcript
//! engine (`spindle-engine`): the reply it persists, the entries it builds,
//! and no diagnostics.

use crate::common;

use common::{Peer, PermissionAnswer};
use spindle_agent::scenarios::{self, plain_reply};
use spindle_agent::stream_gen::expected_reply_text;
use spindle_agent::{StreamMix, Version};
use spindle_engine::EntryKind;

const CLEAR_EXTS: [&str; 2] = ["agent_message_clear", "agent_thought_clear"];

/// (protocol, extensions, prompt, expected engine reply)
fn cases() -> Vec<(u64, &'static [&'static str], String, String)> {
    let mut cases = Vec::new();
    for version in [1u64, 2] {
        let plain = |p: &str| (version, &[][..], p.to_owned(), plain_reply(p));
        cases.push(plain("hello engine"));
        let scenario_replies: [(&'static [&'static str], &str, String); 12] = [
            (&[], "/help", scenarios::help_text()),
            (&[], "/scenario thoughts", scenarios::THOUGHTS_REPLY.into()),
            (
                &CLEAR_EXTS,
                "/scenario refine",
                scenarios::REFINE_REPLY.into(),
            ),
            (&[], "/scenario refine ext", scenarios::REFINE_REPLY.into()),
            (
                &CLEAR_EXTS,
                "/scenario denoise",
                scenarios::DENOISE_REPLY.into(),
            ),
            (&[], "/scenario denoise", scenarios::DENOISE_REPLY.into()),
            (
                &CLEAR_EXTS,
                "/scenario speculative",
                scenarios::SPECULATIVE_REPLY.into(),
            ),
            (&[], "/scenario snapshot", scenarios::SNAPSHOT_REPLY.into()),
            (
                &[],
                "/scenario tools",
                scenarios::TOOLS_REPLY_ALLOWED.into(),
            ),
            (&[], "/scenario slow", scenarios::SLOW_REPLY.into()),
            (&[], "/clear", scenarios::CLEAR_REPLY.into()),
            (
                &["session_cleared"],
                "/clear",
                scenarios::CLEAR_REPLY.into(),
            ),
        ];
        for (exts, prompt, reply) in scenario_replies {
            cases.push((version, exts, prompt.to_owned(), reply));
        }
        cases.push((version, &[][..], "/compact".into(), if version == 2 {
            scenarios::COMPACT_REPLY.into()
        } else {
            format!("{} Summary of 0 earlier turn(s): the user explored the reference agent's scenarios.", scenarios::COMPACT_REPLY)
        }));
    }
    // v2 ignores the v1 variants: native replacement everywhere.
    cases.push((
        2,
        &[],
        "/scenario refine plain".into(),
        scenarios::REFINE_REPLY.into(),
    ));
    cases
}

#[tokio::test]
async fn engine_rebuilds_every_scenario_reply() {
    for (version, exts, prompt, expected) in cases() {
        let (mut peer, sid) = Peer::ready(version, exts).await;
        let turn = peer.prompt(&sid, &prompt).await;
        assert_eq!(turn.stop_reason, "end_turn", "{version} {prompt}");
        assert_eq!(
            peer.engine_reply(),
            expected,
            "v{version} {exts:?} {prompt}"
        );
        let t = peer.engine.transcript();
        assert_eq!(t.protocol as u64, version);
        assert_eq!(t.state.stop_reason.as_deref(), Some("end_turn"));
        assert!(!t.state.turn_open, "v{version} {prompt}: turn closed");
        peer.assert_no_engine_diagnostics();
    }
}

#[tokio::test]
async fn engine_sees_the_v1_degrade_as_two_messages() {
    for prompt in ["/scenario refine", "/scenario speculative"] {
        let (mut peer, sid) = Peer::ready(1, &[]).await;
        peer.prompt(&sid, prompt).await;
        let reply = peer.engine_reply();
        let expected = if prompt.ends_with("refine") {
            scenarios::REFINE_REPLY
        } else {
            scenarios::SPECULATIVE_REPLY
        };
        // Without the clear extension the draft stays; the corrected text is
        // the turn's last message.
        assert!(reply.ends_with(&format!("\n\n{expected}")), "{reply}");
        peer.assert_no_engine_diagnostics();
    }
}

#[tokio::test]
async fn engine_routes_thoughts_and_boundaries() {
    for version in [1, 2] {
        let (mut peer, sid) = Peer::ready(version, &[]).await;
        peer.prompt(&sid, "/scenario thoughts").await;
        let kinds: Vec<EntryKind> = peer
            .engine
            .transcript()
            .entries
            .iter()
            .map(|e| e.kind)
            .collect();
        assert!(kinds.contains(&EntryKind::AgentThought), "{kinds:?}");
        peer.prompt(&sid, "/clear").await;
        let boundaries = peer
            .engine
            .transcript()
            .entries
            .iter()
            .filter(|e| matches!(e.kind, EntryKind::Boundary))
            .count();
        assert_eq!(boundaries, 1, "v{version}");
        let usage = peer.engine.transcript().usage.clone().unwrap();
        assert_eq!(usage["used"], 0);
    }
}

#[tokio::test]
async fn engine_permission_paths() {
    for version in [1, 2] {
        for (answer, stop, reply) in [
            (
                PermissionAnswer::Reject,
                "end_turn",
                Some(scenarios::TOOLS_REPLY_REJECTED),
            ),
            (PermissionAnswer::Cancelled, "cancelled", None),
        ] {
            let (mut peer, sid) = Peer::ready(version, &[]).await;
            peer.permission = answer;
            let turn = peer.prompt(&sid, "/scenario tools").await;
            assert_eq!(turn.stop_reason, stop);
            let t = peer.engine.transcript();
            assert_eq!(t.state.stop_reason.as_deref(), Some(stop));
            if let Some(reply) = reply {
                assert_eq!(peer.engine_reply(), reply);
            }
            peer.assert_no_engine_diagnostics();
        }
    }
}

#[tokio::test]
async fn engine_builds_the_generated_stream_reply() {
    for version in [1, 2] {
        let v = if version == 2 {
            Version::V2
        } else {
            Version::V1
        };
        for mix in StreamMix::ALL {
            let (mut peer, sid) = Peer::ready(version, &[]).await;
            peer.prompt(&sid, &format!("/stream 1000 {}", mix.name()))
                .await;
            assert_eq!(
                peer.engine_reply(),
                expected_reply_text(v, mix, 1000),
                "v{version} {mix:?}"
            );
            peer.assert_no_engine_diagnostics();
        }
    }
}
