//! The session lifecycle calls of [`ClientCore`] added with schema 1.20.0:
//! fork, delete, logout, and the `additionalDirectories` of a session, each
//! checked against what the agent advertised (see
//! [`InitializeOutcome::session_features`]) and spelled per negotiated
//! version:
//!
//! | call | v1 | v2 |
//! |---|---|---|
//! | [`ClientCore::fork_session`] | `session/fork {sessionId, cwd, mcpServers, additionalDirectories?}` behind `sessionCapabilities.fork` | same, behind `session.fork` |
//! | [`ClientCore::delete_session`] | `session/delete {sessionId}` behind `sessionCapabilities.delete` | same, behind `session.delete` |
//! | [`ClientCore::logout`] | `logout {}` behind `auth.logout` | `auth/logout {}` when `authMethods` is non-empty |
//! | `*_with_directories` | `additionalDirectories` on session/new, load, resume, fork behind `sessionCapabilities.additionalDirectories` | behind `session.additionalDirectories` |
//!
//! Additional directories are never refused for a missing capability: they
//! are left out of the request, and the front end says so with
//! [`InitializeOutcome::additional_directories_note`] (as it names the MCP
//! servers it skipped). A relative directory is refused
//! ([`ClientError::Protocol`]): the schema wants absolute paths.

use std::path::Path;

use serde_json::{Value, json};
use spindle_wire::client_methods::{
    AUTH_LOGOUT, LOGOUT, SESSION_DELETE, SESSION_FORK, SESSION_NEW, fields,
};

use super::core::{ClientCore, Purpose};
use super::types::{ClientError, InitializeOutcome};
use crate::jsonrpc::{RequestId, to_raw};

impl InitializeOutcome {
    /// The sentence a front end shows when `directories` were asked for but
    /// the agent does not accept `additionalDirectories` (they are then left
    /// out of the request); `None` when there is nothing to say.
    pub fn additional_directories_note(&self, directories: &[String]) -> Option<String> {
        if directories.is_empty() || self.accepts_additional_directories() {
            return None;
        }
        let capability = if self.protocol_version >= 2 {
            "capabilities.session.additionalDirectories"
        } else {
            "agentCapabilities.sessionCapabilities.additionalDirectories"
        };
        Some(format!(
            "the agent does not accept additional directories (it does not advertise {capability}); not sent: {}",
            directories.join(", ")
        ))
    }
}

/// The `additionalDirectories` value to send: `None` when there are none or
/// the agent does not accept them; an error for a relative path.
pub(super) fn directories_param(
    init: &InitializeOutcome,
    directories: &[String],
) -> Result<Option<Value>, ClientError> {
    if let Some(relative) = directories.iter().find(|d| !Path::new(d).is_absolute()) {
        return Err(ClientError::Protocol(format!(
            "additional directory {relative:?} is not an absolute path"
        )));
    }
    if directories.is_empty() || !init.accepts_additional_directories() {
        return Ok(None);
    }
    Ok(Some(json!(directories)))
}

fn raw(value: &Value) -> Result<Box<serde_json::value::RawValue>, ClientError> {
    to_raw(value).map_err(|e| ClientError::Protocol(e.to_string()))
}

impl<T> ClientCore<T> {
    /// `session/new` with `additional_directories` (absolute workspace roots
    /// besides `cwd`), sent only when the agent accepts them (see the module
    /// docs). [`ClientCore::new_session`] is this with none.
    pub fn new_session_with_directories(
        &mut self,
        cwd: &str,
        mcp_servers: &Value,
        additional_directories: &[String],
        data: T,
    ) -> Result<RequestId, ClientError> {
        let directories = directories_param(self.require_init()?, additional_directories)?;
        let mut params = json!({ fields::CWD: cwd, fields::MCP_SERVERS: mcp_servers });
        if let Some(d) = directories {
            params[fields::ADDITIONAL_DIRECTORIES] = d;
        }
        self.register(SESSION_NEW, raw(&params)?, Purpose::NewSession, data)
    }

    /// `session/fork` (unstable): a new session whose context is a copy of
    /// `session_id`'s, in `cwd` with `mcp_servers` and
    /// `additional_directories` (the complete list for the fork; sent only
    /// when the agent accepts them). Needs v1 `sessionCapabilities.fork` /
    /// v2 `session.fork`. The result carries the new `sessionId` (and
    /// `modes`, `configOptions`); the new session is known from the answer
    /// on, and its updates sent before the answer are expected.
    pub fn fork_session(
        &mut self,
        session_id: &str,
        cwd: &str,
        mcp_servers: &Value,
        additional_directories: &[String],
        data: T,
    ) -> Result<RequestId, ClientError> {
        let init = self.require_init()?;
        if !init.can_fork_session() {
            return Err(ClientError::Unsupported(if init.protocol_version >= 2 {
                "session/fork (the agent did not advertise capabilities.session.fork)".into()
            } else {
                "session/fork (needs agentCapabilities.sessionCapabilities.fork)".into()
            }));
        }
        let directories = directories_param(init, additional_directories)?;
        let mut params = json!({
            fields::SESSION_ID: session_id,
            fields::CWD: cwd,
            fields::MCP_SERVERS: mcp_servers,
        });
        if let Some(d) = directories {
            params[fields::ADDITIONAL_DIRECTORIES] = d;
        }
        self.register(SESSION_FORK, raw(&params)?, Purpose::NewSession, data)
    }

    /// `session/delete`: the agent removes `session_id` from `session/list`
    /// (and cannot load it any more). Needs v1 `sessionCapabilities.delete` /
    /// v2 `session.delete`. The result is `{}`.
    pub fn delete_session(&mut self, session_id: &str, data: T) -> Result<RequestId, ClientError> {
        let init = self.require_init()?;
        if !init.can_delete_session() {
            return Err(ClientError::Unsupported(if init.protocol_version >= 2 {
                "session/delete (the agent did not advertise capabilities.session.delete)".into()
            } else {
                "session/delete (needs agentCapabilities.sessionCapabilities.delete)".into()
            }));
        }
        let params = raw(&json!({ fields::SESSION_ID: session_id }))?;
        self.register(SESSION_DELETE, params, Purpose::Other, data)
    }

    /// Ends the authenticated session with the agent: v1 `logout` (needs
    /// `agentCapabilities.auth.logout`), v2 `auth/logout` (only when the
    /// agent advertised at least one auth method: the schema forbids calling
    /// it otherwise). The result is `{}`.
    pub fn logout(&mut self, data: T) -> Result<RequestId, ClientError> {
        let init = self.require_init()?;
        if !init.can_logout() {
            return Err(ClientError::Unsupported(if init.protocol_version >= 2 {
                "auth/logout (the agent advertises no authMethods, so it has no login to end)"
                    .into()
            } else {
                "logout (needs agentCapabilities.auth.logout)".into()
            }));
        }
        let method = if init.protocol_version >= 2 {
            AUTH_LOGOUT
        } else {
            LOGOUT
        };
        self.register(method, raw(&json!({}))?, Purpose::Other, data)
    }
}
