//! Spindle's client-side services (file system and terminals; their method
//! names are in [`crate::client_methods`]): the "local" recording lines, which
//! carry what those services did but the wire does not show (a client
//! terminal's output and exit, the text a file write replaces).
//!
//! A local line is one JSON object with one member, [`LOCAL_KEY`], whose value
//! has one member naming the event:
//!
//! ```text
//! {"local":{"terminalOutput":{"sessionId":"s","terminalId":"t1","text":"hello\n"}}}
//! {"local":{"terminalExit":{"sessionId":"s","terminalId":"t1","exitCode":0,"signal":null}}}
//! {"local":{"fileBeforeWrite":{"sessionId":"s","path":"/w/a.rs","oldText":"old\n"}}}
//! ```
//!
//! [`LocalLine`] writes and reads them; every Spindle crate goes through it.

use serde_json::Value;

/// The type of a tool-call content item that embeds a client terminal
/// (`{"type":"terminal","terminalId":..}`).
pub const TERMINAL_CONTENT_TYPE: &str = "terminal";

/// The member of an error's `data` that says why the client refused a
/// request (`{"reason":"rejected"}` when the user rejected a file write).
pub const REFUSAL_REASON_KEY: &str = "reason";
/// [`REFUSAL_REASON_KEY`] of a write the user rejected.
pub const REFUSAL_REJECTED: &str = "rejected";
/// The member of an error's `data` that says, for people, what happened (the message starts
/// with ACP's canonical text for the code; this is the detail without it).
pub const ERROR_DETAILS_KEY: &str = "details";

/// The top-level member of a local recording line.
pub const LOCAL_KEY: &str = "local";
/// Local line: output of a client terminal (text, decoded at character boundaries).
pub const LOCAL_TERMINAL_OUTPUT: &str = "terminalOutput";
/// Local line: a client terminal's command exited.
pub const LOCAL_TERMINAL_EXIT: &str = "terminalExit";
/// Local line: the text an `fs/write_text_file` would replace (`oldText`
/// `null` when the file does not exist yet), read when the request came.
pub const LOCAL_FILE_BEFORE_WRITE: &str = "fileBeforeWrite";

/// One local recording line, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalLine {
    /// Output of a client terminal.
    TerminalOutput {
        /// The agent session the terminal belongs to.
        session_id: String,
        /// The terminal id `terminal/create` returned.
        terminal_id: String,
        /// The output, in arrival order.
        text: String,
    },
    /// A client terminal's command exited.
    TerminalExit {
        /// The agent session the terminal belongs to.
        session_id: String,
        /// The terminal id.
        terminal_id: String,
        /// The exit code (`None` when a signal ended it).
        exit_code: Option<i64>,
        /// The signal's name (`SIGKILL`, ...), when a signal ended it.
        signal: Option<String>,
    },
    /// What a file write replaces.
    FileBeforeWrite {
        /// The agent session of the write.
        session_id: String,
        /// The path exactly as the agent's `fs/write_text_file` spelled it.
        path: String,
        /// The file's text before the write (`None`: the file did not exist).
        old_text: Option<String>,
    },
}

/// Why a line is not a well-formed local line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalLineError(pub String);

impl std::fmt::Display for LocalLineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LocalLineError {}

impl LocalLine {
    /// The line as compact JSON text (no trailing newline), members in a
    /// fixed order whatever `serde_json` features the build has.
    pub fn to_line(&self) -> String {
        let (name, members): (&str, Vec<(&str, Value)>) = match self {
            LocalLine::TerminalOutput {
                session_id,
                terminal_id,
                text,
            } => (
                LOCAL_TERMINAL_OUTPUT,
                vec![
                    ("sessionId", Value::from(session_id.as_str())),
                    ("terminalId", Value::from(terminal_id.as_str())),
                    ("text", Value::from(text.as_str())),
                ],
            ),
            LocalLine::TerminalExit {
                session_id,
                terminal_id,
                exit_code,
                signal,
            } => (
                LOCAL_TERMINAL_EXIT,
                vec![
                    ("sessionId", Value::from(session_id.as_str())),
                    ("terminalId", Value::from(terminal_id.as_str())),
                    ("exitCode", exit_code.map_or(Value::Null, Value::from)),
                    ("signal", signal.as_deref().map_or(Value::Null, Value::from)),
                ],
            ),
            LocalLine::FileBeforeWrite {
                session_id,
                path,
                old_text,
            } => (
                LOCAL_FILE_BEFORE_WRITE,
                vec![
                    ("sessionId", Value::from(session_id.as_str())),
                    ("path", Value::from(path.as_str())),
                    (
                        "oldText",
                        old_text.as_deref().map_or(Value::Null, Value::from),
                    ),
                ],
            ),
        };
        let mut line = format!("{{\"{LOCAL_KEY}\":{{\"{name}\":{{");
        for (i, (key, value)) in members.iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            line.push('"');
            line.push_str(key);
            line.push_str("\":");
            line.push_str(&value.to_string());
        }
        line.push_str("}}}");
        line
    }

    /// Reads one local line (JSON text).
    pub fn parse(line: &str) -> Result<LocalLine, LocalLineError> {
        let value: Value = serde_json::from_str(line)
            .map_err(|e| LocalLineError(format!("local line is not JSON: {e}")))?;
        LocalLine::from_value(&value)
    }

    /// Reads one local line already parsed: `{"local": {<name>: {...}}}`, or
    /// the inner `{<name>: {...}}` alone.
    pub fn from_value(value: &Value) -> Result<LocalLine, LocalLineError> {
        let inner = value.get(LOCAL_KEY).unwrap_or(value);
        let Some(inner) = inner.as_object() else {
            return Err(LocalLineError("a local line must be an object".into()));
        };
        let mut members = inner.iter();
        let (Some((name, body)), None) = (members.next(), members.next()) else {
            return Err(LocalLineError(
                "a local line must name exactly one event".into(),
            ));
        };
        let text = |key: &str| -> Result<String, LocalLineError> {
            match body.get(key) {
                Some(Value::String(s)) => Ok(s.clone()),
                _ => Err(LocalLineError(format!(
                    "local {name}: {key} must be a string"
                ))),
            }
        };
        let optional_text = |key: &str| -> Result<Option<String>, LocalLineError> {
            match body.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(LocalLineError(format!(
                    "local {name}: {key} must be a string or null"
                ))),
            }
        };
        if !body.is_object() {
            return Err(LocalLineError(format!("local {name}: must be an object")));
        }
        match name.as_str() {
            LOCAL_TERMINAL_OUTPUT => Ok(LocalLine::TerminalOutput {
                session_id: text("sessionId")?,
                terminal_id: text("terminalId")?,
                text: text("text")?,
            }),
            LOCAL_TERMINAL_EXIT => {
                let exit_code = match body.get("exitCode") {
                    None | Some(Value::Null) => None,
                    Some(code) => Some(code.as_i64().ok_or_else(|| {
                        LocalLineError(format!("local {name}: exitCode must be an integer or null"))
                    })?),
                };
                Ok(LocalLine::TerminalExit {
                    session_id: text("sessionId")?,
                    terminal_id: text("terminalId")?,
                    exit_code,
                    signal: optional_text("signal")?,
                })
            }
            LOCAL_FILE_BEFORE_WRITE => Ok(LocalLine::FileBeforeWrite {
                session_id: text("sessionId")?,
                path: text("path")?,
                old_text: optional_text("oldText")?,
            }),
            other => Err(LocalLineError(format!("unknown local event {other:?}"))),
        }
    }

    /// The agent session the line belongs to.
    pub fn session_id(&self) -> &str {
        match self {
            LocalLine::TerminalOutput { session_id, .. }
            | LocalLine::TerminalExit { session_id, .. }
            | LocalLine::FileBeforeWrite { session_id, .. } => session_id,
        }
    }
}

/// True when `value` is a local recording line (an object with a `local`
/// member), well-formed or not.
pub fn is_local_value(value: &Value) -> bool {
    value.get(LOCAL_KEY).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_local_line_round_trips() {
        let lines = [
            LocalLine::TerminalOutput {
                session_id: "s".into(),
                terminal_id: "t1".into(),
                text: "héllo\n\"q\"".into(),
            },
            LocalLine::TerminalExit {
                session_id: "s".into(),
                terminal_id: "t1".into(),
                exit_code: None,
                signal: Some("SIGKILL".into()),
            },
            LocalLine::FileBeforeWrite {
                session_id: "s".into(),
                path: "/w/a".into(),
                old_text: None,
            },
        ];
        for line in lines {
            let text = line.to_line();
            assert!(text.starts_with(r#"{"local":{""#), "{text}");
            assert_eq!(LocalLine::parse(&text), Ok(line));
        }
    }

    #[test]
    fn malformed_local_lines_say_what_is_wrong() {
        for (line, needle) in [
            ("nope", "not JSON"),
            (r#"{"local":1}"#, "must be an object"),
            (r#"{"local":{}}"#, "exactly one event"),
            (r#"{"local":{"boom":{}}}"#, "unknown local event"),
            (
                r#"{"local":{"terminalOutput":{"sessionId":"s","terminalId":"t"}}}"#,
                "text must be a string",
            ),
            (
                r#"{"local":{"terminalExit":{"sessionId":"s","terminalId":"t","exitCode":"x"}}}"#,
                "exitCode must be an integer",
            ),
        ] {
            let err = LocalLine::parse(line).unwrap_err();
            assert!(err.0.contains(needle), "{line}: {err}");
        }
    }
}
