//! Scenarios whose text is taken back or rewritten while it streams:
//! metadata-routed thoughts, refine, denoise, speculative decoding and
//! snapshot-style chunks. v2 rewrites with whole-message upserts, v1 with the
//! clear extension when the client opted in, and degrades without it.

use serde_json::json;
use spindle_wire::routing::{PLAN_LABELS, SEGMENT_FIELD, THOUGHT_LABELS};
use spindle_wire::tags::MessageKind;

use crate::program::{Program, word_chunks};
use crate::turn_context::TurnCtx;
use crate::updates;
use crate::wire::{Fnv1a64, Version};

/// Final reply of `/scenario thoughts`: the untagged chunks only.
pub const THOUGHTS_REPLY: &str =
    "Here is the answer. Thought: this line is part of the reply and must stay in it. Done.";

pub(super) fn thoughts(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    let thought = ctx.state.next_id("msg_t");
    p.say(
        MessageKind::Thought,
        &thought,
        "The user wants to see thoughts. Native thought chunks go to the thought pane.",
        None,
    );
    let id = ctx.state.next_id("msg_a");
    // Routing by metadata (docs/src/routing.md): chunks of the reply message
    // tagged as thought or plan by metadata belong to other panes; the text "Thought:" in an untagged
    // chunk is reply text.
    let pieces: [(&str, Option<&str>); 5] = [
        ("Here is the answer. ", None),
        (
            "(checking that metadata routes this aside) ",
            Some(THOUGHT_LABELS[1]),
        ),
        (
            "Thought: this line is part of the reply and must stay in it. ",
            None,
        ),
        ("Plan: answer, then stop. ", Some(PLAN_LABELS[0])),
        ("Done.", None),
    ];
    for (text, segment) in pieces {
        for piece in word_chunks(text) {
            let mut update = updates::chunk(
                MessageKind::Agent,
                &id,
                piece,
                segment.map(updates::segment_meta),
            );
            if let Some(segment) = segment {
                update[SEGMENT_FIELD] = json!(segment);
            }
            p.update(update);
            p.pause(1);
        }
    }
    p.update(ctx.usage(60));
    p.end("end_turn");
    p
}

/// Final reply of `/scenario refine`.
pub const REFINE_REPLY: &str =
    "The capital of Australia is Canberra. It has been the capital since 1913.";

pub(super) fn refine(ctx: &mut TurnCtx<'_>, variant: Option<&str>) -> Program {
    let v = ctx.version();
    let mut p = Program::new(ctx.delay_ms);
    let thought = ctx.state.next_id("msg_t");
    p.say(
        MessageKind::Thought,
        &thought,
        "Sydney is the largest city, so maybe it is the capital.",
        None,
    );
    // Thought rollback.
    let thought2 = match v {
        Version::V2 => {
            p.update(updates::whole_message(MessageKind::Thought, &thought, &[]));
            thought.clone()
        }
        Version::V1 if ctx.v1_clear(MessageKind::Thought, variant) => {
            p.update(updates::clear(MessageKind::Thought, &thought));
            thought.clone()
        }
        // Degrade: a plain v1 client cannot retract; the correction is a new thought.
        Version::V1 => ctx.state.next_id("msg_t"),
    };
    p.say(
        MessageKind::Thought,
        &thought2,
        "No: the capital is Canberra, chosen as a compromise.",
        None,
    );
    let id = ctx.state.next_id("msg_a");
    p.say(
        MessageKind::Agent,
        &id,
        "Draft: the capital of Australia is Sydney.",
        None,
    );
    p.pause(2);
    let first = "The capital of Australia is Canberra";
    let fixed = "The capital of Australia is Canberra.";
    let tail = " It has been the capital since 1913.";
    match v {
        Version::V2 => {
            // `content: []` clears, chunks append, an array replaces.
            p.update(updates::whole_message(MessageKind::Agent, &id, &[]));
            p.say(MessageKind::Agent, &id, first, None);
            p.pause(2);
            p.update(updates::whole_message(
                MessageKind::Agent,
                &id,
                &[updates::text_block(fixed)],
            ));
            p.say(MessageKind::Agent, &id, tail, None);
        }
        Version::V1 if ctx.v1_clear(MessageKind::Agent, variant) => {
            p.update(updates::clear(MessageKind::Agent, &id));
            p.say(MessageKind::Agent, &id, first, None);
            p.pause(2);
            p.update(updates::clear(MessageKind::Agent, &id));
            p.update(updates::chunk(MessageKind::Agent, &id, fixed, None));
            p.say(MessageKind::Agent, &id, tail, None);
        }
        Version::V1 => {
            // Degrade: the corrected text follows as a new message.
            let id2 = ctx.state.next_id("msg_a");
            p.say(MessageKind::Agent, &id2, REFINE_REPLY, None);
        }
    }
    p.update(ctx.usage(80));
    p.end("end_turn");
    p
}

/// The paragraph `/scenario denoise` converges to.
pub const DENOISE_REPLY: &str = "Diffusion models paint a whole paragraph at once and then refine every word over several steps until the text is clean.";

const DENOISE_STEPS: u64 = 5;

/// The paragraph after `step` of [`DENOISE_STEPS`] denoising steps: masked
/// words are shown as blocks, and the last step is the clean text.
pub fn denoise_step(step: u64) -> String {
    let words: Vec<&str> = DENOISE_REPLY.split(' ').collect();
    let shown: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let rank = Fnv1a64::hash(&format!("{i}{w}")) % DENOISE_STEPS;
            if rank <= step {
                (*w).to_owned()
            } else {
                "\u{2591}".repeat(w.chars().count())
            }
        })
        .collect();
    shown.join(" ")
}

pub(super) fn denoise(ctx: &mut TurnCtx<'_>, variant: Option<&str>) -> Program {
    let v = ctx.version();
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    match v {
        Version::V2 => {
            for step in 0..DENOISE_STEPS {
                let text = denoise_step(step);
                p.update(updates::whole_message(
                    MessageKind::Agent,
                    &id,
                    &[updates::text_block(&text)],
                ));
                p.pause(3);
            }
        }
        Version::V1 if ctx.v1_clear(MessageKind::Agent, variant) => {
            for step in 0..DENOISE_STEPS {
                if step > 0 {
                    p.update(updates::clear(MessageKind::Agent, &id));
                }
                p.update(updates::chunk(
                    MessageKind::Agent,
                    &id,
                    &denoise_step(step),
                    None,
                ));
                p.pause(3);
            }
        }
        // Degrade: without a way to retract, only the clean text is streamed.
        Version::V1 => p.say(MessageKind::Agent, &id, DENOISE_REPLY, None),
    }
    p.update(ctx.usage(40));
    p.end("end_turn");
    p
}

/// Final reply of `/scenario speculative`.
pub const SPECULATIVE_REPLY: &str = "The answer is 4, because 2 + 2 = 4.";

pub(super) fn speculative(ctx: &mut TurnCtx<'_>, variant: Option<&str>) -> Program {
    let v = ctx.version();
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    let accepted = "The answer is";
    p.say(MessageKind::Agent, &id, accepted, None);
    // The draft model's tokens, rejected by the verifier.
    p.say(MessageKind::Agent, &id, " 42, because", None);
    p.pause(2);
    let rest = " 4, because 2 + 2 = 4.";
    match v {
        Version::V2 => {
            p.update(updates::whole_message(
                MessageKind::Agent,
                &id,
                &[updates::text_block(accepted)],
            ));
            p.say(MessageKind::Agent, &id, rest, None);
        }
        Version::V1 if ctx.v1_clear(MessageKind::Agent, variant) => {
            p.update(updates::clear(MessageKind::Agent, &id));
            p.update(updates::chunk(MessageKind::Agent, &id, accepted, None));
            p.say(MessageKind::Agent, &id, rest, None);
        }
        Version::V1 => {
            let id2 = ctx.state.next_id("msg_a");
            p.say(MessageKind::Agent, &id2, SPECULATIVE_REPLY, None);
        }
    }
    p.update(ctx.usage(30));
    p.end("end_turn");
    p
}

/// Final reply of `/scenario snapshot`.
pub const SNAPSHOT_REPLY: &str = "Snapshot streaming sends the whole text so far in every chunk.";

pub(super) fn snapshot(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    let meta = updates::snapshot_meta();
    let mut so_far = String::new();
    for piece in word_chunks(SNAPSHOT_REPLY) {
        so_far.push_str(piece);
        p.update(updates::chunk(
            MessageKind::Agent,
            &id,
            &so_far,
            Some(meta.clone()),
        ));
        p.pause(1);
    }
    p.update(ctx.usage(30));
    p.end("end_turn");
    p
}
