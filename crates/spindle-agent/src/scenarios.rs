//! The built-in behaviours, chosen by the prompt text.
//!
//! Every function here is pure: it turns the prompt and the session's
//! counters into a [`Program`]. Texts are fixed or derived from the prompt,
//! so two runs with the same prompts emit the same bytes.

use serde_json::{Value, json};

use crate::core::Connection;
use crate::program::{PermissionStep, Program, Step, word_chunks};
use crate::stream_gen::{StreamGenerator, StreamMix};
use crate::updates::{self, CommandSpec};
use crate::wire::{Fnv1a64, Version};
use spindle_wire::extensions::Extension;
use spindle_wire::routing::{PLAN_LABELS, SEGMENT_FIELD, THOUGHT_LABELS};
use spindle_wire::tags::{self, MessageKind};

/// The slash commands advertised in `available_commands_update`.
pub const COMMANDS: [CommandSpec; 5] = [
    CommandSpec {
        name: "help",
        description: "List the commands and scenarios of the reference agent",
        hint: None,
    },
    CommandSpec {
        name: "scenario",
        description: "Run a scripted behaviour (refine, thoughts, tools, ...)",
        hint: Some(
            "plain | thoughts | refine [ext|plain] | denoise [ext|plain] | speculative [ext|plain] | snapshot | tools | terminal | background | slow | notice | error | hostile | crash | stall",
        ),
    },
    CommandSpec {
        name: "stream",
        description: "Write N generated session updates as fast as possible",
        hint: Some("N [mixed|refine|snapshot|chunks]"),
    },
    CommandSpec {
        name: "clear",
        description: "Clear the conversation context (usage reset + clear boundary)",
        hint: Some("[session_cleared|meta]"),
    },
    CommandSpec {
        name: "compact",
        description: "Compact the conversation context",
        hint: None,
    },
];

/// Scenario names understood by `/scenario`.
pub const SCENARIOS: [&str; 15] = [
    "plain",
    "thoughts",
    "refine",
    "denoise",
    "speculative",
    "snapshot",
    "tools",
    "terminal",
    "background",
    "slow",
    "notice",
    "error",
    "hostile",
    "crash",
    "stall",
];

/// Session modes (v1 `session/set_mode`).
pub const MODES: [(&str, &str); 2] = [("default", "Default"), ("plan", "Plan only")];

/// Exit code of `/scenario crash`.
pub const CRASH_EXIT_CODE: i32 = 3;

/// The v1 `modes` object of `session/new`.
pub fn modes_state(current: &str) -> Value {
    let modes: Vec<Value> = MODES
        .iter()
        .map(|(id, name)| json!({"id": id, "name": name}))
        .collect();
    json!({"currentModeId": current, "availableModes": modes})
}

/// The session's config options: one `mode` select. v1 names the key
/// `id`, v2 `configId`.
pub fn config_options(version: Version, current: &str) -> Value {
    let options: Vec<Value> = MODES
        .iter()
        .map(|(value, name)| json!({"value": value, "name": name}))
        .collect();
    let key = match version {
        Version::V1 => "id",
        Version::V2 => "configId",
    };
    json!([{
        key: "mode",
        "name": "Mode",
        "category": "mode",
        "type": "select",
        "currentValue": current,
        "options": options,
    }])
}

/// Per-session counters that scenarios read and advance.
#[derive(Debug, Clone)]
pub struct SessionState {
    next_id: u64,
    /// Context tokens in use, as reported by `usage_update`.
    pub used: u64,
    /// Turns since the session started or was last cleared.
    pub turns: u64,
    /// Current mode id.
    pub mode: String,
    /// Position in the `--script` file.
    pub script_pos: usize,
}

impl SessionState {
    /// A new session's counters.
    pub fn new() -> Self {
        SessionState {
            next_id: 1,
            used: 0,
            turns: 0,
            mode: "default".to_owned(),
            script_pos: 0,
        }
    }

    /// A fresh agent-owned id such as `msg_a3`.
    pub fn next_id(&mut self, prefix: &str) -> String {
        let id = format!("{prefix}{}", self.next_id);
        self.next_id += 1;
        id
    }
}

impl Default for SessionState {
    fn default() -> Self {
        Self::new()
    }
}

/// What a scenario may read and advance while building a turn.
#[derive(Debug)]
pub struct TurnCtx<'a> {
    pub(crate) conn: Connection,
    pub(crate) state: &'a mut SessionState,
    pub(crate) delay_ms: u64,
    pub(crate) context_size: u64,
}

impl TurnCtx<'_> {
    fn version(&self) -> Version {
        self.conn.version
    }

    fn program(&self) -> Program {
        Program::new(self.delay_ms)
    }

    /// Adds the turn's tokens and reports usage.
    fn usage(&mut self, program: &mut Program, tokens: u64) {
        self.state.used = (self.state.used + tokens).min(self.context_size);
        program.update(updates::usage(self.state.used, self.context_size));
    }

    /// Whether a v1 client gets the clear extension: opted in, or forced by
    /// the scenario variant (`ext`), and not refused by it (`plain`).
    fn v1_clear(&self, kind: MessageKind, variant: Option<&str>) -> bool {
        match variant {
            Some("ext") => true,
            Some("plain") => false,
            _ => match kind {
                MessageKind::Thought => self.conn.ext.contains(Extension::AgentThoughtClear),
                _ => self.conn.ext.contains(Extension::AgentMessageClear),
            },
        }
    }
}

/// The updates sent right after `session/new`.
pub fn session_start(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = ctx.program();
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
pub fn build_turn(ctx: &mut TurnCtx<'_>, session_id: &str, text: &str) -> Program {
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
        other => {
            let reply = format!(
                "Unknown scenario \"{other}\". Scenarios: {}.",
                SCENARIOS.join(", ")
            );
            simple_reply(ctx, &reply)
        }
    }
}

pub(crate) fn simple_reply(ctx: &mut TurnCtx<'_>, reply: &str) -> Program {
    let mut p = ctx.program();
    let id = ctx.state.next_id("msg_a");
    p.say(MessageKind::Agent, &id, reply, None);
    ctx.usage(&mut p, 20 + reply.len() as u64 / 4);
    p.end("end_turn");
    p
}

fn plain(ctx: &mut TurnCtx<'_>, prompt: &str) -> Program {
    simple_reply(ctx, &plain_reply(prompt))
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

/// Final reply of `/scenario thoughts`: the untagged chunks only.
pub const THOUGHTS_REPLY: &str =
    "Here is the answer. Thought: this line is part of the reply and must stay in it. Done.";

fn thoughts(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = ctx.program();
    let thought = ctx.state.next_id("msg_t");
    p.say(
        MessageKind::Thought,
        &thought,
        "The user wants to see thoughts. Native thought chunks go to the thought pane.",
        None,
    );
    let id = ctx.state.next_id("msg_a");
    // Seed 004: chunks of the reply message tagged as thought or plan by
    // metadata belong to other panes; the text "Thought:" in an untagged
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
    ctx.usage(&mut p, 60);
    p.end("end_turn");
    p
}

/// Final reply of `/scenario refine`.
pub const REFINE_REPLY: &str =
    "The capital of Australia is Canberra. It has been the capital since 1913.";

fn refine(ctx: &mut TurnCtx<'_>, variant: Option<&str>) -> Program {
    let v = ctx.version();
    let mut p = ctx.program();
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
    ctx.usage(&mut p, 80);
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

fn denoise(ctx: &mut TurnCtx<'_>, variant: Option<&str>) -> Program {
    let v = ctx.version();
    let mut p = ctx.program();
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
    ctx.usage(&mut p, 40);
    p.end("end_turn");
    p
}

/// Final reply of `/scenario speculative`.
pub const SPECULATIVE_REPLY: &str = "The answer is 4, because 2 + 2 = 4.";

fn speculative(ctx: &mut TurnCtx<'_>, variant: Option<&str>) -> Program {
    let v = ctx.version();
    let mut p = ctx.program();
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
    ctx.usage(&mut p, 30);
    p.end("end_turn");
    p
}

/// Final reply of `/scenario snapshot`.
pub const SNAPSHOT_REPLY: &str = "Snapshot streaming sends the whole text so far in every chunk.";

fn snapshot(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = ctx.program();
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
    ctx.usage(&mut p, 30);
    p.end("end_turn");
    p
}

/// Final reply of `/scenario tools` when the client allows the edit.
pub const TOOLS_REPLY_ALLOWED: &str =
    "I will read the file and then edit it. I changed the greeting in src/main.rs.";
/// Final reply of `/scenario tools` when the client rejects the edit.
pub const TOOLS_REPLY_REJECTED: &str =
    "I will read the file and then edit it. Understood: I left src/main.rs unchanged.";

fn tools(ctx: &mut TurnCtx<'_>) -> Program {
    let v = ctx.version();
    let mut p = ctx.program();
    let plan_id = ctx.state.next_id("plan_");
    let plan = |read: &str, edit: &str, sum: &str| {
        updates::plan(
            v,
            &plan_id,
            &[
                ("Read src/main.rs", read),
                ("Edit the greeting", edit),
                ("Summarise the change", sum),
            ],
        )
    };
    p.update(plan("in_progress", "pending", "pending"));
    let id = ctx.state.next_id("msg_a");
    p.say(
        MessageKind::Agent,
        &id,
        "I will read the file and then edit it. ",
        None,
    );
    let old = "fn main() {\n    println!(\"hello\");\n}\n";
    let new = "fn main() {\n    println!(\"hello, spindle\");\n}\n";

    let read = ctx.state.next_id("call_");
    p.update(updates::tool_call_start(
        v,
        &read,
        "Read src/main.rs",
        "read",
        json!({"path": "/workspace/src/main.rs"}),
    ));
    p.update(updates::tool_call_status(&read, "in_progress", None));
    p.pause(2);
    match v {
        Version::V2 => {
            for line in old.split_inclusive('\n') {
                p.update(updates::tool_content_chunk(&read, updates::tool_text(line)));
                p.pause(1);
            }
            p.update(updates::tool_call_status(&read, "completed", None));
        }
        Version::V1 => p.update(updates::tool_call_status(
            &read,
            "completed",
            Some(vec![updates::tool_text(old)]),
        )),
    }
    p.update(plan("completed", "in_progress", "pending"));

    let edit = ctx.state.next_id("call_");
    let title = "Edit src/main.rs";
    p.update(updates::tool_call_start(
        v,
        &edit,
        title,
        "edit",
        json!({"path": "/workspace/src/main.rs", "newText": new}),
    ));
    let mut allow = Program::new(ctx.delay_ms);
    allow.update(updates::tool_call_status(&edit, "in_progress", None));
    allow.pause(2);
    allow.update(updates::tool_call_status(
        &edit,
        "completed",
        Some(vec![updates::tool_diff(
            v,
            "/workspace/src/main.rs",
            old,
            new,
        )]),
    ));
    allow.update(plan("completed", "completed", "completed"));
    allow.say(
        MessageKind::Agent,
        &id,
        "I changed the greeting in src/main.rs.",
        None,
    );
    let mut reject = Program::new(ctx.delay_ms);
    reject.update(updates::tool_call_status(
        &edit,
        "failed",
        Some(vec![updates::tool_text("Permission denied by the user.")]),
    ));
    reject.update(plan("completed", "pending", "completed"));
    reject.say(
        MessageKind::Agent,
        &id,
        "Understood: I left src/main.rs unchanged.",
        None,
    );
    p.steps.push(Step::Permission(Box::new(PermissionStep {
        tool_call_id: edit.clone(),
        title: title.to_owned(),
        kind: "edit".to_owned(),
        on_allow: allow.steps,
        on_reject: reject.steps,
    })));
    ctx.usage(&mut p, 120);
    p.end("end_turn");
    p
}

/// Final reply of `/scenario background` (the turn's message).
pub const BACKGROUND_REPLY: &str =
    "Started indexing in the background; I will report when it is done.";
/// The message sent after the turn ended.
pub const BACKGROUND_LATE_MESSAGE: &str = "Background task finished: indexed 42 files.";

fn background(ctx: &mut TurnCtx<'_>) -> Program {
    let v = ctx.version();
    let mut p = ctx.program();
    let id = ctx.state.next_id("msg_a");
    p.say(MessageKind::Agent, &id, BACKGROUND_REPLY, None);
    let task = ctx.state.next_id("call_");
    p.update(updates::tool_call_start(
        v,
        &task,
        "Index the repository",
        "search",
        json!({"path": "."}),
    ));
    p.update(updates::tool_call_status(&task, "in_progress", None));
    ctx.usage(&mut p, 40);
    p.end("end_turn");
    // After the turn: v2 sends these while idle; v1 after the prompt response.
    p.pause(5);
    p.update(updates::tool_call_status(
        &task,
        "completed",
        Some(vec![updates::tool_text("Indexed 42 files.")]),
    ));
    let late = ctx.state.next_id("msg_a");
    match v {
        Version::V2 => p.update(updates::whole_message(
            MessageKind::Agent,
            &late,
            &[updates::text_block(BACKGROUND_LATE_MESSAGE)],
        )),
        Version::V1 => p.say(MessageKind::Agent, &late, BACKGROUND_LATE_MESSAGE, None),
    }
    p.update(json!({"sessionUpdate": tags::SESSION_INFO_UPDATE, "title": "Indexed repository"}));
    p
}

/// Final reply of `/scenario slow`.
pub const SLOW_REPLY: &str = "Slow streaming: every word arrives after a pause, so you can watch the reply grow and cancel it halfway through if you like.";

fn slow(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = ctx.program();
    let id = ctx.state.next_id("msg_a");
    for piece in word_chunks(SLOW_REPLY) {
        p.update(updates::chunk(MessageKind::Agent, &id, piece, None));
        p.pause(5);
    }
    ctx.usage(&mut p, 40);
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
    let mut p = ctx.program();
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

/// Text streamed by `/scenario error` before the turn fails.
pub const ERROR_TEXT: &str = "Looking that up in the model backend... ";
/// The error message the failed turn carries.
pub const ERROR_MESSAGE: &str = "simulated failure: the model backend is unavailable";

fn error(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = ctx.program();
    let id = ctx.state.next_id("msg_a");
    p.say(MessageKind::Agent, &id, ERROR_TEXT, None);
    p.steps.push(Step::Fail(ERROR_MESSAGE.to_owned()));
    p
}

fn crash(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = ctx.program();
    let id = ctx.state.next_id("msg_a");
    p.say(
        MessageKind::Agent,
        &id,
        "This turn will stop abruptly in the middle of a",
        None,
    );
    p.steps.push(Step::Exit(CRASH_EXIT_CODE));
    p
}

/// Text streamed by `/scenario stall` before it stops.
pub const STALL_TEXT: &str = "Working on it; this turn stalls until you cancel it.";

fn stall(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = ctx.program();
    let id = ctx.state.next_id("msg_a");
    p.say(MessageKind::Agent, &id, STALL_TEXT, None);
    p.steps.push(Step::Stall);
    // Reached only if the stall is lifted without a cancel (never today).
    p.end("end_turn");
    p
}

/// Text of the chunk that carries the `/clear` boundary.
pub const CLEAR_REPLY: &str = "Context cleared. I remember nothing from before this point.";

fn clear(ctx: &mut TurnCtx<'_>, variant: Option<&str>) -> Program {
    let v = ctx.version();
    let mut p = ctx.program();
    // Seed 003: usage reset, the boundary signal, then a command refresh.
    ctx.state.used = 0;
    ctx.state.turns = 0;
    p.update(updates::usage(0, ctx.context_size));
    let use_update = match variant {
        Some(tags::SESSION_CLEARED) => true,
        Some("meta") => false,
        _ => ctx.conn.ext.contains(Extension::SessionCleared),
    };
    let id = ctx.state.next_id("msg_a");
    if use_update {
        p.update(updates::session_cleared());
        p.say(MessageKind::Agent, &id, CLEAR_REPLY, None);
    } else {
        // `_meta` is open in every ACP version, so option 1 is safe to send
        // to any client; it rides on the first chunk after the clear.
        let mut first = true;
        for piece in word_chunks(CLEAR_REPLY) {
            let meta = first.then(updates::clear_boundary_meta);
            first = false;
            p.update(updates::chunk(MessageKind::Agent, &id, piece, meta));
            p.pause(1);
        }
    }
    p.update(updates::available_commands(v, &COMMANDS));
    p.end("end_turn");
    p
}

/// Reply of `/compact`.
pub const COMPACT_REPLY: &str = "Compacting completed.";

fn compact(ctx: &mut TurnCtx<'_>) -> Program {
    let mut p = ctx.program();
    let summary = format!(
        "Summary of {} earlier turn(s): the user explored the reference agent's scenarios.",
        ctx.state.turns.saturating_sub(1)
    );
    let native = ctx.version() == Version::V2 || ctx.conn.compaction;
    if native {
        let cid = ctx.state.next_id("compaction_");
        p.update(updates::compaction(&cid, "in_progress"));
        for piece in word_chunks(&summary) {
            p.update(updates::compaction_chunk(&cid, piece));
            p.pause(1);
        }
        p.update(updates::compaction(&cid, "completed"));
    }
    ctx.state.used /= 10;
    p.update(updates::usage(ctx.state.used, ctx.context_size));
    let id = ctx.state.next_id("msg_a");
    let reply = if native {
        COMPACT_REPLY.to_owned()
    } else {
        // v1 without `session.compaction`: the summary goes into the reply.
        format!("{COMPACT_REPLY} {summary}")
    };
    p.say(MessageKind::Agent, &id, &reply, None);
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
    let mut p = ctx.program();
    p.steps.push(Step::Stream(Box::new(StreamGenerator::new(
        ctx.version(),
        mix,
        session_id,
        n,
    ))));
    p.end("end_turn");
    p
}
