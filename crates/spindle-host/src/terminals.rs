//! Client terminals: real child processes, each in its own process group,
//! stdout and stderr merged into one pipe (so their order is the order the
//! command wrote them), the output kept per `outputByteLimit` and streamed as
//! [`HostEvent`]s.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value, json};
use spindle_protocol::ResponseError;
use tokio::sync::{mpsc, watch};

use crate::config::HostLimits;
use crate::errors::invalid_params;
use crate::events::HostEvent;
use crate::output::{OutputBuffer, Utf8Stream};

/// How long an exit waits for the rest of the output (a background process
/// of the command may hold the pipe open).
const OUTPUT_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `kill_session_terminals` and `shutdown` wait for a killed
/// command to be reaped.
const REAP_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes read from the pipe at once.
const READ_CHUNK: usize = 16 * 1024;

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<String>,
}

impl ExitInfo {
    fn to_json(&self) -> Value {
        json!({"exitCode": self.code, "signal": self.signal})
    }
}

/// State shared by the terminal record, its reader thread and its waiter task.
#[derive(Debug)]
struct Shared {
    output: Mutex<OutputState>,
    exit: watch::Sender<Option<ExitInfo>>,
    /// The reader reached the end of the pipe.
    drained: watch::Sender<bool>,
}

#[derive(Debug)]
struct OutputState {
    buffer: OutputBuffer,
}

impl Shared {
    fn output(&self) -> MutexGuard<'_, OutputState> {
        self.output.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn exited(&self) -> bool {
        self.exit.borrow().is_some()
    }

    /// Processes of the group may still run: the leader has not exited, or
    /// something still holds the output pipe.
    fn may_run(&self) -> bool {
        !self.exited() || !*self.drained.borrow()
    }
}

#[derive(Debug)]
struct Terminal {
    session_id: String,
    /// The process group (the leader's pid).
    pgid: Option<i32>,
    shared: Arc<Shared>,
}

impl Terminal {
    fn kill(&self) {
        if let Some(pgid) = self.pgid
            && self.shared.may_run()
        {
            kill_group(pgid);
        }
    }
}

/// SIGKILL to a whole process group; a group already gone is not an error.
fn kill_group(pgid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// The terminals of one [`crate::Host`].
#[derive(Debug, Default)]
pub(crate) struct Terminals {
    map: Mutex<HashMap<String, Terminal>>,
    next_id: AtomicU64,
}

/// `terminal/create` params after checking.
pub(crate) struct CreateRequest {
    pub session_id: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub output_byte_limit: Option<u64>,
}

impl CreateRequest {
    /// Reads `command`, `args`, `env` and `outputByteLimit` (the caller
    /// resolves `cwd`).
    pub(crate) fn parse(
        session_id: String,
        params: &Map<String, Value>,
        cwd: PathBuf,
    ) -> Result<CreateRequest, ResponseError> {
        let command = match params.get("command") {
            Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
            Some(Value::String(_)) => return Err(invalid_params("command is empty")),
            Some(_) => return Err(invalid_params("command must be a string")),
            None => return Err(invalid_params("command is required")),
        };
        let args = match params.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|a| a.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| invalid_params("args must be an array of strings"))?,
            Some(_) => return Err(invalid_params("args must be an array of strings")),
        };
        let env = match params.get("env") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match (v.get("name"), v.get("value")) {
                    (Some(Value::String(n)), Some(Value::String(val)))
                        if !n.is_empty() && !n.contains(['=', '\0']) && !val.contains('\0') =>
                    {
                        Some((n.clone(), val.clone()))
                    }
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    invalid_params(
                        "env must be an array of {name, value} strings (a name without = or NUL)",
                    )
                })?,
            Some(_) => return Err(invalid_params("env must be an array")),
        };
        if command.contains('\0') || args.iter().any(|a| a.contains('\0')) {
            return Err(invalid_params("command and args must not contain NUL"));
        }
        let output_byte_limit =
            match params.get("outputByteLimit") {
                None | Some(Value::Null) => None,
                Some(v) => Some(v.as_u64().ok_or_else(|| {
                    invalid_params("outputByteLimit must be a non-negative integer")
                })?),
            };
        Ok(CreateRequest {
            session_id,
            command,
            args,
            env,
            cwd,
            output_byte_limit,
        })
    }
}

/// Shell syntax in a command given without `args`: such a command line is run
/// by `/bin/sh -c` (agents send whole command lines so).
fn needs_shell(command: &str) -> bool {
    command
        .chars()
        .any(|c| c.is_whitespace() || "|&;<>()$`\\\"'*?[]#~=%{}!".contains(c))
}

fn unknown_terminal(session_id: &str, terminal_id: &str) -> ResponseError {
    ResponseError::resource_not_found(
        &format!(
            "no terminal {terminal_id:?} in session {session_id:?} (never created, or released)"
        ),
        &[("terminalId", terminal_id)],
    )
}

impl Terminals {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Terminal>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the command: the new terminal's id.
    pub(crate) fn create(
        &self,
        req: CreateRequest,
        limits: &HostLimits,
        events: &mpsc::UnboundedSender<HostEvent>,
    ) -> Result<String, ResponseError> {
        if self.map().len() >= limits.max_terminals {
            return Err(ResponseError::internal_error(&format!(
                "{} terminals are open, the most allowed; release some first",
                limits.max_terminals
            )));
        }
        let limit = req
            .output_byte_limit
            .map_or(limits.default_output_byte_limit, |l| {
                usize::try_from(l).unwrap_or(usize::MAX)
            })
            .min(limits.max_output_byte_limit);
        let mut cmd = if req.args.is_empty() && needs_shell(&req.command) {
            let mut sh = tokio::process::Command::new("/bin/sh");
            sh.arg("-c").arg(&req.command);
            sh
        } else {
            let mut c = tokio::process::Command::new(&req.command);
            c.args(&req.args);
            c
        };
        let (reader, writer) = std::io::pipe().map_err(|e| start_error(&req.command, &e))?;
        let writer_too = writer
            .try_clone()
            .map_err(|e| start_error(&req.command, &e))?;
        cmd.envs(req.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&req.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(writer_too))
            .process_group(0)
            .kill_on_drop(true);
        let spawned = cmd.spawn();
        // The command holds the pipe's write ends: drop them here, so the
        // reader sees the end once the command's processes close theirs.
        drop(cmd);
        let mut child = spawned.map_err(|e| start_error(&req.command, &e))?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        let id = format!("term-{}", self.next_id.fetch_add(1, Ordering::Relaxed) + 1);
        let shared = Arc::new(Shared {
            output: Mutex::new(OutputState {
                buffer: OutputBuffer::new(limit),
            }),
            exit: watch::Sender::new(None),
            drained: watch::Sender::new(false),
        });
        spawn_reader(
            reader,
            Arc::clone(&shared),
            events.clone(),
            req.session_id.clone(),
            id.clone(),
            limits.max_display_output_bytes,
        );
        let waiter_shared = Arc::clone(&shared);
        let waiter_events = events.clone();
        let (session_id, terminal_id) = (req.session_id.clone(), id.clone());
        tokio::spawn(async move {
            let status = child.wait().await;
            let mut drained = waiter_shared.drained.subscribe();
            let _ = tokio::time::timeout(OUTPUT_DRAIN_TIMEOUT, drained.wait_for(|d| *d)).await;
            let info = match status {
                Ok(status) => exit_info(status),
                Err(_) => ExitInfo {
                    code: None,
                    signal: None,
                },
            };
            waiter_shared.exit.send_replace(Some(info.clone()));
            let _ = waiter_events.send(HostEvent::TerminalExited {
                session_id,
                terminal_id,
                exit_code: info.code,
                signal: info.signal,
            });
        });
        self.map().insert(
            id.clone(),
            Terminal {
                session_id: req.session_id,
                pgid,
                shared,
            },
        );
        Ok(id)
    }

    fn shared(&self, session_id: &str, terminal_id: &str) -> Result<Arc<Shared>, ResponseError> {
        match self.map().get(terminal_id) {
            Some(t) if t.session_id == session_id => Ok(Arc::clone(&t.shared)),
            _ => Err(unknown_terminal(session_id, terminal_id)),
        }
    }

    /// `terminal/output`.
    pub(crate) fn output(
        &self,
        session_id: &str,
        terminal_id: &str,
    ) -> Result<Value, ResponseError> {
        let shared = self.shared(session_id, terminal_id)?;
        let (output, truncated) = {
            let state = shared.output();
            (state.buffer.text(), state.buffer.truncated())
        };
        let mut result = json!({"output": output, "truncated": truncated});
        if let Some(exit) = shared.exit.borrow().as_ref() {
            result["exitStatus"] = exit.to_json();
        }
        Ok(result)
    }

    /// `terminal/wait_for_exit`: resolves when the command exits.
    pub(crate) async fn wait_for_exit(
        &self,
        session_id: &str,
        terminal_id: &str,
    ) -> Result<Value, ResponseError> {
        let mut exit = self.shared(session_id, terminal_id)?.exit.subscribe();
        let info = exit
            .wait_for(Option::is_some)
            .await
            .map_err(|_| unknown_terminal(session_id, terminal_id))?
            .clone();
        Ok(info.map_or(Value::Null, |i| i.to_json()))
    }

    /// `terminal/kill`: the whole process group; the terminal stays.
    pub(crate) fn kill(&self, session_id: &str, terminal_id: &str) -> Result<Value, ResponseError> {
        let map = self.map();
        match map.get(terminal_id) {
            Some(t) if t.session_id == session_id => {
                t.kill();
                Ok(json!({}))
            }
            _ => Err(unknown_terminal(session_id, terminal_id)),
        }
    }

    /// `terminal/release`: kill if running, and forget.
    pub(crate) fn release(
        &self,
        session_id: &str,
        terminal_id: &str,
    ) -> Result<Value, ResponseError> {
        let mut map = self.map();
        match map.get(terminal_id) {
            Some(t) if t.session_id == session_id => {
                t.kill();
                map.remove(terminal_id);
                Ok(json!({}))
            }
            _ => Err(unknown_terminal(session_id, terminal_id)),
        }
    }

    /// Kills the terminals of one session (or all, with `None`) and waits
    /// until each command is reaped; with `release` they are forgotten too.
    pub(crate) async fn kill_all(&self, session_id: Option<&str>, release: bool) {
        let mut waits = Vec::new();
        {
            let mut map = self.map();
            for t in map.values() {
                if session_id.is_none_or(|s| s == t.session_id) {
                    t.kill();
                    waits.push(t.shared.exit.subscribe());
                }
            }
            if release {
                map.retain(|_, t| session_id.is_some_and(|s| s != t.session_id));
            }
        }
        for mut exit in waits {
            let _ = tokio::time::timeout(REAP_TIMEOUT, exit.wait_for(Option::is_some)).await;
        }
    }

    /// Kills every process group that may still run (no waiting): for drop.
    pub(crate) fn kill_now(&self) {
        for t in self.map().values() {
            t.kill();
        }
    }
}

fn start_error(command: &str, e: &std::io::Error) -> ResponseError {
    ResponseError::internal_error(&format!("could not start {command:?}: {e}"))
}

fn exit_info(status: std::process::ExitStatus) -> ExitInfo {
    use std::os::unix::process::ExitStatusExt;
    ExitInfo {
        code: status.code(),
        signal: status.signal().map(signal_name),
    }
}

/// `SIGKILL`, `SIGTERM`, ...; `SIG<n>` for others.
fn signal_name(signal: i32) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => return format!("SIG{signal}"),
    };
    name.to_owned()
}

/// A thread reading the merged output until the end of the pipe.
fn spawn_reader(
    mut reader: std::io::PipeReader,
    shared: Arc<Shared>,
    events: mpsc::UnboundedSender<HostEvent>,
    session_id: String,
    terminal_id: String,
    display_limit: usize,
) {
    let fallback = Arc::clone(&shared);
    let body = move || {
        let mut buf = vec![0u8; READ_CHUNK];
        let mut stream = Utf8Stream::default();
        let mut shown = 0usize;
        // Bytes shown so far; past the limit, the text is cut at a character
        // boundary and one notice ends the display.
        let show = |mut text: String, shown: &mut usize| {
            if text.is_empty() || *shown > display_limit {
                return;
            }
            let room = display_limit - *shown;
            if text.len() > room {
                let mut cut = room;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                text.push_str(&format!(
                    "\n[spindle: more output than {display_limit} bytes; the rest is not shown]\n"
                ));
                *shown = display_limit + 1;
            } else {
                *shown += text.len();
            }
            let _ = events.send(HostEvent::TerminalOutput {
                session_id: session_id.clone(),
                terminal_id: terminal_id.clone(),
                text,
            });
        };
        loop {
            let n = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            shared.output().buffer.push(&buf[..n]);
            show(stream.push(&buf[..n]), &mut shown);
        }
        show(stream.finish(), &mut shown);
        shared.drained.send_replace(true);
    };
    if std::thread::Builder::new()
        .name("spindle-terminal-output".into())
        .spawn(body)
        .is_err()
    {
        // No thread: the output cannot be read; let the exit come anyway.
        fallback.drained.send_replace(true);
    }
}
