//! Fuzz target: the line decoder plus the engine. Input bytes are split into
//! lines and fed as a recording; the first byte picks the configuration and
//! how each line enters (recorded, received, sent, params, prompt response).
//! Invariants checked besides "no panic": replay with render ops off gives
//! the same transcript, and the ops rebuild exactly the snapshot's text.

#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use spindle_engine::{EngineConfig, ProtocolHint, RenderOp, StreamingPolicy, TranscriptEngine};

fn apply_view(view: &mut (Vec<String>, HashMap<String, Vec<u16>>), op: &RenderOp) {
    let (order, text) = view;
    match op {
        RenderOp::InsertEntry { index, entry } => {
            assert_eq!(*index, order.len(), "entries are only appended");
            order.push(entry.id.clone());
            text.insert(entry.id.clone(), entry.text.encode_utf16().collect());
        }
        RenderOp::UpdateEntry { id, entry } => {
            *text.get_mut(id).expect("update of a known entry") =
                entry.text.encode_utf16().collect();
        }
        RenderOp::TruncateText { id, len } => {
            let t = text.get_mut(id).expect("truncate of a known entry");
            assert!(*len < t.len(), "truncate shortens");
            assert!(
                !(0xDC00..0xE000).contains(&t[*len]),
                "no split surrogate pair"
            );
            t.truncate(*len);
        }
        RenderOp::AppendText { id, text: add } => {
            text.get_mut(id)
                .expect("append to a known entry")
                .extend(add.encode_utf16());
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let config = EngineConfig {
        protocol: [ProtocolHint::Auto, ProtocolHint::V1, ProtocolHint::V2][(mode % 3) as usize],
        streaming: if mode & 4 != 0 {
            StreamingPolicy::Snapshot
        } else {
            StreamingPolicy::Delta
        },
    };
    let input = String::from_utf8_lossy(rest);
    let mut live = TranscriptEngine::new(config.clone());
    let mut batch = TranscriptEngine::new(config);
    batch.set_render_ops(false);
    let mut view = (Vec::new(), HashMap::new());
    for (i, line) in input.lines().enumerate() {
        // Mode bits 3..4 route some lines through the other entry points.
        let applied = match (mode >> 3) % 4 {
            1 if i % 3 == 1 => {
                batch.apply_session_update(line);
                live.apply_session_update(line)
            }
            2 if i % 4 == 3 => {
                batch.apply_prompt_response(Err(line));
                live.apply_prompt_response(Err(line))
            }
            3 if i % 5 == 4 => {
                batch.apply_user_prompt(line);
                live.apply_user_prompt(line)
            }
            _ => {
                batch.apply_recorded_line(line);
                live.apply_recorded_line(line)
            }
        };
        for op in &applied.ops {
            apply_view(&mut view, op);
        }
    }
    assert_eq!(live.replay_json(), batch.replay_json());
    let mut snapshot = (Vec::new(), HashMap::new());
    for op in live.render_snapshot() {
        apply_view(&mut snapshot, &op);
    }
    assert_eq!(view, snapshot);
    let _ = live.final_reply();
    let _ = live.turn_replies();
    let _ = live.render_text();
    let _ = serde_json::to_string(&live.render_snapshot());
});
