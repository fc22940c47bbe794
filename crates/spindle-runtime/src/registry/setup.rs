//! The session's setup for `/acp` clients (`crate::acp_feed::setup`): waiting for the agent
//! session to open, the modes and config options in a client's version, and a client's mode
//! and option requests translated for the agent.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};
use tokio::sync::oneshot;

use super::LiveSession;
use crate::error::SessionError;
use crate::sync::lock;
use crate::task::Command;

/// Names the translated setting exchanges (unique in the process, whatever the client's ids).
static SETTINGS: AtomicU64 = AtomicU64::new(1);

impl LiveSession {
    /// Waits until the agent session is open (true) or cannot open now (false: the start
    /// failed, the agent wants a sign-in or exited, no agent is starting). Bounded by the
    /// agent's startup timeout, which fails a start that takes longer.
    pub async fn agent_session_open(&self) -> bool {
        let (reply, answer) = oneshot::channel();
        if self
            .commands
            .send(Command::WhenAgentSessionOpen(reply))
            .await
            .is_err()
        {
            return false;
        }
        answer.await.unwrap_or(false)
    }

    /// The agent's modes and config options as a client of protocol `version` gets them in a
    /// `session/new`, `session/load` or `session/resume` result (empty when the agent offered
    /// none).
    pub fn acp_session_setup(&self, version: u16) -> Map<String, Value> {
        let mut core = lock(&self.core);
        let core = &mut *core;
        core.acp
            .session_setup(&core.engine.transcript().session_info, version)
    }

    /// A client's `session/set_mode` or `session/set_config_option`, sent to the agent in its
    /// version and answered in the client's: the agent's result, or the JSON-RPC error to
    /// answer (`to_error` maps the session's own failures).
    pub async fn acp_setting(
        &self,
        version: u16,
        method: &str,
        params: &Value,
        to_error: impl Fn(&SessionError) -> Value,
    ) -> Result<Value, Value> {
        let key = format!(
            "spindle-setting-{}",
            SETTINGS.fetch_add(1, Ordering::Relaxed)
        );
        let translated = {
            let mut core = lock(&self.core);
            let core = &mut *core;
            core.acp.setting_for_agent(
                &core.engine.transcript().session_info,
                version,
                &key,
                method,
                params,
            )
        };
        let (method, params) = translated?;
        let answer = if method == spindle_wire::client_methods::SESSION_SET_MODE {
            let mode = params
                .get("modeId")
                .and_then(Value::as_str)
                .unwrap_or_default();
            self.set_mode(mode.to_string()).await
        } else {
            let config = params
                .get("configId")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let value = params.get("value").cloned().unwrap_or(Value::Null);
            self.set_config(config.to_string(), value).await
        };
        let answer = answer.map_err(|e| to_error(&e));
        lock(&self.core).acp.setting_answer(version, &key, answer)
    }
}
