//! The handlers of the routes a daily client needs beyond prompting (contract D): opening an
//! agent's earlier sessions, the agent's description, authentication, modes and config options,
//! file reviews, remembered permissions and `@`-completion. None of them takes a command from
//! the page: commands are only ever run at the agent's request (`task/host.rs`).

use std::collections::HashMap;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::errors::WebError;
use crate::extract::{AppState, SessionId, SessionRoute, body_refusal};
use spindle_runtime::NewSession;
use spindle_runtime::OpenMode;
use spindle_runtime::PromptImage;

/// Largest accepted prompt body (text and images): 16 MiB.
pub(crate) const MAX_PROMPT_BODY: usize = 16 << 20;

fn query(
    query: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<HashMap<String, String>, WebError> {
    match query {
        Ok(Query(map)) => Ok(map),
        Err(_) => Err(WebError::bad_request("the query string could not be read")),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateBody {
    cwd: Option<String>,
    agent_session_id: Option<String>,
    open: Option<String>,
    agent: Option<String>,
    /// Absent: every configured server; `[]`: none.
    mcp_servers: Option<Vec<String>>,
    /// Absolute, existing directories.
    #[serde(default)]
    additional_directories: Vec<String>,
}

pub(crate) async fn create_session(
    State(state): State<AppState>,
    body: axum::body::Bytes,
) -> Result<Response, WebError> {
    // An empty body is a plain new session.
    let body: CreateBody = if body.iter().all(u8::is_ascii_whitespace) {
        CreateBody::default()
    } else {
        serde_json::from_slice(&body).map_err(|_| {
            WebError::bad_request(
                r#"the request body must be {"agent"?: "ID", "cwd"?: "...", "agentSessionId"?: "...", "open"?: "load"|"resume", "mcpServers"?: ["NAME", ...], "additionalDirectories"?: ["/ABSOLUTE/DIR", ...]}"#,
            )
        })?
    };
    let open = match body.open.as_deref() {
        None => None,
        Some("load") => Some(OpenMode::Load),
        Some("resume") => Some(OpenMode::Resume),
        Some(_) => {
            return Err(WebError::bad_request(
                "\"open\" must be \"load\" or \"resume\"",
            ));
        }
    };
    if body
        .agent_session_id
        .as_ref()
        .is_some_and(|s| s.trim().is_empty() || s.len() > 1024)
    {
        return Err(WebError::bad_request(
            "\"agentSessionId\" is empty or too long",
        ));
    }
    let summary = state
        .manager
        .create(NewSession {
            cwd: body.cwd,
            agent_session_id: body.agent_session_id,
            open,
            agent: body.agent,
            mcp_servers: body.mcp_servers,
            additional_directories: body.additional_directories,
        })
        .await?;
    Ok((StatusCode::CREATED, axum::Json(summary)).into_response())
}

pub(crate) async fn agent_sessions(
    State(state): State<AppState>,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, WebError> {
    let params = query(params)?;
    let list = state
        .manager
        .agent_sessions(
            params.get("agent").map(String::as_str),
            params.get("cursor").map(String::as_str),
        )
        .await?;
    Ok(axum::Json(list).into_response())
}

/// `GET /api/agents`: the agents a session may run, `{agents: [{id, name, version, default}]}`.
pub(crate) async fn agents(State(state): State<AppState>) -> Response {
    axum::Json(json!({ "agents": state.manager.agents() })).into_response()
}

/// `GET /api/mcp-servers`: the configured MCP servers a new session may get,
/// `{servers: [{name, type, target}]}` (never an environment or header value).
pub(crate) async fn mcp_servers(State(state): State<AppState>) -> Response {
    axum::Json(json!({ "servers": state.manager.mcp_servers() })).into_response()
}

pub(crate) async fn agent(SessionRoute(session): SessionRoute) -> Result<Response, WebError> {
    Ok(axum::Json(session.agent_info().await?).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuthenticateBody {
    method_id: String,
}

pub(crate) async fn authenticate(
    SessionRoute(session): SessionRoute,
    body: Result<axum::Json<AuthenticateBody>, JsonRejection>,
) -> Result<Response, WebError> {
    let axum::Json(body) = body.map_err(|e| body_refusal(&e, r#"{"methodId": "..."}"#))?;
    session.authenticate(body.method_id).await?;
    Ok(axum::Json(json!({ "authenticated": true })).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ModeBody {
    mode_id: String,
}

pub(crate) async fn mode(
    SessionRoute(session): SessionRoute,
    body: Result<axum::Json<ModeBody>, JsonRejection>,
) -> Result<Response, WebError> {
    let axum::Json(body) = body.map_err(|e| body_refusal(&e, r#"{"modeId": "..."}"#))?;
    session.set_mode(body.mode_id).await?;
    Ok(axum::Json(json!({ "set": true })).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConfigBody {
    config_id: String,
    value: Value,
}

pub(crate) async fn config(
    SessionRoute(session): SessionRoute,
    body: Result<axum::Json<ConfigBody>, JsonRejection>,
) -> Result<Response, WebError> {
    let axum::Json(body) =
        body.map_err(|e| body_refusal(&e, r#"{"configId": "...", "value": "..."|true|false}"#))?;
    if !matches!(body.value, Value::String(_) | Value::Bool(_)) {
        return Err(WebError::bad_request(
            "\"value\" must be a value id (a string) or a boolean",
        ));
    }
    let result = session.set_config(body.config_id, body.value).await?;
    Ok(axum::Json(json!({ "set": true, "result": result })).into_response())
}

#[derive(Debug, Deserialize)]
pub(crate) struct PromptBody {
    text: String,
    #[serde(default)]
    images: Vec<PromptImage>,
}

pub(crate) async fn prompt(
    SessionRoute(session): SessionRoute,
    body: Result<axum::Json<PromptBody>, JsonRejection>,
) -> Result<Response, WebError> {
    let axum::Json(body) = body.map_err(|e| {
        body_refusal(
            &e,
            r#"{"text": "...", "images"?: [{"mimeType": "image/png", "data": "<base64>"}]}"#,
        )
    })?;
    if body.text.trim().is_empty() && body.images.is_empty() {
        return Err(WebError::bad_request("empty prompt"));
    }
    if let Some(image) = body
        .images
        .iter()
        .find(|i| !i.mime_type.starts_with("image/"))
    {
        return Err(WebError::bad_request(format!(
            "{:?} is not an image type",
            image.mime_type.chars().take(64).collect::<String>()
        )));
    }
    let outcome = session.prompt(body.text, body.images).await?;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(crate::queue_routes::prompt_answer(&outcome)),
    )
        .into_response())
}

pub(crate) async fn files(
    SessionRoute(session): SessionRoute,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, WebError> {
    let params = query(params)?;
    let root = session.cwd().to_path_buf();
    let prefix = params.get("prefix").cloned().unwrap_or_default();
    let files =
        tokio::task::spawn_blocking(move || spindle_runtime::files::complete(&root, &prefix))
            .await
            .map_err(|_| {
                WebError::new(StatusCode::SERVICE_UNAVAILABLE, "the completion failed")
            })??;
    Ok(axum::Json(json!({ "files": files })).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReviewBody {
    /// The `requestId` of the `web_review` op (the JSON text of the agent's request id), or
    /// the id itself as the engine's write view gives it (a number or a string).
    request_id: Value,
    decision: String,
}

/// The keys a review's `requestId` may name: the JSON text of a request id as given, or the
/// request id itself (the JSON text of that value).
fn review_keys(request_id: &Value) -> Result<Vec<String>, WebError> {
    match request_id {
        Value::String(text) => Ok(vec![text.clone(), Value::String(text.clone()).to_string()]),
        Value::Number(number) => Ok(vec![number.to_string()]),
        _ => Err(WebError::bad_request(
            "\"requestId\" must be the id of a pending write (a string or a number)",
        )),
    }
}

pub(crate) async fn review(
    SessionRoute(session): SessionRoute,
    body: Result<axum::Json<ReviewBody>, JsonRejection>,
) -> Result<Response, WebError> {
    let axum::Json(body) = body
        .map_err(|e| body_refusal(&e, r#"{"requestId": "...", "decision": "accept"|"reject"}"#))?;
    let accept = match body.decision.as_str() {
        "accept" => true,
        "reject" => false,
        _ => {
            return Err(WebError::bad_request(
                "\"decision\" must be \"accept\" or \"reject\"",
            ));
        }
    };
    let keys = review_keys(&body.request_id)?;
    session.review(keys, accept).await?;
    Ok(axum::Json(json!({ "decided": body.decision })).into_response())
}

#[derive(Debug, Deserialize)]
pub(crate) struct ForgetBody {
    key: String,
}

pub(crate) async fn forget_permission(
    SessionRoute(session): SessionRoute,
    body: Result<axum::Json<ForgetBody>, JsonRejection>,
) -> Result<Response, WebError> {
    let axum::Json(body) = body.map_err(|e| body_refusal(&e, r#"{"key": "..."}"#))?;
    session.forget_permission(body.key).await?;
    Ok(axum::Json(json!({ "forgotten": true })).into_response())
}

#[derive(Debug, Deserialize)]
pub(crate) struct RenameBody {
    title: String,
}

/// `PATCH /api/sessions/{id}` `{"title"}`: renames the session (every replica lists the new
/// title).
pub(crate) async fn rename_session(
    State(state): State<AppState>,
    SessionId(id): SessionId,
    body: Result<axum::Json<RenameBody>, JsonRejection>,
) -> Result<Response, WebError> {
    let axum::Json(body) = body.map_err(|e| body_refusal(&e, r#"{"title": "..."}"#))?;
    state.manager.rename(id, &body.title).await?;
    Ok(axum::Json(json!({ "renamed": true })).into_response())
}

/// `DELETE /api/sessions/{id}`: stops the session's agent and deletes what Spindle stored of it;
/// with `?agent=true` the agent deletes its copy first (`session/delete`), and when it cannot,
/// the refusal is the answer and Spindle's copy is kept.
pub(crate) async fn delete_session(
    State(state): State<AppState>,
    SessionId(id): SessionId,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, WebError> {
    let with_agent = match query(params)?.get("agent").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(WebError::bad_request("\"agent\" must be true or false")),
    };
    if with_agent {
        state.manager.delete_with_agent(id).await?;
    } else {
        state.manager.delete(id).await?;
    }
    Ok(axum::Json(json!({ "deleted": true, "agentCopyDeleted": with_agent })).into_response())
}

/// `POST /api/sessions/{id}/fork`: a new session on the agent's fork of this one's agent
/// session (`session/fork`), listed with its parent; `409` when the agent does not fork.
pub(crate) async fn fork_session(
    State(state): State<AppState>,
    SessionId(id): SessionId,
) -> Result<Response, WebError> {
    let summary = state.manager.fork(id).await?;
    Ok((StatusCode::CREATED, axum::Json(summary)).into_response())
}

/// `POST /api/sessions/{id}/logout`: signs out of the session's agent (`logout`); the session
/// then waits for a sign-in. `409` when the agent does not offer it.
pub(crate) async fn logout(SessionRoute(session): SessionRoute) -> Result<Response, WebError> {
    session.logout().await?;
    Ok(axum::Json(json!({ "signedOut": true })).into_response())
}
