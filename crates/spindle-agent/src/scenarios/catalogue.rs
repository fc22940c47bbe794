//! What the agent offers: its slash commands, scenario names and session
//! modes, and the mode objects `session/new` and the config calls answer with.

use serde_json::{Value, json};

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
        description: "Run a scripted behaviour (refine, thoughts, tools, ...)",
        hint: Some(
            "plain | thoughts | refine [ext|plain] | denoise [ext|plain] | speculative [ext|plain] | snapshot | tools | terminal | background | slow | notice | error | hostile | crash | stall",
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
pub const SCENARIOS: [&str; 15] = [
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

/// The session's config options: one `mode` select. v1 names the key
/// `id`, v2 `configId`.
pub fn config_options(version: Version, current: &str) -> Value {
    let options: Vec<Value> = MODES
        .iter()
        .map(|(value, name)| json!({"value": value, "name": name}))
        .collect();
    let key = match version {
        Version::V1 => "id",
        Version::V2 => "configId",
    };
    json!([{
        key: "mode",
        "name": "Mode",
        "category": "mode",
        "type": "select",
        "currentValue": current,
        "options": options,
    }])
}
