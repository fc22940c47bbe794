//! The built-in behaviours, chosen by the prompt text.
//!
//! Every function here is pure: it turns the prompt and the session's
//! counters (a [`TurnCtx`] the core fills) into a [`Program`]. Texts are
//! fixed or derived from the prompt, so two runs with the same prompts emit
//! the same bytes. This module holds the catalogue (commands, scenario names,
//! modes) and the dispatch; the scenarios themselves live in the submodules.

mod catalogue;
mod client_fs;
mod client_terminal;
mod context;
mod echo;
mod elicit;
mod failures;
mod rewrite;
mod tools;

pub use catalogue::{
    COMMANDS, CONFIG, CRASH_EXIT_CODE, ConfigSpec, EFFORTS, MODELS, MODES, SCENARIOS,
    config_options, config_spec, modes_state,
};
pub use client_fs::{
    CLIENT_FS_APPENDED_LINE, CLIENT_FS_DEFAULT_FILE, CLIENT_FS_NEW_FILE_TEXT, CLIENT_FS_V2_REPLY,
    client_fs_changed,
};
pub use client_terminal::{
    CLIENT_TERMINAL_FOREVER_SCRIPT, CLIENT_TERMINAL_NONE_REPLY, CLIENT_TERMINAL_OUTPUT,
    CLIENT_TERMINAL_OUTPUT_LIMIT, CLIENT_TERMINAL_SCRIPT, CLIENT_TERMINAL_V2_REPLY,
};
pub use context::{CLEAR_REPLY, COMPACT_REPLY};
pub use echo::{describe_block, echo_content_reply};
pub(crate) use elicit::advertised_elicitation;
pub use elicit::{ELICIT_FORM_MESSAGE, ELICIT_NONE_REPLY, ELICIT_TOOL_TITLE, ELICIT_URL};
pub use failures::{ERROR_MESSAGE, ERROR_TEXT, STALL_TEXT, WAIT_NEXT_TEXT};
pub use rewrite::{
    DENOISE_REPLY, REFINE_REPLY, SNAPSHOT_REPLY, SPECULATIVE_REPLY, THOUGHTS_REPLY, denoise_step,
};
pub use tools::{
    BACKGROUND_LATE_MESSAGE, BACKGROUND_REPLY, TOOLS_REPLY_ALLOWED, TOOLS_REPLY_REJECTED,
};

use serde_json::{Value, json};

use crate::program::{Program, Step, word_chunks};
use crate::stream_gen::{StreamGenerator, StreamMix};
use crate::turn_context::TurnCtx;
use crate::updates;
use crate::wire::{Fnv1a64, Version};
use context::{clear, compact};
use failures::{crash, error, stall, wait_next};
use rewrite::{denoise, refine, snapshot, speculative, thoughts};
use spindle_wire::tags::{self, MessageKind};
use tools::{background, tools};

/// The updates sent right after `session/new`.
pub(crate) fn session_start(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    p.update(updates::available_commands(ctx.version(), &COMMANDS));
    if ctx.version() == Version::V2 {
        // v2 lets the agent speak first: one whole-message upsert.
        let id = ctx.state.next_id("msg_a");
        let text = "Hello! I am the Spindle reference agent. Type /help for commands.";
        p.update(updates::whole_message(
            MessageKind::Agent,
            &id,
            &[updates::text_block(text)],
        ));
    }
    p
}

/// Joins the prompt's text blocks (resource links count as their URI).
pub fn prompt_text(blocks: &[Value]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    parts.push(t.to_owned());
                }
            }
            Some("resource_link") => {
                if let Some(uri) = block.get("uri").and_then(Value::as_str) {
                    parts.push(uri.to_owned());
                }
            }
            Some("resource") => {
                if let Some(uri) = block.pointer("/resource/uri").and_then(Value::as_str) {
                    parts.push(uri.to_owned());
                }
            }
            _ => {}
        }
    }
    parts.join("\n").trim().to_owned()
}

const FACTS: [&str; 6] = [
    "Streaming text arrives in small pieces, and a good client joins them without flicker.",
    "Every session update carries the session id, so one connection can serve many sessions.",
    "In protocol v2 the prompt is answered as soon as it is accepted; idle ends the turn.",
    "A whole-message update replaces the content that chunks built up for the same message id.",
    "Thoughts belong in their own pane and never in the final reply.",
    "A clear boundary tells the client that the agent forgot everything before it.",
];

/// The deterministic reply to a plain prompt.
pub fn plain_reply(prompt: &str) -> String {
    let words = prompt.split_whitespace().count();
    let fact = FACTS[(Fnv1a64::hash(prompt) % FACTS.len() as u64) as usize];
    let plural = if words == 1 { "" } else { "s" };
    format!("You said: \"{prompt}\" ({words} word{plural}). {fact}")
}

/// Builds the program for one prompt.
pub(crate) fn build_turn(ctx: &mut TurnCtx<'_>, session_id: &str, text: &str) -> Program {
    ctx.state.turns += 1;
    let mut words = text.split_whitespace();
    match words.next() {
        Some("/help") => help(ctx),
        Some("/clear") => clear(ctx, words.next()),
        Some("/compact") => compact(ctx),
        Some("/stream") => stream(ctx, session_id, words.next(), words.next()),
        Some("/scenario") => {
            let name = words.next().unwrap_or("");
            scenario(ctx, name, words.next())
        }
        Some(cmd) if cmd.starts_with('/') && !cmd[1..].contains('/') => {
            let reply = format!("Unknown command {cmd}. Type /help for the list of commands.");
            simple_reply(ctx, &reply)
        }
        _ => plain(ctx, text),
    }
}

fn scenario(ctx: &mut TurnCtx<'_>, name: &str, variant: Option<&str>) -> Program {
    match name {
        "plain" => plain(ctx, "Plain streaming demo"),
        "thoughts" => thoughts(ctx),
        "refine" => refine(ctx, variant),
        "denoise" => denoise(ctx, variant),
        "speculative" => speculative(ctx, variant),
        "snapshot" => snapshot(ctx),
        "tools" => tools(ctx),
        "terminal" => crate::terminal::terminal(ctx),
        "background" => background(ctx),
        "slow" => slow(ctx),
        "notice" => notice(ctx),
        "error" => error(ctx),
        "hostile" => crate::hostile::hostile(ctx),
        "crash" => crash(ctx),
        "stall" => stall(ctx),
        "wait-next" => wait_next(ctx),
        "client-fs" => client_program(ctx, |ctx, p| {
            p.steps
                .push(Step::Flow(Box::new(client_fs::FsFlow::new(ctx, variant))));
        }),
        "client-terminal" | "client-terminal-forever" => {
            let forever = name == "client-terminal-forever";
            client_program(ctx, |ctx, p| {
                let flow = client_terminal::TerminalFlow::new(ctx, forever);
                p.steps.push(Step::Flow(Box::new(flow)));
            })
        }
        "elicit-form" | "elicit-url" => client_program(ctx, |ctx, p| {
            let flow = elicit::ElicitFlow::new(ctx, name == "elicit-url");
            p.steps.push(Step::Flow(Box::new(flow)));
        }),
        "elicit-tool" => client_program(ctx, |ctx, p| {
            let flow = elicit::ElicitFlow::in_tool_call(ctx);
            p.steps.push(Step::Flow(Box::new(flow)));
        }),
        "echo-content" => simple_reply(ctx, &echo_content_reply(ctx.blocks)),
        "mcp-servers" => {
            let reply = crate::mcp_report::reply(&ctx.state.mcp_servers);
            simple_reply(ctx, &reply)
        }
        "client-all" => client_program(ctx, |ctx, p| {
            p.steps
                .push(Step::Flow(Box::new(client_fs::FsFlow::new(ctx, None))));
            let flow = client_terminal::TerminalFlow::new(ctx, false);
            p.steps.push(Step::Flow(Box::new(flow)));
            let id = ctx.state.next_id("msg_a");
            p.say(
                MessageKind::Agent,
                &id,
                &echo_content_reply(ctx.blocks),
                None,
            );
        }),
        other => {
            let reply = format!(
                "Unknown scenario \"{other}\". Scenarios: {}.",
                SCENARIOS.join(", ")
            );
            simple_reply(ctx, &reply)
        }
    }
}

/// A turn of client-method flows that `fill` adds, ended with `end_turn`.
fn client_program(
    ctx: &mut TurnCtx<'_>,
    fill: impl FnOnce(&mut TurnCtx<'_>, &mut Program),
) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    fill(ctx, &mut p);
    p.update(ctx.usage(60));
    p.end("end_turn");
    p
}

pub(crate) fn simple_reply(ctx: &mut TurnCtx<'_>, reply: &str) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    p.say(MessageKind::Agent, &id, reply, None);
    p.update(ctx.usage(20 + reply.len() as u64 / 4));
    p.end("end_turn");
    p
}

/// A plain reply; with a model or effort other than the defaults it ends
/// with them (`[model spindle-deep, effort high]`), so a client can see its
/// choice take effect.
fn plain(ctx: &mut TurnCtx<'_>, prompt: &str) -> Program {
    let mut reply = plain_reply(prompt);
    let (model, effort) = (&ctx.state.model, &ctx.state.effort);
    if model != CONFIG[1].default || effort != CONFIG[2].default {
        reply.push_str(&format!(" [model {model}, effort {effort}]"));
    }
    simple_reply(ctx, &reply)
}

/// The text `/help` replies with.
pub fn help_text() -> String {
    let mut text = String::from("Commands:\n");
    for c in COMMANDS {
        let hint = c.hint.map(|h| format!(" {h}")).unwrap_or_default();
        text.push_str(&format!("- /{}{hint}: {}\n", c.name, c.description));
    }
    text.push_str("Any other prompt gets a deterministic plain reply.");
    text
}

fn help(ctx: &mut TurnCtx<'_>) -> Program {
    simple_reply(ctx, &help_text())
}

/// Final reply of `/scenario slow`.
pub const SLOW_REPLY: &str = "Slow streaming: every word arrives after a pause, so you can watch the reply grow and cancel it halfway through if you like.";

fn slow(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    for piece in word_chunks(SLOW_REPLY) {
        p.update(updates::chunk(MessageKind::Agent, &id, piece, None));
        p.pause(5);
    }
    p.update(ctx.usage(40));
    p.end("end_turn");
    p
}

/// Final reply of `/scenario notice` when notices are sent as updates.
pub const NOTICE_REPLY: &str = "I sent two notices: an info and a warning.";
/// The notices: (severity, title, description).
pub const NOTICES: [(&str, &str, &str); 2] = [
    (
        "info",
        "Index refreshed",
        "The workspace index was rebuilt in the background.",
    ),
    (
        "warning",
        "Rate limit close",
        "80% of this hour's request budget is used.",
    ),
];

fn notice(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    // v1 typed decoders only accept `notice` from clients advertising
    // `session.notices`; others get the notices as reply text.
    if ctx.version() == Version::V2 || ctx.conn.notices {
        for (severity, title, description) in NOTICES {
            p.update(json!({
                "sessionUpdate": tags::NOTICE,
                "severity": severity,
                "title": title,
                "description": description,
            }));
            p.pause(2);
        }
        p.say(MessageKind::Agent, &id, NOTICE_REPLY, None);
    } else {
        let text: Vec<String> = NOTICES
            .iter()
            .map(|(severity, title, description)| format!("[{severity}] {title}: {description}"))
            .collect();
        p.say(MessageKind::Agent, &id, &text.join("\n"), None);
    }
    p.end("end_turn");
    p
}

fn stream(
    ctx: &mut TurnCtx<'_>,
    session_id: &str,
    count: Option<&str>,
    mix: Option<&str>,
) -> Program {
    let Some(n) = count.and_then(|c| c.replace('_', "").parse::<u64>().ok()) else {
        return simple_reply(ctx, "Usage: /stream N [mixed|refine|snapshot|chunks]");
    };
    let Some(mix) = StreamMix::parse(mix.unwrap_or("mixed")) else {
        return simple_reply(ctx, "Unknown mix. Mixes: mixed, refine, snapshot, chunks.");
    };
    let mut p = Program::new(ctx.delay_ms);
    p.steps.push(Step::Stream(Box::new(StreamGenerator::new(
        ctx.version(),
        mix,
        session_id,
        n,
    ))));
    p.end("end_turn");
    p
}
