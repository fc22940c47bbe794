//! What an `/acp` client is told of the session's setup: the agent's modes and config options,
//! as `session/new`, `session/load` and `session/resume` results carry them, in the client's
//! protocol version; and the client's mode and option requests, translated when the agent
//! speaks the other version. The setup is the session's current one (the engine's
//! [`SessionInfo`]: the agent's session result and every change since), not the first answer.

use serde_json::{Map, Value, json};
use spindle_engine::SessionInfo;
use spindle_wire::client_methods::fields;
use spindle_wire::web::{AVAILABLE_MODES, CURRENT_MODE_ID, MODES};

use crate::acp_feed::AcpFeed;

/// The setup in the agent's version: v1 `modes` (when the agent offered them) and
/// `configOptions`; v2 has config options only.
pub(crate) fn agent_setup(info: &SessionInfo, protocol: u16) -> Map<String, Value> {
    let mut setup = Map::new();
    if protocol < 2
        && let (Some(current), Some(available)) = (&info.current_mode_id, &info.available_modes)
    {
        setup.insert(
            MODES.into(),
            json!({ CURRENT_MODE_ID: current, AVAILABLE_MODES: available }),
        );
    }
    if let Some(options) = &info.config_options {
        setup.insert(fields::CONFIG_OPTIONS.into(), options.clone());
    }
    setup
}

impl AcpFeed {
    /// The setup for a client of protocol `version`: as is for the agent's version, through the
    /// session's translation for the other (which keeps it, so the client's requests and the
    /// agent's later changes translate against it).
    pub(crate) fn session_setup(&mut self, info: &SessionInfo, version: u16) -> Map<String, Value> {
        let setup = agent_setup(info, self.protocol());
        let session = self.session_id().to_string();
        match self.translation_into(version) {
            Some(translation) => translation.adopt_setup(&session, setup),
            None => setup,
        }
    }

    /// A client's `session/set_mode` or `session/set_config_option` as the agent's version has
    /// it (see `Translation::setting`); unchanged for the agent's own version.
    pub(crate) fn setting_for_agent(
        &mut self,
        info: &SessionInfo,
        version: u16,
        key: &str,
        method: &str,
        params: &Value,
    ) -> Result<(String, Value), Value> {
        let (protocol, session) = (self.protocol(), self.session_id().to_string());
        let Some(translation) = self.translation_into(version) else {
            return Ok((method.to_string(), params.clone()));
        };
        // The translation answers against the current setup, whatever it saw before.
        translation.adopt_setup(&session, agent_setup(info, protocol));
        translation.setting(key, method, params)
    }

    /// The agent's answer to the setting `key` for a client of protocol `version`.
    pub(crate) fn setting_answer(
        &mut self,
        version: u16,
        key: &str,
        answer: Result<Value, Value>,
    ) -> Result<Value, Value> {
        match self.translation_into(version) {
            Some(translation) => translation.setting_answer(key, answer),
            None => answer,
        }
    }
}
