//! `spindle-host`: the client-side services an ACP client offers an agent,
//! for `spindle chat` and `spindle serve` alike.
//!
//! - File system (`fs/read_text_file` with `line`/`limit`, `fs/write_text_file`),
//!   scoped to the workspace root (the session's working directory): see
//!   [`FsPolicy`] for what is allowed and the `scope` rules below.
//! - Terminals (`terminal/create`, `output`, `wait_for_exit`, `kill`,
//!   `release`): real child processes, each in its own process group, stdout
//!   and stderr merged, output kept up to `outputByteLimit` (cut from the
//!   start at a character boundary), live output as [`HostEvent`]s.
//! - `@path` mentions ([`Host::resolve_mention`]) and their completion
//!   ([`Host::complete_path`]), scoped like reads.
//!
//! # Scoping
//! Every path the agent names must lie under the root: an absolute path
//! must start with it; a relative path is taken relative to it (ACP says
//! absolute, but a relative one reaches no further); any `..` component is
//! refused; the path is canonicalized (for a new file, its deepest existing
//! ancestor) and must still be under the canonical root, so a symbolic link
//! inside the root that points out (file or directory) is refused, and so is
//! a dangling one; `/proc`, `/sys` and `/dev` are never served. A write
//! creates missing directories under the root, replaces the file atomically
//! (temporary file + rename in the same directory) and keeps an existing
//! file's permissions; an existing file that is not UTF-8 text is never
//! replaced. Terminal `cwd`s are scoped the same way (default: the root).
//!
//! # Errors
//! In ACP's shape (`spindle_protocol::error_answers`): the code's canonical message, then what
//! happened, which is also `data.details`. Bad shapes and refused paths or sizes are `-32602`
//! (`data.path`); a missing file or an unknown terminal `-32002` (ACP's resource not found;
//! `data.uri` names the path, as ACP's SDKs put it, or `data.terminalId` the terminal); a service
//! that is off `-32601` (`data.method`); other failures `-32603`. A write the user rejected is
//! `-32603` with `data: {"reason": "rejected", "path": ...}`.
//!
//! # Processes
//! [`Host::kill_session_terminals`] (on cancel, on session end) and
//! [`Host::shutdown`] kill whole process groups and wait until the commands
//! are reaped; dropping the last [`Host`] handle kills every group still
//! running. Commands come only from agent requests.
#![deny(missing_docs)]

pub mod checkpoints;
mod config;
mod elicitation;
mod elicitation_format;
mod elicitation_view;
mod errors;
mod events;
mod fs;
pub mod mcp_servers;
mod mention;
mod output;
mod permission;
mod permission_rule;
mod scope;
mod terminals;

use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use spindle_protocol::ResponseError;
use spindle_wire::client_methods::{
    FS_READ_TEXT_FILE, FS_WRITE_TEXT_FILE, TERMINAL_CREATE, TERMINAL_KILL, TERMINAL_OUTPUT,
    TERMINAL_PREFIX, TERMINAL_RELEASE, TERMINAL_WAIT_FOR_EXIT,
};
use tokio::sync::mpsc;

pub use config::{FsPolicy, HostConfig, HostLimits};
pub use elicitation::{
    ChoiceOption, Elicitation, ElicitationAnswer, ElicitationKind, FieldError, FieldKind,
    FieldValue, FormField, FormModel, MAX_ANSWER_CHARS, MAX_FIELDS, MAX_OPTIONS, MAX_TEXT_CHARS,
    TextFormat, UrlElicitation, url_host,
};
pub use errors::{FsError, FsErrorKind, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND};
pub use events::HostEvent;
pub use fs::PendingWrite;
pub use mention::{ResolvedFile, file_uri, mime_for_path};
pub use output::{OutputBuffer, Utf8Stream};
pub use permission::{
    PermissionOption, PermissionQuestion, UNNAMED_ACTION, is_standing_kind, standing_option,
};
pub use permission_rule::PermissionRule;

use errors::invalid_params;
use fs::{ReadRequest, optional_u64, string_param};
use scope::Scope;
use terminals::{CreateRequest, Terminals};

/// What became of one agent request.
#[derive(Debug, Clone, PartialEq)]
pub enum HostReply {
    /// The answer to send (`result` or `error`).
    Done(Result<Value, ResponseError>),
    /// A write under [`FsPolicy::Ask`]: show the diff, then answer with
    /// [`Host::approve`] or [`Host::reject`].
    NeedsApproval(PendingWrite),
}

/// The client-side services of one agent connection. Cheap to clone (one
/// shared state); dropping the last clone kills every terminal still running.
#[derive(Debug, Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: HostConfig,
    scope: Scope,
    terminals: Terminals,
    events: mpsc::UnboundedSender<HostEvent>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.terminals.kill_now();
    }
}

/// `sessionId` and the rest of the params, or the error to answer.
fn session_params(
    params: Option<&RawValue>,
) -> Result<(String, Map<String, Value>), ResponseError> {
    let Some(raw) = params else {
        return Err(invalid_params("params are required"));
    };
    let params: Map<String, Value> =
        serde_json::from_str(raw.get()).map_err(|_| invalid_params("params must be an object"))?;
    let session_id = string_param(&params, "sessionId").map_err(invalid_params)?;
    Ok((session_id, params))
}

impl Host {
    /// A host with this configuration, and the receiver of its events.
    pub fn new(config: HostConfig) -> (Host, mpsc::UnboundedReceiver<HostEvent>) {
        let (events, rx) = mpsc::unbounded_channel();
        let scope = Scope::with_additional(&config.root, &config.additional_roots);
        let host = Host {
            inner: Arc::new(Inner {
                config,
                scope,
                terminals: Terminals::default(),
                events,
            }),
        };
        (host, rx)
    }

    /// The configuration.
    pub fn config(&self) -> &HostConfig {
        &self.inner.config
    }

    /// The methods [`Self::handle`] answers: `fs/read_text_file`,
    /// `fs/write_text_file` and every `terminal/*`.
    pub fn handles(method: &str) -> bool {
        method == FS_READ_TEXT_FILE
            || method == FS_WRITE_TEXT_FILE
            || method.starts_with(TERMINAL_PREFIX)
    }

    /// Answers one agent request. `terminal/wait_for_exit` resolves only when
    /// the command exits, so callers run this on a task of its own
    /// (`let host = host.clone(); tokio::spawn(async move { host.handle(..).await })`).
    pub async fn handle(&self, method: &str, params: Option<&RawValue>) -> HostReply {
        let (session_id, params) = match session_params(params) {
            Ok(p) => p,
            Err(e) => return HostReply::Done(Err(e)),
        };
        match method {
            FS_READ_TEXT_FILE => HostReply::Done(self.read(params).await),
            FS_WRITE_TEXT_FILE => self.write(session_id, params).await,
            TERMINAL_CREATE => HostReply::Done(self.create_terminal(session_id, &params)),
            TERMINAL_OUTPUT | TERMINAL_WAIT_FOR_EXIT | TERMINAL_KILL | TERMINAL_RELEASE => {
                HostReply::Done(self.terminal_call(method, &session_id, &params).await)
            }
            other => HostReply::Done(Err(ResponseError::method_not_found(
                other,
                &format!("{other}: not a method this client answers"),
            ))),
        }
    }

    async fn read(&self, params: Map<String, Value>) -> Result<Value, ResponseError> {
        if !self.inner.config.fs.can_read() {
            return Err(ResponseError::method_not_found(
                FS_READ_TEXT_FILE,
                "file access is off in this client",
            ));
        }
        let path = string_param(&params, "path").map_err(invalid_params)?;
        let line = optional_u64(&params, "line").map_err(invalid_params)?;
        let limit = optional_u64(&params, "limit").map_err(invalid_params)?;
        let req = ReadRequest {
            path: path.clone(),
            line,
            limit,
        };
        let host = self.clone();
        let content = tokio::task::spawn_blocking(move || {
            fs::read_text(&host.inner.scope, &host.inner.config.limits, &req)
        })
        .await
        .map_err(|e| ResponseError::internal_error(&format!("the read failed: {e}")))?
        .map_err(|e| e.with_path(&path).to_response_error())?;
        Ok(json!({ "content": content }))
    }

    async fn write(&self, session_id: String, params: Map<String, Value>) -> HostReply {
        let policy = self.inner.config.fs;
        if !policy.can_write() {
            let why = if policy == FsPolicy::ReadOnly {
                "file writes are off in this client (policy read-only)"
            } else {
                "file access is off in this client"
            };
            return HostReply::Done(Err(ResponseError::method_not_found(
                FS_WRITE_TEXT_FILE,
                why,
            )));
        }
        let (path, content) = match (
            string_param(&params, "path"),
            string_param(&params, "content"),
        ) {
            (Ok(p), Ok(c)) => (p, c),
            (Err(e), _) | (_, Err(e)) => return HostReply::Done(Err(invalid_params(e))),
        };
        let host = self.clone();
        let sid = session_id.clone();
        let asked = path.clone();
        let prepared = tokio::task::spawn_blocking(move || {
            let inner = &host.inner;
            let pending =
                fs::prepare_write(&inner.scope, &inner.config.limits, &sid, &asked, content)?;
            if policy == FsPolicy::Allow {
                fs::perform_write(&inner.scope, &pending)?;
            }
            Ok::<_, FsError>(pending)
        })
        .await;
        let pending = match prepared {
            Ok(Ok(pending)) => pending,
            Ok(Err(e)) => return HostReply::Done(Err(e.with_path(&path).to_response_error())),
            Err(e) => {
                return HostReply::Done(Err(ResponseError::internal_error(&format!(
                    "the write failed: {e}"
                ))));
            }
        };
        let _ = self.inner.events.send(HostEvent::FileBeforeWrite {
            session_id,
            path,
            old_text: pending.old_text.clone(),
        });
        match policy {
            FsPolicy::Allow => HostReply::Done(Ok(json!({}))),
            _ => HostReply::NeedsApproval(pending),
        }
    }

    /// Performs an approved write: the result to answer the agent's
    /// `fs/write_text_file` with. The path is checked again, and the file must
    /// still hold the `old_text` the user reviewed (or still be absent):
    /// otherwise nothing is written and the error says the file changed.
    pub fn approve(&self, write: PendingWrite) -> Result<Value, ResponseError> {
        let inner = &self.inner;
        fs::perform_reviewed_write(&inner.scope, &inner.config.limits, &write).map_err(|e| {
            e.with_path(&write.path.to_string_lossy())
                .to_response_error()
        })?;
        Ok(json!({}))
    }

    /// The error to answer a rejected write with ("the user rejected the
    /// write to PATH", `data: {"reason": "rejected"}`).
    pub fn reject(&self, write: &PendingWrite) -> ResponseError {
        errors::rejected(&write.path.to_string_lossy(), &write.display_path)
    }

    fn create_terminal(
        &self,
        session_id: String,
        params: &Map<String, Value>,
    ) -> Result<Value, ResponseError> {
        let inner = &self.inner;
        if !inner.config.terminals {
            return Err(ResponseError::method_not_found(
                TERMINAL_CREATE,
                "terminals are off in this client",
            ));
        }
        let cwd = match params.get("cwd") {
            None | Some(Value::Null) => inner.scope.root()?.to_path_buf(),
            Some(Value::String(cwd)) => {
                let resolved = inner
                    .scope
                    .resolve_existing(cwd)
                    .map_err(|e| e.with_path(cwd).to_response_error())?;
                if !resolved.path.is_dir() {
                    return Err(invalid_params(format!("cwd {cwd}: not a directory")));
                }
                resolved.path
            }
            Some(_) => return Err(invalid_params("cwd must be a string")),
        };
        let req = CreateRequest::parse(session_id, params, cwd)?;
        let id = inner
            .terminals
            .create(req, &inner.config.limits, &inner.events)?;
        Ok(json!({ "terminalId": id }))
    }

    async fn terminal_call(
        &self,
        method: &str,
        session_id: &str,
        params: &Map<String, Value>,
    ) -> Result<Value, ResponseError> {
        if !self.inner.config.terminals {
            return Err(ResponseError::method_not_found(
                method,
                "terminals are off in this client",
            ));
        }
        let id = string_param(params, "terminalId").map_err(invalid_params)?;
        let terminals = &self.inner.terminals;
        match method {
            TERMINAL_OUTPUT => terminals.output(session_id, &id),
            TERMINAL_WAIT_FOR_EXIT => terminals.wait_for_exit(session_id, &id).await,
            TERMINAL_KILL => terminals.kill(session_id, &id),
            _ => terminals.release(session_id, &id),
        }
    }

    /// Kills every terminal of the session (their process groups) and waits
    /// until the commands are reaped; the terminals stay queryable until
    /// released. Call on cancel and when the session ends.
    pub async fn kill_session_terminals(&self, session_id: &str) {
        self.inner.terminals.kill_all(Some(session_id), false).await;
    }

    /// Kills and releases every terminal, waiting until the commands are
    /// reaped.
    pub async fn shutdown(&self) {
        self.inner.terminals.kill_all(None, true).await;
    }

    /// A file for an `@path` mention: relative to the root (or absolute
    /// under it), scoped like a read.
    pub fn resolve_mention(&self, path: &str) -> Result<ResolvedFile, FsError> {
        mention::resolve(&self.inner.scope, &self.inner.config.limits, path)
    }

    /// The content blocks of a prompt: the text as typed, each file it
    /// `@mentions` once (resolved like [`Host::resolve_mention`]), then the
    /// images (`(mime type, base64 data)`), per what the agent accepts. The
    /// error says, for the user, what was refused and why; nothing is sent.
    pub fn prompt_content<'a>(
        &self,
        text: &str,
        images: impl IntoIterator<Item = (&'a str, &'a str)>,
        capabilities: spindle_protocol::PromptCapabilities,
    ) -> Result<Value, String> {
        use spindle_protocol::prompt::{PromptBuilder, PromptError, parse_mentions};
        let mut builder = PromptBuilder::new(capabilities).text(text);
        let mut seen = std::collections::HashSet::new();
        for mention in parse_mentions(text) {
            if !seen.insert(mention.path.clone()) {
                continue;
            }
            let file = self
                .resolve_mention(&mention.path)
                .map_err(|e| format!("@{}: {}", mention.path, e.message()))?;
            builder = builder.mention(
                &file.uri,
                &file.display_path,
                &file.mime,
                file.text.as_deref(),
            );
        }
        for (mime, data) in images {
            builder = builder.image(mime, data);
        }
        builder.build().map_err(|e| match e {
            PromptError::ImagesNotSupported => {
                "the agent does not accept images (it does not advertise the image prompt capability)"
                    .to_owned()
            }
            other => other.to_string(),
        })
    }

    /// Completions for a partly typed mention path (relative, `/`-separated):
    /// entries of the directory it names that start with its last part,
    /// sorted, at most `max`; directories end with `/`; dotfiles only when
    /// the typed part starts with a dot.
    pub fn complete_path(&self, prefix: &str, max: usize) -> Result<Vec<String>, FsError> {
        mention::complete(&self.inner.scope, prefix, max)
    }
}
