//! What the agent offers: its slash commands, scenario names and session
//! modes, and the mode objects `session/new` and the config calls answer with.

use serde_json::{Value, json};

use crate::turn_context::{DEFAULT_EFFORT, DEFAULT_MODEL};
use crate::updates::CommandSpec;
use crate::wire::Version;

/// The slash commands advertised in `available_commands_update`.
pub const COMMANDS: [CommandSpec; 5] = [
    CommandSpec {
        name: "help",
        description: "List the commands and scenarios of the reference agent",
        hint: None,
    },
    CommandSpec {
        name: "scenario",
        description: "Run a scripted behaviour (refine, thoughts, tools, client-fs, client-terminal, echo-content, ...)",
        hint: Some(
            "plain | thoughts | refine [ext|plain] | denoise [ext|plain] | speculative [ext|plain] | snapshot | tools | terminal | background | slow | notice | error | hostile | crash | stall | wait-next | client-fs [FILE] | client-terminal | client-terminal-forever | echo-content | client-all | mcp-servers | elicit-form | elicit-url | elicit-tool",
        ),
    },
    CommandSpec {
        name: "stream",
        description: "Write N generated session updates as fast as possible",
        hint: Some("N [mixed|refine|snapshot|chunks]"),
    },
    CommandSpec {
        name: "clear",
        description: "Clear the conversation context (usage reset + clear boundary)",
        hint: Some("[session_cleared|meta]"),
    },
    CommandSpec {
        name: "compact",
        description: "Compact the conversation context",
        hint: None,
    },
];

/// Scenario names understood by `/scenario`.
pub const SCENARIOS: [&str; 25] = [
    "plain",
    "thoughts",
    "refine",
    "denoise",
    "speculative",
    "snapshot",
    "tools",
    "terminal",
    "background",
    "slow",
    "notice",
    "error",
    "hostile",
    "crash",
    "stall",
    "wait-next",
    "client-fs",
    "client-terminal",
    "client-terminal-forever",
    "echo-content",
    "client-all",
    "mcp-servers",
    "elicit-form",
    "elicit-url",
    "elicit-tool",
];

/// Session modes (v1 `session/set_mode`).
pub const MODES: [(&str, &str); 2] = [("default", "Default"), ("plan", "Plan only")];

/// Exit code of `/scenario crash`.
pub const CRASH_EXIT_CODE: i32 = 3;

/// The v1 `modes` object of `session/new`.
pub fn modes_state(current: &str) -> Value {
    let modes: Vec<Value> = MODES
        .iter()
        .map(|(id, name)| json!({"id": id, "name": name}))
        .collect();
    json!({"currentModeId": current, "availableModes": modes})
}

/// Models offered by the `model` config option (id, name); the first is the default.
pub const MODELS: [(&str, &str); 2] = [
    ("spindle-fast", "Spindle Fast"),
    ("spindle-deep", "Spindle Deep"),
];

/// Reasoning efforts offered by the `effort` config option (id, name); `medium` is the default.
pub const EFFORTS: [(&str, &str); 3] = [("low", "Low"), ("medium", "Medium"), ("high", "High")];

/// One select config option of the agent's sessions.
#[derive(Debug, Clone, Copy)]
pub struct ConfigSpec {
    /// Its `configId` (v1 `id`).
    pub id: &'static str,
    /// Its name.
    pub name: &'static str,
    /// Its category (`mode`, `model`, `thought_level`).
    pub category: &'static str,
    /// Its values (id, name).
    pub values: &'static [(&'static str, &'static str)],
    /// The value a new session starts with.
    pub default: &'static str,
}

/// The sessions' config options: mode, model, reasoning effort.
pub const CONFIG: [ConfigSpec; 3] = [
    ConfigSpec {
        id: "mode",
        name: "Mode",
        category: "mode",
        values: &MODES,
        default: "default",
    },
    ConfigSpec {
        id: "model",
        name: "Model",
        category: "model",
        values: &MODELS,
        default: DEFAULT_MODEL,
    },
    ConfigSpec {
        id: "effort",
        name: "Reasoning effort",
        category: "thought_level",
        values: &EFFORTS,
        default: DEFAULT_EFFORT,
    },
];

/// The config option with this id.
pub fn config_spec(id: &str) -> Option<&'static ConfigSpec> {
    CONFIG.iter().find(|c| c.id == id)
}

/// The session's config options with their current values (`current(id)`).
/// v1 names the key `id`, v2 `configId`.
pub fn config_options(version: Version, current: &dyn Fn(&str) -> String) -> Value {
    let key = match version {
        Version::V1 => "id",
        Version::V2 => "configId",
    };
    let options: Vec<Value> = CONFIG
        .iter()
        .map(|spec| {
            let values: Vec<Value> = spec
                .values
                .iter()
                .map(|(value, name)| json!({"value": value, "name": name}))
                .collect();
            json!({
                key: spec.id,
                "name": spec.name,
                "category": spec.category,
                "type": "select",
                "currentValue": current(spec.id),
                "options": values,
            })
        })
        .collect();
    Value::Array(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `/scenario` hint names every scenario, so a client's completion offers each one.
    #[test]
    fn the_scenario_hint_names_every_scenario() {
        let hint = COMMANDS
            .iter()
            .find(|c| c.name == "scenario")
            .and_then(|c| c.hint)
            .expect("the scenario command has a hint");
        let named: Vec<&str> = hint
            .split(" | ")
            .map(|part| part.split(' ').next().unwrap_or_default())
            .collect();
        assert_eq!(named, SCENARIOS);
    }
}
