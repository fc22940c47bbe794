//! Secrets blanked in a logged line before the wire inspector shows it.
//!
//! The wire log keeps lines as they were written (the user's MCP secrets are already left out
//! when Spindle logs its own session requests: `spindle_host::mcp_servers::redact_mcp_secrets`);
//! what leaves the server through `GET /api/sessions/{id}/wire` passes [`mask_secrets`] as well,
//! whatever wrote the line (an older Spindle, an `/acp` client, the agent). The rule, applied to a
//! line that is a JSON object:
//!
//! 1. `authenticate` / `auth/login` requests: every string and number under `params` except
//!    `methodId` (which method was chosen is not a secret; what came with it may be);
//! 2. `session/new`, `session/load`, `session/resume`, `session/fork` requests: the values of
//!    each MCP server's `env` and `headers` (as `[{"name", "value"}]` lists or as objects);
//! 3. anywhere in any line: every string and number under a member whose key looks like a
//!    secret, and the `value` of a `{"name": ..., "value": ...}` pair whose name does (an
//!    environment variable such as `GITHUB_TOKEN` in `terminal/create`). A key looks like a
//!    secret when, lower-cased without `_`, `-`, `.` and spaces, it ends in `token` or contains
//!    `apikey`, `accesskey`, `privatekey`, `password`, `passwd`, `secret`, `authorization`,
//!    `cookie` or `credential` (so `accessToken`, `X-API-Key`, `client_secret`, `Authorization`;
//!    not `maxTokens`, `inputTokens`, `tokenizer`).
//!
//! A masked value becomes [`MASKED`]; booleans and `null` stay (they say whether, not what).
//! Free text (a prompt, a command line, a file's content) is never searched for secrets, and a
//! line that is not JSON is shown as it is.

use serde_json::Value;
use spindle_wire::client_methods::{
    AUTH_LOGIN, AUTHENTICATE, SESSION_FORK, SESSION_LOAD, SESSION_NEW, SESSION_RESUME, fields,
};

/// What replaces a secret value (the spelling the log's own redaction uses).
pub const MASKED: &str = spindle_host::mcp_servers::REDACTED_VALUE;

/// Lower-case pieces at least one of which a line must hold to need a look (a quick test that
/// spares parsing the lines that cannot hold a masked value).
const TRIGGERS: [&str; 11] = [
    "token",
    "key",
    "pass",
    "secret",
    "authoriz",
    "cookie",
    "credential",
    "mcpservers",
    "env",
    "headers",
    "auth",
];

/// `line` with its secrets masked, or `None` when it holds none (or is not JSON).
pub fn mask_secrets(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    if !TRIGGERS.iter().any(|t| lower.contains(t)) {
        return None;
    }
    let mut message: Value = serde_json::from_str(line).ok()?;
    mask_message(&mut message).then(|| message.to_string())
}

/// Masks a decoded message in place; whether anything changed.
pub fn mask_message(message: &mut Value) -> bool {
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut changed = false;
    if let Some(params) = message.get_mut("params") {
        match method.as_deref() {
            Some(AUTHENTICATE | AUTH_LOGIN) => changed |= mask_authenticate(params),
            Some(SESSION_NEW | SESSION_LOAD | SESSION_RESUME | SESSION_FORK) => {
                changed |= mask_mcp_servers(params)
            }
            _ => {}
        }
    }
    changed | mask_by_key(message)
}

fn mask_authenticate(params: &mut Value) -> bool {
    let Some(members) = params.as_object_mut() else {
        return mask_all(params);
    };
    let mut changed = false;
    for (key, value) in members.iter_mut() {
        if key != fields::METHOD_ID {
            changed |= mask_all(value);
        }
    }
    changed
}

fn mask_mcp_servers(params: &mut Value) -> bool {
    let Some(servers) = params
        .get_mut(fields::MCP_SERVERS)
        .and_then(Value::as_array_mut)
    else {
        return false;
    };
    let mut changed = false;
    for server in servers {
        for field in [fields::ENV, "headers"] {
            match server.get_mut(field) {
                Some(Value::Array(pairs)) => {
                    for pair in pairs {
                        if let Some(value) = pair.get_mut(fields::VALUE) {
                            changed |= mask_all(value);
                        }
                    }
                }
                Some(Value::Object(map)) => {
                    for value in map.values_mut() {
                        changed |= mask_all(value);
                    }
                }
                _ => {}
            }
        }
    }
    changed
}

/// Rule 3, through the whole value.
fn mask_by_key(value: &mut Value) -> bool {
    match value {
        Value::Object(members) => {
            let pair_is_secret = members
                .get(fields::NAME)
                .and_then(Value::as_str)
                .is_some_and(key_looks_secret);
            let mut changed = false;
            for (key, member) in members.iter_mut() {
                changed |= if key_looks_secret(key) || (pair_is_secret && key == fields::VALUE) {
                    mask_all(member)
                } else {
                    mask_by_key(member)
                };
            }
            changed
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |c, item| mask_by_key(item) | c),
        _ => false,
    }
}

/// Whether a member's key (or an environment variable's or header's name) looks like a secret.
pub fn key_looks_secret(key: &str) -> bool {
    let folded: String = key
        .chars()
        .filter(|c| !matches!(c, '_' | '-' | '.' | ' '))
        .flat_map(char::to_lowercase)
        .collect();
    folded.ends_with("token")
        || [
            "apikey",
            "accesskey",
            "privatekey",
            "password",
            "passwd",
            "secret",
            "authorization",
            "cookie",
            "credential",
        ]
        .iter()
        .any(|part| folded.contains(part))
}

/// Every string and number under `value` becomes [`MASKED`].
fn mask_all(value: &mut Value) -> bool {
    match value {
        Value::String(text) if text == MASKED => false,
        Value::String(_) | Value::Number(_) => {
            *value = Value::String(MASKED.into());
            true
        }
        Value::Array(items) => items.iter_mut().fold(false, |c, item| mask_all(item) | c),
        Value::Object(members) => members
            .values_mut()
            .fold(false, |c, member| mask_all(member) | c),
        Value::Bool(_) | Value::Null => false,
    }
}

// The cases are in `wire_mask/tests.rs` (test code, as `spelled_once` reads a `tests.rs`).
#[cfg(test)]
mod tests;
