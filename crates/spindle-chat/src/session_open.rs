//! Starting the agent and opening the session: `initialize`, sign-in when
//! `session/new` answers `auth_required` (`--auth`, or a question on the
//! terminal), a new session or an earlier one (`--resume`: `session/load`
//! when offered, whose replay becomes the transcript, else v1
//! `session/resume`), and `--list`.

use std::ffi::OsString;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;
use serde_json::value::RawValue;
use spindle_engine::{EngineConfig, ProtocolHint, TranscriptEngine};
use spindle_host::mcp_servers::{self, McpServerConfig, McpTransportSupport, select_mcp_servers};
use spindle_protocol::transport::{ConnectionOptions, SpawnOptions, spawn_child};
use spindle_protocol::{AcpClient, ClientError, ClientEvents, ClientOptions, InitializeOutcome};
use tokio::sync::mpsc;

use super::args::{ChatArgs, exit};
use super::controls::Controls;
use super::outcome::{
    AGENT_STDERR_TAIL_LINES, AgentErrorText, report_agent_exit, report_diagnostics,
    sleep_until_deadline,
};
use super::recorder::Recorder;
use super::remote;
use super::services::{self, Services};

/// How the session was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opened {
    /// `session/new`.
    New,
    /// `--resume` through `session/resume` without a replay (v1).
    Resumed,
    /// `--resume` with the history replayed (v1 `session/load`, v2
    /// `session/resume` from the start): the replay is the transcript so far.
    Loaded,
    /// `--attach URL SESSION` (`session/attach`): the history as `--history` asked, replayed
    /// like a loaded session's; as an observer when the server says so.
    Attached { observer: bool },
}

impl Opened {
    /// The session's history comes as a replay before the session opens.
    pub(crate) fn replays(self) -> bool {
        matches!(self, Opened::Loaded | Opened::Attached { .. })
    }
}

/// What `connect` ends with: a session, or the exit status (already reported).
pub(crate) type Connect = anyhow::Result<Result<Connected, u8>>;

/// Starts the agent, initializes, signs in if need be and opens a session
/// (or, with `--list`, lists the agent's sessions and returns `Err(status)`).
pub(crate) async fn connect(
    args: &ChatArgs,
    command: &[OsString],
    deadline: Option<tokio::time::Instant>,
) -> Connect {
    let mcp_servers = match &args.mcp_config {
        Some(path) => match mcp_servers::load_mcp_config(path) {
            Ok(config) => {
                for warning in &config.warnings {
                    eprintln!("spindle chat: {warning}");
                }
                config.servers
            }
            Err(error) => {
                eprintln!("spindle chat: {error}");
                return Ok(Err(exit::USAGE));
            }
        },
        None => Vec::new(),
    };
    let (tap, recorder) = match &args.record {
        Some(path) => {
            let file = std::fs::File::create(path)
                .with_context(|| format!("creating the recording {}", path.display()))?;
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(Recorder::new(rx, file, path.clone())))
        }
        None => (None, None),
    };
    // The agent runs in a process group of its own: the terminal's Ctrl-C reaches only the
    // chat, which turns it into `session/cancel`.
    // Plain text chunks are scanned once, from the pipe to the transcript.
    let spawn = SpawnOptions {
        own_process_group: true,
        stderr_tail_lines: AGENT_STDERR_TAIL_LINES,
        connection: ConnectionOptions {
            scan_chunk_updates: true,
            ..ConnectionOptions::default()
        },
        env: args.agent_env.clone(),
        ..SpawnOptions::default()
    };
    let remote_url = args
        .attach_session
        .as_ref()
        .map(|(url, _)| url.as_str())
        .or(args.connect.as_deref());
    let (connection, agent) = match remote_url {
        Some(url) => {
            let connected = tokio::select! {
                connected = remote::connect(
                    url,
                    args.transport,
                    args.attach_session.is_some(),
                    spawn.connection.clone(),
                ) => connected,
                () = sleep_until_deadline(deadline) => {
                    eprintln!("spindle chat: --timeout expired while connecting to {url}");
                    return Ok(Err(exit::TIMEOUT));
                }
            };
            match connected {
                Ok(connected) => connected,
                Err(error) => {
                    eprintln!("spindle chat: {error:#}");
                    return Ok(Err(exit::AGENT_EXITED));
                }
            }
        }
        None => {
            let (connection, child) = spawn_child(command, spawn).with_context(|| {
                format!(
                    "starting the agent {:?}",
                    command
                        .iter()
                        .map(|a| a.to_string_lossy())
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            })?;
            (connection, remote::AgentEnd::Child(child))
        }
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| std::env::temp_dir());
    let additional = match additional_directories(&args.add_dir, &cwd) {
        Ok(dirs) => dirs,
        Err(message) => {
            eprintln!("spindle chat: {message}");
            return Ok(Err(exit::USAGE));
        }
    };
    let host = services::Services::new(args, &cwd, &additional);
    let mut options = ClientOptions {
        protocol: args.protocol,
        spindle_extensions: true,
        display_terminal_output: true,
        elicitation: true,
        wire_tap: tap,
        ..ClientOptions::default()
    };
    host.advertise(&mut options);
    let (client, events) = AcpClient::new(connection, options);
    let mut connected = Connected {
        client: client.clone(),
        events,
        session_id: String::new(),
        protocol_version: 1,
        agent,
        recorder,
        controls: Controls::default(),
        init: None,
        cwd,
        server_cwd: None,
        opened: Opened::New,
        services: host,
        notices: Vec::new(),
        mcp_servers: Value::Array(Vec::new()),
        additional_directories: additional
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect(),
        deleted: false,
    };
    let setup = open_session(args, &mcp_servers, &client, &mut connected);
    let interrupted = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let result = tokio::select! {
        result = setup => result,
        () = interrupted => {
            report_diagnostics(&mut connected.events);
            eprintln!("spindle chat: interrupted while starting the agent");
            return Ok(Err(exit::CANCELLED));
        }
        () = sleep_until_deadline(deadline) => {
            report_diagnostics(&mut connected.events);
            eprintln!("spindle chat: --timeout expired while starting the agent");
            return Ok(Err(exit::TIMEOUT));
        }
    };
    match result {
        Ok(Ok(())) => {
            connected.protocol_version = client.protocol_version().unwrap_or(1);
            Ok(Ok(connected))
        }
        Ok(Err(code)) => {
            report_diagnostics(&mut connected.events);
            connected.finish_recording()?;
            Ok(Err(code))
        }
        Err(error) => {
            let code = match error {
                ClientError::Disconnected => exit::AGENT_EXITED,
                _ => exit::AGENT_ERROR,
            };
            report_diagnostics(&mut connected.events);
            AgentErrorText::from_client_error("could not open a session with the agent", &error)
                .eprint();
            report_agent_exit(&connected.agent).await;
            connected.finish_recording()?;
            Ok(Err(code))
        }
    }
}

/// `initialize`, then `--list`, `--resume` or `session/new` (with sign-in).
/// `Ok(Err(code))`: done, reported (a listing, or a refusal explained).
async fn open_session(
    args: &ChatArgs,
    mcp_servers: &[McpServerConfig],
    client: &AcpClient,
    conn: &mut Connected,
) -> Result<Result<(), u8>, ClientError> {
    let init = client.initialize().await?;
    conn.init = Some(init.clone());
    let cwd = conn.cwd.to_string_lossy().into_owned();
    if args.list {
        return list_sessions(client, &init).await;
    }
    let mcp = select_mcp_servers(mcp_servers, McpTransportSupport::of_agent(&init));
    conn.notices
        .extend(mcp.skipped.iter().map(ToString::to_string));
    conn.notices
        .extend(init.additional_directories_note(&conn.additional_directories));
    conn.notices
        .extend(init.compatibility_notes.iter().cloned());
    conn.mcp_servers = mcp.mcp_servers.clone();
    let mcp = &mcp.mcp_servers;
    let dirs = conn.additional_directories.clone();
    if let Some(method) = &args.auth
        && let Err(code) = authenticate(client, &init, method).await?
    {
        return Ok(Err(code));
    }
    let mut signed_in = args.auth.is_some();
    loop {
        let attempt = match (&args.attach_session, &args.resume) {
            (Some((_, id)), _) => remote::attach(client, id, args.role, args.history)
                .await
                .map(|raw| {
                    let observer = serde_json::from_str::<Value>(raw.get()).is_ok_and(|r| {
                        r[spindle_wire::remote::ROLE] == spindle_wire::remote::ROLE_OBSERVER
                    });
                    (id.clone(), raw, Opened::Attached { observer })
                }),
            (None, Some(id)) => match resume(client, &init, id, &cwd, mcp, &dirs).await {
                Some(attempt) => attempt,
                None => return Ok(Err(exit::USAGE)),
            },
            (None, None) => client
                .new_session_with_directories(&cwd, mcp, &dirs)
                .await
                .map(|(session_id, raw)| (session_id, raw, Opened::New)),
        };
        match attempt {
            Ok((session_id, raw, opened)) => {
                conn.session_id = session_id;
                conn.opened = opened;
                conn.adopt_session_result(&serde_json::from_str(raw.get()).unwrap_or_default());
                return Ok(Ok(()));
            }
            Err(error) if error.is_auth_required() && !signed_in => {
                let Some(method) = ask_auth_method(args, &init) else {
                    return Ok(Err(exit::AGENT_ERROR));
                };
                if let Err(code) = authenticate(client, &init, &method).await? {
                    return Ok(Err(code));
                }
                signed_in = true;
            }
            Err(error) if error.is_auth_required() => {
                AgentErrorText::from_client_error(
                    "the agent still asks for authentication after signing in",
                    &error,
                )
                .eprint();
                return Ok(Err(exit::AGENT_ERROR));
            }
            Err(ClientError::Rpc(error)) if args.attach_session.is_some() => {
                let id = args.attach_session.as_ref().map(|(_, id)| id.as_str());
                let context = format!("could not attach to session {}", id.unwrap_or_default());
                AgentErrorText::from_response(&context, &error).eprint();
                return Ok(Err(exit::AGENT_ERROR));
            }
            Err(ClientError::Rpc(error)) if args.resume.is_some() => {
                let id = args.resume.as_deref().unwrap_or_default();
                AgentErrorText::from_response(&format!("could not open session {id}"), &error)
                    .eprint();
                return Ok(Err(exit::AGENT_ERROR));
            }
            Err(error) => return Err(error),
        }
    }
}

/// The agent's sign-in methods as lines.
pub(crate) fn auth_method_lines(init: &InitializeOutcome) -> Vec<String> {
    let methods = init.auth_methods();
    if methods.is_empty() {
        return vec!["the agent advertises no sign-in methods".to_owned()];
    }
    let mut lines = vec!["sign-in methods of the agent:".to_owned()];
    for (i, m) in methods.iter().enumerate() {
        let mut line = format!("  {}) {}  {}", i + 1, m.id, m.name);
        if let Some(d) = &m.description {
            line.push_str(&format!(" - {d}"));
        }
        if !m.via_authenticate() {
            line.push_str(&format!(" [type {}: run the agent's own sign-in]", m.kind));
        }
        lines.push(line);
    }
    lines
}

/// `session/new` said `auth_required`: the methods are shown; on a terminal
/// the user picks one (number or id), elsewhere `--auth` is explained.
fn ask_auth_method(args: &ChatArgs, init: &InitializeOutcome) -> Option<String> {
    eprintln!("spindle chat: the agent requires authentication before it opens a session");
    for line in auth_method_lines(init) {
        eprintln!("{line}");
    }
    let methods = init.auth_methods();
    if methods.is_empty() {
        return None;
    }
    if args.prompt.is_some() || !std::io::stdin().is_terminal() {
        eprintln!("spindle chat: run again with --auth METHOD_ID to sign in");
        return None;
    }
    loop {
        eprint!("sign in with (number or id, empty to give up): ");
        let mut typed = String::new();
        match std::io::stdin().lock().read_line(&mut typed) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        let typed = typed.trim();
        if typed.is_empty() {
            return None;
        }
        let by_number = typed
            .parse::<usize>()
            .ok()
            .and_then(|n| methods.get(n.checked_sub(1)?));
        match by_number.or_else(|| methods.iter().find(|m| m.id == typed)) {
            Some(m) => return Some(m.id.clone()),
            None => eprintln!("no such method: {typed}"),
        }
    }
}

/// `authenticate` with `method`; a refusal is explained (`Err(code)`).
pub(crate) async fn authenticate(
    client: &AcpClient,
    init: &InitializeOutcome,
    method: &str,
) -> Result<Result<(), u8>, ClientError> {
    match client.authenticate(method).await {
        Ok(_) => {
            eprintln!("spindle chat: signed in with {method}");
            Ok(Ok(()))
        }
        Err(ClientError::Unsupported(what)) => {
            eprintln!("spindle chat: cannot sign in: the agent does not support {what}");
            for line in auth_method_lines(init) {
                eprintln!("{line}");
            }
            Ok(Err(exit::USAGE))
        }
        Err(ClientError::Rpc(error)) => {
            AgentErrorText::from_response(&format!("signing in with {method} failed"), &error)
                .eprint();
            Ok(Err(exit::AGENT_ERROR))
        }
        Err(other) => Err(other),
    }
}

/// `--add-dir` values made absolute (from `cwd`) and canonical; each must
/// be an existing directory. Repeats are dropped.
fn additional_directories(dirs: &[PathBuf], cwd: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        let absolute = if dir.is_absolute() {
            dir.clone()
        } else {
            cwd.join(dir)
        };
        if !absolute.is_dir() {
            let why = if absolute.exists() {
                "not a directory"
            } else {
                "no such directory"
            };
            return Err(format!("--add-dir {}: {why}", dir.display()));
        }
        // Canonical: no `..` and no link left for the agent to puzzle over.
        let absolute = std::fs::canonicalize(&absolute)
            .map_err(|e| format!("--add-dir {}: {e}", dir.display()))?;
        if !out.contains(&absolute) {
            out.push(absolute);
        }
    }
    Ok(out)
}

/// What opening a session answered: its id, the raw result, how it was opened.
type Attempt = Result<(String, Box<RawValue>, Opened), ClientError>;

/// `--resume ID`: the history replayed when the agent can (v1
/// `session/load`, v2 `session/resume` from the start), else v1
/// `session/resume` (no replay). A new chat process holds no transcript of
/// its own, so the replay is the only way to show what was said.
/// `None`: the agent offers neither (reported).
async fn resume(
    client: &AcpClient,
    init: &InitializeOutcome,
    id: &str,
    cwd: &str,
    mcp_servers: &Value,
    dirs: &[String],
) -> Option<Attempt> {
    let v1 = init.protocol_version < 2;
    let (result, opened) = if init.can_load_session() {
        (
            client
                .load_session_with_directories(id, cwd, mcp_servers, dirs)
                .await,
            Opened::Loaded,
        )
    } else if v1 && init.can_resume_session() {
        (
            client
                .resume_session_with_directories(id, cwd, mcp_servers, dirs, None)
                .await,
            Opened::Resumed,
        )
    } else {
        eprintln!(
            "spindle chat: --resume: the agent offers neither session/resume nor session/load"
        );
        return None;
    };
    Some(result.map(|raw| (id.to_owned(), raw, opened)))
}

/// `--list`: the agent's sessions, every page, as a table on stdout.
async fn list_sessions(
    client: &AcpClient,
    init: &InitializeOutcome,
) -> Result<Result<(), u8>, ClientError> {
    if !init.can_list_sessions() {
        eprintln!("spindle chat: --list: the agent does not offer session/list");
        return Ok(Err(exit::USAGE));
    }
    let mut cursor: Option<String> = None;
    let mut rows = Vec::new();
    // A cursor seen twice ends the walk: an agent that repeats a page must not loop forever.
    let mut seen = std::collections::HashSet::new();
    loop {
        let page = match client.list_sessions(None, cursor.as_deref()).await {
            Ok(page) => page,
            Err(ClientError::Rpc(error)) => {
                AgentErrorText::from_response("session/list failed", &error).eprint();
                return Ok(Err(exit::AGENT_ERROR));
            }
            Err(other) => return Err(other),
        };
        rows.extend(page.sessions);
        match page.next_cursor {
            Some(next) if seen.insert(next.clone()) => cursor = Some(next),
            _ => break,
        }
    }
    if rows.is_empty() {
        println!("(the agent has no sessions)");
        return Ok(Err(exit::END_TURN));
    }
    println!("SESSION\tUPDATED\tTITLE\tCWD");
    for s in rows {
        let clean = |t: Option<&str>| super::render::sanitize(t.unwrap_or("-")).replace('\t', " ");
        println!(
            "{}\t{}\t{}\t{}",
            clean(Some(&s.session_id)),
            clean(s.updated_at.as_deref()),
            clean(s.title.as_deref()),
            clean(Some(&s.cwd)),
        );
    }
    Ok(Err(exit::END_TURN))
}

/// A started agent with an open session.
#[derive(Debug)]
pub(crate) struct Connected {
    pub client: AcpClient,
    pub events: ClientEvents,
    pub session_id: String,
    /// The negotiated version (1 or 2).
    pub protocol_version: u16,
    pub agent: remote::AgentEnd,
    pub recorder: Option<Recorder>,
    /// The session's modes and config options.
    pub controls: Controls,
    /// What `initialize` established.
    pub init: Option<InitializeOutcome>,
    /// The working directory (the session's `cwd` and the services' root).
    pub cwd: PathBuf,
    /// Where a remote session runs on the server when the server said (`_meta.spindle.cwd` of
    /// its result) and that is not [`Connected::cwd`] (the server refused that one).
    pub server_cwd: Option<String>,
    /// How the session was opened.
    pub opened: Opened,
    /// Files and terminals for the agent.
    pub services: Services,
    /// What opening the session has to tell the user (MCP servers left out,
    /// additional directories the agent does not accept), shown by the
    /// front end (stderr before a full screen would be hidden).
    pub notices: Vec<String>,
    /// The `mcpServers` list the session was opened with (a fork gets it too).
    pub mcp_servers: Value,
    /// The `--add-dir` directories, absolute (sent as `additionalDirectories`
    /// when the agent accepts them; the file services allow them either way).
    pub additional_directories: Vec<String>,
    /// The session was deleted (`/delete`): nothing to resume.
    pub deleted: bool,
}

impl Connected {
    /// What a session result tells: the agent's modes and options, and where a remote session
    /// runs when that is not this chat's folder (kept when the result does not say).
    pub fn adopt_session_result(&mut self, result: &Value) {
        self.controls = Controls::from_session_result(result);
        let server_cwd = result
            .get("_meta")
            .and_then(|meta| meta.get("spindle"))
            .and_then(|spindle| spindle.get(spindle_wire::remote::SESSION_CWD))
            .and_then(Value::as_str);
        if let Some(cwd) = server_cwd {
            let here = std::fs::canonicalize(&self.cwd).unwrap_or_else(|_| self.cwd.clone());
            self.server_cwd = (std::path::Path::new(cwd) != here).then(|| cwd.to_owned());
        }
    }

    /// A transcript engine for this session's protocol version.
    pub fn engine(&self) -> TranscriptEngine {
        TranscriptEngine::new(EngineConfig {
            protocol: if self.protocol_version == 2 {
                ProtocolHint::V2
            } else {
                ProtocolHint::V1
            },
            ..EngineConfig::default()
        })
    }

    /// Writes what the wire tap holds to the recording.
    pub fn drain_recording(&mut self) -> anyhow::Result<()> {
        match &mut self.recorder {
            Some(recorder) => recorder.drain(),
            None => Ok(()),
        }
    }

    /// Records a local line (see [`Recorder::write_local`]).
    pub fn record_local(&mut self, line: &str) -> anyhow::Result<()> {
        match &mut self.recorder {
            Some(recorder) => recorder.write_local(line),
            None => Ok(()),
        }
    }

    /// Flushes the recording; call last, after the agent is done.
    pub fn finish_recording(&mut self) -> anyhow::Result<()> {
        match &mut self.recorder {
            Some(recorder) => {
                recorder.drain()?;
                recorder
                    .out
                    .flush()
                    .with_context(|| format!("writing {}", recorder.path.display()))
            }
            None => Ok(()),
        }
    }
}
