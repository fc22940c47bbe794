//! Starting a session's agent: the settings every session's agent starts with, the client
//! options `spindle serve` presents, and how a web session reaches a ready agent session.
//!
//! The ACP handshake itself (`initialize`, v2 with fallback to v1, capability checks) is
//! [`spindle_protocol::ClientCore`]'s. What is decided here is the web session's policy once the
//! agent is initialized: continue the agent session it had before (resume, else load) or open a
//! new one, and what to tell the user when that is not possible.

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::value::RawValue;
use serde_json::{Value, json};
use spindle_host::mcp_servers::{McpServerConfig, McpTransportSupport, select_mcp_servers};
use spindle_protocol::{ClientCore, ClientError, ClientInfo, ClientOptions, ProtocolChoice};

use crate::error::SessionError;

/// One agent sessions may run: `spindle serve` offers several, and each session runs the one
/// it was created with (recorded in the store, so every replica and every restart starts the
/// same one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentChoice {
    /// Its id: unique among the server's agents (`[a-z][a-z0-9-]*`, a registry id).
    pub id: String,
    /// What the page shows.
    pub name: String,
    /// Its version (empty when unknown).
    pub version: String,
    /// The command line that starts it (unused with [`AgentSettings::remote`]).
    pub command: Vec<OsString>,
    /// Environment variables set for it, over the server's own.
    pub env: Vec<(String, String)>,
}

impl AgentChoice {
    /// `{"id", "name", "version"}`: how the page and the API name the agent.
    pub fn describe(&self) -> serde_json::Value {
        json!({ "id": self.id, "name": self.name, "version": self.version })
    }

    /// What the store records of it.
    pub fn recorded(&self) -> spindle_store::SessionAgent {
        spindle_store::SessionAgent {
            id: self.id.clone(),
            version: self.version.clone(),
        }
    }

    pub(crate) fn env_os(&self) -> Vec<(OsString, OsString)> {
        self.env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }
}

/// How sessions start their agents.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    /// The agents sessions may run, in the order the page lists them (fixed at server start).
    pub agents: Vec<AgentChoice>,
    /// The id of the agent a session runs when none is asked for; one of `agents`.
    pub default_agent: String,
    /// The ACP protocol version to request in `initialize` (1 or 2; the agent may answer lower,
    /// and an agent that rejects 2 is asked again with 1).
    pub protocol_version: u64,
    /// Working directory sent in `session/new`.
    pub cwd: PathBuf,
    /// How long the agent may take to answer `initialize` and open its session before the
    /// waiting prompts fail and the agent is stopped.
    pub startup_timeout: std::time::Duration,
    /// How long an open agent may go without a line either way or terminal output, with no
    /// turn, queued prompt, question or request open, before it is stopped; the next prompt
    /// starts it again and it continues its agent session, as after a restart. `None`: never.
    pub idle_stop: Option<std::time::Duration>,
    /// What the agent may do with files under the session's working directory (`--fs`).
    pub fs: spindle_host::FsPolicy,
    /// Whether the agent may run commands in terminals (`--terminals`).
    pub terminals: bool,
    /// A remote agent to use instead of the agents' commands (`--agent-url`): each session
    /// opens its own connection to it.
    pub remote: Option<crate::agent_link::RemoteAgent>,
    /// The user's MCP servers (`--mcp-config`), given to every session's agent as far as it
    /// advertises their transports.
    pub mcp_servers: Vec<McpServerConfig>,
    /// Where the sessions' checkpoints are kept (`<data dir>/checkpoints`; one directory per
    /// session, never inside a root); `None`: no checkpoints (`--no-checkpoints`).
    pub checkpoints: Option<PathBuf>,
}

impl AgentSettings {
    /// The agent `id`, if the server offers it.
    pub fn agent(&self, id: &str) -> Option<&AgentChoice> {
        self.agents.iter().find(|a| a.id == id)
    }

    /// The agent asked for by id, or the default one; an unknown id is refused with a message
    /// naming the agents there are.
    pub fn choose(&self, asked: Option<&str>) -> Result<&AgentChoice, SessionError> {
        let id = asked.unwrap_or(&self.default_agent);
        self.agent(id).ok_or_else(|| {
            SessionError::invalid_params(format!(
                "no agent {id:?} here; this server offers: {}",
                self.known_ids()
            ))
        })
    }

    /// The agent a stored session runs: the recorded one (a session from before agents were
    /// recorded runs the default one). `Err` is the message for a session whose agent this
    /// server does not offer.
    pub(crate) fn for_session(
        &self,
        recorded: Option<&spindle_store::SessionAgent>,
    ) -> Result<&AgentChoice, String> {
        let Some(recorded) = recorded else {
            return self
                .choose(None)
                .map_err(|e| format!("the default agent is missing: {}", e.message()));
        };
        self.agent(&recorded.id).ok_or_else(|| {
            let version = if recorded.version.is_empty() {
                String::new()
            } else {
                format!(" {}", recorded.version)
            };
            format!(
                "This session runs the agent {:?}{version}, which this server does not offer \
                 (it offers: {}). The transcript stays readable; start the server with that \
                 agent to continue the session.",
                recorded.id,
                self.known_ids()
            )
        })
    }

    /// `{id, name, version, available}` of the agent a stored session runs (the default one
    /// when none was recorded; `available`: whether this server offers it). The version is the
    /// recorded one: what the session last ran.
    pub(crate) fn describe_session(
        &self,
        recorded: Option<&spindle_store::SessionAgent>,
    ) -> serde_json::Value {
        match (recorded, self.for_session(recorded)) {
            (_, Ok(choice)) => json!({
                "id": choice.id,
                "name": choice.name,
                "version": recorded.map_or(choice.version.as_str(), |r| r.version.as_str()),
                "available": true,
            }),
            (Some(recorded), Err(_)) => json!({
                "id": recorded.id,
                "name": recorded.id,
                "version": recorded.version,
                "available": false,
            }),
            (None, Err(_)) => serde_json::Value::Null,
        }
    }

    /// The configured MCP servers a session gets: those its setup names, in the configuration's
    /// order (every one when it names none; a name no longer configured is left out).
    pub(crate) fn mcp_servers_for(
        &self,
        setup: &spindle_store::SessionSetup,
    ) -> Vec<McpServerConfig> {
        match &setup.mcp_servers {
            None => self.mcp_servers.clone(),
            Some(names) => self
                .mcp_servers
                .iter()
                .filter(|s| names.contains(&s.name))
                .cloned()
                .collect(),
        }
    }

    /// The MCP servers a new session asks for, checked: `None` (every configured one) as it is,
    /// each name once; a name that is not configured is refused, naming it and those there are.
    pub fn check_mcp_choice(
        &self,
        asked: Option<Vec<String>>,
    ) -> Result<Option<Vec<String>>, SessionError> {
        let Some(asked) = asked else {
            return Ok(None);
        };
        let mut chosen: Vec<String> = Vec::new();
        for name in asked {
            if !self.mcp_servers.iter().any(|s| s.name == name) {
                let known: Vec<&str> = self.mcp_servers.iter().map(|s| s.name.as_str()).collect();
                return Err(SessionError::invalid_params(format!(
                    "no MCP server {name:?} is configured; the configured ones: {}",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            }
            if !chosen.contains(&name) {
                chosen.push(name);
            }
        }
        Ok(Some(chosen))
    }

    /// The ids of the agents, comma-separated.
    pub fn known_ids(&self) -> String {
        self.agents
            .iter()
            .map(|a| a.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether the settings hold together: at least one agent, unique ids, the default one
    /// among them.
    pub fn check(&self) -> Result<(), String> {
        let mut ids = std::collections::BTreeSet::new();
        for agent in &self.agents {
            if !ids.insert(agent.id.as_str()) {
                return Err(format!("two agents have the id {:?}", agent.id));
            }
        }
        if self.agent(&self.default_agent).is_none() {
            return Err(format!(
                "the default agent {:?} is not among the agents ({})",
                self.default_agent,
                self.known_ids()
            ));
        }
        Ok(())
    }

    /// What `spindle serve` says about itself in `initialize`: notices and compaction updates and
    /// every Spindle extension; files and terminals are added by the session's host
    /// ([`spindle_host::HostConfig::advertise`]) as far as they are enabled.
    pub(crate) fn client_options(&self) -> ClientOptions {
        ClientOptions {
            protocol: if self.protocol_version >= 2 {
                ProtocolChoice::V2Preferred
            } else {
                ProtocolChoice::V1
            },
            client_info: ClientInfo {
                name: "spindle-web".into(),
                title: None,
                version: env!("CARGO_PKG_VERSION").into(),
            },
            fs_read_text_file: false,
            fs_write_text_file: false,
            terminal: false,
            display_terminal_output: true,
            session_notices: true,
            session_compaction: true,
            spindle_extensions: true,
            // Forms and URLs are shown to the page (`task/elicitation.rs`).
            elicitation: true,
            wire_tap: None,
        }
    }
}

/// The most additional directories a session takes.
pub const MAX_ADDITIONAL_DIRECTORIES: usize = 32;

/// The additional directories a new session asks for, checked: each one absolute and an
/// existing directory (nothing is resolved against anything), given as its canonical path,
/// each once in the order asked. A bad one is refused, named.
pub(crate) fn check_directories(asked: &[String]) -> Result<Vec<String>, SessionError> {
    if asked.len() > MAX_ADDITIONAL_DIRECTORIES {
        return Err(SessionError::invalid_params(format!(
            "{} additional directories: at most {MAX_ADDITIONAL_DIRECTORIES}",
            asked.len()
        )));
    }
    let mut checked: Vec<String> = Vec::new();
    for dir in asked {
        let refuse = |why: &str| {
            SessionError::invalid_params(format!("additional directory {dir:?}: {why}"))
        };
        if dir.trim().is_empty() {
            return Err(refuse("empty"));
        }
        if !std::path::Path::new(dir).is_absolute() {
            return Err(refuse("not an absolute path"));
        }
        let canonical = std::path::Path::new(dir)
            .canonicalize()
            .map_err(|_| refuse("no such directory"))?;
        if !canonical.is_dir() {
            return Err(refuse("not a directory"));
        }
        let canonical = canonical
            .to_str()
            .ok_or_else(|| refuse("not a UTF-8 path"))?
            .to_string();
        if !checked.contains(&canonical) {
            checked.push(canonical);
        }
    }
    Ok(checked)
}

/// What the session task attached to each of its requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pending {
    Initialize,
    NewSession,
    Resume,
    Load,
    /// `session/prompt`, sent when [`crate::core::SessionCore::banners_raised`] was this
    /// (a turn that ends well clears only the banners raised before it).
    Prompt {
        banners_before: u64,
    },
    /// `authenticate` (v2 `auth/login`), asked for from the page.
    Authenticate,
    /// `session/set_mode` or `session/set_config_option`, asked for from the page.
    Setting,
    /// `session/close`, `session/fork` (`task/lifecycle.rs`).
    Lifecycle,
    /// `session/delete`: once answered, the agent session is gone (not closed afterwards).
    Delete,
    /// `logout` (v2 `auth/logout`): once answered, the session waits for a sign-in again.
    Logout,
}

/// How a web session opens its agent session when the agent starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Continue the session it had (resume, else load, else a new one), or open a new one.
    Continue,
    /// Load an earlier agent session: its replay becomes the transcript.
    Load,
    /// Resume an earlier agent session (no replay).
    Resume,
}

/// The ACP client of one agent process, driven by the session task.
pub(crate) type AgentClient = ClientCore<Pending>;

/// Where the session's agent stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    NoAgent,
    Initializing,
    Opening,
    /// `session/new` (or load/resume) answered `auth_required`: waiting for `authenticate`.
    NeedsAuth,
    Ready,
}

/// What the session task does after a step of the startup.
#[derive(Debug, PartialEq)]
pub(crate) enum StartupStep {
    /// Tell the user; the startup goes on.
    Warning(String),
    /// The agent session is open and prompts can go.
    Opened(String),
    /// The agent cannot be used; stop it.
    Failed(String),
    /// The agent wants the user to authenticate first (its message).
    NeedsAuth(String),
}

/// A web session's way to a ready agent session.
#[derive(Debug)]
pub(crate) struct Startup {
    pub(crate) phase: Phase,
    /// The agent session this web session had (stored), to continue it.
    pub(crate) previous_agent_session: Option<String>,
    /// The agent session open now.
    pub(crate) agent_session: Option<String>,
    /// How the next opening goes; back to [`OpenMode::Continue`] once a session is open.
    pub(crate) open: OpenMode,
    cwd: String,
    /// The servers configured for every session ([`AgentSettings::mcp_servers`]).
    pub(crate) mcp_servers: Vec<McpServerConfig>,
    /// The `mcpServers` of this agent's session requests: those its capabilities accept.
    pub(crate) mcp_request: Value,
    /// The session's additional directories (absolute), sent when the agent accepts them.
    pub(crate) additional_directories: Vec<String>,
}

impl Startup {
    pub(crate) fn new(
        previous_agent_session: Option<String>,
        cwd: &std::path::Path,
        open: OpenMode,
    ) -> Startup {
        Startup {
            phase: Phase::NoAgent,
            previous_agent_session,
            agent_session: None,
            open,
            cwd: cwd.display().to_string(),
            mcp_servers: Vec::new(),
            mcp_request: json!([]),
            additional_directories: Vec::new(),
        }
    }

    /// Whether the agent's replay of a loaded session is the transcript (an earlier agent
    /// session opened from the history), rather than history the transcript already holds.
    pub(crate) fn replay_is_transcript(&self) -> bool {
        self.open == OpenMode::Load
    }

    /// A new agent process presenting `options`: its ids start with `id_prefix`.
    pub(crate) fn begin(&mut self, options: ClientOptions, id_prefix: String) -> AgentClient {
        let mut client = ClientCore::with_id_prefix(options, id_prefix);
        // The engine renders updates from the logged lines: the core need not copy them.
        client.leave_updates_unreported();
        // A fresh core is open: this cannot fail.
        let _ = client.initialize(Pending::Initialize);
        self.phase = Phase::Initializing;
        self.agent_session = None;
        client
    }

    /// The agent process is gone.
    pub(crate) fn reset(&mut self) {
        self.phase = Phase::NoAgent;
        self.agent_session = None;
    }

    /// The answer to one of the startup requests.
    pub(crate) fn answered(
        &mut self,
        client: &mut AgentClient,
        kind: Pending,
        result: Result<Box<RawValue>, ClientError>,
    ) -> Vec<StartupStep> {
        let mut steps = Vec::new();
        match (kind, result) {
            (Pending::Initialize, Ok(_)) => self.open_session(client, &mut steps),
            (Pending::NewSession, Ok(result)) => {
                match serde_json::from_str::<serde_json::Value>(result.get())
                    .ok()
                    .and_then(|r| r.get("sessionId")?.as_str().map(str::to_string))
                {
                    Some(session) => steps.push(self.opened(session)),
                    None => steps.push(StartupStep::Failed(
                        "session/new answered without a sessionId".into(),
                    )),
                }
            }
            (Pending::Resume | Pending::Load, Ok(_)) => {
                if let Some(previous) = self.previous_agent_session.clone() {
                    steps.push(self.opened(previous));
                }
            }
            (Pending::NewSession | Pending::Resume | Pending::Load, Err(error))
                if error.is_auth_required() =>
            {
                self.phase = Phase::NeedsAuth;
                steps.push(StartupStep::NeedsAuth(error_message(&error)));
            }
            (Pending::Authenticate, Ok(_)) if self.phase == Phase::NeedsAuth => {
                self.open_session(client, &mut steps);
            }
            (Pending::Resume | Pending::Load, Err(error)) => {
                steps.push(StartupStep::Warning(format!(
                    "The agent could not continue its earlier session ({}); a new agent session \
                     was started. The transcript above is kept, but the agent does not remember \
                     it.",
                    error_message(&error)
                )));
                self.new_session(client, &mut steps);
            }
            (Pending::Initialize | Pending::NewSession, Err(error)) => {
                steps.push(StartupStep::Failed(format!(
                    "the agent refused to start: {}",
                    error_message(&error)
                )));
            }
            (
                Pending::Prompt { .. }
                | Pending::Authenticate
                | Pending::Setting
                | Pending::Lifecycle
                | Pending::Delete
                | Pending::Logout,
                _,
            ) => {}
        }
        steps
    }

    fn opened(&mut self, session: String) -> StartupStep {
        self.previous_agent_session = Some(session.clone());
        self.agent_session = Some(session.clone());
        self.phase = Phase::Ready;
        self.open = OpenMode::Continue;
        StartupStep::Opened(session)
    }

    fn open_session(&mut self, client: &mut AgentClient, steps: &mut Vec<StartupStep>) {
        self.phase = Phase::Opening;
        if let Some(init) = client.initialize_outcome() {
            let selection =
                select_mcp_servers(&self.mcp_servers, McpTransportSupport::of_agent(init));
            // One warning for all of them: a later warning replaces an earlier one's banner.
            let mut notes: Vec<String> = selection.skipped.iter().map(|s| s.to_string()).collect();
            self.mcp_request = selection.mcp_servers;
            notes.extend(init.additional_directories_note(&self.additional_directories));
            notes.extend(init.compatibility_notes.iter().cloned());
            if !notes.is_empty() {
                steps.push(StartupStep::Warning(format!("{}.", notes.join(". "))));
            }
        }
        let Some(previous) = self.previous_agent_session.clone() else {
            return self.new_session(client, steps);
        };
        let can = client.initialize_outcome().map_or((false, false), |init| {
            (init.can_resume_session(), init.can_load_session())
        });
        let resume = |client: &mut AgentClient| {
            client.resume_session_with_directories(
                &previous,
                &self.cwd,
                &self.mcp_request,
                &self.additional_directories,
                None,
                Pending::Resume,
            )
        };
        let load = |client: &mut AgentClient| {
            client.load_session_with_directories(
                &previous,
                &self.cwd,
                &self.mcp_request,
                &self.additional_directories,
                Pending::Load,
            )
        };
        let sent = match (self.open, can) {
            (OpenMode::Continue | OpenMode::Resume, (true, _)) => resume(client),
            (OpenMode::Continue | OpenMode::Load, (_, true)) => load(client),
            (OpenMode::Continue, (false, false)) => {
                steps.push(StartupStep::Warning(
                    "This agent cannot resume or load sessions: a new agent session was started. \
                     The transcript above is kept, but the agent does not remember it."
                        .into(),
                ));
                return self.new_session(client, steps);
            }
            (OpenMode::Load, _) | (OpenMode::Resume, _) => {
                let what = if self.open == OpenMode::Load {
                    "load"
                } else {
                    "resume"
                };
                steps.push(StartupStep::Warning(format!(
                    "This agent cannot {what} sessions: a new agent session was started instead \
                     of {previous}."
                )));
                self.open = OpenMode::Continue;
                return self.new_session(client, steps);
            }
        };
        if let Err(error) = sent {
            steps.push(StartupStep::Failed(error.to_string()));
        }
    }

    fn new_session(&mut self, client: &mut AgentClient, steps: &mut Vec<StartupStep>) {
        if let Err(error) = client.new_session_with_directories(
            &self.cwd,
            &self.mcp_request,
            &self.additional_directories,
            Pending::NewSession,
        ) {
            steps.push(StartupStep::Failed(error.to_string()));
        }
    }
}

/// The message of an agent's error, for the page.
pub(crate) fn error_message(error: &ClientError) -> String {
    match error {
        ClientError::Rpc(e) => e.message.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn settings(protocol_version: u64) -> AgentSettings {
        AgentSettings {
            agents: vec![choice("spindle")],
            default_agent: "spindle".into(),
            protocol_version,
            cwd: "/work".into(),
            startup_timeout: std::time::Duration::from_secs(1),
            idle_stop: None,
            fs: spindle_host::FsPolicy::Off,
            terminals: false,
            remote: None,
            mcp_servers: Vec::new(),
            checkpoints: None,
        }
    }

    fn choice(id: &str) -> AgentChoice {
        AgentChoice {
            id: id.into(),
            name: format!("{id} agent"),
            version: "1.0".into(),
            command: vec!["true".into()],
            env: Vec::new(),
        }
    }

    #[test]
    fn an_agent_is_chosen_by_id_and_a_session_runs_the_recorded_one() {
        let mut settings = settings(2);
        settings.agents.push(choice("gemini"));
        assert_eq!(settings.check(), Ok(()));
        assert_eq!(settings.choose(None).unwrap().id, "spindle");
        assert_eq!(settings.choose(Some("gemini")).unwrap().id, "gemini");
        let refused = settings.choose(Some("codex")).unwrap_err().message();
        assert!(refused.contains("\"codex\""), "{refused}");
        assert!(refused.contains("spindle, gemini"), "{refused}");
        assert_eq!(settings.for_session(None).unwrap().id, "spindle");
        let recorded = |id: &str| spindle_store::SessionAgent {
            id: id.into(),
            version: "0.9".into(),
        };
        let gemini = recorded("gemini");
        assert_eq!(settings.for_session(Some(&gemini)).unwrap().id, "gemini");
        let missing = settings.for_session(Some(&recorded("codex"))).unwrap_err();
        assert!(missing.contains("\"codex\" 0.9"), "{missing}");
        assert!(missing.contains("stays readable"), "{missing}");
        settings.agents.push(choice("gemini"));
        assert!(settings.check().unwrap_err().contains("two agents"));
        settings.agents.pop();
        settings.default_agent = "codex".into();
        assert!(settings.check().unwrap_err().contains("\"codex\""));
    }

    fn sent(client: &mut AgentClient) -> Vec<Value> {
        client
            .take_outgoing()
            .iter()
            .map(|m| serde_json::from_str(&m.to_json()).unwrap())
            .collect()
    }

    fn answer(client: &mut AgentClient, request: &Value, result: Value) {
        let line = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        client.receive_line(&line.to_string());
    }

    fn step(startup: &mut Startup, client: &mut AgentClient) -> Vec<StartupStep> {
        let mut steps = Vec::new();
        for c in client.take_completions() {
            steps.extend(startup.answered(client, c.data, c.result));
        }
        steps
    }

    #[test]
    fn initialize_opts_into_every_extension_and_asks_for_notices() {
        let mut startup = Startup::new(None, std::path::Path::new("/work"), OpenMode::Continue);
        let mut client = startup.begin(settings(2).client_options(), "w1-1-".into());
        let init = sent(&mut client).remove(0);
        assert_eq!(init["id"], "w1-1-0");
        assert_eq!(init["method"], "initialize");
        assert_eq!(init["params"]["protocolVersion"], 2);
        assert_eq!(
            init["params"]["_meta"],
            json!({"spindle": {"extensions": [
                "agent_message_clear", "agent_thought_clear", "session_cleared", "clear_boundary"
            ]}})
        );
        assert_eq!(
            init["params"]["clientCapabilities"]["session"],
            json!({"compaction": {}, "notices": {}})
        );
        assert_eq!(
            init["params"]["capabilities"]["session"],
            json!({"notices": {}})
        );
        assert_eq!(init["params"]["clientInfo"]["name"], "spindle-web");
    }

    #[test]
    fn a_stored_session_is_resumed_then_loaded_then_replaced() {
        for (caps, method) in [
            (
                json!({"sessionCapabilities": {"resume": {}}}),
                "session/resume",
            ),
            (json!({"loadSession": true}), "session/load"),
            (json!({}), "session/new"),
        ] {
            let mut startup = Startup::new(
                Some("old".into()),
                std::path::Path::new("/work"),
                OpenMode::Continue,
            );
            let mut client = startup.begin(settings(1).client_options(), "w1-1-".into());
            let init = sent(&mut client).remove(0);
            answer(
                &mut client,
                &init,
                json!({"protocolVersion": 1, "agentCapabilities": caps}),
            );
            let steps = step(&mut startup, &mut client);
            let open = sent(&mut client).remove(0);
            assert_eq!(open["method"], method);
            assert_eq!(startup.phase, Phase::Opening);
            if method == "session/new" {
                assert!(matches!(&steps[..], [StartupStep::Warning(_)]), "{steps:?}");
                answer(&mut client, &open, json!({"sessionId": "new"}));
                assert_eq!(
                    step(&mut startup, &mut client),
                    vec![StartupStep::Opened("new".into())]
                );
            } else {
                assert!(steps.is_empty(), "{steps:?}");
                assert_eq!(open["params"]["sessionId"], "old");
                answer(&mut client, &open, json!({}));
                assert_eq!(
                    step(&mut startup, &mut client),
                    vec![StartupStep::Opened("old".into())]
                );
            }
            assert_eq!(startup.phase, Phase::Ready);
        }
    }

    #[test]
    fn a_refused_v2_initialize_falls_back_to_v1_and_a_refused_v1_fails() {
        let mut startup = Startup::new(None, std::path::Path::new("/work"), OpenMode::Continue);
        let mut client = startup.begin(settings(2).client_options(), "w1-1-".into());
        let init = sent(&mut client).remove(0);
        let refuse = |id: &Value| {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "no"}})
                .to_string()
        };
        client.receive_line(&refuse(&init["id"]));
        assert!(step(&mut startup, &mut client).is_empty());
        let retry = sent(&mut client).remove(0);
        assert_eq!(retry["params"]["protocolVersion"], 1);
        client.receive_line(&refuse(&retry["id"]));
        assert_eq!(
            step(&mut startup, &mut client),
            vec![StartupStep::Failed("the agent refused to start: no".into())]
        );
    }

    #[test]
    fn additional_directories_are_absolute_existing_and_given_once() {
        let dir = std::env::temp_dir().canonicalize().unwrap();
        let dir = dir.to_str().unwrap().to_string();
        let with_slash = format!("{dir}/");
        assert_eq!(
            check_directories(&[dir.clone(), with_slash]).unwrap(),
            vec![dir.clone()]
        );
        for (bad, why) in [
            ("relative/dir", "not an absolute path"),
            ("", "empty"),
            ("/no/such/spindle/dir", "no such directory"),
            ("/bin/sh", "not a directory"),
        ] {
            let message = check_directories(&[bad.to_string()]).unwrap_err().message();
            assert!(message.contains(why), "{bad}: {message}");
            assert!(message.contains(&format!("{bad:?}")), "{message}");
        }
        let many = vec![dir; MAX_ADDITIONAL_DIRECTORIES + 1];
        assert!(
            check_directories(&many)
                .unwrap_err()
                .message()
                .contains("at most")
        );
    }
}
