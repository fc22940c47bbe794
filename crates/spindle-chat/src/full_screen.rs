//! The driver's side of the full-screen chat: the status line's facts
//! and the question menu from the session as it stands, the `/mode` and
//! `/model` pickers, and the screen's keys carried out as the driver's own
//! actions (send, answer, cancel, quit, complete). Apart from `front`, so
//! that `front` (which `interactive` uses) never needs the driver back.

use ratatui::crossterm::event::Event;

use super::args::exit;
use super::completion;
use super::front::{Front, agent_name, ask_menu, folder, mode_and_model, picker};
use super::interactive::{Chat, PATH_CANDIDATES, Step};
use super::tui::{Action, Status};

impl Chat<'_> {
    /// The status line's facts, from the session as it stands.
    pub(super) fn refresh_status(&mut self) {
        let Front::Full(tui) = &mut self.front else {
            return;
        };
        let (mode, model) = mode_and_model(&self.conn.controls);
        let status = Status {
            agent: agent_name(&self.conn),
            folder: folder(&self.conn),
            mode,
            model,
        };
        if tui.state.status != status {
            tui.state.status = status;
            tui.state.dirty = true;
        }
    }

    /// The full screen's question menu and turn state, after a change.
    pub(super) fn show_phase(&mut self, running: bool, cancelling: bool) {
        let menu = self.asks.front().map(ask_menu);
        if let Front::Full(tui) = &mut self.front {
            tui.state.set_phase(running, cancelling, menu);
        }
    }

    /// Opens the `/mode` or `/model` picker on the full screen.
    pub(super) fn open_picker(&mut self, command: &str) -> bool {
        let Front::Full(tui) = &mut self.front else {
            return false;
        };
        match picker(&self.conn.controls, command) {
            Some(menu) => {
                tui.state.open_picker(menu);
                true
            }
            None => false,
        }
    }

    /// One terminal event of the full screen; `None`: the terminal is gone.
    pub(super) async fn terminal_event(&mut self, event: Option<Event>) -> Step {
        let Some(event) = event else {
            return self.typed(None).await;
        };
        let Front::Full(tui) = &mut self.front else {
            return Ok(None);
        };
        match tui.state.event(event) {
            Action::None => Ok(None),
            Action::Edited => {
                self.composer_hints(false);
                Ok(None)
            }
            Action::Complete => {
                self.composer_hints(true);
                Ok(None)
            }
            Action::Submit(line) | Action::Answer(line) => self.typed(Some(line)).await,
            Action::Cancel => self.interrupt().await,
            Action::Quit => Ok(Some(self.quit_code())),
        }
    }

    /// Hints for the composer's text: the commands a `/` word may become,
    /// the hint of the command being typed, or (Tab) its completion.
    fn composer_hints(&mut self, complete: bool) {
        let commands = self.commands();
        let host = self.conn.services.host();
        let Front::Full(tui) = &mut self.front else {
            return;
        };
        let text = tui.state.composer.text().to_owned();
        let hints = if complete {
            let paths = |typed: &str| {
                host.complete_path(typed, PATH_CANDIDATES)
                    .map_err(|e| e.message().to_owned())
            };
            let done = completion::complete(&text, &commands, &self.conn.controls, &paths);
            if let Some(new) = done.line {
                tui.state.composer.set_text(new);
            }
            done.shown
        } else if let Some(matches) = completion::matching_commands(&text, &commands) {
            matches
        } else {
            completion::hint_for(&text, &commands).into_iter().collect()
        };
        tui.state.hints = hints;
    }

    /// The exit status of leaving now.
    fn quit_code(&self) -> u8 {
        if self.turn_running() {
            exit::CANCELLED
        } else {
            self.last_code()
        }
    }
}
