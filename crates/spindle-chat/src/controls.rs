//! The session's modes and config options as `/mode`, `/model` and `/config`
//! see them: what the agent offers (the `session/new` / `session/load` result,
//! then `current_mode_update` and `config_option_update` as the engine tracks
//! them) and what a typed command asks for. No I/O: the chat sends the
//! request this module decides on.

use serde_json::Value;
use spindle_engine::SessionInfo;

/// One selectable value of a mode list or a select option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The id sent back (`modeId`, or the option `value`).
    pub id: String,
    /// Human-readable name.
    pub name: String,
}

/// A config option (v1 `id`, v2 `configId`).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigOption {
    /// `id` / `configId`.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// `mode`, `model`, `thought_level`, ... (`None` when absent).
    pub category: Option<String>,
    /// `select` or `boolean` (other kinds are listed but cannot be set).
    pub kind: String,
    /// The current value, verbatim (a string for selects, a bool for booleans).
    pub current: Value,
    /// The values of a select (groups flattened).
    pub choices: Vec<Choice>,
}

impl ConfigOption {
    /// Reads one option object; `None` without an id.
    fn parse(value: &Value) -> Option<ConfigOption> {
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let id = text("configId").or_else(|| text("id"))?;
        let mut choices = Vec::new();
        for item in value
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match item.get("options").and_then(Value::as_array) {
                // A group: its values, in order.
                Some(group) => choices.extend(group.iter().filter_map(parse_choice)),
                None => choices.extend(parse_choice(item)),
            }
        }
        Some(ConfigOption {
            name: text("name").unwrap_or_else(|| id.clone()),
            category: text("category"),
            kind: text("type").unwrap_or_else(|| "select".to_owned()),
            current: value.get("currentValue").cloned().unwrap_or(Value::Null),
            choices,
            id,
        })
    }

    /// The current value as shown.
    pub fn current_text(&self) -> String {
        match &self.current {
            Value::String(s) => s.clone(),
            Value::Null => "(none)".to_owned(),
            other => other.to_string(),
        }
    }

    /// The value to send for `typed`, or why it is not one.
    pub fn value_for(&self, typed: &str) -> Result<Value, String> {
        match self.kind.as_str() {
            "boolean" => match typed {
                "true" | "on" | "yes" => Ok(Value::Bool(true)),
                "false" | "off" | "no" => Ok(Value::Bool(false)),
                _ => Err(format!("{} is on/off: type on or off", self.id)),
            },
            "select" => match find_choice(&self.choices, typed) {
                Some(choice) => Ok(Value::String(choice.id.clone())),
                None => Err(format!(
                    "{typed:?} is not a value of {}; one of: {}",
                    self.id,
                    choice_ids(&self.choices)
                )),
            },
            other => Err(format!(
                "{} is a {other:?} option, which this client cannot set",
                self.id
            )),
        }
    }
}

fn parse_choice(value: &Value) -> Option<Choice> {
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    let id = text("value").or_else(|| text("id"))?;
    Some(Choice {
        name: text("name").unwrap_or_else(|| id.clone()),
        id,
    })
}

/// The choice whose id is `typed`, else the one whose name is (case-insensitive).
fn find_choice<'a>(choices: &'a [Choice], typed: &str) -> Option<&'a Choice> {
    choices
        .iter()
        .find(|c| c.id == typed)
        .or_else(|| choices.iter().find(|c| c.name.eq_ignore_ascii_case(typed)))
}

fn choice_ids(choices: &[Choice]) -> String {
    choices
        .iter()
        .map(|c| c.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the session offers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Controls {
    /// v1 `modes.availableModes` (empty when the agent has none).
    pub modes: Vec<Choice>,
    /// v1 `modes.currentModeId`, then `current_mode_update`.
    pub current_mode: Option<String>,
    /// `configOptions`, latest first seen in the result, then the updates.
    pub options: Vec<ConfigOption>,
}

/// What a `/mode`, `/model` or `/config` line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum ControlAction {
    /// Print these lines (a listing or an explanation).
    Show(Vec<String>),
    /// v1 `session/set_mode`.
    SetMode(String),
    /// `session/set_config_option`.
    SetOption {
        /// The option's id.
        config_id: String,
        /// The value to send.
        value: Value,
    },
}

impl Controls {
    /// From a `session/new`, `session/load` or `session/resume` result.
    pub fn from_session_result(result: &Value) -> Controls {
        let modes = result.get("modes");
        Controls {
            modes: modes
                .and_then(|m| m.get("availableModes"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(parse_choice)
                .collect(),
            current_mode: modes
                .and_then(|m| m.get("currentModeId"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            options: parse_options(result.get("configOptions")),
        }
    }

    /// Takes what the engine tracked from the updates since (it wins).
    pub fn update_from(&mut self, info: &SessionInfo) {
        if let Some(mode) = &info.current_mode_id {
            self.current_mode = Some(mode.clone());
        }
        if let Some(options) = &info.config_options {
            self.options = parse_options(Some(options));
        }
    }

    /// Takes the `configOptions` a `session/set_config_option` answered with.
    pub fn update_from_result(&mut self, result: &Value) {
        if result.get("configOptions").is_some() {
            self.options = parse_options(result.get("configOptions"));
        }
    }

    /// The first option of `category`.
    pub fn option_of(&self, category: &str) -> Option<&ConfigOption> {
        self.options
            .iter()
            .find(|o| o.category.as_deref() == Some(category))
    }

    /// `/mode [id]`.
    pub fn mode_command(&self, arg: &str) -> ControlAction {
        // The config option of category `mode` is the v2 way (and v1 agents
        // may offer both; the option is then the one that stays current).
        if self.modes.is_empty() {
            return match self.option_of("mode") {
                Some(option) => self.option_command(option, arg),
                None => ControlAction::Show(vec!["the agent offers no modes".to_owned()]),
            };
        }
        if arg.is_empty() {
            let current = self.current_mode.as_deref();
            let mut lines = vec!["modes (* current; /mode ID switches):".to_owned()];
            lines.extend(self.modes.iter().map(|m| mark(&m.id, &m.name, current)));
            return ControlAction::Show(lines);
        }
        match find_choice(&self.modes, arg) {
            Some(mode) => ControlAction::SetMode(mode.id.clone()),
            None => ControlAction::Show(vec![format!(
                "no mode {arg:?}; the modes are: {}",
                choice_ids(&self.modes)
            )]),
        }
    }

    /// `/model [value]`: the config option of category `model`.
    pub fn model_command(&self, arg: &str) -> ControlAction {
        match self.option_of("model") {
            Some(option) => self.option_command(option, arg),
            None => ControlAction::Show(vec![
                "the agent offers no model choice (no config option of category model)".to_owned(),
            ]),
        }
    }

    /// `/config [id [value]]`.
    pub fn config_command(&self, arg: &str) -> ControlAction {
        let mut words = arg.splitn(2, char::is_whitespace);
        let id = words.next().unwrap_or("").trim();
        let value = words.next().unwrap_or("").trim();
        if id.is_empty() {
            if self.options.is_empty() {
                return ControlAction::Show(vec!["the agent offers no config options".to_owned()]);
            }
            let mut lines = vec!["config options (/config ID VALUE sets one):".to_owned()];
            for o in &self.options {
                let category = o.category.as_deref().unwrap_or("other");
                lines.push(format!(
                    "  {} = {}   ({}, {category})",
                    o.id,
                    o.current_text(),
                    o.name
                ));
            }
            return ControlAction::Show(lines);
        }
        match self.options.iter().find(|o| o.id == id) {
            Some(option) => self.option_command(option, value),
            None => ControlAction::Show(vec![format!(
                "no config option {id:?}; the options are: {}",
                self.options
                    .iter()
                    .map(|o| o.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )]),
        }
    }

    fn option_command(&self, option: &ConfigOption, arg: &str) -> ControlAction {
        if arg.is_empty() {
            let mut lines = vec![format!("{} ({}):", option.name, option.id)];
            if option.kind == "boolean" {
                lines.push(format!("  {} (on/off)", option.current_text()));
            } else {
                let current = option.current.as_str();
                lines.extend(option.choices.iter().map(|c| mark(&c.id, &c.name, current)));
            }
            return ControlAction::Show(lines);
        }
        match option.value_for(arg) {
            Ok(value) => ControlAction::SetOption {
                config_id: option.id.clone(),
                value,
            },
            Err(message) => ControlAction::Show(vec![message]),
        }
    }

    /// The values `/mode`, `/model` or `/config ID` can complete to.
    pub fn completions(&self, command: &str, first_arg: Option<&str>) -> Vec<String> {
        match command {
            "mode" if !self.modes.is_empty() => self.modes.iter().map(|m| m.id.clone()).collect(),
            "mode" => self.option_values("mode"),
            "model" => self.option_values("model"),
            "config" => match first_arg {
                None => self.options.iter().map(|o| o.id.clone()).collect(),
                Some(id) => self
                    .options
                    .iter()
                    .find(|o| o.id == id)
                    .map(|o| o.choices.iter().map(|c| c.id.clone()).collect())
                    .unwrap_or_default(),
            },
            _ => Vec::new(),
        }
    }

    fn option_values(&self, category: &str) -> Vec<String> {
        self.option_of(category)
            .map(|o| o.choices.iter().map(|c| c.id.clone()).collect())
            .unwrap_or_default()
    }
}

fn parse_options(value: Option<&Value>) -> Vec<ConfigOption> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(ConfigOption::parse)
        .collect()
}

/// `* id  Name` for the current one, `  id  Name` otherwise.
fn mark(id: &str, name: &str, current: Option<&str>) -> String {
    let star = if current == Some(id) { '*' } else { ' ' };
    if name == id {
        format!("  {star} {id}")
    } else {
        format!("  {star} {id}  {name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn controls() -> Controls {
        Controls::from_session_result(&json!({
            "sessionId": "s",
            "modes": {"currentModeId": "default", "availableModes": [
                {"id": "default", "name": "Default"}, {"id": "plan", "name": "Plan only"}]},
            "configOptions": [
                {"id": "model", "name": "Model", "category": "model", "type": "select",
                 "currentValue": "small", "options": [
                    {"group": "g", "name": "Fast", "options": [{"value": "small", "name": "Small"}]},
                    {"group": "h", "name": "Slow", "options": [{"value": "large", "name": "Large"}]}]},
                {"configId": "brief", "name": "Brief", "type": "boolean", "currentValue": false}
            ]
        }))
    }

    #[test]
    fn lists_mark_the_current_value() {
        let c = controls();
        let ControlAction::Show(lines) = c.mode_command("") else {
            panic!("a listing")
        };
        assert_eq!(lines[1], "  * default  Default");
        assert_eq!(lines[2], "    plan  Plan only");
        let ControlAction::Show(lines) = c.model_command("") else {
            panic!("a listing")
        };
        assert_eq!(lines[1..], ["  * small  Small", "    large  Large"]);
    }

    #[test]
    fn typed_values_become_requests_or_explanations() {
        let c = controls();
        assert_eq!(
            c.mode_command("Plan only"),
            ControlAction::SetMode("plan".into())
        );
        assert!(matches!(c.mode_command("nope"), ControlAction::Show(_)));
        assert_eq!(
            c.model_command("large"),
            ControlAction::SetOption {
                config_id: "model".into(),
                value: json!("large")
            }
        );
        assert_eq!(
            c.config_command("brief on"),
            ControlAction::SetOption {
                config_id: "brief".into(),
                value: json!(true)
            }
        );
        let ControlAction::Show(lines) = c.config_command("brief maybe") else {
            panic!("an explanation")
        };
        assert!(lines[0].contains("on/off"), "{lines:?}");
        assert!(matches!(c.config_command("zzz 1"), ControlAction::Show(_)));
    }

    #[test]
    fn v2_modes_come_from_the_mode_option_and_updates_win() {
        let mut c = Controls::from_session_result(&json!({"configOptions": [
            {"configId": "mode", "name": "Mode", "category": "mode", "type": "select",
             "currentValue": "default", "options": [{"value": "default", "name": "Default"},
                                                    {"value": "plan", "name": "Plan"}]}]}));
        assert_eq!(
            c.mode_command("plan"),
            ControlAction::SetOption {
                config_id: "mode".into(),
                value: json!("plan")
            }
        );
        let info = SessionInfo {
            config_options: Some(
                json!([{"configId": "mode", "name": "Mode", "category": "mode",
                "type": "select", "currentValue": "plan", "options": [{"value": "plan", "name": "Plan"}]}]),
            ),
            ..SessionInfo::default()
        };
        c.update_from(&info);
        assert_eq!(c.option_of("mode").unwrap().current, json!("plan"));
        assert_eq!(c.completions("mode", None), vec!["plan".to_owned()]);
        assert!(matches!(
            Controls::default().model_command(""),
            ControlAction::Show(_)
        ));
    }
}
