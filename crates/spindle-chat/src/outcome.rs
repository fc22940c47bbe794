//! How a chat ends: the exit status of a turn, what the agent left on stderr or why the remote
//! connection closed, diagnostics queued before the session opened; an agent's error as a
//! sentence with its code and data on a detail line ([`AgentErrorText`]).

use serde_json::Value;
use spindle_protocol::jsonrpc::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR,
    REQUEST_CANCELLED,
};
use spindle_protocol::transport::ChildHandle;
use spindle_protocol::{ClientError, ClientEvents, ResponseError};
use spindle_wire::client_methods::{AUTH_REQUIRED_CODE, RESOURCE_NOT_FOUND_CODE};

use crate::args::exit;
use crate::{remote, render};

/// Prints the diagnostics already queued (what the agent got wrong before
/// the session opened).
pub(crate) fn report_diagnostics(events: &mut ClientEvents) {
    while let Some(event) = events.try_recv() {
        if let spindle_protocol::ClientEvent::Diagnostic { message } = event {
            eprintln!("spindle chat: {}", render::sanitize(&message));
        }
    }
}

/// Sleeps until `deadline`; forever without one.
pub(crate) async fn sleep_until_deadline(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// After the connection closed: the agent's exit status and last stderr
/// lines (or why the remote connection closed), on stderr.
pub(crate) async fn report_agent_exit(agent: &remote::AgentEnd) {
    remote::report_end(agent, print_stderr_tail).await;
}

fn print_stderr_tail(agent: &ChildHandle) {
    let tail = agent.stderr_tail();
    if !tail.is_empty() {
        eprintln!("spindle chat: last lines of the agent's stderr:");
        for line in tail.lines() {
            eprintln!("  | {}", render::sanitize(line));
        }
    }
}

/// How many of the agent's last stderr lines a crash report shows.
pub(crate) const AGENT_STDERR_TAIL_LINES: usize = 20;

/// The exit status for a finished turn.
pub(crate) fn exit_code_for_turn(stop_reason: Option<&str>, failed: bool) -> u8 {
    if failed {
        return exit::AGENT_ERROR;
    }
    match stop_reason {
        None | Some("end_turn") => exit::END_TURN,
        Some("max_tokens" | "max_turn_requests") => exit::LIMIT,
        Some("refusal") => exit::REFUSAL,
        Some("cancelled") => exit::CANCELLED,
        Some(_) => exit::AGENT_ERROR,
    }
}

/// An error the agent answered with, as the chat shows it: a sentence, and
/// the code and data on a detail line (shown dimmed), never the raw JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentErrorText {
    /// `{context}: {message}.`
    pub sentence: String,
    /// `code -32603 (internal error) · data: {...}`, when the error has a code or data.
    pub detail: Option<String>,
}

/// How much of an error's `data` the detail line shows, in characters.
const ERROR_DATA_CHARS: usize = 200;

impl AgentErrorText {
    /// `error` is the JSON-RPC error object as JSON text (`{"code", "message", "data"?}`);
    /// `context` starts the sentence ("The agent refused the prompt").
    pub(crate) fn from_json(context: &str, error: &str) -> AgentErrorText {
        let value: Value = serde_json::from_str(error).unwrap_or(Value::Null);
        let message = match &value {
            Value::String(text) => Some(text.clone()),
            other => other
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        let code = value.get("code").and_then(Value::as_i64);
        let data = value.get("data").filter(|d| !d.is_null());
        let mut text = Self::build(context, message.as_deref(), code, data);
        if message.is_none() && code.is_none() && !value.is_object() && !value.is_string() {
            // Not an error object at all: say so, and keep what came on the detail line.
            text.detail = Some(format!("not a JSON-RPC error object: {}", clip(error)));
        }
        text
    }

    /// The same for a [`ResponseError`] the client runtime decoded.
    pub(crate) fn from_response(context: &str, error: &ResponseError) -> AgentErrorText {
        let data = error
            .data
            .as_ref()
            .and_then(|d| serde_json::from_str::<Value>(d.get()).ok());
        Self::build(
            context,
            Some(&error.message),
            Some(error.code),
            data.as_ref().filter(|d| !d.is_null()),
        )
    }

    /// The same for any [`ClientError`]: an agent's error as above, the others as a sentence.
    pub(crate) fn from_client_error(context: &str, error: &ClientError) -> AgentErrorText {
        match error {
            ClientError::Rpc(e) => Self::from_response(context, e),
            ClientError::Disconnected => {
                Self::build(context, Some("the agent closed the connection"), None, None)
            }
            other => Self::build(context, Some(&other.to_string()), None, None),
        }
    }

    fn build(
        context: &str,
        message: Option<&str>,
        code: Option<i64>,
        data: Option<&Value>,
    ) -> AgentErrorText {
        let message = message.map(str::trim).filter(|m| !m.is_empty());
        let mut sentence = match message {
            Some(message) => format!("{context}: {message}"),
            None => format!("{context} (the agent gave no message)"),
        };
        if !sentence.ends_with(['.', '!', '?']) {
            sentence.push('.');
        }
        let mut detail = Vec::new();
        if let Some(code) = code {
            match code_name(code) {
                Some(name) => detail.push(format!("code {code} ({name})")),
                None => detail.push(format!("code {code}")),
            }
        }
        if let Some(data) = data {
            let text = match data {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            detail.push(format!("data: {}", clip(&text)));
        }
        AgentErrorText {
            sentence,
            detail: (!detail.is_empty()).then(|| detail.join(" \u{b7} ")),
        }
    }

    /// Both lines on stderr, after `spindle chat: ` (the detail indented).
    pub(crate) fn eprint(&self) {
        eprintln!("spindle chat: {}", render::sanitize(&self.sentence));
        if let Some(detail) = &self.detail {
            eprintln!("  {}", render::sanitize(detail));
        }
    }
}

/// The name of a JSON-RPC or ACP error code, when it has one.
fn code_name(code: i64) -> Option<&'static str> {
    Some(match code {
        PARSE_ERROR => "parse error",
        INVALID_REQUEST => "invalid request",
        METHOD_NOT_FOUND => "method not found",
        INVALID_PARAMS => "invalid params",
        INTERNAL_ERROR => "internal error",
        REQUEST_CANCELLED => "request cancelled",
        AUTH_REQUIRED_CODE => "authentication required",
        RESOURCE_NOT_FOUND_CODE => "resource not found",
        _ => return None,
    })
}

/// `text` cut to [`ERROR_DATA_CHARS`] characters (an ellipsis says it was).
fn clip(text: &str) -> String {
    let mut chars = text.chars();
    let mut out: String = chars.by_ref().take(ERROR_DATA_CHARS).collect();
    if chars.next().is_some() {
        out.push('\u{2026}');
    }
    out
}

/// The diagnostic for an agent notification chat does not act on (it is not dropped unsaid).
pub(crate) fn unhandled_notification(method: &str) -> String {
    let shown: String = method.chars().take(80).collect();
    format!(
        "the agent sent the notification {shown:?}, which spindle chat does not act on; ignored"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (context, error JSON, sentence, detail).
    const CASES: &[(&str, &str, &str, Option<&str>)] = &[
        (
            "The agent refused the prompt",
            r#"{"code":-32603,"message":"Internal error","data":{"details":"model overloaded"}}"#,
            "The agent refused the prompt: Internal error.",
            Some(r#"code -32603 (internal error) · data: {"details":"model overloaded"}"#),
        ),
        (
            "The agent ended the turn with an error",
            r#"{"code":-32000,"message":"Sign in first!"}"#,
            "The agent ended the turn with an error: Sign in first!",
            Some("code -32000 (authentication required)"),
        ),
        (
            "The agent refused the prompt",
            r#"{"code":7,"message":"  ","data":"quota"}"#,
            "The agent refused the prompt (the agent gave no message).",
            Some("code 7 · data: quota"),
        ),
        (
            "The agent ended the turn with an error",
            r#""backend down""#,
            "The agent ended the turn with an error: backend down.",
            None,
        ),
        (
            "The agent ended the turn with an error",
            "42",
            "The agent ended the turn with an error (the agent gave no message).",
            Some("not a JSON-RPC error object: 42"),
        ),
    ];

    #[test]
    fn agent_errors_read_as_a_sentence_with_the_code_and_data_apart() {
        for (context, json, sentence, detail) in CASES {
            let text = AgentErrorText::from_json(context, json);
            assert_eq!(text.sentence, *sentence, "{json}");
            assert_eq!(text.detail.as_deref(), *detail, "{json}");
            assert!(!text.sentence.contains('{'), "{json}");
        }
    }

    #[test]
    fn decoded_errors_read_the_same_and_long_data_is_clipped() {
        let data = serde_json::value::to_raw_value(&"x".repeat(500)).unwrap();
        let error = ResponseError {
            code: -32602,
            message: "bad cwd".into(),
            data: Some(data),
        };
        let text = AgentErrorText::from_client_error(
            "The agent could not open a session",
            &ClientError::Rpc(error),
        );
        assert_eq!(
            text.sentence,
            "The agent could not open a session: bad cwd."
        );
        let detail = text.detail.unwrap();
        assert!(
            detail.starts_with("code -32602 (invalid params) · data: xxx"),
            "{detail}"
        );
        assert!(
            detail.ends_with('\u{2026}') && detail.chars().count() < 260,
            "{detail}"
        );
        let gone =
            AgentErrorText::from_client_error("Signing in failed", &ClientError::Disconnected);
        assert_eq!(
            gone.sentence,
            "Signing in failed: the agent closed the connection."
        );
        assert_eq!(gone.detail, None);
    }
}
