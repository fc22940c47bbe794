//! `/scenario client-terminal` and `/scenario client-terminal-forever`: the
//! client's terminals (v1 `terminal/*`), as a coding agent uses them.
//!
//! `client-terminal` runs [`CLIENT_TERMINAL_SCRIPT`] under `sh -c` in the
//! session's working directory with `SPINDLE_DEMO=ok` in its environment,
//! embeds the terminal in a tool call (`{"type":"terminal","terminalId"}`),
//! waits for the exit, reads the output and releases the terminal; the
//! reply reports exit status and output. `client-terminal-forever` starts a
//! command that never ends by itself ([`CLIENT_TERMINAL_FOREVER_SCRIPT`]),
//! embeds it and waits; on `session/cancel` the agent kills and releases it
//! and the turn ends `cancelled`. Without the client's `terminal` capability
//! (or in protocol v2, which has no client terminals) the reply says so.

use serde_json::{Value, json};
use spindle_wire::client_methods::{
    TERMINAL_CREATE, TERMINAL_KILL, TERMINAL_OUTPUT, TERMINAL_RELEASE, TERMINAL_WAIT_FOR_EXIT,
    fields,
};
use spindle_wire::tags::MessageKind;

use crate::program::{CallOutcome, ClientCall, ClientFlow, Program, Step};
use crate::turn_context::TurnCtx;
use crate::updates;
use crate::wire::Version;

/// The `sh -c` script of `/scenario client-terminal`; prints
/// [`CLIENT_TERMINAL_OUTPUT`].
pub const CLIENT_TERMINAL_SCRIPT: &str =
    "printf 'spindle terminal: %s\\n' \"$SPINDLE_DEMO\"; printf 'two\\nthree\\n'";
/// What [`CLIENT_TERMINAL_SCRIPT`] prints with `SPINDLE_DEMO=ok`.
pub const CLIENT_TERMINAL_OUTPUT: &str = "spindle terminal: ok\ntwo\nthree\n";
/// The `sh -c` script of `/scenario client-terminal-forever`: one line, then
/// it sleeps until killed.
pub const CLIENT_TERMINAL_FOREVER_SCRIPT: &str = "echo 'waiting until cancelled'; exec sleep 1000";
/// The output byte limit the scenarios ask for.
pub const CLIENT_TERMINAL_OUTPUT_LIMIT: u64 = 64 * 1024;
/// The reply when protocol v2 is in use.
pub const CLIENT_TERMINAL_V2_REPLY: &str = "Protocol v2 has no client terminals (terminal/create and the other terminal methods), so I ran nothing.";
/// The reply when the client does not offer terminals.
pub const CLIENT_TERMINAL_NONE_REPLY: &str =
    "The client offers no terminals (it advertised terminal: false), so I ran nothing.";

#[derive(Debug)]
enum State {
    Start,
    Create,
    Wait,
    Output { exit: Option<Value> },
    Release,
}

/// The client-terminal flows (see the module docs).
#[derive(Debug)]
pub(crate) struct TerminalFlow {
    session_id: String,
    cwd: String,
    script: &'static str,
    forever: bool,
    tool_call: String,
    terminal_id: Option<String>,
    state: State,
    succeeded: bool,
    report: Vec<String>,
}

impl TerminalFlow {
    pub(crate) fn new(ctx: &mut TurnCtx<'_>, forever: bool) -> TerminalFlow {
        TerminalFlow {
            session_id: ctx.session_id.to_owned(),
            cwd: ctx.cwd.to_owned(),
            script: if forever {
                CLIENT_TERMINAL_FOREVER_SCRIPT
            } else {
                CLIENT_TERMINAL_SCRIPT
            },
            forever,
            tool_call: ctx.state.next_id("call_"),
            terminal_id: None,
            state: State::Start,
            succeeded: false,
            report: Vec::new(),
        }
    }

    fn terminal_params(&self) -> Value {
        json!({fields::SESSION_ID: self.session_id, fields::TERMINAL_ID: self.terminal_id})
    }

    fn call(
        mut self: Box<Self>,
        steps: &mut Vec<Step>,
        method: &'static str,
        params: Value,
        next: State,
    ) {
        self.state = next;
        steps.push(Step::Call(Box::new(ClientCall {
            method,
            params,
            flow: self,
        })));
    }

    fn release(self: Box<Self>, steps: &mut Vec<Step>) {
        let params = self.terminal_params();
        self.call(steps, TERMINAL_RELEASE, params, State::Release);
    }

    fn finish(&self, ctx: &mut TurnCtx<'_>, steps: &mut Vec<Step>) {
        if !self.report.is_empty() {
            let mut p = Program::new(ctx.delay_ms);
            let id = ctx.state.next_id("msg_a");
            p.say(MessageKind::Agent, &id, &self.report.join("\n"), None);
            steps.extend(p.steps);
        }
    }
}

fn describe_exit(exit: Option<&Value>) -> String {
    let code = exit
        .and_then(|e| e.get(fields::EXIT_CODE))
        .and_then(Value::as_i64);
    let signal = exit
        .and_then(|e| e.get(fields::SIGNAL))
        .and_then(Value::as_str);
    match (code, signal) {
        (_, Some(signal)) => format!("was ended by signal {signal}"),
        (Some(code), None) => format!("exited with code {code}"),
        (None, None) => "ended without an exit status".to_owned(),
    }
}

impl ClientFlow for TerminalFlow {
    fn advance(
        mut self: Box<Self>,
        ctx: &mut TurnCtx<'_>,
        outcome: Option<CallOutcome>,
    ) -> Vec<Step> {
        let mut steps = Vec::new();
        let state = std::mem::replace(&mut self.state, State::Start);
        match (state, outcome) {
            (State::Start, _) => {
                if ctx.version() == Version::V2 {
                    self.report.push(CLIENT_TERMINAL_V2_REPLY.into());
                    self.finish(ctx, &mut steps);
                } else if !ctx.conn.terminal {
                    self.report.push(CLIENT_TERMINAL_NONE_REPLY.into());
                    self.finish(ctx, &mut steps);
                } else {
                    let title = format!("sh -c {}", self.script);
                    steps.push(Step::Update(updates::tool_call_start(
                        ctx.version(),
                        &self.tool_call,
                        &title,
                        "execute",
                        json!({"command": "sh", "args": ["-c", self.script]}),
                    )));
                    let params = json!({
                        fields::SESSION_ID: self.session_id,
                        fields::COMMAND: "sh",
                        fields::ARGS: ["-c", self.script],
                        fields::ENV: [{"name": "SPINDLE_DEMO", "value": "ok"}],
                        fields::CWD: self.cwd,
                        fields::OUTPUT_BYTE_LIMIT: CLIENT_TERMINAL_OUTPUT_LIMIT,
                    });
                    self.call(&mut steps, TERMINAL_CREATE, params, State::Create);
                }
            }
            (State::Create, Some(CallOutcome::Ok(result))) => {
                let Some(id) = result.get(fields::TERMINAL_ID).and_then(Value::as_str) else {
                    steps.push(Step::Update(updates::tool_call_status(
                        &self.tool_call,
                        "failed",
                        None,
                    )));
                    self.report
                        .push("The client answered terminal/create without a terminalId.".into());
                    self.finish(ctx, &mut steps);
                    return steps;
                };
                self.terminal_id = Some(id.to_owned());
                let embed = json!({"type": "terminal", fields::TERMINAL_ID: id});
                steps.push(Step::Update(updates::tool_call_status(
                    &self.tool_call,
                    "in_progress",
                    Some(vec![embed]),
                )));
                let params = self.terminal_params();
                self.call(&mut steps, TERMINAL_WAIT_FOR_EXIT, params, State::Wait);
            }
            (State::Create, Some(CallOutcome::Err { message, .. })) => {
                steps.push(Step::Update(updates::tool_call_status(
                    &self.tool_call,
                    "failed",
                    Some(vec![updates::tool_text(&message)]),
                )));
                self.report.push(format!(
                    "The client refused to create a terminal: {message}."
                ));
                self.finish(ctx, &mut steps);
            }
            (State::Wait, outcome) => {
                let exit = match outcome {
                    Some(CallOutcome::Ok(result)) => Some(result),
                    Some(CallOutcome::Err { message, .. }) => {
                        self.report
                            .push(format!("Waiting for the command failed: {message}."));
                        None
                    }
                    None => None,
                };
                let params = self.terminal_params();
                self.call(&mut steps, TERMINAL_OUTPUT, params, State::Output { exit });
            }
            (State::Output { exit }, outcome) => {
                let what = if self.forever {
                    "The command that was to run forever"
                } else {
                    "The command"
                };
                let mut exit = exit;
                match outcome {
                    Some(CallOutcome::Ok(result)) => {
                        if exit.is_none() {
                            exit = result
                                .get(fields::EXIT_STATUS)
                                .filter(|e| e.is_object())
                                .cloned();
                        }
                        let output = result
                            .get(fields::OUTPUT)
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        let truncated = result
                            .get(fields::TRUNCATED)
                            .and_then(Value::as_bool)
                            .unwrap_or(false);
                        self.succeeded = exit
                            .as_ref()
                            .and_then(|e| e.get(fields::EXIT_CODE))
                            .and_then(Value::as_i64)
                            == Some(0);
                        self.report.push(format!(
                            "{what} {}. It printed {} bytes{}: {:?}",
                            describe_exit(exit.as_ref()),
                            output.len(),
                            if truncated {
                                " (truncated by the client)"
                            } else {
                                ""
                            },
                            output,
                        ));
                    }
                    Some(CallOutcome::Err { message, .. }) => {
                        self.report.push(format!(
                            "{what} {}; reading its output failed: {message}.",
                            describe_exit(exit.as_ref())
                        ));
                    }
                    None => {}
                }
                self.release(&mut steps);
            }
            (State::Release, outcome) => {
                if let Some(CallOutcome::Err { message, .. }) = outcome {
                    self.report
                        .push(format!("Releasing the terminal failed: {message}."));
                }
                let status = if self.succeeded {
                    "completed"
                } else {
                    "failed"
                };
                steps.push(Step::Update(updates::tool_call_status(
                    &self.tool_call,
                    status,
                    None,
                )));
                self.finish(ctx, &mut steps);
            }
            (State::Create, None) => self.finish(ctx, &mut steps),
        }
        steps
    }

    fn on_cancel(&self) -> Vec<(&'static str, Value)> {
        match (&self.state, &self.terminal_id) {
            // Waiting for the exit (or the output): kill, then release.
            (State::Wait | State::Output { .. }, Some(_)) => vec![
                (TERMINAL_KILL, self.terminal_params()),
                (TERMINAL_RELEASE, self.terminal_params()),
            ],
            _ => Vec::new(),
        }
    }
}
