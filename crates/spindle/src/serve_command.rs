//! `spindle serve`: the web client. Glue only; the server lives in `spindle-web`.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use spindle_web::{AgentChoice, AgentSettings, HubLimits, ServeConfig, Server};

use crate::agent_choices;

/// Arguments of `spindle serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on. Anything but loopback requires --token.
    #[arg(long, default_value = "127.0.0.1:8337")]
    bind: SocketAddr,
    /// Database: a SQLite file (default: spindle/spindle.db in the user's data directory) or a
    /// PostgreSQL URL, postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE (the database must exist;
    /// the tables are created and migrated at start). Also read from the SPINDLE_DB environment
    /// variable, which keeps a password out of the process list.
    #[arg(long, value_name = "FILE|URL")]
    db: Option<PathBuf>,
    /// Access token required on every request (required for a non-loopback --bind). Also read
    /// from the SPINDLE_TOKEN environment variable, which keeps it out of the process list.
    #[arg(long)]
    token: Option<String>,
    /// The users file: `{"users": [{"name", "role": "admin"|"controller"|"observer", "token" or
    /// "tokenSha256"}]}`. Every request then needs a user's token, loopback included; SIGHUP
    /// re-reads it. Also read from SPINDLE_USERS. Not with --token.
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    users: Option<PathBuf>,
    /// With --users: the header a trusted reverse proxy names the signed-in user in (e.g.
    /// X-Forwarded-User from oauth2-proxy); believed only from --trusted-proxy addresses.
    #[arg(long, value_name = "HEADER", requires = "trusted_proxies")]
    trust_proxy_user: Option<String>,
    /// The reverse proxy's address or CIDR (repeatable), for --trust-proxy-user.
    #[arg(
        long = "trusted-proxy",
        value_name = "CIDR",
        requires = "trust_proxy_user"
    )]
    trusted_proxies: Vec<String>,
    /// Extra host name accepted in Host/Origin headers (repeatable), e.g. the machine's LAN name.
    #[arg(long = "allow-host")]
    allow_hosts: Vec<String>,
    /// ACP protocol version to ask the agent for (the agent may answer lower).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=2))]
    protocol: u64,
    /// What the agent may do with files under the session's directory: off, read-only, ask
    /// (each write waits for Accept/Reject in the page) or allow.
    #[arg(long, default_value = "ask", value_name = "POLICY")]
    fs: spindle_web::FsPolicy,
    /// Whether the agent may run commands in terminals (on the server, in the session's
    /// directory): on or off.
    #[arg(long, default_value = "on", value_parser = on_off, value_name = "on|off", action = clap::ArgAction::Set)]
    terminals: bool,
    /// The working directory of every session, and the directory a session's own one must lie
    /// in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The MCP servers every session's agent is given, in the `{"mcpServers": {...}}` shape other
    /// clients use (default: `mcp.json` in the configuration directory, when it exists). http
    /// and sse servers go only to agents that advertise them; the page names the others.
    #[arg(long, value_name = "FILE")]
    mcp_config: Option<PathBuf>,
    /// Seconds the agent may take to answer initialize and open a session.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    agent_startup_timeout: u64,
    /// Seconds a session's agent may stay idle (no line either way, nothing open) before it is
    /// stopped; the next prompt starts it again and continues the session. 0: never.
    #[arg(long, default_value_t = DEFAULT_AGENT_IDLE_STOP, value_name = "SECS")]
    agent_idle_stop: u64,
    /// Use the remote agent behind this ACP endpoint (`/acp` of the RFD "Streamable HTTP &
    /// WebSocket transport": `http(s)://HOST:PORT/acp` or `ws(s)://...`) instead of an agent
    /// command; every session opens its own connection. Its token, if it needs one, is read
    /// from SPINDLE_AGENT_TOKEN (sent as `Authorization: Bearer`).
    #[arg(long, value_name = "URL", conflicts_with_all = ["agent", "agent_id"])]
    agent_url: Option<String>,
    /// The default agent of new sessions, by id: `spindle` (the built-in reference agent), an
    /// installed agent (`spindle agents list`) or the id `-- AGENT_CMD` gets. Default: the
    /// command after `--`, else the agent agents.toml marks `default = true`, else `spindle`.
    /// Every installed agent is offered either way; each session runs the agent it was
    /// created with.
    #[arg(long = "agent", value_name = "ID")]
    agent_id: Option<String>,
    /// With --agent-url: the transport profile, ws (WebSocket) or http (HTTP+SSE).
    #[arg(
        long,
        default_value = "ws",
        value_name = "ws|http",
        requires = "agent_url"
    )]
    agent_transport: spindle_web::RemoteProfile,
    /// This server's id among replicas sharing one PostgreSQL database (default: the host name
    /// and the bound port). Each session's agent runs on the replica holding its lease.
    #[arg(long, value_name = "ID")]
    replica_id: Option<String>,
    /// Seconds a session's lease lasts unless its replica renews it: after a replica dies, the
    /// others may take its sessions over once this much time has passed.
    #[arg(long, default_value_t = 10.0, value_name = "SECS", value_parser = lease_seconds)]
    lease_ttl: f64,
    /// Take no checkpoints. By default the session's working directory and its additional
    /// directories are kept before each turn (in the data directory's `checkpoints`, never
    /// inside them), so the page can restore them to before any turn.
    #[arg(long)]
    no_checkpoints: bool,
    /// An agent command, offered beside the built-in and installed agents (its id: its
    /// program's file name) and the default one unless --agent names another.
    #[arg(last = true)]
    agent: Vec<OsString>,
}

fn lease_seconds(value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(secs) if (0.3..=3600.0).contains(&secs) => Ok(secs),
        Ok(_) => Err("expected between 0.3 and 3600 seconds".into()),
        Err(e) => Err(format!("expected seconds: {e}")),
    }
}

fn on_off(value: &str) -> Result<bool, String> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("expected on or off, not {other:?}")),
    }
}

fn default_db() -> anyhow::Result<PathBuf> {
    let dir = crate::data_dir::data_dir().context("no place for the database (pass --db)")?;
    Ok(dir.join("spindle.db"))
}

/// Runs `spindle serve`; returns the process exit code.
pub fn run(args: ServeArgs, default_agent: impl FnOnce() -> Vec<OsString>) -> anyhow::Result<u8> {
    let db = match args.db.or_else(|| {
        std::env::var_os("SPINDLE_DB")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    }) {
        Some(db) => db,
        None => default_db()?,
    };
    let (agents, default_agent) = match &args.agent_url {
        Some(url) => {
            let remote = AgentChoice {
                id: "remote".into(),
                name: url.clone(),
                version: String::new(),
                command: Vec::new(),
                env: Vec::new(),
            };
            (vec![remote], "remote".to_owned())
        }
        None => offered_agents(args.agent_id, args.agent, default_agent)?,
    };
    let cwd = match args.cwd {
        Some(dir) => dir,
        None => std::env::current_dir().context("no current directory")?,
    };
    let cwd = cwd
        .canonicalize()
        .with_context(|| format!("--cwd {}: no such directory", cwd.display()))?;
    anyhow::ensure!(cwd.is_dir(), "--cwd {}: not a directory", cwd.display());
    let mcp_servers = match args.mcp_config.or_else(crate::data_dir::default_mcp_config) {
        Some(path) => {
            let config = spindle_host::mcp_servers::load_mcp_config(&path)?;
            for warning in &config.warnings {
                eprintln!("spindle serve: {warning}");
            }
            config.servers
        }
        None => Vec::new(),
    };
    let config = ServeConfig {
        bind: args.bind,
        db,
        token: args
            .token
            .or_else(|| std::env::var("SPINDLE_TOKEN").ok())
            .filter(|t| !t.is_empty()),
        allow_hosts: args.allow_hosts,
        agent: AgentSettings {
            agents,
            default_agent,
            protocol_version: args.protocol,
            cwd,
            startup_timeout: std::time::Duration::from_secs(args.agent_startup_timeout.max(1)),
            idle_stop: idle_stop(args.agent_idle_stop),
            fs: args.fs,
            terminals: args.terminals,
            remote: args.agent_url.map(|url| {
                let headers = std::env::var("SPINDLE_AGENT_TOKEN")
                    .ok()
                    .filter(|t| !t.is_empty())
                    .map(|t| vec![("Authorization".to_owned(), format!("Bearer {t}"))])
                    .unwrap_or_default();
                spindle_web::remote_agent(url, args.agent_transport, headers)
            }),
            mcp_servers,
            checkpoints: if args.no_checkpoints {
                None
            } else {
                crate::data_dir::data_dir()
                    .ok()
                    .map(|dir| dir.join(crate::data_dir::CHECKPOINTS_DIR))
            },
        },
        limits: HubLimits::default(),
        replica: spindle_web::ReplicaConfig {
            id: args.replica_id,
            lease_ttl: std::time::Duration::from_secs_f64(args.lease_ttl),
        },
        users: spindle_web::UsersConfig {
            file: args.users.or_else(|| {
                std::env::var_os("SPINDLE_USERS")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            }),
            proxy_header: args.trust_proxy_user,
            trusted_proxies: args.trusted_proxies,
        },
    };
    let users_file = config.users.file.is_some();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let server = Server::start(config).await?;
        println!("spindle serve: listening on {}", server.url());
        if users_file {
            println!("spindle serve: each user opens it with ?token=THEIR_TOKEN once (--users)");
        }
        reload_users_on_sighup(server.users_reloader());
        server.run_until(shutdown_signal()).await?;
        anyhow::Ok(0)
    })
}

/// The agents the server offers (the built-in one, the installed ones, the `--` command) and
/// the id of the default one.
fn offered_agents(
    asked: Option<String>,
    command: Vec<OsString>,
    builtin_command: impl FnOnce() -> Vec<OsString>,
) -> anyhow::Result<(Vec<AgentChoice>, String)> {
    let dirs = agent_choices::agents_dirs();
    let mut agents = vec![agent_choices::builtin(builtin_command())];
    if let Some(dirs) = &dirs {
        agents.extend(agent_choices::installed(dirs));
    }
    let command_id = (!command.is_empty()).then(|| {
        let choice = agent_choices::command_choice(command, &agents);
        let id = choice.id.clone();
        agents.push(choice);
        id
    });
    let default = match (asked, command_id) {
        (Some(asked), _) => asked,
        (None, Some(id)) => id,
        (None, None) => agent_choices::configured_default(dirs.as_ref())?
            .unwrap_or_else(|| agent_choices::BUILTIN_ID.to_owned()),
    };
    if !agents.iter().any(|a| a.id == default) {
        let known: Vec<&str> = agents.iter().map(|a| a.id.as_str()).collect();
        anyhow::bail!(
            "no agent {default:?} to serve (installed agents: `spindle agents list`); the \
             agents here: {}",
            known.join(", ")
        );
    }
    Ok((agents, default))
}

/// SIGHUP re-reads the users file: a removed user is refused at once and their streams and
/// `/acp` connections end. A file that no longer reads keeps the users as they were.
fn reload_users_on_sighup(reloader: spindle_web::UsersReloader) {
    #[cfg(unix)]
    tokio::spawn(async move {
        let Ok(mut hangups) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            tracing::warn!("SIGHUP cannot be caught here: the users file is read at start only");
            return;
        };
        while hangups.recv().await.is_some() {
            match reloader.reload() {
                Ok(changed) if changed.is_empty() => {
                    eprintln!("spindle serve: users file re-read (SIGHUP)");
                }
                Ok(changed) => eprintln!(
                    "spindle serve: users file re-read (SIGHUP); signed out: {}",
                    changed.join(", ")
                ),
                Err(error) => {
                    eprintln!("spindle serve: SIGHUP: {error}; the users stay as they were")
                }
            }
        }
    });
    #[cfg(not(unix))]
    let _ = reloader;
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// `--agent-idle-stop`'s default: half an hour.
pub(crate) const DEFAULT_AGENT_IDLE_STOP: u64 = 30 * 60;

/// `--agent-idle-stop SECS` (0: never).
pub(crate) fn idle_stop(secs: u64) -> Option<std::time::Duration> {
    (secs > 0).then(|| std::time::Duration::from_secs(secs))
}
