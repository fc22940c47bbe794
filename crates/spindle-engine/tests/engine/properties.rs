//! Property tests: random update sequences (valid, malformed and garbage)
//! never panic; replay is deterministic and independent of render ops; the
//! render ops rebuild exactly what a snapshot shows; chunk splitting never
//! changes the final text; cached saves write what a whole one does.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};
use spindle_engine::{
    EngineConfig, ProtocolHint, RenderOp, ReplayCache, StreamingPolicy, TranscriptEngine, TurnReply,
};

fn update(u: Value) -> String {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}})
        .to_string()
}

fn text_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,12}",
        "\\PC{0,6}",
        Just("😀é\u{1F601}".to_owned()),
        Just("line\nbreak \"quoted\" \\ slash".to_owned()),
    ]
}

fn id_strategy() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("m1".to_owned())),
        Just(Some("m2".to_owned())),
        Just(Some("t1".to_owned()))
    ]
}

/// One line of a recording: mostly meaningful updates, some malformed, some garbage.
fn line_strategy() -> impl Strategy<Value = String> {
    let chunk_tag = prop_oneof![
        Just("agent_message_chunk"),
        Just("agent_thought_chunk"),
        Just("user_message_chunk")
    ];
    let upsert_tag = prop_oneof![
        Just("agent_message"),
        Just("agent_thought"),
        Just("user_message")
    ];
    prop_oneof![
        4 => (chunk_tag, id_strategy(), text_strategy(), any::<u8>()).prop_map(|(tag, id, text, flags)| {
            let mut u = json!({"sessionUpdate": tag, "content": {"type": "text", "text": text}});
            if let Some(id) = id { u["messageId"] = json!(id); }
            if flags & 1 == 1 { u["_meta"] = json!({"spindle": {"snapshot": flags & 2 == 2}}); }
            if flags & 4 == 4 { u["segment"] = json!("thinking"); }
            if flags & 8 == 8 && flags & 16 == 16 { u["_meta"] = json!({"claudeCode": {"clearBoundary": true}}); }
            // Blocks that are not plain text: with fields of their own, or not text at all.
            if flags & 32 == 32 { u["content"]["annotations"] = json!({"priority": 1, "note": text}); }
            if flags & 64 == 64 && flags & 128 == 128 { u["content"] = json!({"type": "image", "data": "aGk=", "mimeType": "image/png"}); }
            update(u)
        }),
        2 => (upsert_tag, id_strategy(), prop::collection::vec(text_strategy(), 0..3), 0u8..4).prop_map(|(tag, id, texts, mode)| {
            let mut u = json!({"sessionUpdate": tag});
            if let Some(id) = id { u["messageId"] = json!(id); }
            match mode {
                0 => {}
                1 => u["content"] = Value::Null,
                2 => u["content"] = json!([]),
                _ => u["content"] = json!(texts.iter().map(|t| json!({"type": "text", "text": t})).collect::<Vec<_>>()),
            }
            if mode == 0 { u["_meta"] = json!({"k": 1}); }
            update(u)
        }),
        1 => (id_strategy(), any::<bool>()).prop_map(|(id, thought)| {
            let tag = if thought { "agent_thought_clear" } else { "agent_message_clear" };
            let mut u = json!({"sessionUpdate": tag});
            if let Some(id) = id { u["messageId"] = json!(id); }
            update(u)
        }),
        1 => (0u8..3, prop::option::of("[a-z_]{1,8}")).prop_map(|(n, status)| {
            update(json!({"sessionUpdate": if n == 0 { "tool_call" } else { "tool_call_update" }, "toolCallId": format!("c{n}"), "title": "t", "status": status}))
        }),
        // Display data production agents put on tool calls: terminal _meta, tool names, diffs.
        1 => (0u8..3, 0u8..6, text_strategy()).prop_map(|(n, what, text)| {
            let mut u = json!({"sessionUpdate": "tool_call_update", "toolCallId": format!("c{n}")});
            match what {
                0 => u["_meta"] = json!({"claudeCode": {"toolName": "Bash"}, "terminal_info": {"terminal_id": "c", "cwd": "/w"}}),
                1 | 2 => u["_meta"] = json!({"terminal_output": {"terminal_id": "c", "data": text}}),
                3 => u["_meta"] = json!({"terminal_exit": {"terminal_id": "c", "exit_code": 1, "signal": null}, "other": text}),
                4 => u["content"] = json!([{"type": "diff", "path": "/w/f", "oldText": text, "newText": "x\ny\n"}]),
                _ => u["_meta"] = json!({"toolName": text}),
            }
            update(u)
        }),
        1 => prop_oneof![
            Just(update(json!({"sessionUpdate": "state_update", "state": "running"}))),
            Just(update(json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))),
            Just(update(json!({"sessionUpdate": "session_cleared"}))),
            Just(update(json!({"sessionUpdate": "usage_update", "used": 0, "size": 10}))),
            Just(update(json!({"sessionUpdate": "notice", "severity": "info", "title": "hi"}))),
            Just(update(json!({"sessionUpdate": "_x_custom", "v": [1]}))),
            Just(update(json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "k", "content": {"type": "text", "text": "s"}}))),
            Just(update(json!({"sessionUpdate": "compaction_update", "compactionId": "k", "status": "completed"}))),
            Just(update(json!({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": []}}))),
            Just(update(json!({"sessionUpdate": "terminal_output_chunk", "terminalId": "x", "data": "8J+Y"}))),
            Just(update(json!({"sessionUpdate": "terminal_output_chunk", "terminalId": "x", "data": "gA=="}))),
            Just(update(json!({"sessionUpdate": "terminal_update", "terminalId": "x", "output": {"data": "aGk="}}))),
            Just(json!({"sent": {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "q"}]}}}).to_string()),
            Just(json!({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}).to_string()),
            Just(json!({"jsonrpc": "2.0", "id": 1, "result": {"messageId": "u1"}}).to_string()),
            Just(json!({"jsonrpc": "2.0", "id": 9, "method": "session/request_permission", "params": {"toolCall": {"toolCallId": "c1"}, "options": []}}).to_string()),
            Just(json!({"sent": {"jsonrpc": "2.0", "id": 9, "result": {"outcome": {"outcome": "cancelled"}}}}).to_string()),
        ],
        // Malformed known updates: right tag, wrong payload.
        1 => (prop_oneof![
            Just("agent_message_chunk"), Just("agent_message"), Just("tool_call_update"),
            Just("state_update"), Just("usage_update"), Just("plan_update"), Just("terminal_update"),
            Just("compaction_update"), Just("notice"), Just("session_info_update"),
        ], prop_oneof![Just(json!(7)), Just(json!("x")), Just(json!(null)), Just(json!([{}])), Just(json!({"a": {}}))])
            .prop_map(|(tag, junk)| update(json!({
                "sessionUpdate": tag, "content": junk, "messageId": junk, "toolCallId": junk, "state": junk,
                "used": junk, "plan": junk, "terminalId": junk, "status": junk, "title": junk, "output": junk,
            }))),
        // Garbage: arbitrary text, truncated JSON, JSON that is not JSON-RPC.
        1 => prop_oneof![
            "\\PC{0,40}",
            Just("{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":".to_owned()),
            Just("[1,2,3]".to_owned()),
            Just("{\"sent\":5}".to_owned()),
            Just("{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"a\",\"text\":\"b\"}}}}".to_owned()),
        ],
    ]
}

fn config_strategy() -> impl Strategy<Value = EngineConfig> {
    (0u8..3, any::<bool>()).prop_map(|(p, snapshot)| EngineConfig {
        protocol: [ProtocolHint::Auto, ProtocolHint::V1, ProtocolHint::V2][p as usize],
        streaming: if snapshot {
            StreamingPolicy::Snapshot
        } else {
            StreamingPolicy::Delta
        },
    })
}

/// A minimal view that only knows render ops (what a web page would hold).
#[derive(Default)]
struct View {
    order: Vec<String>,
    text: std::collections::HashMap<String, Vec<u16>>,
}

impl View {
    fn apply(&mut self, op: &RenderOp) -> Result<(), String> {
        match op {
            RenderOp::InsertEntry { index, entry } => {
                if *index != self.order.len() {
                    return Err(format!("insert at {index}, view has {}", self.order.len()));
                }
                self.order.push(entry.id.clone());
                self.text
                    .insert(entry.id.clone(), entry.text.encode_utf16().collect());
            }
            RenderOp::UpdateEntry { id, entry } => {
                let t = self
                    .text
                    .get_mut(id)
                    .ok_or(format!("update of unknown {id}"))?;
                *t = entry.text.encode_utf16().collect();
            }
            RenderOp::TruncateText { id, len } => {
                let t = self
                    .text
                    .get_mut(id)
                    .ok_or(format!("truncate of unknown {id}"))?;
                if *len >= t.len() {
                    return Err(format!(
                        "truncate to {len} of {} units does not shorten",
                        t.len()
                    ));
                }
                if (0xDC00..0xE000).contains(&t[*len]) {
                    return Err("truncate splits a surrogate pair".into());
                }
                t.truncate(*len);
            }
            RenderOp::AppendText { id, text } => {
                if text.is_empty() {
                    return Err("empty append".into());
                }
                let t = self
                    .text
                    .get_mut(id)
                    .ok_or(format!("append to unknown {id}"))?;
                t.extend(text.encode_utf16());
            }
            _ => {}
        }
        Ok(())
    }

    fn rendered(&self) -> Vec<(String, String)> {
        self.order
            .iter()
            .map(|id| (id.clone(), String::from_utf16(&self.text[id]).unwrap()))
            .collect()
    }
}

fn snapshot_view(engine: &TranscriptEngine) -> Vec<(String, String)> {
    let mut view = View::default();
    for op in engine.render_snapshot() {
        view.apply(&op).unwrap();
    }
    view.rendered()
}

/// What a coalesced batch of engine ops holds per entry: one `InsertEntry` or `UpdateEntry` and
/// nothing else, or text ops only, at most one truncation with at most one append before it and
/// one after; and at most one op each of usage, commands and session info.
fn coalesced_shape(ops: &[RenderOp]) -> Result<(), String> {
    let mut entries: std::collections::HashMap<&str, String> = std::collections::HashMap::new();
    let mut values = std::collections::HashMap::new();
    for op in ops {
        let (id, kind) = match op {
            RenderOp::InsertEntry { entry, .. } => (entry.id.as_str(), 'I'),
            RenderOp::UpdateEntry { id, .. } => (id.as_str(), 'U'),
            RenderOp::TruncateText { id, .. } => (id.as_str(), 'T'),
            RenderOp::AppendText { id, .. } => (id.as_str(), 'A'),
            RenderOp::SetUsage { .. }
            | RenderOp::SetCommands { .. }
            | RenderOp::SetSessionInfo { .. } => {
                *values.entry(std::mem::discriminant(op)).or_insert(0) += 1;
                continue;
            }
            RenderOp::SetState { .. } | RenderOp::Notice { .. } => continue,
        };
        entries.entry(id).or_default().push(kind);
    }
    if values.values().any(|&n| n > 1) {
        return Err("a value op more than once".into());
    }
    for (id, kinds) in entries {
        if !["I", "U", "A", "T", "AT", "TA", "ATA"].contains(&kinds.as_str()) {
            return Err(format!("entry {id} got ops {kinds}"));
        }
    }
    Ok(())
}

proptest! {
    // Failing seeds are kept beside this file, in properties.proptest-regressions.
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_sequences_never_panic_and_ops_rebuild_the_snapshot(
        config in config_strategy(),
        lines in prop::collection::vec(line_strategy(), 0..40),
    ) {
        let mut engine = TranscriptEngine::new(config.clone());
        let mut view = View::default();
        // As in a recording file, blank lines carry nothing.
        let lines: Vec<String> = lines.into_iter().filter(|l| !l.trim().is_empty()).collect();
        for line in &lines {
            let applied = engine.apply_recorded_line(line);
            for op in &applied.ops {
                view.apply(op).map_err(|e| TestCaseError::fail(format!("{e} after {line}")))?;
            }
            // Every intermediate state is renderable.
            prop_assert_eq!(view.rendered(), snapshot_view(&engine));
        }
        let json = engine.replay_json();
        let mut streamed = Vec::new();
        engine.write_replay_json(&mut streamed).unwrap();
        prop_assert_eq!(String::from_utf8(streamed).unwrap(), json.to_string());
        // Live (agent lines and client lines through their own entry points)
        // decides every boundary and minted id exactly as replay does.
        let mut live = TranscriptEngine::new(config.clone());
        for line in &lines {
            match serde_json::from_str::<Value>(line) {
                Ok(Value::Object(mut m)) if m.contains_key("sent") => {
                    live.apply_client_line(&m.remove("sent").unwrap().to_string())
                }
                _ => live.apply_agent_line(line),
            };
        }
        prop_assert_eq!(&json, &live.replay_json());
        let _ = engine.final_reply();
        let _ = engine.render_text();
        // Deterministic, and independent of whether ops are built.
        let batch = spindle_engine::replay_recording(&lines.join("\n"), config);
        prop_assert_eq!(json, batch.replay_json());
    }

    // A save with the cache of the last one ([`ReplayCache`]) hands over the shell and the
    // changed items: a store that keeps the items by position holds the whole replay JSON, and
    // the replies it reports (the changed ones) keep a store's rows equal to every turn's reply,
    // also after a save that failed (then the next hands over every item and reply).
    #[test]
    fn cached_saves_keep_a_store_of_items_equal_to_the_replay_json_and_report_every_changed_reply(
        config in config_strategy(),
        lines in prop::collection::vec(line_strategy(), 0..40),
        saves in prop::collection::vec(0u8..4, 40),
    ) {
        let mut engine = TranscriptEngine::new(config);
        let mut cache = ReplayCache::default();
        let mut stored: BTreeMap<u32, TurnReply> = BTreeMap::new();
        let mut items: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        for (n, line) in lines.iter().enumerate() {
            engine.apply_recorded_line(line);
            let last = n + 1 == lines.len();
            if saves[n] == 0 && !last {
                continue;
            }
            let saved = cache.materialize(&engine);
            if saves[n] == 1 && !last {
                cache.forget_saved(); // the save failed: the store kept what it had
                continue;
            }
            for (list, part) in items.iter_mut().zip([&saved.entries, &saved.turn_list]) {
                list.resize(part.count, String::new());
                for (position, json) in &part.changed {
                    list[*position] = json.clone();
                }
            }
            let whole = stored_text(&saved, &items);
            prop_assert_eq!(whole, engine.replay_json().to_string());
            for reply in saved.changed_replies {
                stored.insert(reply.turn, reply);
            }
            stored.retain(|turn, _| usize::try_from(*turn).unwrap() <= saved.turns);
            prop_assert_eq!(stored.values().cloned().collect::<Vec<_>>(), engine.turn_replies());
        }
    }

    // A runtime that scanned a plain chunk line once (the framer's
    // `plain_chunk_notification`) and hands over the params slice with the
    // scanned fields gets exactly what the params text alone gives.
    #[test]
    fn scanned_session_updates_apply_as_their_params_text(
        config in config_strategy(),
        lines in prop::collection::vec(line_strategy(), 0..40),
    ) {
        let mut text_only = TranscriptEngine::new(config.clone());
        let mut scanned = TranscriptEngine::new(config);
        for line in &lines {
            let Ok(members) = serde_json::from_str::<std::collections::HashMap<String, &serde_json::value::RawValue>>(line) else {
                continue;
            };
            if members.get("method").map(|m| m.get()) != Some("\"session/update\"") {
                continue;
            }
            let Some(params) = members.get("params") else { continue };
            let a = text_only.apply_session_update(params.get());
            let b = match spindle_wire::scan::plain_chunk_notification(line) {
                Some(n) => {
                    prop_assert_eq!(n.params, params.get());
                    scanned.apply_scanned_session_update(n.params, Some(n.chunk))
                }
                None => scanned.apply_scanned_session_update(params.get(), None),
            };
            prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
        prop_assert_eq!(text_only.replay_json(), scanned.replay_json());
    }

    // Params handed over alone (the canonical scanner's path when they fit)
    // apply as the whole line does (the `Value` path).
    #[test]
    fn session_update_params_apply_as_their_whole_line(
        config in config_strategy(),
        lines in prop::collection::vec(line_strategy(), 0..40),
    ) {
        let mut params_path = TranscriptEngine::new(config.clone());
        let mut line_path = TranscriptEngine::new(config);
        for line in &lines {
            let Ok(members) = serde_json::from_str::<std::collections::HashMap<String, &serde_json::value::RawValue>>(line) else {
                continue;
            };
            if members.get("method").map(|m| m.get()) != Some("\"session/update\"") {
                continue;
            }
            let Some(params) = members.get("params") else { continue };
            let mut a = params_path.apply_session_update(params.get());
            let mut b = line_path.apply_agent_line(line);
            // Only a whole line has a line number.
            a.diagnostics.iter_mut().chain(b.diagnostics.iter_mut()).for_each(|d| d.line = None);
            prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
        let entries = |e: &TranscriptEngine| format!("{:?}", e.transcript().entries);
        prop_assert_eq!(entries(&params_path), entries(&line_path));
    }

    // What the web server publishes: each batch's ops coalesced. A view that applies whole
    // batches ends every batch where the raw ops leave it, with no more ops than they had, and
    // each entry the batch touched gets one whole-entry op or at most a truncation and two
    // appends (see `coalesced_shape`).
    #[test]
    fn coalesced_batches_rebuild_what_the_raw_ops_do(
        config in config_strategy(),
        lines in prop::collection::vec(line_strategy(), 0..40),
        sizes in prop::collection::vec(1usize..16, 1..12),
    ) {
        let mut engine = TranscriptEngine::new(config);
        let mut view = View::default();
        let mut raw_view = View::default();
        let lines: Vec<String> = lines.into_iter().filter(|l| !l.trim().is_empty()).collect();
        let mut rest = lines.as_slice();
        let mut size = sizes.iter().cycle();
        while !rest.is_empty() {
            let (batch, later) = rest.split_at((*size.next().unwrap()).min(rest.len()));
            rest = later;
            let ops: Vec<RenderOp> = batch.iter().flat_map(|line| engine.apply_recorded_line(line).ops).collect();
            for op in &ops {
                raw_view.apply(op).map_err(TestCaseError::fail)?;
            }
            let coalesced = spindle_engine::coalesce_render_ops(ops.clone());
            prop_assert!(coalesced.len() <= ops.len());
            coalesced_shape(&coalesced).map_err(|e| TestCaseError::fail(format!("{e} in {coalesced:?}")))?;
            for op in &coalesced {
                view.apply(op).map_err(TestCaseError::fail)?;
            }
            prop_assert_eq!(view.rendered(), raw_view.rendered());
            prop_assert_eq!(view.rendered(), snapshot_view(&engine));
            let usage = |ops: &[RenderOp]| ops.iter().rev().find_map(|op| match op {
                RenderOp::SetUsage { usage } => Some(usage.clone()),
                _ => None,
            });
            prop_assert_eq!(usage(&coalesced), usage(&ops));
        }
    }

    #[test]
    fn chunk_splitting_never_changes_the_final_text(
        text in "\\PC{0,60}",
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        with_id in any::<bool>(),
        v2 in any::<bool>(),
    ) {
        let chars: Vec<char> = text.chars().collect();
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(chars.len() + 1)).collect();
        points.push(0);
        points.push(chars.len());
        points.sort_unstable();
        points.dedup();
        let pieces: Vec<String> = points.windows(2).map(|w| chars[w[0]..w[1]].iter().collect()).collect();
        let run = |pieces: &[String]| {
            let mut engine = TranscriptEngine::new(EngineConfig {
                protocol: if v2 { ProtocolHint::V2 } else { ProtocolHint::V1 },
                ..EngineConfig::default()
            });
            engine.apply_user_prompt(r#"[{"type":"text","text":"q"}]"#);
            for piece in pieces {
                let mut u = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": piece}});
                if with_id { u["messageId"] = json!("m1"); }
                engine.apply_agent_line(&update(u));
            }
            engine.apply_prompt_response(Ok(r#"{"stopReason":"end_turn"}"#));
            engine
        };
        let split = run(&pieces);
        let whole = run(std::slice::from_ref(&text));
        let agent_text = |e: &TranscriptEngine| e.transcript().entries.iter()
            .filter(|x| x.kind == spindle_engine::EntryKind::AgentMessage)
            .map(|x| x.text().to_owned()).collect::<String>();
        prop_assert_eq!(agent_text(&split), text.clone());
        prop_assert_eq!(agent_text(&whole), text.clone());
        prop_assert_eq!(split.final_reply(), whole.final_reply());
    }
}

/// The text a store of items holds: the shell with each list's items, joined by commas, at its
/// offset (`spindle-store`'s `replay_save.rs` reads it back the same way).
fn stored_text(saved: &spindle_engine::Materialized, items: &[Vec<String>; 2]) -> String {
    let mut text = String::new();
    let mut from = 0;
    for (part, list) in [&saved.entries, &saved.turn_list].into_iter().zip(items) {
        text.push_str(&saved.shell[from..part.at]);
        text.push_str(&list.join(","));
        from = part.at;
    }
    text.push_str(&saved.shell[from..]);
    text
}
