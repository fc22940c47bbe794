//! `spindle chat --connect URL` and `--attach URL SESSION`: the agent behind
//! an ACP remote endpoint (RFD "Streamable HTTP & WebSocket transport")
//! instead of a child process. The transport gives the same `Connection` a
//! child's stdio gives, so everything after it (client core, engine,
//! recording) is the stdio path; this module only connects, reports what
//! happens to the connection, and joins a running session.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use spindle_protocol::client::{AttachRole, HistoryPolicy};
use spindle_protocol::transport::remote::{
    RemoteNotice, RemoteOptions, RemoteProfile, connect_remote,
};
use spindle_protocol::transport::{ChildExit, ChildHandle, Connection, ConnectionOptions};
use spindle_protocol::{AcpClient, ClientError};

use super::render;

/// `--attach`'s role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// May prompt, cancel and answer permission questions.
    Controller,
    /// Sees the session, changes nothing.
    Observer,
}

/// `--history`: what an attached session shows first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum History {
    /// The whole session so far.
    Full,
    /// Only the open permission questions.
    PendingOnly,
    /// Nothing: live messages only.
    None,
}

/// How long (ms) to keep trying to reach a server that went away before the
/// chat gives up (default 30 s: [`RemoteOptions::new`]).
const RECONNECT_FOR_ENV: &str = "SPINDLE_REMOTE_RECONNECT_MS";

/// The agent's end of the chat: a child process or a remote endpoint.
#[derive(Debug)]
pub(crate) enum AgentEnd {
    /// `spindle chat -- AGENT_CMD`.
    Child(ChildHandle),
    /// `--connect` / `--attach`.
    Remote {
        url: String,
        /// Why the transport gave up, once it did.
        closed: Arc<Mutex<Option<String>>>,
    },
}

/// Connects to the endpoint at `url`; the transport's notices are printed
/// on stderr as they come (`spindle chat: remote: ...`).
pub(crate) async fn connect(
    url: &str,
    profile: RemoteProfile,
    attach: bool,
    connection: ConnectionOptions,
) -> anyhow::Result<(Connection, AgentEnd)> {
    let mut options = RemoteOptions::new(url, profile);
    options.attach = attach;
    if let Some(ms) = std::env::var(RECONNECT_FOR_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        options.reconnect_for = Duration::from_millis(ms);
    }
    if let Some(token) = std::env::var("SPINDLE_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
    {
        options
            .headers
            .push(("Authorization".to_owned(), format!("Bearer {token}")));
    }
    let link = connect_remote(options)
        .await
        .map_err(|e| anyhow::anyhow!("connecting to the agent at {url}: {e}"))?;
    let (connection, mut notices) = link.into_connection(connection);
    let closed = Arc::new(Mutex::new(None));
    let closed_reason = closed.clone();
    tokio::spawn(async move {
        while let Some(notice) = notices.recv().await {
            eprintln!(
                "spindle chat: remote: {}",
                render::sanitize(&notice.to_string())
            );
            if let RemoteNotice::Closed { reason } = notice {
                *closed_reason.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason);
            }
        }
    });
    Ok((
        connection,
        AgentEnd::Remote {
            url: url.to_owned(),
            closed,
        },
    ))
}

/// After the connection closed: how the agent ended, on stderr.
pub(crate) async fn report_end(agent: &AgentEnd, stderr_tail: impl FnOnce(&ChildHandle)) {
    match agent {
        AgentEnd::Child(child) => {
            match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
                Ok(ChildExit::Exited(status)) => {
                    eprintln!("spindle chat: the agent exited ({status})")
                }
                Ok(ChildExit::WaitFailed(error)) => {
                    eprintln!("spindle chat: the agent is gone ({error})")
                }
                Err(_) => eprintln!("spindle chat: the agent closed the connection"),
            }
            stderr_tail(child);
        }
        AgentEnd::Remote { url, closed } => {
            // The transport's last notice may still be on its way.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let reason = closed.lock().unwrap_or_else(|p| p.into_inner()).clone();
            match reason {
                Some(reason) => eprintln!(
                    "spindle chat: the connection to {url} closed: {}",
                    render::sanitize(&reason)
                ),
                None => eprintln!("spindle chat: the agent at {url} closed the connection"),
            }
        }
    }
}

/// Joins the running session `session_id` of the endpoint (`session/attach`
/// as `role`, with `history` first): the history comes as the session's
/// updates before the answer, like a loaded session's replay. Returns the
/// result (`{sessionId, role, lastEventId}`).
pub(crate) async fn attach(
    client: &AcpClient,
    session_id: &str,
    role: Role,
    history: History,
) -> Result<Box<serde_json::value::RawValue>, ClientError> {
    let role = match role {
        Role::Controller => AttachRole::Controller,
        Role::Observer => AttachRole::Observer,
    };
    let history = match history {
        History::Full => HistoryPolicy::Full,
        History::PendingOnly => HistoryPolicy::PendingOnly,
        History::None => HistoryPolicy::None,
    };
    client.attach_session(session_id, role, history).await
}
