//! `GET /api/agent-sessions`: the agent's earlier sessions (`session/list`), asked of a
//! short-lived process of the agent asked about (no web session is involved, and
//! nothing of it is logged). Sessions whose directory lies outside the server's are left out: a
//! web session only opens directories inside it.

use std::path::Path;

use serde_json::{Value, json};
use spindle_protocol::{AcpClient, ClientError, SpawnOptions};

use crate::error::SessionError;
use crate::handshake::{AgentChoice, AgentSettings, error_message};

/// One page of the agent's sessions, as the page lists them:
/// `{supported, sessions: [{sessionId, cwd, title, updatedAt}], nextCursor}`.
pub(crate) async fn list_agent_sessions(
    settings: &AgentSettings,
    agent: &AgentChoice,
    cursor: Option<&str>,
) -> Result<Value, SessionError> {
    let (client, child) = match &settings.remote {
        Some(remote) => {
            let streams =
                remote.connector.connect().await.map_err(|e| {
                    SessionError::unavailable(format!("cannot reach the agent: {e}"))
                })?;
            let options = spindle_protocol::ConnectionOptions {
                scan_chunk_updates: true,
                ..Default::default()
            };
            let connection =
                spindle_protocol::Connection::from_io_with(streams.reader, streams.writer, options);
            // Dropping the client at the end closes the connection.
            let (client, _events) = AcpClient::start(connection, settings.client_options(), None);
            (client, None)
        }
        None => {
            let spawn = SpawnOptions {
                cwd: Some(settings.cwd.clone()),
                env: agent.env_os(),
                ..SpawnOptions::default()
            };
            let (client, _events, child) =
                AcpClient::spawn(&agent.command, spawn, settings.client_options()).map_err(
                    |e| SessionError::unavailable(format!("cannot start the agent: {e}")),
                )?;
            (client, Some(child))
        }
    };
    let asked = tokio::time::timeout(settings.startup_timeout, async {
        let init = client.initialize().await?;
        if !init.can_list_sessions() {
            return Ok(None);
        }
        client.list_sessions(None, cursor).await.map(Some)
    })
    .await;
    if let Some(child) = child {
        child.kill();
    }
    let list = match asked {
        Err(_) => {
            return Err(SessionError::Timeout(format!(
                "the agent did not list its sessions within {:?}",
                settings.startup_timeout
            )));
        }
        Ok(Err(error)) => return Err(refusal(&error)),
        Ok(Ok(None)) => {
            return Ok(json!({ "supported": false, "sessions": [], "nextCursor": null }));
        }
        Ok(Ok(Some(list))) => list,
    };
    let base = settings
        .cwd
        .canonicalize()
        .unwrap_or_else(|_| settings.cwd.clone());
    let sessions: Vec<Value> = list
        .sessions
        .into_iter()
        .filter(|s| Path::new(&s.cwd).starts_with(&base))
        .map(|s| {
            json!({
                "sessionId": s.session_id, "cwd": s.cwd, "title": s.title,
                "updatedAt": s.updated_at,
            })
        })
        .collect();
    Ok(json!({ "supported": true, "sessions": sessions, "nextCursor": list.next_cursor }))
}

fn refusal(error: &ClientError) -> SessionError {
    if error.is_auth_required() {
        return SessionError::Conflict(format!(
            "the agent wants authentication before it lists sessions: {}",
            error_message(error)
        ));
    }
    SessionError::Agent {
        code: None,
        message: format!(
            "the agent could not list its sessions: {}",
            error_message(error)
        ),
    }
}
