//! `spindle bridge`: a stdio proxy that lets a client of one ACP version use
//! an agent of the other (`spindle_bridge::proxy`), or with `--listen` a
//! headless `/acp` gateway (`spindle_web` without the page).

use anyhow::Context;
use spindle_bridge::proxy::{StdioProxy, run_stdio};
use spindle_bridge::{BridgeConfig, DEFAULT_MAX_LINE_BYTES, Policy};

/// Arguments of `spindle bridge`.
#[derive(Debug, clap::Args)]
pub struct BridgeArgs {
    /// Protocol version of the client (default: learnt from its initialize).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=2))]
    pub client_protocol: Option<u16>,
    /// Protocol version of the agent (default: the client's, corrected by
    /// the agent's initialize response).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=2))]
    pub agent_protocol: Option<u16>,
    /// What to do with things the other version cannot represent.
    #[arg(long, value_enum, default_value_t = PolicyArg::Strict)]
    pub policy: PolicyArg,
    /// Also log info-level diagnostics (documented lossy steps).
    #[arg(long)]
    pub verbose: bool,
    /// Maximum size of one line from either side, in bytes; a longer line is
    /// dropped (in pieces, never held whole) with a warning on stderr.
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES, value_name = "BYTES")]
    pub max_line_bytes: usize,
    /// Serve the agent over ACP's remote transport at `http://ADDR/acp` (RFD "Streamable HTTP
    /// & WebSocket") instead of stdio: a headless gateway, no web page. Each remote
    /// `session/new` starts its own agent process; the agent speaks `--agent-protocol` (default
    /// 2), and each connection speaks the version it asks for at `initialize` (translated).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// With --listen: the database of sessions (default: a fresh file in the temporary
    /// directory, removed at exit). Keep one to load sessions after a restart.
    #[arg(long, value_name = "PATH", requires = "listen")]
    pub db: Option<std::path::PathBuf>,
    /// With --listen: the access token clients send as `Authorization: Bearer` (required for a
    /// non-loopback address; also read from SPINDLE_TOKEN).
    #[arg(long, requires = "listen")]
    pub token: Option<String>,
    /// With --listen: seconds a session's agent may stay idle (no line either way, nothing
    /// open) before it is stopped; the next prompt starts it again and continues the session.
    /// 0: never.
    #[arg(long, requires = "listen", value_name = "SECS", default_value_t = crate::serve_command::DEFAULT_AGENT_IDLE_STOP)]
    pub agent_idle_stop: u64,
    /// The agent command line.
    #[arg(last = true, required = true, value_name = "AGENT_CMD")]
    pub agent: Vec<String>,
}

/// `--policy` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PolicyArg {
    /// Reject unrepresentable input visibly.
    Strict,
    /// Use the documented fallback.
    Degrade,
}

/// Runs `spindle bridge`; returns the process exit code.
pub fn run(args: BridgeArgs) -> anyhow::Result<u8> {
    if let Some(address) = args.listen {
        return listen(address, args);
    }
    let policy = match args.policy {
        PolicyArg::Strict => Policy::Strict,
        PolicyArg::Degrade => Policy::Degrade,
    };
    let proxy = StdioProxy {
        bridge: BridgeConfig {
            client_protocol: args.client_protocol,
            agent_protocol: args.agent_protocol,
            policy,
        },
        agent: args.agent,
        max_line_bytes: args.max_line_bytes,
        verbose: args.verbose,
    };
    Ok(run_stdio(proxy)?)
}

/// `spindle bridge --listen ADDR -- AGENT_CMD`: `spindle serve`'s `/acp` without the page, the
/// agent's files and terminals off (no page to review a write or show a terminal; the remote
/// client is the user).
fn listen(address: std::net::SocketAddr, args: BridgeArgs) -> anyhow::Result<u8> {
    let (db, temporary) = match args.db {
        Some(db) => (db, false),
        None => {
            let dir = std::env::temp_dir();
            remove_dead_temporary_dbs(&dir);
            let name = format!("{TEMPORARY_DB_PREFIX}{}.db", std::process::id());
            (dir.join(name), true)
        }
    };
    let config = spindle_web::ServeConfig {
        bind: address,
        db: db.clone(),
        token: args
            .token
            .or_else(|| std::env::var("SPINDLE_TOKEN").ok())
            .filter(|t| !t.is_empty()),
        allow_hosts: Vec::new(),
        agent: spindle_web::AgentSettings {
            agents: vec![spindle_web::AgentChoice {
                id: "bridged".into(),
                name: args.agent.first().cloned().unwrap_or_default(),
                version: String::new(),
                command: args.agent.iter().map(std::ffi::OsString::from).collect(),
                env: Vec::new(),
            }],
            default_agent: "bridged".into(),
            protocol_version: u64::from(args.agent_protocol.unwrap_or(2)),
            cwd: std::env::current_dir().context("no current directory")?,
            startup_timeout: std::time::Duration::from_secs(30),
            idle_stop: crate::serve_command::idle_stop(args.agent_idle_stop),
            fs: spindle_web::FsPolicy::Off,
            terminals: false,
            remote: None,
            // `/acp` clients bring their own MCP servers in their session requests.
            mcp_servers: Vec::new(),
            checkpoints: None,
        },
        limits: spindle_web::HubLimits::default(),
        replica: spindle_web::ReplicaConfig::default(),
        users: Default::default(),
    };
    let options = spindle_web::ServeOptions {
        page: false,
        ..spindle_web::ServeOptions::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    let served = runtime.block_on(async move {
        let server = spindle_web::Server::start_with(config, options).await?;
        let url = server.url();
        let (base, query) = url.split_once('?').unwrap_or((&url, ""));
        let acp = format!("{}acp", base);
        match query {
            "" => println!("spindle bridge: listening on {acp}"),
            _ => println!(
                "spindle bridge: listening on {acp} (send the token as Authorization: Bearer)"
            ),
        }
        server.run_until(shutdown_signal()).await?;
        anyhow::Ok(())
    });
    if temporary {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = db.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
    served.map(|()| 0)
}

/// The temporary database of `--listen` without `--db` is `spindle-bridge-PID.db` (and its
/// `-wal`/`-shm`) in the temporary directory.
const TEMPORARY_DB_PREFIX: &str = "spindle-bridge-";

/// Removes the temporary databases of bridges that are gone without their clean exit (killed):
/// on Linux a file whose PID has no `/proc` entry. A database whose process still runs, or any
/// file elsewhere or named otherwise, is left alone; without `/proc` nothing is removed.
fn remove_dead_temporary_dbs(dir: &std::path::Path) {
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temporary_db_pid) else {
            continue;
        };
        if !std::path::Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The PID in a temporary database's file name: `spindle-bridge-PID.db`, `-wal` or `-shm`.
fn temporary_db_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(TEMPORARY_DB_PREFIX)?;
    let digits = ["-wal", "-shm", ""]
        .iter()
        .find_map(|suffix| rest.strip_suffix(suffix)?.strip_suffix(".db"))?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
        match terminate {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_db_names_give_their_pid_and_nothing_else_does() {
        let cases = [
            ("spindle-bridge-42.db", Some(42)),
            ("spindle-bridge-42.db-wal", Some(42)),
            ("spindle-bridge-42.db-shm", Some(42)),
            ("spindle-bridge-.db", None),
            ("spindle-bridge-4x2.db", None),
            ("spindle-bridge-42.sqlite", None),
            ("spindle-bridge-42.db-journal", None),
            ("other-42.db", None),
        ];
        for (name, pid) in cases {
            assert_eq!(temporary_db_pid(name), pid, "{name}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_killed_bridges_temporary_db_is_removed_and_a_live_ones_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let live = std::process::id();
        let files = [
            format!("spindle-bridge-{dead}.db"),
            format!("spindle-bridge-{dead}.db-wal"),
            format!("spindle-bridge-{live}.db"),
            format!("spindle-bridge-{live}.db-wal"),
            format!("unrelated-{dead}.db"),
        ];
        for name in &files {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        remove_dead_temporary_dbs(dir.path());
        let exists: Vec<bool> = files.iter().map(|n| dir.path().join(n).exists()).collect();
        assert_eq!(exists, [false, false, true, true, true]);
    }
}
