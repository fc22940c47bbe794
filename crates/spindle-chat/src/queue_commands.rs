//! `/queue`: the lines typed while a v1 agent's turn runs (and Spindle's own commands typed
//! during any turn) wait in the chat's queue and are sent when it ends, one prompt per turn, in
//! order (`interactive_prompts.rs`); a v2 agent is sent each prompt at once. Until then they are
//! listed, edited and dropped here, and the full screen shows them above the composer. `/queue`
//! itself is never queued: it works while the turn runs.

use super::interactive::Chat;

/// What `/queue ...` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum QueueCommand {
    /// `/queue`: list the queued lines.
    List,
    /// `/queue edit N TEXT`: line N (from 1) becomes TEXT.
    Edit(usize, String),
    /// `/queue drop N`: line N leaves the queue unsent.
    Drop(usize),
    /// Anything else: what was wrong, for the user.
    Bad(String),
}

/// The words after `/queue` of a typed line, when it is a `/queue` command.
pub(super) fn queue_command(line: &str) -> Option<QueueCommand> {
    let rest = line.trim().strip_prefix("/queue")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let rest = rest.trim();
    let (verb, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let args = args.trim();
    let number = |text: &str| text.parse::<usize>().ok().filter(|n| *n > 0);
    Some(match verb {
        "" | "list" => QueueCommand::List,
        "drop" => match number(args) {
            Some(n) => QueueCommand::Drop(n),
            None => QueueCommand::Bad("usage: /queue drop N (N as /queue lists it)".into()),
        },
        "edit" => {
            let (n, text) = args.split_once(char::is_whitespace).unwrap_or((args, ""));
            match (number(n), text.trim()) {
                (Some(n), text) if !text.is_empty() => QueueCommand::Edit(n, text.to_owned()),
                _ => QueueCommand::Bad("usage: /queue edit N TEXT".into()),
            }
        }
        other => QueueCommand::Bad(format!(
            "unknown /queue command {other:?}: /queue, /queue edit N TEXT, /queue drop N"
        )),
    })
}

impl Chat<'_> {
    /// When `line` is a `/queue` command: carried out at once (during a turn too).
    pub(super) fn queue_line_if_any(&mut self, line: &str) -> Option<super::interactive::Step> {
        let command = queue_command(line)?;
        Some(self.queue_line(line, command))
    }

    /// A `/queue` line typed: taken in at once (during a turn too), then carried out.
    pub(super) fn queue_line(
        &mut self,
        line: &str,
        command: QueueCommand,
    ) -> super::interactive::Step {
        if self.prompts.running() || self.controls_pending > 0 {
            if self.editor.is_none() {
                self.front.stray_input(line);
            }
        } else if self.front.is_terminal() {
            self.front.accept_input()?;
        } else {
            self.front.commit(None)?;
        }
        self.run_queue_command(command);
        Ok(None)
    }

    /// Carries out a `/queue` command and says what it did.
    pub(super) fn run_queue_command(&mut self, command: QueueCommand) {
        let count = self.queued.len();
        let missing = |n: usize| {
            if count == 0 {
                "nothing is queued".to_owned()
            } else {
                format!("no queued line {n}: /queue lists 1 to {count}")
            }
        };
        match command {
            QueueCommand::List if count == 0 && self.v2 => {
                self.front.note(
                    "nothing is queued: the agent speaks protocol 2, so each prompt is sent at once \
                     (only Spindle's own commands typed while a turn runs wait here)",
                );
            }
            QueueCommand::List if count == 0 => {
                self.front
                    .note("nothing is queued (lines typed while a turn runs wait here)");
            }
            QueueCommand::List => {
                self.front.note(&format!(
                    "queued, sent one per turn in order ({count}; /queue edit N TEXT, /queue drop N):"
                ));
                let lines: Vec<String> = self
                    .queued
                    .iter()
                    .enumerate()
                    .map(|(i, line)| format!("  {}. {line}", i + 1))
                    .collect();
                for line in lines {
                    self.front.note(&line);
                }
            }
            QueueCommand::Edit(n, text) => match self.queued.get_mut(n - 1) {
                Some(line) => {
                    line.clone_from(&text);
                    self.front.note(&format!("queued line {n} is now: {text}"));
                }
                None => self.front.note(&missing(n)),
            },
            QueueCommand::Drop(n) => match self.queued.remove(n - 1) {
                Some(line) => self.front.note(&format!("dropped queued line {n}: {line}")),
                None => self.front.note(&missing(n)),
            },
            QueueCommand::Bad(message) => self.front.note(&message),
        }
        self.show_queue();
    }

    /// The full screen shows the queue above the composer.
    pub(super) fn show_queue(&mut self) {
        let lines: Vec<String> = self.queued.iter().cloned().collect();
        self.front.set_queue(lines);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_commands_are_parsed_and_bad_ones_say_why() {
        let cases = [
            ("/queue", Some(QueueCommand::List)),
            ("  /queue list ", Some(QueueCommand::List)),
            ("/queue drop 2", Some(QueueCommand::Drop(2))),
            (
                "/queue edit 1 new  text",
                Some(QueueCommand::Edit(1, "new  text".into())),
            ),
            ("/queued", None),
            ("tell me about /queue", None),
        ];
        for (line, expected) in cases {
            assert_eq!(queue_command(line), expected, "{line:?}");
        }
        for bad in [
            "/queue drop",
            "/queue drop 0",
            "/queue edit 1",
            "/queue edit x y",
            "/queue shuffle",
        ] {
            assert!(
                matches!(queue_command(bad), Some(QueueCommand::Bad(_))),
                "{bad:?}"
            );
        }
    }
}
