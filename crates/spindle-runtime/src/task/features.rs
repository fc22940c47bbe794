//! What the page asks of the agent besides prompts and cancels: authentication, modes and config
//! options, permissions answered "always" (remembered per session, in the log, and answered by
//! the server from then on), prompt content with `@path` mentions and images, and the agent's
//! description for the page.

use serde_json::{Value, json};
use spindle_host::mcp_servers::{McpTransportSupport, select_mcp_servers};
use spindle_host::{PermissionOption, PermissionQuestion, PermissionRule};
use spindle_protocol::{ClientError, InitializeOutcome, RequestId};
use spindle_wire::web::{AVAILABLE_MODES, CURRENT_MODE_ID};

use super::state::{
    DeferredSetting, PromptImage, RunningAgent, SessionTask, ValueReply, request_key,
};
use crate::core::PageFact;
use crate::error::SessionError;
use crate::feed::{forget_permission_note, standing_permission_note};
use crate::handshake::{Pending, Phase};
use crate::page_ops::PageOp;
use crate::store::Direction;
use crate::sync::lock;

/// The rule noted on a `web_permission` op.
pub(crate) fn rule_of_op(op: &Value) -> Option<PermissionRule> {
    Some(PermissionRule {
        key: op.get("ruleKey")?.as_str()?.to_string(),
        label: op.get("ruleLabel")?.as_str()?.to_string(),
    })
}

/// The `web_permission` op that shows the agent's permission request `key` with `params`.
pub(crate) fn permission_op(key: &str, params: &Value) -> Value {
    let question = PermissionQuestion::of_params(params);
    // The page gets the options as the agent sent them; a standing answer reads them again.
    let options = params.get("options").cloned().unwrap_or(json!([]));
    PageOp::WebPermission {
        key: key.to_string(),
        title: question.title,
        options,
        tool_call_id: question.tool_call_id,
        rule_key: question.rule.as_ref().map(|r| r.key.clone()),
        rule_label: question.rule.as_ref().map(|r| r.label.clone()),
    }
    .to_value()
}

/// The agent's auth methods as the page shows them.
pub(crate) fn auth_methods_json(init: &InitializeOutcome) -> Value {
    let methods: Vec<Value> = init
        .auth_methods()
        .into_iter()
        .map(|m| json!({ "id": m.id, "name": m.name, "description": m.description }))
        .collect();
    Value::Array(methods)
}

/// The content blocks of a prompt: the text as typed, each `@path` it mentions (resolved by the
/// host under the session's directory) and the images, per what the agent accepts.
pub(super) fn prompt_blocks(
    agent: &RunningAgent,
    text: &str,
    images: &[PromptImage],
) -> Result<Value, SessionError> {
    let capabilities = agent
        .client
        .initialize_outcome()
        .map(InitializeOutcome::prompt_capabilities)
        .unwrap_or_default();
    agent
        .host
        .prompt_content(
            text,
            images
                .iter()
                .map(|i| (i.mime_type.as_str(), i.data.as_str())),
            capabilities,
        )
        .map_err(SessionError::invalid_params)
}

pub(super) fn client_refusal(error: &ClientError) -> SessionError {
    SessionError::invalid_params(error.to_string())
}

impl SessionTask {
    /// A `session/request_permission`: answered at once by a standing rule, else shown.
    pub(super) fn permission_requested(&mut self, id: RequestId, params: &str) {
        let params: Value = serde_json::from_str(params).unwrap_or(Value::Null);
        let key = request_key(&id);
        let op = permission_op(&key, &params);
        let rule = rule_of_op(&op);
        if let Some(rule) = &rule
            && let Some(option) = self.standing_answer(&rule.key, &op["options"])
            && let Some(agent) = self.agent.as_mut()
        {
            let outcome = json!({ "outcome": "selected", "optionId": option });
            if agent.client.respond_permission(&id, &outcome).is_ok() {
                self.flush_client();
                lock(&self.core).publish_note(PageOp::WebPermissionAuto {
                    title: op["title"].clone(),
                    tool_call_id: op["toolCallId"].clone(),
                    option_id: option,
                    rule_key: rule.key.clone(),
                    rule_label: rule.label.clone(),
                });
                return;
            }
        }
        self.agent_requests.insert(key.clone(), id);
        lock(&self.core).open_permission(key, op);
    }

    pub(super) fn answer_permission(
        &mut self,
        key: &str,
        option_id: Option<String>,
    ) -> Result<(), SessionError> {
        let (offered, rule) = {
            let core = lock(&self.core);
            let Some(op) = core.permission(key) else {
                return Err(SessionError::Conflict(
                    ("this permission question is no longer open").into(),
                ));
            };
            (
                op.get("options")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
                rule_of_op(op),
            )
        };
        let chosen = match &option_id {
            Some(option) => {
                let found = offered
                    .iter()
                    .find(|o| o.get("optionId").and_then(Value::as_str) == Some(option));
                match found {
                    Some(found) => Some(found.clone()),
                    None => {
                        return Err(SessionError::invalid_params("that option was not offered"));
                    }
                }
            }
            None => None,
        };
        self.answer_permission_raw(key, option_id);
        if let (Some(option), Some(rule)) = (chosen, rule) {
            self.remember_permission(&rule, &option);
        }
        Ok(())
    }

    pub(super) fn answer_permission_raw(&mut self, key: &str, option_id: Option<String>) {
        let (Some(id), true) = (self.agent_requests.remove(key), self.agent.is_some()) else {
            lock(&self.core).close_permission(key, "closed");
            return;
        };
        let outcome = match &option_id {
            Some(option) => json!({ "outcome": "selected", "optionId": option }),
            None => json!({ "outcome": "cancelled" }),
        };
        // Before the answer: the engine names who answered the open question.
        self.note_permission_author(&id);
        let Some(agent) = self.agent.as_mut() else {
            return;
        };
        // Refused only when the agent withdrew the question meanwhile.
        let _ = agent.client.respond_permission(&id, &outcome);
        self.flush_client();
        let label = option_id.unwrap_or_else(|| "cancelled".into());
        lock(&self.core).close_permission_by(key, &label, self.acting.as_deref());
    }

    /// The option a standing rule picks among `options`, if a rule covers `rule_key`.
    fn standing_answer(&self, rule_key: &str, options: &Value) -> Option<String> {
        let core = lock(&self.core);
        let rule = core.session_facts().standing.get(rule_key)?;
        let kind = rule.get("kind")?.as_str()?;
        spindle_host::standing_option(kind, &PermissionOption::list(options)).map(|o| o.id.clone())
    }

    /// The user chose `option` for a question under `rule`: an "always" kind is remembered.
    pub(super) fn remember_permission(&mut self, rule: &PermissionRule, option: &Value) {
        let Some(kind) = option.get("kind").and_then(Value::as_str) else {
            return;
        };
        if !spindle_host::is_standing_kind(kind) {
            return;
        }
        let note = standing_permission_note(&json!({
            "key": rule.key, "label": rule.label, "kind": kind,
            "optionId": option.get("optionId"),
        }));
        self.record_note(note);
    }

    /// Forgets a standing rule.
    pub(super) fn forget_permission(&mut self, key: &str) -> Result<(), SessionError> {
        if !lock(&self.core).session_facts().standing.contains_key(key) {
            return Err(SessionError::NotFound(
                ("no remembered permission with that key").into(),
            ));
        }
        self.record_note(forget_permission_note(key));
        Ok(())
    }

    /// Logs a server note and shows the standing rules it may have changed.
    fn record_note(&mut self, note: String) {
        let mut core = lock(&self.core);
        core.record(vec![(Direction::Server, note)]);
        let rules = core.session_facts().standing_json();
        core.set_fact(PageOp::WebStandingPermissions { permissions: rules });
    }

    /// The agent session, for a request from the page that needs it open.
    pub(super) fn ready_session(&self) -> Result<String, SessionError> {
        match (&self.startup.agent_session, self.startup.phase) {
            (Some(session), Phase::Ready) => Ok(session.clone()),
            (_, Phase::NeedsAuth) => Err(self.auth_required()),
            _ => Err(SessionError::Conflict(
                ("the agent session is not open yet: wait for it, or send a prompt to start the \
                 agent")
                    .into(),
            )),
        }
    }

    /// Sends a request built by `send` and answers `reply` when the agent answers.
    pub(super) fn ask(
        &mut self,
        reply: ValueReply,
        send: impl FnOnce(&mut RunningAgent) -> Result<RequestId, ClientError>,
    ) {
        let Some(agent) = self.agent.as_mut() else {
            let _ = reply.send(Err(SessionError::Conflict(
                ("the agent is not running: send a prompt to start it").into(),
            )));
            return;
        };
        match send(agent) {
            Ok(id) => {
                self.waiting.insert(id, reply);
                self.flush_client();
            }
            Err(error) => {
                let _ = reply.send(Err(client_refusal(&error)));
            }
        }
    }

    pub(super) fn authenticate(&mut self, method_id: &str, reply: ValueReply) {
        if matches!(self.startup.phase, Phase::NoAgent | Phase::Initializing) {
            let _ = reply.send(Err(SessionError::Conflict(
                ("the agent has not answered initialize yet").into(),
            )));
            return;
        }
        self.ask(reply, |agent| {
            agent.client.authenticate(method_id, Pending::Authenticate)
        });
    }

    pub(super) fn set_mode(&mut self, mode_id: &str, reply: ValueReply) {
        if self.setting_must_wait() {
            let setting = DeferredSetting::Mode(mode_id.to_string(), reply);
            self.deferred_settings.push(setting);
            return;
        }
        let session = match self.ready_session() {
            Ok(session) => session,
            Err(error) => {
                let _ = reply.send(Err(error));
                return;
            }
        };
        self.ask(reply, |agent| {
            agent.client.set_mode(&session, mode_id, Pending::Setting)
        });
    }

    pub(super) fn set_config(&mut self, config_id: &str, value: &Value, reply: ValueReply) {
        if self.setting_must_wait() {
            let setting = DeferredSetting::Config(config_id.to_string(), value.clone(), reply);
            self.deferred_settings.push(setting);
            return;
        }
        let session = match self.ready_session() {
            Ok(session) => session,
            Err(error) => {
                let _ = reply.send(Err(error));
                return;
            }
        };
        self.ask(reply, |agent| {
            agent
                .client
                .set_config_option(&session, config_id, value, Pending::Setting)
        });
    }

    /// `GET /api/sessions/{id}/agent`.
    pub(super) fn agent_info(&self) -> Value {
        let init = self
            .agent
            .as_ref()
            .and_then(|a| a.client.initialize_outcome());
        let core = lock(&self.core);
        let facts = core.session_facts();
        let info = &core.engine.transcript().session_info;
        let status_op = core.fact(PageFact::Status);
        let status = status_op
            .and_then(|op| op.get("status").cloned())
            .unwrap_or_else(|| json!("no_agent"));
        let status_message = status_op
            .and_then(|op| op.get("message").cloned())
            .unwrap_or(Value::Null);
        let prompt = init.map(InitializeOutcome::prompt_capabilities);
        let features = init
            .map(InitializeOutcome::session_features)
            .unwrap_or_default();
        json!({
            "status": status,
            "statusMessage": status_message,
            "agent": self.settings.describe_session(self.recorded_agent.as_ref()),
            "protocol": init.map(|i| i.protocol_version),
            "agentInfo": init.and_then(|i| serde_json::from_str::<Value>(i.agent_info.as_ref()?.get()).ok()),
            "authMethods": init.map(auth_methods_json).unwrap_or_else(|| json!([])),
            "promptCapabilities": {
                "image": prompt.is_some_and(|p| p.image),
                "audio": prompt.is_some_and(|p| p.audio),
                "embeddedContext": prompt.is_some_and(|p| p.embedded_context),
            },
            "needsAuth": self.startup.phase == Phase::NeedsAuth,
            "fsPolicy": self.settings.fs.as_str(),
            "terminals": self.settings.terminals,
            // The MCP servers this agent was given and those left out (no secret values);
            // null before the handshake.
            "mcpServers": init.map(|i| {
                let selection = select_mcp_servers(
                    &self.startup.mcp_servers,
                    McpTransportSupport::of_agent(i),
                );
                let skipped: Vec<Value> = selection
                    .skipped
                    .iter()
                    .map(|s| json!({"name": s.name, "type": s.kind, "reason": s.reason}))
                    .collect();
                json!({"passed": selection.public_summary(), "skipped": skipped})
            }),
            // Client files and terminals exist in protocol v1 only: false once v2 is negotiated
            // (the settings above then do nothing), null before the handshake.
            "hostInProtocol": init.map(|i| i.protocol_version < 2),
            "canList": init.is_some_and(InitializeOutcome::can_list_sessions),
            "canLoad": init.is_some_and(InitializeOutcome::can_load_session),
            "canResume": init.is_some_and(InitializeOutcome::can_resume_session),
            // The session lifecycle of schema 1.20.0 (`task/lifecycle.rs`).
            "canFork": features.can_fork,
            "canDelete": features.can_delete,
            "canClose": features.can_close,
            "canLogout": features.can_logout,
            "acceptsAdditionalDirectories": features.additional_directories,
            "additionalDirectories": self.startup.additional_directories,
            "agentSessionId": self.startup.agent_session.as_ref()
                .or(self.startup.previous_agent_session.as_ref()),
            "cwd": self.root.display().to_string(),
            "modes": modes_json(info),
            "currentModeId": info.current_mode_id,
            "configOptions": info.config_options,
            "standingPermissions": facts.standing_json(),
        })
    }
}

/// The v1 `modes` object (`{currentModeId, availableModes}`) as the engine keeps it from the
/// session results and mode answers, or `null` when the agent named no modes.
fn modes_json(info: &spindle_engine::SessionInfo) -> Value {
    if info.available_modes.is_none() && info.current_mode_id.is_none() {
        return Value::Null;
    }
    json!({
        CURRENT_MODE_ID: info.current_mode_id,
        AVAILABLE_MODES: info.available_modes.clone().unwrap_or_else(|| json!([])),
    })
}
