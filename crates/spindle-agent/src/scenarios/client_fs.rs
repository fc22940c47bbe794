//! `/scenario client-fs [FILE]`: the client's file system, as a coding agent
//! uses it. Reads FILE whole (`fs/read_text_file`), reads its line 2 alone
//! (`line: 2, limit: 1`), then writes it back with one line appended
//! (`fs/write_text_file`, shown as a diff first). A FILE that does not exist
//! yet is created. Every outcome is reported in the reply: written, rejected
//! by the user, refused by the client. Only the methods the client
//! advertised are used; without any (or in protocol v2, which has no client
//! file system methods) the reply says so and nothing is touched.
//!
//! FILE is relative to the session's working directory (default
//! [`CLIENT_FS_DEFAULT_FILE`]); an absolute FILE is asked for as given, so a
//! client's refusal of paths outside its workspace can be tested.

use serde_json::{Value, json};
use spindle_wire::client_methods::{
    FS_READ_TEXT_FILE, FS_WRITE_TEXT_FILE, RESOURCE_NOT_FOUND_CODE, fields,
};
use spindle_wire::tags::MessageKind;

use crate::program::{CallOutcome, ClientCall, ClientFlow, Program, Step};
use crate::turn_context::TurnCtx;
use crate::updates;
use crate::wire::Version;

/// The file `/scenario client-fs` works on when the prompt names none.
pub const CLIENT_FS_DEFAULT_FILE: &str = "spindle-demo.txt";
/// The text of a file `/scenario client-fs` creates.
pub const CLIENT_FS_NEW_FILE_TEXT: &str =
    "Hello from the Spindle reference agent.\nThis file was created through fs/write_text_file.\n";
/// The line `/scenario client-fs` appends to an existing file.
pub const CLIENT_FS_APPENDED_LINE: &str = "Edited by the Spindle reference agent.";
/// The reply when protocol v2 is in use.
pub const CLIENT_FS_V2_REPLY: &str = "Protocol v2 has no client file system methods (fs/read_text_file, fs/write_text_file), so I did not read or write anything.";

/// The absolute path of `file` in `cwd`.
pub(crate) fn path_in(cwd: &str, file: &str) -> String {
    if file.starts_with('/') {
        file.to_owned()
    } else {
        format!("{}/{file}", cwd.trim_end_matches('/'))
    }
}

/// The file content after `/scenario client-fs` changed `old`.
pub fn client_fs_changed(old: &str) -> String {
    let mut new = old.to_owned();
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str(CLIENT_FS_APPENDED_LINE);
    new.push('\n');
    new
}

#[derive(Debug)]
enum State {
    Start,
    ReadWhole,
    ReadLine { old: String },
    Write { old: Option<String>, new: String },
}

/// The client-fs flow (see the module docs).
#[derive(Debug)]
pub(crate) struct FsFlow {
    file: String,
    path: String,
    session_id: String,
    read_call: String,
    edit_call: String,
    state: State,
    report: Vec<String>,
}

impl FsFlow {
    pub(crate) fn new(ctx: &mut TurnCtx<'_>, file: Option<&str>) -> FsFlow {
        // `@notes.txt` (a mention typed as the argument) names notes.txt.
        let file = file
            .map(|f| f.trim_start_matches('@').trim_matches('"'))
            .filter(|f| !f.is_empty())
            .unwrap_or(CLIENT_FS_DEFAULT_FILE)
            .to_owned();
        FsFlow {
            path: path_in(ctx.cwd, &file),
            file,
            session_id: ctx.session_id.to_owned(),
            read_call: ctx.state.next_id("call_"),
            edit_call: ctx.state.next_id("call_"),
            state: State::Start,
            report: Vec::new(),
        }
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

    fn read(self: Box<Self>, steps: &mut Vec<Step>, line: Option<u64>, next: State) {
        let mut params = json!({fields::SESSION_ID: self.session_id, fields::PATH: self.path});
        if let Some(line) = line {
            params[fields::LINE] = json!(line);
            params[fields::LIMIT] = json!(1);
        }
        self.call(steps, FS_READ_TEXT_FILE, params, next);
    }

    /// Shows the change as a diff on the edit tool call, then writes.
    fn write(
        self: Box<Self>,
        ctx: &TurnCtx<'_>,
        steps: &mut Vec<Step>,
        old: Option<String>,
        new: String,
    ) {
        let title = format!("Edit {}", self.file);
        let mut start = updates::tool_call_start(
            ctx.version(),
            &self.edit_call,
            &title,
            "edit",
            json!({"path": self.path}),
        );
        start["locations"] = json!([{"path": self.path}]);
        steps.push(Step::Update(start));
        let diff = json!({"type": "diff", "path": self.path, "oldText": old, "newText": new});
        steps.push(Step::Update(updates::tool_call_status(
            &self.edit_call,
            "in_progress",
            Some(vec![diff]),
        )));
        let params = json!({fields::SESSION_ID: self.session_id, fields::PATH: self.path, fields::CONTENT: new});
        self.call(steps, FS_WRITE_TEXT_FILE, params, State::Write { old, new });
    }

    fn finish(&self, ctx: &mut TurnCtx<'_>, steps: &mut Vec<Step>) {
        say(ctx, steps, &self.report.join("\n"));
    }
}

fn say(ctx: &mut TurnCtx<'_>, steps: &mut Vec<Step>, text: &str) {
    let mut p = Program::new(ctx.delay_ms);
    let id = ctx.state.next_id("msg_a");
    p.say(MessageKind::Agent, &id, text, None);
    steps.extend(p.steps);
}

fn line_count(text: &str) -> usize {
    text.lines().count()
}

fn is_not_found(code: i64, message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    code == RESOURCE_NOT_FOUND_CODE
        || m.contains("not found")
        || m.contains("no such file")
        || m.contains("does not exist")
}

impl ClientFlow for FsFlow {
    fn advance(
        mut self: Box<Self>,
        ctx: &mut TurnCtx<'_>,
        outcome: Option<CallOutcome>,
    ) -> Vec<Step> {
        let mut steps = Vec::new();
        let conn = ctx.conn;
        let state = std::mem::replace(&mut self.state, State::Start);
        match (state, outcome) {
            (State::Start, _) => {
                if ctx.version() == Version::V2 {
                    say(ctx, &mut steps, CLIENT_FS_V2_REPLY);
                } else if !conn.fs_read && !conn.fs_write {
                    let text = format!(
                        "The client offers no file system access (it advertised neither fs.readTextFile nor fs.writeTextFile), so I did not read or write {}.",
                        self.file
                    );
                    say(ctx, &mut steps, &text);
                } else if conn.fs_read {
                    let title = format!("Read {}", self.file);
                    let mut start = updates::tool_call_start(
                        ctx.version(),
                        &self.read_call,
                        &title,
                        "read",
                        json!({"path": self.path}),
                    );
                    start["locations"] = json!([{"path": self.path}]);
                    steps.push(Step::Update(start));
                    steps.push(Step::Update(updates::tool_call_status(
                        &self.read_call,
                        "in_progress",
                        None,
                    )));
                    self.read(&mut steps, None, State::ReadWhole);
                } else {
                    self.report.push(format!(
                        "The client does not let me read files (fs.readTextFile is false), so I create {} without reading it.",
                        self.file
                    ));
                    self.write(ctx, &mut steps, None, CLIENT_FS_NEW_FILE_TEXT.to_owned());
                }
            }
            (State::ReadWhole, Some(CallOutcome::Ok(result))) => {
                let old = result
                    .get(fields::CONTENT)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let summary = format!("{} lines, {} bytes", line_count(&old), old.len());
                steps.push(Step::Update(updates::tool_call_status(
                    &self.read_call,
                    "completed",
                    Some(vec![updates::tool_text(&summary)]),
                )));
                self.report
                    .push(format!("I read {}: {summary}.", self.file));
                self.read(&mut steps, Some(2), State::ReadLine { old });
            }
            (State::ReadWhole, Some(CallOutcome::Err { code, message })) => {
                steps.push(Step::Update(updates::tool_call_status(
                    &self.read_call,
                    "failed",
                    Some(vec![updates::tool_text(&message)]),
                )));
                if is_not_found(code, &message) && conn.fs_write {
                    self.report.push(format!(
                        "{} does not exist yet ({message}), so I create it.",
                        self.file
                    ));
                    self.write(ctx, &mut steps, None, CLIENT_FS_NEW_FILE_TEXT.to_owned());
                } else {
                    self.report.push(format!(
                        "The client refused to read {}: {message}.",
                        self.file
                    ));
                    self.finish(ctx, &mut steps);
                }
            }
            (State::ReadLine { old }, outcome) => {
                match outcome {
                    Some(CallOutcome::Ok(result)) => {
                        let line = result
                            .get(fields::CONTENT)
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        self.report.push(format!(
                            "Line 2 alone (line 2, limit 1): {:?}.",
                            line.trim_end_matches('\n')
                        ));
                    }
                    Some(CallOutcome::Err { message, .. }) => {
                        self.report
                            .push(format!("Reading line 2 alone failed: {message}."));
                    }
                    None => {}
                }
                if conn.fs_write {
                    let new = client_fs_changed(&old);
                    self.write(ctx, &mut steps, Some(old), new);
                } else {
                    self.report.push("The client does not let me write files (fs.writeTextFile is false), so I changed nothing.".into());
                    self.finish(ctx, &mut steps);
                }
            }
            (State::Write { old, new }, outcome) => {
                match outcome {
                    Some(CallOutcome::Ok(_)) => {
                        steps.push(Step::Update(updates::tool_call_status(
                            &self.edit_call,
                            "completed",
                            None,
                        )));
                        let verb = if old.is_some() { "wrote" } else { "created" };
                        self.report.push(format!(
                            "I {verb} {}: {} lines.",
                            self.file,
                            line_count(&new)
                        ));
                    }
                    Some(CallOutcome::Err { message, .. }) => {
                        steps.push(Step::Update(updates::tool_call_status(
                            &self.edit_call,
                            "failed",
                            None,
                        )));
                        if message.to_ascii_lowercase().contains("reject") {
                            self.report.push(format!(
                                "You rejected the change to {}; it was not written.",
                                self.file
                            ));
                        } else {
                            self.report.push(format!(
                                "The client refused to write {}: {message}.",
                                self.file
                            ));
                        }
                    }
                    None => {}
                }
                self.finish(ctx, &mut steps);
            }
            (State::ReadWhole, None) => self.finish(ctx, &mut steps),
        }
        steps
    }
}
