//! Prompt lifecycle, v2 client in front of a v1 agent (BRIDGE.md "Prompt
//! lifecycle"): a v2 prompt is accepted at once with a minted `messageId`
//! and runs until the v1 agent answers it, which ends the turn with idle.

use serde_json::{Map, Value, json};
use spindle_wire::tags;

use super::state::UpPrompt;
use crate::state::Bridge;
use crate::types::Translated;
use crate::wire::{self, Frame};

impl Bridge {
    /// A v2 prompt: answered at once with a minted `messageId`, shown as
    /// `user_message` + `running`, and forwarded under a bridge-owned id.
    pub(crate) fn up_prompt_request(
        &mut self,
        id: &str,
        frame: &Frame<'_>,
        session: String,
        mut params: Map<String, Value>,
        out: &mut Translated,
    ) {
        let agent_id = wire::json_string(&self.up.mint("prompt"));
        let message_id = self.up.mint("user");
        let raw = frame.params.map_or("{}", |p| p.get());
        let method = spindle_wire::client_methods::SESSION_PROMPT;
        out.to_agent.push(format!(
            r#"{{"jsonrpc":"2.0","id":{agent_id},"method":"{method}","params":{raw}}}"#
        ));
        out.to_client
            .push(wire::response(id, &json!({ "messageId": message_id })));
        let prompt = params.remove("prompt").unwrap_or_else(|| json!([]));
        out.to_client.push(wire::update_line(
            &session,
            json!({"sessionUpdate": tags::USER_MESSAGE, "messageId": message_id, "content": prompt}),
        ));
        out.to_client.push(wire::update_line(
            &session,
            json!({"sessionUpdate": tags::STATE_UPDATE, "state": "running"}),
        ));
        self.up.session(&session).open = None;
        self.up.prompts.insert(agent_id, UpPrompt { session });
    }

    /// The v1 agent answered a prompt: the v2 turn ends with idle and the
    /// stop reason (an error answer: stop reason `error`).
    pub(crate) fn up_prompt_answered(
        &mut self,
        prompt: UpPrompt,
        frame: &Frame<'_>,
        out: &mut Translated,
    ) {
        let mut idle = Map::new();
        idle.insert("sessionUpdate".into(), tags::STATE_UPDATE.into());
        idle.insert("state".into(), "idle".into());
        if let Some(error) = frame.error {
            // The v1 turn failed after the v2 prompt was accepted: v2 says
            // an accepted prompt ends with idle + stopReason `error`.
            idle.insert("stopReason".into(), "error".into());
            idle.insert("error".into(), wire::value_of(Some(error)));
        } else {
            let result = wire::object_of(frame.result).unwrap_or_default();
            let stop = result
                .get("stopReason")
                .cloned()
                .unwrap_or_else(|| "end_turn".into());
            idle.insert("stopReason".into(), stop);
            if let Some(usage) = result.get("usage").filter(|u| !u.is_null()) {
                idle.insert("usage".into(), usage.clone());
            }
        }
        self.up.session(&prompt.session).open = None;
        out.to_client
            .push(wire::update_line(&prompt.session, Value::Object(idle)));
    }
}
