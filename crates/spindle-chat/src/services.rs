//! The client's own services for the agent, through `spindle_host::Host`:
//! `--fs` and `--terminals` decide what is advertised; agent requests
//! (`fs/*`, `terminal/*`) run on tasks of their own (`terminal/wait_for_exit`
//! blocks) and come back as [`ServiceEvent::Done`]; terminal output and exits
//! come as [`ServiceEvent::Host`] and become local recording lines.

use std::path::{Path, PathBuf};

use serde_json::Value;
use serde_json::value::RawValue;
use spindle_host::{FsPolicy, Host, HostConfig, HostEvent, HostReply, PendingWrite};
use spindle_protocol::{AcpClient, ClientOptions, RequestId, ResponseError};
use tokio::sync::mpsc;

use super::args::{ChatArgs, FsFlag};

/// An agent request the host finished (or that waits for the user's review).
#[derive(Debug)]
pub(crate) struct ServiceDone {
    /// The agent's request id.
    pub request_id: RequestId,
    /// The answer, or the write to review.
    pub reply: HostReply,
}

/// What the services report to the chat's loop.
#[derive(Debug)]
pub(crate) enum ServiceEvent {
    /// A request was handled.
    Done(ServiceDone),
    /// Terminal output or exit.
    Host(HostEvent),
}

/// The host and the channels its tasks report on.
#[derive(Debug)]
pub(crate) struct Services {
    host: Host,
    config: HostConfig,
    events: mpsc::UnboundedReceiver<HostEvent>,
    done_tx: mpsc::UnboundedSender<ServiceDone>,
    done_rx: mpsc::UnboundedReceiver<ServiceDone>,
}

impl Services {
    /// The services `--fs`, `--terminals` and `--yes` ask for, rooted at
    /// `cwd` and, for files, the `--add-dir` directories too
    /// (`additional`, absolute).
    pub fn new(args: &ChatArgs, cwd: &Path, additional: &[PathBuf]) -> Services {
        let fs = match args.fs {
            FsFlag::Off => FsPolicy::Off,
            FsFlag::ReadOnly => FsPolicy::ReadOnly,
            // --yes approves writes as it approves permission requests.
            FsFlag::Ask if args.yes => FsPolicy::Allow,
            FsFlag::Ask => FsPolicy::Ask,
            FsFlag::Allow => FsPolicy::Allow,
        };
        let config = HostConfig {
            fs,
            terminals: args.terminals.is_on(),
            additional_roots: additional.to_vec(),
            ..HostConfig::new(cwd.to_path_buf())
        };
        let (host, events) = Host::new(config.clone());
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        Services {
            host,
            config,
            events,
            done_tx,
            done_rx,
        }
    }

    /// Sets the client capabilities the enabled services offer.
    pub fn advertise(&self, options: &mut ClientOptions) {
        self.config.advertise(options);
    }

    /// The host (for mentions, approvals and terminal clean-up).
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Runs an agent request on a task of its own; `false` when the host
    /// does not handle `method` (the caller answers it).
    pub fn dispatch(
        &self,
        request_id: RequestId,
        method: &str,
        params: Option<Box<RawValue>>,
    ) -> bool {
        if !Host::handles(method) {
            return false;
        }
        let host = self.host.clone();
        let method = method.to_owned();
        let done = self.done_tx.clone();
        tokio::spawn(async move {
            let reply = host.handle(&method, params.as_deref()).await;
            let _ = done.send(ServiceDone { request_id, reply });
        });
        true
    }

    /// The next thing the services report (pending forever when idle).
    /// Host events first: what a request reported while it ran (the text a
    /// write replaces, a terminal's output) is applied before its answer.
    pub async fn next(&mut self) -> ServiceEvent {
        tokio::select! {
            biased;
            Some(event) = self.events.recv() => ServiceEvent::Host(event),
            Some(done) = self.done_rx.recv() => ServiceEvent::Done(done),
            else => std::future::pending().await,
        }
    }

    /// Kills the session's terminals (Ctrl-C, end of the chat).
    pub async fn kill_terminals(&self, session_id: &str) {
        self.host.kill_session_terminals(session_id).await;
    }

    /// Kills and releases everything (the chat is over).
    pub async fn shutdown(&self) {
        self.host.shutdown().await;
    }
}

/// The answer for `request_id`, sent to the agent; returns the response
/// line as the engine (and a replay of the recording) sees it.
pub(crate) async fn respond(
    client: &AcpClient,
    request_id: &RequestId,
    result: Result<Value, ResponseError>,
) -> String {
    let line = response_line(request_id, &result);
    let raw = result.map(|value| {
        serde_json::value::to_raw_value(&value)
            .unwrap_or_else(|_| RawValue::from_string("null".to_owned()).expect("null is JSON"))
    });
    // A failed send means the connection is gone: `AgentExited` follows.
    let _ = client.respond(request_id, raw).await;
    line
}

/// `{"jsonrpc":"2.0","id":..,"result"|"error":..}`.
pub(crate) fn response_line(
    request_id: &RequestId,
    result: &Result<Value, ResponseError>,
) -> String {
    let message = match result {
        Ok(value) => serde_json::json!({"jsonrpc": "2.0", "id": request_id, "result": value}),
        Err(error) => serde_json::json!({"jsonrpc": "2.0", "id": request_id, "error": error}),
    };
    message.to_string()
}

/// The agent's request as a line for the engine.
pub(crate) fn request_line(
    request_id: &RequestId,
    method: &str,
    params: Option<&RawValue>,
) -> String {
    let params: Value = params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(Value::Null);
    serde_json::json!({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        .to_string()
}

/// The lines of a review: where, and the change as a unified diff.
pub(crate) fn review_lines(write: &PendingWrite) -> Vec<(String, DiffStyle)> {
    let mut lines = vec![(
        match &write.old_text {
            Some(_) => format!("The agent wants to change {}", write.display_path),
            None => format!("The agent wants to create {}", write.display_path),
        },
        DiffStyle::Header,
    )];
    let old = write.old_text.as_deref().unwrap_or("");
    for line in unified_diff(old, &write.new_text) {
        let style = if line.starts_with("@@") {
            DiffStyle::Hunk
        } else if line.starts_with('+') {
            DiffStyle::Added
        } else if line.starts_with('-') {
            DiffStyle::Removed
        } else {
            DiffStyle::Context
        };
        lines.push((line, style));
    }
    lines
}

/// How a review line is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DiffStyle {
    /// The question's first line.
    Header,
    /// `@@ ... @@`.
    Hunk,
    /// `+line`.
    Added,
    /// `-line`.
    Removed,
    /// ` line`.
    Context,
}

/// Review lines beyond this many are elided (the whole change is written anyway).
const REVIEW_LINES: usize = 80;

/// A line diff of `old` and `new` in unified form, three lines of context,
/// cut at [`REVIEW_LINES`].
fn unified_diff(old: &str, new: &str) -> Vec<String> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // Common prefix and suffix, then the middle as removed + added: exact for
    // one changed region, and never quadratic on a large file.
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    if prefix == a.len() && prefix == b.len() {
        return vec!["(no change)".to_owned()];
    }
    let start = prefix.saturating_sub(3);
    let a_end = (a.len() - suffix + 3).min(a.len());
    let b_end = (b.len() - suffix + 3).min(b.len());
    let mut out = vec![format!(
        "@@ -{},{} +{},{} @@",
        start + 1,
        a_end - start,
        start + 1,
        b_end - start
    )];
    out.extend(a[start..prefix].iter().map(|l| format!(" {l}")));
    out.extend(a[prefix..a.len() - suffix].iter().map(|l| format!("-{l}")));
    out.extend(b[prefix..b.len() - suffix].iter().map(|l| format!("+{l}")));
    out.extend(a[a.len() - suffix..a_end].iter().map(|l| format!(" {l}")));
    if out.len() > REVIEW_LINES {
        let more = out.len() - REVIEW_LINES;
        out.truncate(REVIEW_LINES);
        out.push(format!("... {more} more lines"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_shows_one_changed_region_with_context() {
        let old = "a\nb\nc\nd\ne\nf\n";
        let new = "a\nb\nc\nD\ne\nf\ng\n";
        assert_eq!(
            unified_diff(old, new),
            [
                "@@ -1,6 +1,7 @@",
                " a",
                " b",
                " c",
                "-d",
                "-e",
                "-f",
                "+D",
                "+e",
                "+f",
                "+g"
            ]
        );
        assert_eq!(unified_diff("", "x\n"), ["@@ -1,0 +1,1 @@", "+x"]);
        assert_eq!(unified_diff("same\n", "same\n"), ["(no change)"]);
        let big: String = (0..500).map(|i| format!("{i}\n")).collect();
        let diff = unified_diff("", &big);
        assert_eq!(diff.len(), REVIEW_LINES + 1);
        assert_eq!(
            diff.last().unwrap(),
            &format!("... {} more lines", 501 - REVIEW_LINES)
        );
    }
}
