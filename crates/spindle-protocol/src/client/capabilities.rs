//! What the agent's `initialize` result offers, read the same way for v1
//! and v2: its authentication methods, the prompt content it accepts, and
//! which session calls (`session/list`, load, resume, close, fork, delete,
//! logout, additional directories) it supports.
//!
//! v1 and v2 spell these differently (see `spindle_wire::client_methods`):
//! v1 `agentCapabilities.promptCapabilities.image: true` is v2
//! `capabilities.session.prompt.image: {}`; v1 `sessionCapabilities.list: {}`
//! and `.resume: {}` are baseline in v2 once `capabilities.session` is
//! present; v1 auth methods carry `id`, v2 ones `methodId` and a `type`.
//!
//! | fact | v1 | v2 |
//! |---|---|---|
//! | close | `sessionCapabilities.close` | baseline with `capabilities.session` |
//! | fork | `sessionCapabilities.fork` | `capabilities.session.fork` |
//! | delete | `sessionCapabilities.delete` | `capabilities.session.delete` |
//! | additional directories | `sessionCapabilities.additionalDirectories` | `capabilities.session.additionalDirectories` |
//! | logout | `agentCapabilities.auth.logout` (`logout`) | a non-empty `authMethods` (`auth/logout`) |

use serde_json::Value;
use spindle_wire::client_methods::{capabilities as caps, fields};

use super::types::InitializeOutcome;

/// The `type` of an auth method the agent handles itself through
/// `authenticate` (v1, where it is the default when `type` is absent) or
/// `auth/login` (v2).
pub const AGENT_AUTH_KIND: &str = "agent";

/// One authentication method the agent advertises in `authMethods`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthMethod {
    /// The id to pass to `authenticate` (v1 `id`, v2 `methodId`).
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// Optional longer description.
    pub description: Option<String>,
    /// The method's `type`: `agent` (v1: when absent) for methods the agent
    /// handles through `authenticate`/`auth/login`, `terminal` for methods the
    /// client runs as an interactive process (never passed to
    /// `authenticate`), or another (future) type.
    pub kind: String,
}

impl AuthMethod {
    /// Whether the client may pass this method to `authenticate` /
    /// `auth/login` (only methods of type `agent`).
    pub fn via_authenticate(&self) -> bool {
        self.kind == AGENT_AUTH_KIND
    }
}

/// The prompt content the agent accepts beyond text and resource links
/// (which every agent must accept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PromptCapabilities {
    /// `image` content blocks.
    pub image: bool,
    /// `audio` content blocks.
    pub audio: bool,
    /// Embedded `resource` content blocks (a file's text in the prompt).
    pub embedded_context: bool,
}

/// Which session lifecycle calls the agent offers, read from its
/// `initialize` result the same way for v1 and v2 (see the module table):
/// what a front end shows or hides. Serialized with these field names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct SessionFeatures {
    /// `session/close`.
    pub can_close: bool,
    /// `session/fork`.
    pub can_fork: bool,
    /// `session/delete`.
    pub can_delete: bool,
    /// v1 `logout`, v2 `auth/logout`.
    pub can_logout: bool,
    /// `additionalDirectories` on session/new, load, resume and fork.
    pub additional_directories: bool,
}

/// `true` for v1 `true`, and for a v2 presence marker (an object, `{}`).
fn flag(value: Option<&Value>) -> bool {
    matches!(value, Some(Value::Bool(true) | Value::Object(_)))
}

/// `true` when a capability marker is present and not `null`.
fn present(value: Option<&Value>) -> bool {
    value.is_some_and(|v| !v.is_null() && *v != Value::Bool(false))
}

impl InitializeOutcome {
    /// The agent's capabilities as a JSON value (`{}` when unreadable).
    pub fn capabilities_value(&self) -> Value {
        serde_json::from_str(self.agent_capabilities.get()).unwrap_or_default()
    }

    /// v2: `capabilities.session`, when advertised.
    fn v2_session(&self, capabilities: &Value) -> Option<Value> {
        capabilities
            .get(caps::SESSION)
            .filter(|s| !s.is_null())
            .cloned()
    }

    /// The authentication methods the agent advertises, in its order
    /// (entries without an id or name are skipped).
    pub fn auth_methods(&self) -> Vec<AuthMethod> {
        let Some(raw) = &self.auth_methods else {
            return Vec::new();
        };
        let Ok(Value::Array(items)) = serde_json::from_str::<Value>(raw.get()) else {
            return Vec::new();
        };
        let id_key = if self.protocol_version >= 2 {
            fields::METHOD_ID
        } else {
            fields::ID
        };
        items
            .iter()
            .filter_map(|item| {
                let text = |key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
                Some(AuthMethod {
                    // A v1 agent speaking v2 spellings (or the reverse) is read leniently.
                    id: text(id_key)
                        .or_else(|| text(fields::ID).or_else(|| text(fields::METHOD_ID)))?,
                    name: text(fields::NAME)?,
                    description: text(fields::DESCRIPTION),
                    kind: text("type").unwrap_or_else(|| AGENT_AUTH_KIND.to_owned()),
                })
            })
            .collect()
    }

    /// The prompt content the agent accepts: v1
    /// `agentCapabilities.promptCapabilities`, v2 `capabilities.session.prompt`.
    pub fn prompt_capabilities(&self) -> PromptCapabilities {
        let capabilities = self.capabilities_value();
        let prompt = if self.protocol_version >= 2 {
            self.v2_session(&capabilities)
                .and_then(|s| s.get(caps::PROMPT).cloned())
        } else {
            capabilities.get(caps::PROMPT_CAPABILITIES).cloned()
        };
        let Some(prompt) = prompt else {
            return PromptCapabilities::default();
        };
        PromptCapabilities {
            image: flag(prompt.get(caps::IMAGE)),
            audio: flag(prompt.get(caps::AUDIO)),
            embedded_context: flag(prompt.get(caps::EMBEDDED_CONTEXT)),
        }
    }

    /// Whether the agent offers `session/list`: v1 with
    /// `agentCapabilities.sessionCapabilities.list`, v2 whenever it
    /// advertised `capabilities.session` (listing is baseline there).
    pub fn can_list_sessions(&self) -> bool {
        self.session_capability(caps::LIST)
    }

    /// Whether the agent can open an earlier session with its history
    /// replayed: v1 `session/load` (`agentCapabilities.loadSession`), v2
    /// `session/resume` with `replayFrom: {"type": "start"}` (baseline with
    /// `capabilities.session`).
    pub fn can_load_session(&self) -> bool {
        let capabilities = self.capabilities_value();
        if self.protocol_version >= 2 {
            self.v2_session(&capabilities).is_some()
        } else {
            capabilities.get(caps::LOAD_SESSION) == Some(&Value::Bool(true))
        }
    }

    /// Whether the agent offers `session/resume`: v1 with
    /// `agentCapabilities.sessionCapabilities.resume`, v2 whenever it
    /// advertised `capabilities.session` (resume is baseline there).
    pub fn can_resume_session(&self) -> bool {
        self.session_capability(caps::RESUME)
    }

    /// Whether the agent offers `session/close` (v1
    /// `sessionCapabilities.close`; v2 baseline).
    pub fn can_close_session(&self) -> bool {
        self.session_capability(caps::CLOSE)
    }

    /// Whether the agent offers `session/fork` (v1
    /// `sessionCapabilities.fork`, v2 `session.fork`; unstable in both).
    pub fn can_fork_session(&self) -> bool {
        self.session_marker(caps::FORK)
    }

    /// Whether the agent offers `session/delete` (v1
    /// `sessionCapabilities.delete`, v2 `session.delete`).
    pub fn can_delete_session(&self) -> bool {
        self.session_marker(caps::DELETE)
    }

    /// Whether the agent accepts `additionalDirectories` on session/new,
    /// load, resume and fork (v1 `sessionCapabilities.additionalDirectories`,
    /// v2 `session.additionalDirectories`).
    pub fn accepts_additional_directories(&self) -> bool {
        self.session_marker(caps::ADDITIONAL_DIRECTORIES)
    }

    /// Whether the agent offers logging out: v1 `logout` behind
    /// `agentCapabilities.auth.logout`; v2 `auth/logout`, which an agent must
    /// support whenever it advertises at least one auth method (and which a
    /// client must not call otherwise).
    pub fn can_logout(&self) -> bool {
        if self.protocol_version >= 2 {
            !self.auth_methods().is_empty()
        } else {
            present(
                self.capabilities_value()
                    .get(caps::AUTH)
                    .and_then(|a| a.get(caps::LOGOUT)),
            )
        }
    }

    /// Whether a read of a missing file is better answered as an empty file for this agent:
    /// Gemini CLI's adapter (`acpFileSystemService.ts`, `normalizeFileSystemError`) looks for
    /// "Resource not found" in `err.message` only when the error is an `Error`, but its ACP
    /// connection rejects with the JSON-RPC error object itself, so no client's not-found answer
    /// is ever recognised and a new file cannot be created through the client's file system.
    /// An empty file is what it then reads as "create it" (as an editor client answering with a
    /// new, empty buffer does). Read from `agentInfo.name`.
    pub fn reads_missing_files_as_empty(&self) -> bool {
        let name = self
            .agent_info
            .as_ref()
            .and_then(|info| serde_json::from_str::<Value>(info.get()).ok())
            .and_then(|info| info.get("name").and_then(Value::as_str).map(str::to_owned));
        name.as_deref() == Some("gemini-cli")
    }

    /// All the session lifecycle facts at once (see [`SessionFeatures`]).
    pub fn session_features(&self) -> SessionFeatures {
        SessionFeatures {
            can_close: self.can_close_session(),
            can_fork: self.can_fork_session(),
            can_delete: self.can_delete_session(),
            can_logout: self.can_logout(),
            additional_directories: self.accepts_additional_directories(),
        }
    }

    /// A marker that is not baseline in either version: v1
    /// `sessionCapabilities.<key>`, v2 `session.<key>`.
    fn session_marker(&self, key: &str) -> bool {
        let capabilities = self.capabilities_value();
        let holder = if self.protocol_version >= 2 {
            self.v2_session(&capabilities)
        } else {
            capabilities.get(caps::SESSION_CAPABILITIES).cloned()
        };
        present(holder.as_ref().and_then(|s| s.get(key)))
    }

    /// A v1 `sessionCapabilities` marker, or the v2 baseline.
    fn session_capability(&self, key: &str) -> bool {
        let capabilities = self.capabilities_value();
        if self.protocol_version >= 2 {
            self.v2_session(&capabilities).is_some()
        } else {
            present(
                capabilities
                    .get(caps::SESSION_CAPABILITIES)
                    .and_then(|s| s.get(key)),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::to_raw;
    use serde_json::json;

    fn outcome(version: u16, capabilities: Value, auth: Value) -> InitializeOutcome {
        InitializeOutcome {
            protocol_version: version,
            agent_capabilities: to_raw(&capabilities).unwrap(),
            compatibility_notes: Vec::new(),
            agent_info: None,
            auth_methods: Some(to_raw(&auth).unwrap()),
            agent_spindle_extensions: Vec::new(),
            raw: to_raw(&json!({})).unwrap(),
        }
    }

    #[test]
    fn v1_and_v2_spellings_read_the_same() {
        let v1 = outcome(
            1,
            json!({"loadSession": true,
                   "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
                   "sessionCapabilities": {"list": {}, "resume": null}}),
            json!([{"id": "tok", "name": "Token", "description": "a token"},
                   {"id": "tui", "name": "Log in", "type": "terminal"},
                   {"name": "no id"}]),
        );
        let v2 = outcome(
            2,
            json!({"session": {"prompt": {"image": {}, "embeddedContext": {}, "audio": null}}}),
            json!([{"type": "agent", "methodId": "tok", "name": "Token", "description": "a token"},
                   {"type": "terminal", "methodId": "tui", "name": "Log in"}]),
        );
        for o in [&v1, &v2] {
            assert_eq!(
                o.prompt_capabilities(),
                PromptCapabilities {
                    image: true,
                    audio: false,
                    embedded_context: true
                }
            );
            let methods = o.auth_methods();
            assert_eq!(methods.len(), 2);
            assert_eq!(methods[0].id, "tok");
            assert_eq!(methods[0].description.as_deref(), Some("a token"));
            assert!(methods[0].via_authenticate());
            assert!(!methods[1].via_authenticate());
            assert!(o.can_list_sessions());
            assert!(o.can_load_session());
        }
        assert!(!v1.can_resume_session());
        assert!(v2.can_resume_session());
        assert_eq!(v1.session_features(), SessionFeatures::default());
        assert_eq!(
            v2.session_features(),
            SessionFeatures {
                can_close: true,
                can_logout: true,
                ..SessionFeatures::default()
            }
        );
        let bare = outcome(2, json!({}), json!([]));
        assert!(!bare.can_list_sessions() && !bare.can_load_session());
        assert_eq!(bare.prompt_capabilities(), PromptCapabilities::default());
        assert_eq!(bare.session_features(), SessionFeatures::default());
    }

    #[test]
    fn fork_delete_logout_and_directories_per_version() {
        let all = SessionFeatures {
            can_close: true,
            can_fork: true,
            can_delete: true,
            can_logout: true,
            additional_directories: true,
        };
        let v1 = outcome(
            1,
            json!({"sessionCapabilities": {"close": {}, "fork": {}, "delete": {},
                                           "additionalDirectories": {}},
                   "auth": {"logout": {}}}),
            json!([]),
        );
        assert_eq!(v1.session_features(), all);
        // v1: auth methods alone do not advertise logout; null markers are absent.
        let v1_nulls = outcome(
            1,
            json!({"sessionCapabilities": {"fork": null, "delete": null}, "auth": {"logout": null}}),
            json!([{"id": "tok", "name": "Token"}]),
        );
        assert_eq!(v1_nulls.session_features(), SessionFeatures::default());
        let v2 = outcome(
            2,
            json!({"session": {"fork": {}, "delete": {}, "additionalDirectories": {}}}),
            json!([{"type": "agent", "methodId": "tok", "name": "Token"}]),
        );
        assert_eq!(v2.session_features(), all);
        // v2: no auth methods, no auth/logout, whatever `auth` holds; the
        // session markers sit under `session`, not v1's `sessionCapabilities`.
        let v2_bare = outcome(
            2,
            json!({"session": {}, "auth": {"logout": {}},
                   "sessionCapabilities": {"fork": {}}}),
            json!([]),
        );
        assert_eq!(
            v2_bare.session_features(),
            SessionFeatures {
                can_close: true,
                ..SessionFeatures::default()
            }
        );
    }
}
