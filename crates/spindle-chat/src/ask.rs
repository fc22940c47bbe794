//! A question the interactive chat is waiting for the user to answer, and how
//! it is shown. Below both `interactive` (which queues them) and
//! `interactive_asks` (which asks and answers them).

use spindle_host::PendingWrite;
use spindle_protocol::RequestId;

use super::elicitation_ask::ElicitationAsk;
use super::permission::PermissionAsk;
use super::render::{Line, Style};
use super::services::{self, DiffStyle};
use super::view::Footer;

/// A question waiting for the user.
#[derive(Debug)]
pub(super) enum Ask {
    /// `session/request_permission`; `true` once an answer was not a number
    /// from the list.
    Permission(RequestId, PermissionAsk, bool),
    /// `fs/write_text_file` under `--fs ask`.
    Write(RequestId, PendingWrite),
    /// `elicitation/create`: a form asked field by field, or a URL.
    Elicitation(RequestId, Box<ElicitationAsk>),
}

impl Ask {
    /// The question and the prompt under it.
    pub(super) fn footer(&self) -> Footer {
        match self {
            Ask::Permission(_, ask, retry) => Footer::Input {
                question: ask.question(),
                prompt: if *retry {
                    format!("type a number from 1 to {}: ", ask.options.len())
                } else {
                    format!("choose 1-{}: ", ask.options.len())
                },
            },
            // The engine draws every client write as a diff on its tool call,
            // printed just above: the question names it, without a second diff.
            Ask::Write(_, write) => Footer::Input {
                question: services::review_lines(write)
                    .into_iter()
                    .take_while(|(_, style)| *style == DiffStyle::Header)
                    .map(|(text, _)| Line::new(&format!("{text} (the diff above)"), Style::Bold))
                    .collect(),
                prompt: "apply? [y/N] ".to_owned(),
            },
            Ask::Elicitation(_, ask) => ask.footer(),
        }
    }

    pub(super) fn request_id(&self) -> &RequestId {
        match self {
            Ask::Permission(id, _, _) | Ask::Write(id, _) | Ask::Elicitation(id, _) => id,
        }
    }
}
