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

/// The agent's list as Spindle knows its sessions: an agent session a Spindle session runs gets
/// `spindleSessionId`, and the title the page shows everywhere else: a user's rename wins, then
/// the agent's own title in its list, then the agent's latest `session_info_update` title Spindle
/// recorded (agents that send titles do not always list them).
pub(crate) fn with_spindle_titles(
    list: &mut Value,
    agent: &str,
    stored: &[spindle_store::StoredSession],
) {
    let Some(sessions) = list.get_mut("sessions").and_then(Value::as_array_mut) else {
        return;
    };
    for entry in sessions {
        let Some(id) = entry.get("sessionId").and_then(Value::as_str) else {
            continue;
        };
        // The newest Spindle session on this agent session (a session opened twice is listed
        // under the later one).
        let Some(own) = stored.iter().rev().find(|s| {
            s.agent_session_id.as_deref() == Some(id)
                && s.agent.as_ref().is_none_or(|a| a.id == agent)
        }) else {
            continue;
        };
        entry["spindleSessionId"] = json!(own.id);
        let listed = entry
            .get("title")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.trim().is_empty());
        let title_source = own.title_source;
        if title_source == spindle_store::TitleSource::User
            || (!listed && title_source == spindle_store::TitleSource::Agent)
        {
            entry["title"] = json!(own.title);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use spindle_store::{SessionAgent, SessionSetup, StoredSession, TitleSource};

    fn stored(id: i64, agent_session: &str, title: &str, source: TitleSource) -> StoredSession {
        StoredSession {
            id,
            title: title.into(),
            agent_session_id: Some(agent_session.into()),
            agent: Some(SessionAgent {
                id: "spindle".into(),
                version: String::new(),
            }),
            created_at: 0,
            updated_at: 0,
            title_source: source,
            setup: SessionSetup::default(),
        }
    }

    #[test]
    fn a_rename_wins_then_the_agents_listed_title_then_its_recorded_one() {
        let mut list = json!({"supported": true, "nextCursor": null, "sessions": [
            {"sessionId": "a", "title": "listed a"},
            {"sessionId": "b", "title": "listed b"},
            {"sessionId": "c", "title": null},
            {"sessionId": "d", "title": null},
            {"sessionId": "e", "title": "not Spindle's"},
        ]});
        let stored = [
            stored(1, "a", "Mine", TitleSource::User),
            stored(2, "b", "agent's b", TitleSource::Agent),
            stored(3, "c", "agent's c", TitleSource::Agent),
            stored(4, "d", "first prompt", TitleSource::Prompt),
        ];
        with_spindle_titles(&mut list, "spindle", &stored);
        let titles: Vec<&Value> = list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| &s["title"])
            .collect();
        assert_eq!(
            titles,
            [
                &json!("Mine"),
                &json!("listed b"),
                &json!("agent's c"),
                &Value::Null,
                &json!("not Spindle's")
            ]
        );
        assert_eq!(list["sessions"][0]["spindleSessionId"], 1);
        assert_eq!(list["sessions"][4].get("spindleSessionId"), None);
        // Another agent's sessions are not matched.
        let mut other = json!({"sessions": [{"sessionId": "a", "title": "x"}]});
        with_spindle_titles(&mut other, "gemini", &stored);
        assert_eq!(other["sessions"][0]["title"], "x");
    }
}
