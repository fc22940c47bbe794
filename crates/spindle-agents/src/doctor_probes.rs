//! The method probes of `spindle agents doctor`: each session method the ACP registry's protocol
//! matrix probes, sent whatever the capabilities say, and classified by the answer. A capability
//! an agent advertises but does not answer (or answers without advertising) shows here.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use spindle_protocol::{AcpClient, ClientError};

/// JSON-RPC's "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// How one probed method was answered.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
pub enum ProbeOutcome {
    /// A result.
    Supported,
    /// `auth_required` (-32000).
    AuthRequired,
    /// -32601: the agent does not know the method.
    MethodNotFound,
    /// Another error: the method exists, the call did not succeed (an unknown session, say).
    Error {
        /// The JSON-RPC code, when the agent answered one.
        code: Option<i64>,
        /// The message.
        message: String,
    },
    /// No answer in time.
    NoAnswer,
}

impl ProbeOutcome {
    fn describe(&self) -> String {
        match self {
            ProbeOutcome::Supported => "supported".into(),
            ProbeOutcome::AuthRequired => "auth required".into(),
            ProbeOutcome::MethodNotFound => "method not found".into(),
            ProbeOutcome::Error {
                code: Some(code),
                message,
            } => format!("error {code} ({message})"),
            ProbeOutcome::Error {
                code: None,
                message,
            } => format!("error ({message})"),
            ProbeOutcome::NoAnswer => "no answer".into(),
        }
    }
}

/// One probed method.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MethodProbe {
    /// The method name.
    pub method: &'static str,
    /// Its answer.
    #[serde(flatten)]
    pub outcome: ProbeOutcome,
}

/// The session id sent when `session/new` opened none: the methods still answer whether they
/// exist (-32601) or not (an unknown session).
const NO_SESSION: &str = "spindle-doctor-no-session";

/// Probes, in an order that disturbs nothing the later ones need: `session/list`,
/// `session/set_model` (to the current model, a no-op), `session/fork`, `session/resume`, then
/// `session/close` of the session `session/new` opened.
pub(crate) async fn probe_methods(
    client: &AcpClient,
    session_id: Option<&str>,
    cwd: &str,
    current_model: Option<&str>,
    per_call: Duration,
) -> Vec<MethodProbe> {
    let session = session_id.unwrap_or(NO_SESSION);
    let calls: [(&'static str, Value); 5] = [
        ("session/list", json!({})),
        (
            "session/set_model",
            json!({"sessionId": session, "modelId": current_model.unwrap_or("default")}),
        ),
        (
            "session/fork",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
        ),
        (
            "session/resume",
            json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
        ),
        ("session/close", json!({"sessionId": session})),
    ];
    let mut probes = Vec::with_capacity(calls.len());
    for (method, params) in calls {
        let params = serde_json::value::to_raw_value(&params).expect("params serialize");
        let outcome = match tokio::time::timeout(per_call, client.call(method, params)).await {
            Err(_) => ProbeOutcome::NoAnswer,
            Ok(Ok(_)) => ProbeOutcome::Supported,
            Ok(Err(error)) => classify(&error),
        };
        probes.push(MethodProbe { method, outcome });
    }
    probes
}

fn classify(error: &ClientError) -> ProbeOutcome {
    if error.is_auth_required() {
        return ProbeOutcome::AuthRequired;
    }
    match error {
        ClientError::Rpc(rpc) if rpc.code == METHOD_NOT_FOUND => ProbeOutcome::MethodNotFound,
        ClientError::Rpc(rpc) => ProbeOutcome::Error {
            code: Some(rpc.code),
            message: rpc.message.clone(),
        },
        other => ProbeOutcome::Error {
            code: None,
            message: other.to_string(),
        },
    }
}

/// `methods: session/list supported, ...` for the text report.
pub(crate) fn describe_probes(probes: &[MethodProbe]) -> String {
    probes
        .iter()
        .map(|p| format!("{} {}", p.method, p.outcome.describe()))
        .collect::<Vec<_>>()
        .join(", ")
}
