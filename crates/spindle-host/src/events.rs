//! What the host reports beside its answers: [`HostEvent`]s, and each as the
//! local recording line the engine reads.

use spindle_wire::host::LocalLine;

/// Something the host did that the wire does not show. Front ends record
/// each as a local line ([`HostEvent::to_local_line`]) and feed it to the
/// engine (`TranscriptEngine::apply_local_line`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEvent {
    /// Output of a terminal, decoded as UTF-8 at character boundaries.
    TerminalOutput {
        /// The agent session.
        session_id: String,
        /// The terminal.
        terminal_id: String,
        /// The text.
        text: String,
    },
    /// A terminal's command exited (after its output was read).
    TerminalExited {
        /// The agent session.
        session_id: String,
        /// The terminal.
        terminal_id: String,
        /// The exit code, when it exited normally.
        exit_code: Option<i32>,
        /// The signal's name (`SIGKILL`, ...), when a signal ended it.
        signal: Option<String>,
    },
    /// An `fs/write_text_file` passed the checks: the text it replaces, read
    /// when the request came (before any approval), so the diff can be shown.
    FileBeforeWrite {
        /// The agent session.
        session_id: String,
        /// The path exactly as the request spelled it.
        path: String,
        /// The file's text (`None`: a new file).
        old_text: Option<String>,
    },
}

impl HostEvent {
    /// The event as a local recording line (`{"local":{...}}`, no newline).
    pub fn to_local_line(&self) -> String {
        self.to_local().to_line()
    }

    /// The event as [`LocalLine`].
    pub fn to_local(&self) -> LocalLine {
        match self.clone() {
            HostEvent::TerminalOutput {
                session_id,
                terminal_id,
                text,
            } => LocalLine::TerminalOutput {
                session_id,
                terminal_id,
                text,
            },
            HostEvent::TerminalExited {
                session_id,
                terminal_id,
                exit_code,
                signal,
            } => LocalLine::TerminalExit {
                session_id,
                terminal_id,
                exit_code: exit_code.map(i64::from),
                signal,
            },
            HostEvent::FileBeforeWrite {
                session_id,
                path,
                old_text,
            } => LocalLine::FileBeforeWrite {
                session_id,
                path,
                old_text,
            },
        }
    }
}
