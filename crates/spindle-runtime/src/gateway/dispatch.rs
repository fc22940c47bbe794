//! What Spindle does with one client message on `/acp`: Spindle is the agent toward the client.
//! `session/new` creates a web session (with its own hosted agent, visible in the page);
//! `session/load`, `session/resume` and `session/attach` join an existing one; prompts, cancels,
//! modes and settings go to the session's task; a client's answer to a permission question
//! goes to the session as the page's answer would (the first answer wins).
//!
//! Answers to requests that name a session go to that session's stream, in order with its
//! updates; the others go to the connection stream.

use std::sync::Arc;

use serde_json::{Value, json};
use spindle_wire::client_methods::{
    AUTH_REQUIRED_CODE, AUTHENTICATE, RESOURCE_NOT_FOUND_CODE, SESSION_CLOSE,
};
use spindle_wire::client_methods::{
    SESSION_CANCEL, SESSION_LIST, SESSION_LOAD, SESSION_NEW, SESSION_PROMPT, SESSION_RESUME,
    SESSION_SET_CONFIG_OPTION, SESSION_SET_MODE, fields,
};
use spindle_wire::remote::{
    CONNECTED_CLIENTS, ERROR_SESSION_NOT_FOUND, HISTORY_POLICY, OPT_IN_ATTACH,
    OPT_IN_EVENT_ID_RUNS, OPT_IN_EVENT_IDS, OPT_IN_SESSION_CWD, PREVIOUS_CONNECTION_ID,
    REMOTE_OPT_IN_KEY, RESUME_FROM, ROLE, ROLE_CONTROLLER, ROLE_OBSERVER, SESSION_ATTACH,
    SESSION_CWD, SESSION_DETACH,
};
use tokio::sync::oneshot;

use crate::acp_feed::history::HistoryPolicy;
use crate::error::SessionError;
use crate::gateway::Gateway;
use crate::gateway::conn::{Attachment, Conn, Role};
use crate::gateway::streams::{parse_elicitation_request_id, parse_permission_request_id};
use crate::hub::EventId;
use crate::registry::{LiveSession, NewSession};
use crate::task::RemoteTarget;

/// JSON-RPC error codes.
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;

fn error(code: i64, message: impl Into<String>) -> Value {
    json!({ "code": code, "message": message.into() })
}

/// The one mapping of a [`SessionError`] to a JSON-RPC error, in the client's `version`: ACP's
/// `auth_required` (with the agent's methods) and resource-not-found codes where they apply,
/// the agent's own code when it answered one, invalid params, else internal error.
pub fn rpc_error(failure: &SessionError, version: u16) -> Value {
    let message = failure.message();
    match failure {
        SessionError::AuthRequired { methods } => {
            let id_key = if version >= 2 {
                fields::METHOD_ID
            } else {
                fields::ID
            };
            let methods: Vec<Value> = methods
                .iter()
                .map(|m| {
                    let mut method = serde_json::Map::new();
                    method.insert(id_key.into(), m.id.clone().into());
                    method.insert(fields::NAME.into(), m.name.clone().into());
                    if let Some(description) = &m.description {
                        method.insert(fields::DESCRIPTION.into(), description.clone().into());
                    }
                    Value::Object(method)
                })
                .collect();
            json!({
                "code": AUTH_REQUIRED_CODE,
                "message": message,
                "data": { fields::AUTH_METHODS: methods },
            })
        }
        SessionError::NotFound(_) => error(RESOURCE_NOT_FOUND_CODE, message),
        SessionError::InvalidParams(_) => error(INVALID_PARAMS, message),
        SessionError::Agent {
            code: Some(code), ..
        } => error(*code, message),
        _ => error(INTERNAL_ERROR, message),
    }
}

/// The methods whose answer goes to a session stream and that need a session.
pub fn is_session_scoped(method: &str) -> bool {
    matches!(
        method,
        SESSION_PROMPT
            | SESSION_CANCEL
            | SESSION_LOAD
            | SESSION_RESUME
            | SESSION_SET_MODE
            | SESSION_SET_CONFIG_OPTION
            | SESSION_ATTACH
            | SESSION_DETACH
            | SESSION_CLOSE
    )
}

/// The methods that may name a session this connection has not attached yet.
pub fn joins_session(method: &str) -> bool {
    matches!(method, SESSION_LOAD | SESSION_RESUME | SESSION_ATTACH)
}

/// The `initialize` answer: Spindle as an agent of the version the session agents speak.
pub fn initialize_result(protocol: u16, conn: &Conn, params: &Value) -> Value {
    // Each connection speaks the version it asks for (1 or 2; a later one gets 2, none gets
    // serve's `--protocol`): what a session's agent says in the other version is translated
    // (`versions.rs`).
    let version = match params.get("protocolVersion").and_then(Value::as_u64) {
        Some(1) => 1,
        Some(n) if n >= 2 => 2,
        _ => protocol.clamp(1, 2),
    };
    *crate::sync::lock(&conn.protocol) = version;
    let client_info = params
        .get("clientInfo")
        .or_else(|| params.get("info"))
        .cloned()
        .unwrap_or(Value::Null);
    *crate::sync::lock(&conn.client_info) = client_info;
    let opted: Vec<&str> = params
        .pointer("/_meta/spindle")
        .and_then(|s| s.get(REMOTE_OPT_IN_KEY))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    *crate::sync::lock(&conn.opt_in) = super::conn::OptIns {
        attach: opted.contains(&OPT_IN_ATTACH),
        event_ids: opted.contains(&OPT_IN_EVENT_IDS),
        event_id_runs: opted.contains(&OPT_IN_EVENT_IDS) && opted.contains(&OPT_IN_EVENT_ID_RUNS),
        session_cwd: opted.contains(&OPT_IN_SESSION_CWD),
    };
    let info =
        json!({ "name": "spindle", "title": "Spindle", "version": env!("CARGO_PKG_VERSION") });
    let meta = json!({ "spindle": { REMOTE_OPT_IN_KEY: [
        OPT_IN_ATTACH, OPT_IN_EVENT_IDS, OPT_IN_EVENT_ID_RUNS, OPT_IN_SESSION_CWD,
    ] } });
    // The proposal's capability ("Multi-Client Session Attach"), for peers that opted in.
    let attach = json!({ "roles": [ROLE_CONTROLLER, ROLE_OBSERVER] });
    let mut result = if version >= 2 {
        json!({
            "protocolVersion": 2,
            "info": info,
            "capabilities": { "session": { "prompt": { "image": {}, "embeddedContext": {} } } },
            "authMethods": [],
            "_meta": meta,
        })
    } else {
        json!({
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": { "image": true, "audio": false, "embeddedContext": true },
                "sessionCapabilities": { "list": {}, "resume": {} },
            },
            "authMethods": [],
            "agentInfo": info,
            "_meta": meta,
        })
    };
    if opted.contains(&OPT_IN_ATTACH) {
        match version {
            1 => result["agentCapabilities"]["sessionCapabilities"]["attach"] = attach,
            _ => result["capabilities"]["session"]["attach"] = attach,
        }
    }
    result
}

/// Where an answer goes.
enum Route {
    Connection,
    Session(Arc<LiveSession>),
}

fn answer(state: &Gateway, conn: &Conn, route: &Route, id: &Value, result: Result<Value, Value>) {
    match route {
        Route::Session(live) => live.acp_respond(&conn.id, id, result),
        Route::Connection => {
            let mut message = json!({ "jsonrpc": "2.0", "id": id });
            match result {
                Ok(value) => message["result"] = value,
                Err(error) => message["error"] = error,
            }
            conn.send(message.to_string(), state.conns.limits.connection_ring);
        }
    }
}

/// The answer to what an observer's token may not do: -32600 naming the user and the role.
fn observer_refusal(conn: &Conn, what: &str) -> Value {
    let name = conn.user().map_or("this user", |user| user.name.as_str());
    json!({
        "code": INVALID_REQUEST,
        "message": format!("{name} is an observer on this server: {what} needs the controller role; attach with role \"observer\""),
        "data": { ROLE: ROLE_OBSERVER, "method": what },
    })
}

/// Handles one message (not `initialize`). Returns the sessions newly attached (a WebSocket
/// opens their streams).
pub async fn dispatch(state: &Gateway, conn: &Arc<Conn>, message: Value) -> Vec<String> {
    conn.touch();
    let method = message.get("method").and_then(Value::as_str);
    let id = message.get("id").cloned();
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let Some(method) = method else {
        if let Some(id) = id {
            client_answer(state, conn, &id, &message).await;
        }
        return Vec::new();
    };
    let session_id = params
        .get(fields::SESSION_ID)
        .and_then(Value::as_str)
        .map(str::to_string);
    let live = match &session_id {
        Some(sid) => sid
            .parse::<i64>()
            .ok()
            .and_then(|n| state.manager.get_now(n)),
        None => None,
    };
    let route = match (&live, method) {
        (_, SESSION_DETACH) | (None, _) => Route::Connection,
        (Some(live), _) => Route::Session(live.clone()),
    };
    let reply = |result: Result<Value, Value>| {
        if let Some(id) = &id {
            answer(state, conn, &route, id, result);
        }
    };
    if is_session_scoped(method) && live.is_none() {
        let sid = session_id.unwrap_or_default();
        reply(Err(if method == SESSION_ATTACH {
            // The proposal's error for an unknown session.
            json!({ "code": ERROR_SESSION_NOT_FOUND, "message": "Session not found",
                    "data": { "sessionId": sid } })
        } else {
            error(INVALID_PARAMS, format!("no session {sid:?}"))
        }));
        return Vec::new();
    }
    let sid = session_id.clone().unwrap_or_default();
    let attached = conn.attachment(&sid);
    if is_session_scoped(method) && !joins_session(method) && attached.is_none() {
        reply(Err(error(
            INVALID_REQUEST,
            format!("session {sid} is not attached to this connection"),
        )));
        return Vec::new();
    }
    let controller = attached == Some(Role::Controller);
    if !conn.may_control() && matches!(method, SESSION_NEW | SESSION_LOAD | SESSION_RESUME) {
        // An observer's token: it may only watch (`session/attach` as observer). Answered on
        // the connection stream: the connection has no session stream for it.
        if let Some(id) = &id {
            answer(
                state,
                conn,
                &Route::Connection,
                id,
                Err(observer_refusal(conn, method)),
            );
        }
        return Vec::new();
    }
    match method {
        SESSION_NEW => {
            if conn.session_count() >= state.conns.limits.max_sessions_per_connection {
                reply(Err(error(
                    INVALID_REQUEST,
                    "too many sessions on this connection",
                )));
                return Vec::new();
            }
            let cwd = params.get("cwd").and_then(Value::as_str);
            let usable = cwd.filter(|c| state.manager.is_usable_cwd(c));
            if let (Some(asked), None) = (cwd, usable) {
                tracing::warn!(
                    cwd = asked,
                    "/acp session/new: the working directory is not one this server offers; \
                     the session runs in the server's"
                );
            }
            // The server's agent runs on the server: it gets the MCP servers serve is
            // configured with, never commands a remote client names (they would run here).
            let client_servers = params
                .get(fields::MCP_SERVERS)
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            if client_servers > 0 {
                tracing::warn!(
                    servers = client_servers,
                    "/acp session/new: the client's MCP servers are not used; the session \
                     gets the ones serve is configured with (--mcp-config)"
                );
            }
            // Directories are checked as the page's are (absolute, existing): -32602 otherwise.
            let additional_directories = match params.get(fields::ADDITIONAL_DIRECTORIES) {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => {
                    let dirs: Option<Vec<String>> = items
                        .iter()
                        .map(|d| d.as_str().map(str::to_owned))
                        .collect();
                    match dirs {
                        Some(dirs) => dirs,
                        None => {
                            reply(Err(error(
                                INVALID_PARAMS,
                                "additionalDirectories must be an array of paths",
                            )));
                            return Vec::new();
                        }
                    }
                }
                Some(_) => {
                    reply(Err(error(
                        INVALID_PARAMS,
                        "additionalDirectories must be an array of paths",
                    )));
                    return Vec::new();
                }
            };
            let new = NewSession {
                cwd: usable.map(str::to_string),
                additional_directories,
                ..NewSession::default()
            };
            match state.manager.create(new).await {
                Ok(summary) => {
                    let sid = summary.id().to_string();
                    let Some(live) = state.manager.get_now(summary.id()) else {
                        reply(Err(error(INTERNAL_ERROR, "the session vanished")));
                        return Vec::new();
                    };
                    let (answer_sent, answered) = oneshot::channel();
                    attach(
                        conn,
                        &sid,
                        &live,
                        Role::Controller,
                        HistoryPolicy::None,
                        None,
                        Some(answered),
                    );
                    // The answer carries the agent's modes and config options, so it waits for
                    // the agent session to open; the connection's other messages do not.
                    if let Some(id) = id {
                        let (state, conn) = (state.clone(), conn.clone());
                        tokio::spawn(async move {
                            let opened = live.agent_session_open().await;
                            let mut result = serde_json::Map::new();
                            result.insert(fields::SESSION_ID.into(), sid.clone().into());
                            if opened {
                                result.extend(live.acp_session_setup(conn.protocol()));
                            }
                            add_session_cwd(&conn, &live, &mut result);
                            let result = Ok(Value::Object(result));
                            answer(&state, &conn, &Route::Connection, &id, result);
                            let _ = answer_sent.send(());
                        });
                    }
                    vec![summary.id().to_string()]
                }
                Err(e) => {
                    reply(Err(rpc_error(&e, conn.protocol())));
                    Vec::new()
                }
            }
        }
        SESSION_LOAD | SESSION_RESUME | SESSION_ATTACH => {
            let live = live.expect("checked above");
            if attached.is_none()
                && conn.session_count() >= state.conns.limits.max_sessions_per_connection
            {
                reply(Err(error(
                    INVALID_REQUEST,
                    "too many sessions on this connection",
                )));
                return Vec::new();
            }
            let (role, policy) = match method {
                SESSION_LOAD => (Role::Controller, HistoryPolicy::Full),
                SESSION_RESUME => (Role::Controller, HistoryPolicy::None),
                _ => {
                    let role = match params.get(ROLE).and_then(Value::as_str) {
                        Some(ROLE_OBSERVER) => Role::Observer,
                        // An observer's token attaches as observer unless it asks for more.
                        None if !conn.may_control() => Role::Observer,
                        Some(ROLE_CONTROLLER) if !conn.may_control() => {
                            let refusal = observer_refusal(conn, "session/attach as controller");
                            if let Some(id) = &id {
                                answer(state, conn, &Route::Connection, id, Err(refusal));
                            }
                            return Vec::new();
                        }
                        Some(ROLE_CONTROLLER) | None => Role::Controller,
                        Some(other) => {
                            reply(Err(error(
                                INVALID_PARAMS,
                                format!("unknown role {other:?}"),
                            )));
                            return Vec::new();
                        }
                    };
                    let policy = match params.get(HISTORY_POLICY).and_then(Value::as_str) {
                        None => HistoryPolicy::Full,
                        Some(text) => match HistoryPolicy::parse(text) {
                            Some(policy) => policy,
                            None => {
                                reply(Err(error(
                                    INVALID_PARAMS,
                                    format!("unknown historyPolicy {text:?}"),
                                )));
                                return Vec::new();
                            }
                        },
                    };
                    (role, policy)
                }
            };
            let resume_from = params
                .get(RESUME_FROM)
                .and_then(Value::as_str)
                .and_then(EventId::parse);
            // A reattach after a reconnect: the answers still due to the closed connection
            // (a prompt sent on it) come to this one.
            if let Some(previous) = params.get(PREVIOUS_CONNECTION_ID).and_then(Value::as_str)
                && previous != &*conn.id
                && !state.conns.take_over(conn, previous)
            {
                // On the connection stream: this connection has no stream of the session.
                if let Some(id) = &id {
                    let refused = error(
                        INVALID_PARAMS,
                        "previousConnectionId is not a recently closed connection",
                    );
                    answer(state, conn, &Route::Connection, id, Err(refused));
                }
                return Vec::new();
            }
            attach(conn, &sid, &live, role, policy, resume_from, None);
            // `LoadSessionResponse` and `ResumeSessionResponse`: the agent's modes and config
            // options as the session has them now; an attach result carries them too.
            let mut result = live.acp_session_setup(conn.protocol());
            if method == SESSION_ATTACH {
                result.insert(fields::SESSION_ID.into(), json!(sid));
                result.insert(ROLE.into(), json!(role.name()));
                result.insert("lastEventId".into(), json!(live.acp_last_id().to_string()));
                result.insert(
                    CONNECTED_CLIENTS.into(),
                    json!(state.conns.attached_to(&sid)),
                );
            }
            add_session_cwd(conn, &live, &mut result);
            let result = Value::Object(result);
            reply(Ok(result));
            vec![sid]
        }
        SESSION_DETACH => {
            let was = conn.detach(&sid);
            reply(if was {
                // The proposal's result.
                Ok(json!({ "sessionId": sid, "status": "detached" }))
            } else {
                Err(error(INVALID_REQUEST, "not attached"))
            });
            Vec::new()
        }
        SESSION_PROMPT | SESSION_CANCEL | SESSION_SET_MODE | SESSION_SET_CONFIG_OPTION
            if !controller =>
        {
            reply(Err(error(
                INVALID_REQUEST,
                "observers may not change the session; attach as controller",
            )));
            Vec::new()
        }
        SESSION_PROMPT => {
            let live = live.expect("checked above");
            let Some(id) = id.clone() else {
                return Vec::new();
            };
            let blocks = params.get("prompt").cloned().unwrap_or(Value::Null);
            if !blocks.is_array() {
                reply(Err(error(
                    INVALID_PARAMS,
                    "prompt must be an array of content blocks",
                )));
                return Vec::new();
            }
            let target = RemoteTarget {
                connection: conn.id.clone(),
                id: id.clone(),
            };
            if let Err(e) = live.remote_prompt(blocks, target).await {
                live.acp_respond(&conn.id, &id, Err(rpc_error(&e, conn.protocol())));
            }
            Vec::new()
        }
        SESSION_CANCEL => {
            let live = live.expect("checked above");
            let result = live.cancel().await;
            reply(
                result
                    .map(|()| Value::Null)
                    .map_err(|e| rpc_error(&e, conn.protocol())),
            );
            Vec::new()
        }
        SESSION_SET_MODE | SESSION_SET_CONFIG_OPTION => {
            let live = live.expect("checked above");
            // In the agent's version (a v2 client's mode option is a v1 agent's modes, and the
            // other way round), answered in the client's.
            let version = conn.protocol();
            let result = live
                .acp_setting(version, method, &params, |e| rpc_error(e, version))
                .await;
            reply(result);
            Vec::new()
        }
        SESSION_LIST => {
            reply(list_sessions(state, conn.protocol()));
            Vec::new()
        }
        AUTHENTICATE => {
            reply(Ok(json!({})));
            Vec::new()
        }
        other => {
            if id.is_none() {
                // A notification gets no answer; what is not acted on is still named.
                tracing::warn!(
                    connection = %conn.id,
                    method = other,
                    "/acp: a notification this server does not act on; ignored"
                );
            }
            reply(Err(error(
                METHOD_NOT_FOUND,
                format!("method {other:?} not found"),
            )));
            Vec::new()
        }
    }
}

/// `_meta.spindle.cwd` of a session result, for a client that opted into `session_cwd`: where
/// the session runs on the server.
fn add_session_cwd(conn: &Conn, live: &LiveSession, result: &mut serde_json::Map<String, Value>) {
    if conn.opt_ins().session_cwd {
        let cwd = live.cwd().display().to_string();
        result.insert("_meta".into(), json!({ "spindle": { SESSION_CWD: cwd } }));
    }
}

fn attach(
    conn: &Conn,
    sid: &str,
    live: &LiveSession,
    role: Role,
    policy: HistoryPolicy,
    resume_from: Option<EventId>,
    answered: Option<oneshot::Receiver<()>>,
) {
    // The history and the point the live part continues from are cut together.
    let (history, resume) = match resume_from {
        Some(from) => (None, from),
        None => live.acp_attach_point(policy, conn.protocol()),
    };
    conn.attach(
        sid,
        Attachment {
            role,
            history,
            resume,
            stop: None,
            policy,
            answered,
        },
    );
}

fn list_sessions(state: &Gateway, version: u16) -> Result<Value, Value> {
    let sessions = state.manager.list().map_err(|e| rpc_error(&e, version))?;
    let cwd = state.manager.default_cwd().display().to_string();
    let list: Vec<Value> = sessions
        .iter()
        .map(|s| {
            json!({
                "sessionId": s.id().to_string(),
                "cwd": s.cwd().unwrap_or(&cwd),
                "title": s.title(),
            })
        })
        .collect();
    Ok(json!({ "sessions": list }))
}

/// A client's answer to a request Spindle sent: a permission answer.
async fn client_answer(state: &Gateway, conn: &Arc<Conn>, id: &Value, message: &Value) {
    if let Some((sid, key)) = parse_elicitation_request_id(id) {
        elicitation_answer(state, conn, &sid, &key, message).await;
        return;
    }
    let Some((sid, key)) = parse_permission_request_id(id) else {
        tracing::warn!(connection = %conn.id, "/acp: an answer to no request of this server; ignored");
        return;
    };
    let Some(Role::Controller) = conn.attachment(&sid) else {
        return;
    };
    let Some(live) = sid
        .parse::<i64>()
        .ok()
        .and_then(|n| state.manager.get_now(n))
    else {
        return;
    };
    let outcome = message.pointer("/result/outcome");
    let option = match outcome
        .and_then(|o| o.get("outcome"))
        .and_then(Value::as_str)
    {
        Some("selected") => outcome
            .and_then(|o| o.get("optionId"))
            .and_then(Value::as_str)
            .map(str::to_string),
        _ => None,
    };
    // A later answer finds the question closed: the first one won, the others were told.
    if let Err(e) = live.answer_permission(&key, option).await {
        tracing::debug!(connection = %conn.id, "permission answer not taken: {e}");
    }
}

/// A controller's answer to a forwarded `elicitation/create`; an error answer (a client that
/// does not handle elicitation) leaves the question to the others. The first answer wins.
async fn elicitation_answer(
    state: &Gateway,
    conn: &Arc<Conn>,
    sid: &str,
    key: &str,
    message: &Value,
) {
    let Some(Role::Controller) = conn.attachment(sid) else {
        return;
    };
    let Some(result) = message.get("result") else {
        return;
    };
    let Some(live) = sid
        .parse::<i64>()
        .ok()
        .and_then(|n| state.manager.get_now(n))
    else {
        return;
    };
    let action = result.get("action").and_then(Value::as_str).unwrap_or("");
    let content = result.get("content").cloned();
    if let Err(e) = live.answer_elicitation(key, action, content).await {
        tracing::debug!(connection = %conn.id, "elicitation answer not taken: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_session_error_has_its_json_rpc_code() {
        let method = spindle_protocol::AuthMethod {
            id: "token".into(),
            name: "Token".into(),
            description: None,
            kind: "agent".into(),
        };
        let auth = SessionError::AuthRequired {
            methods: vec![method],
        };
        let cases = [
            (SessionError::NotFound("no session 9".into()), -32002),
            (SessionError::InvalidParams("bad".into()), -32602),
            (auth.clone(), -32000),
            (
                SessionError::Agent {
                    code: Some(-32042),
                    message: "no".into(),
                },
                -32042,
            ),
            (
                SessionError::Agent {
                    code: None,
                    message: "gone".into(),
                },
                -32603,
            ),
            (SessionError::StorageFull, -32603),
            (SessionError::Gone, -32603),
        ];
        for (failure, code) in cases {
            let answer = rpc_error(&failure, 1);
            assert_eq!(answer["code"], code, "{failure:?}");
            assert_eq!(answer["message"], failure.message());
        }
        // The methods in the client's version: v1 `id`, v2 `methodId`.
        assert_eq!(rpc_error(&auth, 1)["data"]["authMethods"][0]["id"], "token");
        let v2 = rpc_error(&auth, 2);
        assert_eq!(v2["data"]["authMethods"][0]["methodId"], "token");
        assert!(v2["data"]["authMethods"][0].get("id").is_none());
    }
    use spindle_protocol::schema_check::{Direction, validate_with_method};

    #[test]
    fn the_initialize_answer_validates_for_both_versions_and_reads_the_opt_in() {
        for version in [1u16, 2] {
            let conn = Conn::for_test();
            let params = json!({ "protocolVersion": version,
                                 "_meta": { "spindle": { "remote": ["attach"] } } });
            let result = initialize_result(version, &conn, &params);
            let answer = json!({ "jsonrpc": "2.0", "id": 0, "result": result }).to_string();
            validate_with_method(
                version,
                Direction::AgentToClient,
                &answer,
                Some("initialize"),
            )
            .unwrap_or_else(|e| panic!("v{version}: {e:?}\n{answer}"));
            assert!(conn.opted_attach() && !conn.opted_event_ids());
        }
    }
}
