//! Modes, v1 client in front of a v2 agent (BRIDGE.md "Handshake and session
//! setup"): v2 config options are shown as v1 config options plus `modes`,
//! and a changed mode value as `current_mode_update`.

use serde_json::{Map, Value, json};
use spindle_wire::tags;

use crate::shapes;
use crate::state::Bridge;
use crate::types::Translated;
use crate::wire;

const V1_CONFIG_OPTION_TYPES: [&str; 2] = ["select", "boolean"];

impl Bridge {
    /// v2 config options into a v1 result: `configOptions` plus `modes`.
    /// An option of a type v1 lacks (v2 types are open; v1 has `select` and
    /// `boolean`) is rejected and left out under both policies: v1 has no
    /// form to show it in.
    pub(crate) fn down_options(
        &mut self,
        session: &str,
        options: &[Value],
        result: &mut Map<String, Value>,
        out: &mut Translated,
    ) {
        let mut shown = Vec::with_capacity(options.len());
        for option in options {
            let ty = option.get("type").and_then(Value::as_str).unwrap_or("");
            if V1_CONFIG_OPTION_TYPES.contains(&ty) {
                shown.push(option.clone());
                continue;
            }
            let what = format!(
                "config option {} of type {ty:?}",
                option.get("configId").unwrap_or(&Value::Null)
            );
            self.down_unrepresentable(session, "config_option_type", what, out);
        }
        let options = &shown[..];
        let modes = shapes::modes_from_options(options);
        let s = self.down.session(session);
        s.mode = modes.as_ref().map(|(m, id)| {
            (
                id.clone(),
                m["currentModeId"].as_str().unwrap_or("").to_owned(),
            )
        });
        if let Some((modes, _)) = modes {
            result.insert("modes".into(), modes);
        }
        result.insert(
            "configOptions".into(),
            Value::Array(shapes::config_options_v2_to_v1(options)),
        );
    }

    /// v2 `config_option_update`: v1 options, plus `current_mode_update`
    /// when the mode option changed value.
    pub(crate) fn down_config_option_update(
        &mut self,
        session: &str,
        mut u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let options = match u.remove("configOptions") {
            Some(Value::Array(o)) => o,
            _ => Vec::new(),
        };
        let before = self.down.session(session).mode.clone();
        let mut r = Map::new();
        self.down_options(session, &options, &mut r, out);
        let mut c = Map::new();
        c.insert("sessionUpdate".into(), tags::CONFIG_OPTION_UPDATE.into());
        c.insert(
            "configOptions".into(),
            r.remove("configOptions").unwrap_or_else(|| json!([])),
        );
        out.update_to_client(session, c);
        let after = self.down.session(session).mode.clone();
        if let Some((_, current)) = after
            && before.map(|b| b.1) != Some(current.clone())
        {
            out.to_client.push(wire::update_line(
                session,
                json!({"sessionUpdate": tags::CURRENT_MODE_UPDATE, "currentModeId": current}),
            ));
        }
    }
}
