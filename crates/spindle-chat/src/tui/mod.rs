//! The full-screen chat: `spindle chat` on a terminal (unless `--plain`).
//! The session is driven by `interactive` (turns, questions, services, own
//! commands), as in line mode; this module is the front end: it owns the
//! terminal (alternate screen, raw mode, mouse), reads its events on a
//! thread, keeps what is shown ([`state`]) and draws it ([`draw`]).

mod composer;
mod draw;
mod state;
#[cfg(test)]
mod tests;

use std::io::{Stdout, Write};
use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use tokio::sync::mpsc;

pub(crate) use state::{Action, Choice, Menu, Status, TuiState, TurnEnd};

/// The terminal as the full-screen chat uses it, restored when dropped.
pub(crate) struct Tui {
    terminal: Option<Terminal<CrosstermBackend<Stdout>>>,
    pub(crate) state: TuiState,
}

impl std::fmt::Debug for Tui {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tui").field("state", &self.state).finish()
    }
}

/// Puts the terminal back as it was: cooked mode, the main screen, no
/// mouse reports. Safe to call twice (the panic hook and the drop).
fn restore_terminal() {
    let mut out = std::io::stdout();
    let _ = execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        ratatui::crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

impl Tui {
    /// Takes over the terminal; a panic from here on restores it before
    /// the panic message is printed.
    pub(crate) fn enter(state: TuiState) -> anyhow::Result<Tui> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
        let taken = (|| -> std::io::Result<Terminal<CrosstermBackend<Stdout>>> {
            enable_raw_mode()?;
            let mut out = std::io::stdout();
            // Terminals without the keyboard protocol ignore the push; with
            // it, Shift+Enter is told apart from Enter.
            execute!(
                out,
                EnterAlternateScreen,
                EnableMouseCapture,
                EnableBracketedPaste,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            )?;
            Terminal::new(CrosstermBackend::new(out))
        })();
        match taken {
            Ok(terminal) => Ok(Tui {
                terminal: Some(terminal),
                state,
            }),
            Err(error) => {
                // Half taken: give back what was.
                restore_terminal();
                Err(error.into())
            }
        }
    }

    /// Gives the terminal back (also done when dropped).
    pub(crate) fn leave(&mut self) {
        if self.terminal.take().is_some() {
            restore_terminal();
        }
    }

    /// Draws the screen when something changed or a turn's spinner moves.
    pub(crate) fn redraw(&mut self) -> std::io::Result<()> {
        self.state.dirty = false;
        let Some(terminal) = &mut self.terminal else {
            return Ok(());
        };
        let now = Instant::now();
        terminal.draw(|frame| draw::draw(&mut self.state, frame, now))?;
        Ok(())
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.leave();
    }
}

/// Terminal events (keys, mouse, paste, resizes) read on a thread of their
/// own; the channel closes when reading fails.
pub(crate) fn spawn_event_reader() -> mpsc::UnboundedReceiver<Event> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        while let Ok(event) = event::read() {
            if tx.send(event).is_err() {
                return;
            }
        }
    });
    rx
}
