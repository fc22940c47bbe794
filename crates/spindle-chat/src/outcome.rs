//! How a chat ends: the exit status of a turn, what the agent left on stderr or why the remote
//! connection closed, diagnostics queued before the session opened.

use spindle_protocol::ClientEvents;
use spindle_protocol::transport::ChildHandle;

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
