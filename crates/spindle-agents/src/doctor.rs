//! `spindle agents doctor`: start an agent, `initialize` (v2 asked, v1 accepted), `session/new` in
//! an empty temporary directory, and report what it offers, through the same client
//! (`spindle_protocol::AcpClient`) every Spindle front end uses.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use spindle_protocol::transport::SpawnOptions;
use spindle_protocol::{AcpClient, ClientError, ClientOptions, InitializeOutcome, ProtocolChoice};

/// How long starting, `initialize` and `session/new` may take together by default.
pub const DEFAULT_DOCTOR_TIMEOUT: Duration = Duration::from_secs(30);

/// What the agent said, or how far it got.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    /// The command started.
    pub command: Vec<String>,
    /// The negotiated protocol version (absent when `initialize` failed).
    pub protocol_version: Option<u16>,
    /// `agentInfo` / `info`.
    pub agent_info: Option<Value>,
    /// The authentication methods offered.
    pub auth_methods: Vec<DoctorAuthMethod>,
    /// Every capability present (`true` or an object), as dotted paths.
    pub capabilities: Vec<String>,
    /// What Spindle reads from the capabilities.
    pub session_features: BTreeMap<&'static str, bool>,
    /// Spindle extensions the agent lists in its `initialize` result's `_meta`.
    pub spindle_extensions: Vec<String>,
    /// Other `_meta` keys of the `initialize` result.
    pub meta_keys: Vec<String>,
    /// The outcome of `session/new`.
    pub session_new: Option<SessionNewReport>,
    /// The session methods the registry's protocol matrix probes, and how each was answered.
    pub method_probes: Vec<crate::MethodProbe>,
    /// Why the check stopped early (start, `initialize`, timeout).
    pub failure: Option<String>,
    /// The end of the agent's stderr, when something failed.
    pub stderr_tail: Option<String>,
}

/// One `authMethods` entry.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorAuthMethod {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its type (`agent`, `terminal`, ...).
    pub kind: String,
}

/// What `session/new` answered.
#[derive(Debug, Clone, Serialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    tag = "outcome"
)]
pub enum SessionNewReport {
    /// A session was opened.
    Ok {
        /// Its id.
        session_id: String,
        /// Mode ids, the current one first marked.
        modes: Vec<String>,
        /// Config options as `id=current value` (v1 names the id `id`, v2 `configId`).
        config_options: Vec<String>,
        /// Model ids.
        models: Vec<String>,
        /// The names of the commands the answer lists (v2 puts them in `session/new`'s result;
        /// v1 agents send them later in an `available_commands_update`).
        commands: Vec<String>,
    },
    /// A JSON-RPC error (`auth_required` is -32000).
    Error {
        /// The code, when an RPC error.
        code: Option<i64>,
        /// The message.
        message: String,
        /// Whether the agent wants authentication first.
        auth_required: bool,
    },
}

impl DoctorReport {
    /// Whether the agent initialized and opened a session.
    pub fn healthy(&self) -> bool {
        self.failure.is_none() && matches!(self.session_new, Some(SessionNewReport::Ok { .. }))
    }
}

/// `command` with a relative program path that names a directory (`./agent`, `bin/agent`) made
/// absolute against the current directory; a bare name (`node`) is left for `PATH`.
fn absolute_program(command: &[OsString]) -> Vec<OsString> {
    let mut command = command.to_vec();
    if let Some(program) = command.first_mut() {
        let path = std::path::Path::new(program.as_os_str());
        if path.is_relative()
            && path.components().count() > 1
            && let Ok(cwd) = std::env::current_dir()
        {
            *program = cwd.join(path).into_os_string();
        }
    }
    command
}

/// How long each method probe may wait for its answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs the check against `command` with `env` added to the environment.
pub async fn doctor(
    command: &[OsString],
    env: &BTreeMap<String, String>,
    timeout: Duration,
) -> DoctorReport {
    let mut report = DoctorReport {
        command: command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        protocol_version: None,
        agent_info: None,
        auth_methods: Vec::new(),
        capabilities: Vec::new(),
        session_features: BTreeMap::new(),
        spindle_extensions: Vec::new(),
        meta_keys: Vec::new(),
        session_new: None,
        method_probes: Vec::new(),
        failure: None,
        stderr_tail: None,
    };
    let cwd = std::env::temp_dir().join(format!("spindle-doctor-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&cwd) {
        report.failure = Some(format!("cannot create {}: {e}", cwd.display()));
        return report;
    }
    let spawn = SpawnOptions {
        cwd: Some(cwd.clone()),
        env: env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        stderr_tail_lines: 20,
        ..SpawnOptions::default()
    };
    let options = ClientOptions {
        protocol: ProtocolChoice::V2Preferred,
        spindle_extensions: true,
        ..ClientOptions::default()
    };
    // The agent runs in a directory of its own: a program named relative to ours (`./agent`,
    // `target/debug/x`) is made absolute first, as the user meant it.
    let command = absolute_program(command);
    let (client, _events, child) = match AcpClient::spawn(&command, spawn, options) {
        Ok(started) => started,
        Err(e) => {
            report.failure = Some(format!("cannot start {}: {e}", report.command.join(" ")));
            let _ = std::fs::remove_dir_all(&cwd);
            return report;
        }
    };
    let checked =
        tokio::time::timeout(timeout, check(&client, &cwd.to_string_lossy(), &mut report)).await;
    match checked {
        Ok(Ok(())) => {}
        Ok(Err(stage)) => report.failure = Some(stage),
        Err(_) => {
            report.failure = Some(format!(
                "no answer within {} s{}",
                timeout.as_secs(),
                if report.protocol_version.is_none() {
                    " to initialize"
                } else {
                    " to session/new"
                }
            ))
        }
    }
    if report.protocol_version.is_some() && report.failure.is_none() {
        let (session_id, current_model) = match &report.session_new {
            // The current model: the one `models` marks, else the `model` config option's value.
            Some(SessionNewReport::Ok {
                session_id,
                models,
                config_options,
                ..
            }) => (
                Some(session_id.clone()),
                models
                    .iter()
                    .find_map(|m| m.strip_suffix('*'))
                    .or_else(|| config_options.iter().find_map(|o| o.strip_prefix("model=")))
                    .map(str::to_owned),
            ),
            _ => (None, None),
        };
        report.method_probes = crate::doctor_probes::probe_methods(
            &client,
            session_id.as_deref(),
            &cwd.to_string_lossy(),
            current_model.as_deref(),
            PROBE_TIMEOUT,
        )
        .await;
    }
    if !report.healthy() {
        // An agent that closed its output is usually exiting: wait for its exit and last words.
        let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
        if let Some(exit) = child.try_exit() {
            let failure = report.failure.get_or_insert_with(String::new);
            if !failure.is_empty() {
                failure.push_str("; ");
            }
            failure.push_str(&format!("the agent exited ({exit})"));
        }
        let tail = child.stderr_tail();
        if !tail.trim().is_empty() {
            report.stderr_tail = Some(tail);
        }
    }
    drop(client);
    child.kill();
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    let _ = std::fs::remove_dir_all(&cwd);
    report
}

async fn check(client: &AcpClient, cwd: &str, report: &mut DoctorReport) -> Result<(), String> {
    let init = client
        .initialize()
        .await
        .map_err(|e| format!("initialize failed: {e}"))?;
    describe_initialize(&init, report);
    report.session_new = Some(
        match client.new_session(cwd, &Value::Array(Vec::new())).await {
            Ok((session_id, raw)) => {
                let result: Value = serde_json::from_str(raw.get()).unwrap_or_default();
                SessionNewReport::Ok {
                    session_id,
                    modes: ids(
                        &result,
                        &["modes", "availableModes"],
                        "id",
                        &["modes", "currentModeId"],
                    ),
                    config_options: config_options(&result),
                    models: ids(
                        &result,
                        &["models", "availableModels"],
                        "modelId",
                        &["models", "currentModelId"],
                    ),
                    commands: ids(&result, &["availableCommands"], "name", &[]),
                }
            }
            Err(e) => SessionNewReport::Error {
                code: match &e {
                    ClientError::Rpc(rpc) => Some(rpc.code),
                    _ => None,
                },
                auth_required: e.is_auth_required(),
                message: e.to_string(),
            },
        },
    );
    Ok(())
}

/// `configOptions` as `id=value`: v1 names an option's id `id`, v2 `configId`.
fn config_options(result: &Value) -> Vec<String> {
    let Some(options) = result.get("configOptions").and_then(Value::as_array) else {
        return Vec::new();
    };
    options
        .iter()
        .filter_map(|option| {
            let id = option
                .get("configId")
                .or_else(|| option.get("id"))
                .and_then(Value::as_str)?;
            Some(match option.get("currentValue") {
                Some(Value::String(value)) => format!("{id}={value}"),
                Some(value) if !value.is_null() => format!("{id}={value}"),
                _ => id.to_owned(),
            })
        })
        .collect()
}

/// The ids of the objects at `path`, the one at `current` marked with `*`.
fn ids(result: &Value, path: &[&str], key: &str, current: &[&str]) -> Vec<String> {
    let at = |path: &[&str]| path.iter().try_fold(result, |v, k| v.get(*k));
    let current = if current.is_empty() {
        None
    } else {
        at(current).and_then(Value::as_str)
    };
    at(path)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.get(key).and_then(Value::as_str))
                .map(|id| {
                    if Some(id) == current {
                        format!("{id}*")
                    } else {
                        id.to_owned()
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

fn describe_initialize(init: &InitializeOutcome, report: &mut DoctorReport) {
    report.protocol_version = Some(init.protocol_version);
    report.agent_info = init
        .agent_info
        .as_ref()
        .and_then(|raw| serde_json::from_str(raw.get()).ok());
    report.auth_methods = init
        .auth_methods()
        .into_iter()
        .map(|m| DoctorAuthMethod {
            id: m.id,
            name: m.name,
            kind: m.kind,
        })
        .collect();
    let capabilities = init.capabilities_value();
    flatten_present(&capabilities, "", &mut report.capabilities);
    let prompt = init.prompt_capabilities();
    report.session_features = BTreeMap::from([
        ("loadSession", init.can_load_session()),
        ("listSessions", init.can_list_sessions()),
        ("resumeSession", init.can_resume_session()),
        ("closeSession", init.can_close_session()),
        ("promptImage", prompt.image),
        ("promptAudio", prompt.audio),
        ("promptEmbeddedContext", prompt.embedded_context),
    ]);
    report.spindle_extensions = init.agent_spindle_extensions.clone();
    let raw: Value = serde_json::from_str(init.raw.get()).unwrap_or_default();
    if let Some(Value::Object(meta)) = raw.get("_meta") {
        report.meta_keys = meta.keys().cloned().collect();
    }
}

/// Dotted paths of every member that is `true` or an object with nothing below it that is
/// present (a v2 presence marker); `_meta` is skipped.
fn flatten_present(value: &Value, prefix: &str, out: &mut Vec<String>) {
    let Value::Object(members) = value else {
        return;
    };
    for (key, member) in members {
        if key == "_meta" {
            continue;
        }
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match member {
            Value::Bool(true) => out.push(path),
            Value::Object(inner) => {
                let before = out.len();
                flatten_present(member, &path, out);
                if out.len() == before && inner.values().all(|v| !matches!(v, Value::Bool(false))) {
                    out.push(path);
                }
            }
            Value::Array(items) if !items.is_empty() => out.push(format!(
                "{path}: {}",
                items
                    .iter()
                    .map(|i| i
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| i.to_string()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => {}
        }
    }
}

/// The report as text.
pub fn format_doctor(report: &DoctorReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "command: {}", report.command.join(" "));
    if let Some(version) = report.protocol_version {
        let _ = writeln!(out, "protocol version: {version}");
        let info = report.agent_info.as_ref().map(|i| {
            let field = |k: &str| i.get(k).and_then(Value::as_str).unwrap_or("?").to_owned();
            format!("{} {}", field("name"), field("version"))
        });
        let _ = writeln!(
            out,
            "agent: {}",
            info.unwrap_or_else(|| "(no agentInfo)".into())
        );
        let auth = if report.auth_methods.is_empty() {
            "none".to_owned()
        } else {
            report
                .auth_methods
                .iter()
                .map(|m| format!("{} ({}, {})", m.id, m.name, m.kind))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let _ = writeln!(out, "auth methods: {auth}");
        let _ = writeln!(
            out,
            "capabilities: {}",
            if report.capabilities.is_empty() {
                "none".into()
            } else {
                report.capabilities.join(", ")
            }
        );
        let features: Vec<String> = report
            .session_features
            .iter()
            .map(|(k, v)| format!("{k} {}", if *v { "yes" } else { "no" }))
            .collect();
        let _ = writeln!(out, "as Spindle reads them: {}", features.join(", "));
        let _ = writeln!(
            out,
            "Spindle extensions: {}",
            if report.spindle_extensions.is_empty() {
                "none".into()
            } else {
                report.spindle_extensions.join(", ")
            }
        );
        if !report.meta_keys.is_empty() {
            let _ = writeln!(out, "_meta keys: {}", report.meta_keys.join(", "));
        }
    }
    match &report.session_new {
        Some(SessionNewReport::Ok {
            session_id,
            modes,
            config_options,
            models,
            commands,
        }) => {
            let _ = writeln!(out, "session/new: ok, session {session_id}");
            let list = |l: &Vec<String>| {
                if l.is_empty() {
                    "none".to_owned()
                } else {
                    l.join(", ")
                }
            };
            let _ = writeln!(out, "  modes: {}", list(modes));
            let _ = writeln!(out, "  config options: {}", list(config_options));
            let _ = writeln!(out, "  models: {}", list(models));
            if !commands.is_empty() {
                let _ = writeln!(out, "  commands: {}", list(commands));
            }
        }
        Some(SessionNewReport::Error {
            message,
            auth_required,
            ..
        }) => {
            let _ = writeln!(
                out,
                "session/new: {}{message}",
                if *auth_required {
                    "auth_required: "
                } else {
                    ""
                }
            );
        }
        None => {}
    }
    if !report.method_probes.is_empty() {
        let _ = writeln!(
            out,
            "methods: {}",
            crate::doctor_probes::describe_probes(&report.method_probes)
        );
    }
    if let Some(failure) = &report.failure {
        let _ = writeln!(out, "failed: {failure}");
    }
    if let Some(tail) = &report.stderr_tail {
        let _ = writeln!(out, "agent stderr (last lines):");
        for line in tail.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

#[cfg(test)]
mod session_new_tests {
    use serde_json::json;

    #[test]
    fn config_options_are_read_in_both_protocol_spellings() {
        let cases = [
            // v1: `id`, a select's value a string.
            (
                json!({"configOptions": [{"id": "mode", "type": "select", "currentValue": "plan"}]}),
                vec!["mode=plan"],
            ),
            // v2: `configId`, a boolean option.
            (
                json!({"configOptions": [
                    {"configId": "model", "type": "select", "currentValue": "default"},
                    {"configId": "fast", "type": "boolean", "currentValue": false}
                ]}),
                vec!["model=default", "fast=false"],
            ),
            // Neither id: left out, the others kept.
            (
                json!({"configOptions": [{"name": "x"}, {"id": "effort"}]}),
                vec!["effort"],
            ),
            (json!({}), vec![]),
        ];
        for (result, want) in cases {
            assert_eq!(super::config_options(&result), want, "{result}");
        }
    }
}
