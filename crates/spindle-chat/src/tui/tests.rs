//! The full screen drawn on ratatui's `TestBackend`: each case gives a
//! state (entries, notes, a menu, keys typed) and the screen expected,
//! row by row.

use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use serde_json::{Value, json};
use spindle_engine::{EntryKind, EntryView, RenderOp};

use super::draw::{self, wrap};
use super::state::{Action, Choice, Menu, TuiState, TurnEnd};

fn entry(id: &str, kind: EntryKind, text: &str, fields: Value) -> RenderOp {
    let Value::Object(fields) = fields else {
        unreachable!("fields are an object")
    };
    RenderOp::InsertEntry {
        index: 0,
        entry: EntryView {
            id: id.into(),
            kind,
            message_id: None,
            turn: Some(1),
            text: text.into(),
            fields,
        },
    }
}

fn screen(state: &mut TuiState, cols: u16, rows: u16) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(cols, rows)).expect("test terminal");
    terminal
        .draw(|frame| draw::draw(state, frame, Instant::now()))
        .expect("draw");
    let buffer = terminal.backend().buffer();
    (0..rows)
        .map(|y| {
            let row: String = (0..cols)
                .map(|x| buffer[(x, y)].symbol().to_owned())
                .collect();
            row.trim_end().to_owned()
        })
        .collect()
}

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn edit_tool() -> RenderOp {
    entry(
        "t1",
        EntryKind::ToolCall,
        "",
        json!({
            "toolCall": {"title": "Edit a.rs", "kind": "edit", "status": "completed"},
            "diffs": [{"path": "a.rs", "change": "modify", "hunks": [
                {"header": "@@ -1 +1 @@", "lines": ["-old", "+new"]}]}]
        }),
    )
}

fn read_tool() -> RenderOp {
    entry(
        "t0",
        EntryKind::ToolCall,
        "",
        json!({
            "toolCall": {"title": "Read a.rs", "kind": "read", "status": "completed",
                         "content": [{"type": "content", "content": {"type": "text", "text": "fn main() {}"}}]}
        }),
    )
}

#[test]
fn screens_show_the_transcript_menus_and_status() {
    struct Case {
        name: &'static str,
        setup: fn(&mut TuiState),
        expected: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "first screen",
            setup: |s| {
                s.header = vec!["spindle chat · ref 1.0".into(), "folder   ~/w".into()];
                s.status.agent = "ref 1.0".into();
                s.status.folder = "~/w".into();
                s.status.mode = Some("Default".into());
            },
            expected: &[
                "spindle chat · ref 1.0",
                "folder   ~/w",
                "",
                "",
                "",
                "────────────────────────────────────────",
                "› message the agent · / commands · @ fil",
                "ref 1.0 · mode Default · ~/w",
            ],
        },
        Case {
            name: "a reply wraps at words; a read is one line; a diff shows in place",
            setup: |s| {
                s.apply(vec![
                    entry("u", EntryKind::UserMessage, "edit it", json!({})),
                    read_tool(),
                    edit_tool(),
                    entry(
                        "m",
                        EntryKind::AgentMessage,
                        "I changed the word old into new everywhere",
                        json!({}),
                    ),
                    // The engine's own turn end draws nothing: the driver's line says it.
                    entry(
                        "e",
                        EntryKind::TurnEnd,
                        "",
                        json!({"outcome": "done", "stopReason": "end_turn"}),
                    ),
                ]);
                s.turn_end(TurnEnd {
                    sentence: "done".into(),
                    detail: None,
                    ok: true,
                });
            },
            expected: &[
                "▸ read Read a.rs · done",
                "",
                "▾ edit Edit a.rs · done",
                "    edit a.rs",
                "    @@ -1 +1 @@",
                "    -old",
                "    +new",
                "",
                "● I changed the word old into new",
                "  everywhere",
                "",
                "└ done",
                "────────────────────────────────────────",
                "› message the agent · / commands · @ fil",
                "",
            ],
        },
        Case {
            name: "a permission menu under the waiting tool call",
            setup: |s| {
                s.apply(vec![entry(
                    "t",
                    EntryKind::ToolCall,
                    "",
                    json!({"toolCall": {"title": "Edit b.rs", "kind": "edit", "status": "pending"},
                           "permission": {"outcome": null, "options": []}}),
                )]);
                let choices = ["Allow", "Reject"]
                    .iter()
                    .enumerate()
                    .map(|(i, l)| Choice {
                        label: (*l).into(),
                        action: Action::Answer((i + 1).to_string()),
                    })
                    .collect();
                s.set_phase(
                    true,
                    false,
                    Some(Menu {
                        key: "1".into(),
                        title: "Allow Edit b.rs?".into(),
                        detail: Vec::new(),
                        choices,
                        selected: 0,
                        dismissable: false,
                        typed: false,
                    }),
                );
                s.running_since = None;
                s.event(key(KeyCode::Down));
            },
            expected: &[
                "",
                "▾ edit Edit b.… · waiting for permission",
                "    permission: waiting for an answer",
                "",
                "┌ Allow Edit b.rs? ────────────────────┐",
                "│  1. Allow                            │",
                "│› 2. Reject                           │",
                "│↑/↓ Enter · 1-2                       │",
                "└──────────────────────────────────────┘",
                "────────────────────────────────────────",
                "› answer the question above (↑/↓ and Ent",
                "",
            ],
        },
        Case {
            name: "typed text wraps in the composer; hints above it",
            setup: |s| {
                for c in "/mo".chars() {
                    s.event(key(KeyCode::Char(c)));
                }
                s.hints = vec!["  /mode  list the session modes".into()];
                s.confirm_quit = false;
            },
            expected: &[
                "",
                "",
                "",
                "  /mode  list the session modes",
                "────────────────────────────────────────",
                "› /mo",
                "",
            ],
        },
        Case {
            name: "Ctrl-C on an idle chat asks before quitting",
            setup: |s| {
                s.event(Event::Key(KeyEvent::new(
                    KeyCode::Char('c'),
                    KeyModifiers::CONTROL,
                )));
            },
            expected: &[
                "",
                "",
                "────────────────────────────────────────",
                "Quit the chat? y or Ctrl-C again quits;",
                "",
            ],
        },
    ];
    for case in cases {
        let mut state = TuiState {
            show_thoughts: true,
            ..TuiState::default()
        };
        (case.setup)(&mut state);
        let rows = case.expected.len() as u16;
        let shown = screen(&mut state, 40, rows);
        assert_eq!(shown, case.expected, "{}", case.name);
    }
}

#[test]
fn keys_become_actions() {
    let ctrl = |c| Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
    let alt_enter = Event::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
    // (events, the last one's action, the composer's text after)
    let cases: Vec<(Vec<Event>, Action, &str)> = vec![
        (
            vec![key(KeyCode::Char('h')), key(KeyCode::Enter)],
            Action::Submit("h".into()),
            "",
        ),
        (
            vec![key(KeyCode::Char('a')), alt_enter, key(KeyCode::Char('b'))],
            Action::Edited,
            "a\nb",
        ),
        (vec![key(KeyCode::Enter)], Action::None, ""),
        (vec![ctrl('d')], Action::Quit, ""),
        (vec![ctrl('c'), ctrl('c')], Action::Quit, ""),
        (vec![ctrl('c'), key(KeyCode::Char('y'))], Action::Quit, ""),
        (vec![ctrl('c'), key(KeyCode::Char('n'))], Action::None, ""),
        (vec![key(KeyCode::Char('x')), ctrl('c')], Action::Edited, ""),
        (vec![key(KeyCode::Tab)], Action::Complete, ""),
    ];
    for (events, expected, text) in cases {
        let mut state = TuiState::default();
        let mut last = Action::None;
        for event in events.clone() {
            last = state.event(event);
        }
        assert_eq!(last, expected, "{events:?}");
        assert_eq!(state.composer.text(), text, "{events:?}");
    }
    // A running turn: Ctrl-C and Esc cancel.
    let mut state = TuiState::default();
    state.set_phase(true, false, None);
    assert_eq!(state.event(ctrl('c')), Action::Cancel);
    assert_eq!(state.event(key(KeyCode::Esc)), Action::Cancel);
}

#[test]
fn menus_answer_by_arrow_or_number_and_pickers_close() {
    let menu = |dismissable| Menu {
        key: "mode".into(),
        title: "Choose the mode".into(),
        detail: Vec::new(),
        choices: vec![
            Choice {
                label: "Default".into(),
                action: Action::Submit("/mode default".into()),
            },
            Choice {
                label: "Plan".into(),
                action: Action::Submit("/mode plan".into()),
            },
        ],
        selected: 0,
        dismissable,
        typed: false,
    };
    let mut state = TuiState::default();
    state.open_picker(menu(true));
    state.event(key(KeyCode::Up));
    assert_eq!(
        state.event(key(KeyCode::Enter)),
        Action::Submit("/mode plan".into())
    );
    assert!(state.picker.is_none());
    state.open_picker(menu(true));
    assert_eq!(state.event(key(KeyCode::Esc)), Action::None);
    assert!(state.picker.is_none());
    state.set_phase(false, false, Some(menu(false)));
    assert_eq!(
        state.event(key(KeyCode::Char('2'))),
        Action::Submit("/mode plan".into())
    );
    assert_eq!(state.event(key(KeyCode::Char('7'))), Action::None);
    // The question stays until the driver takes it away.
    assert!(state.question.is_some());
}

#[test]
fn a_typed_question_takes_the_composer_and_enter_on_nothing_picks_the_choice() {
    let menu = Menu {
        key: "\"e1\"".into(),
        title: "The agent asks".into(),
        detail: Vec::new(),
        choices: vec![Choice {
            label: "Skip (default)".into(),
            action: Action::Answer(String::new()),
        }],
        selected: 0,
        dismissable: false,
        typed: true,
    };
    let mut state = TuiState::default();
    state.set_phase(true, false, Some(menu));
    // Digits are text here, not choice numbers.
    for c in "12.5".chars() {
        assert_eq!(state.event(key(KeyCode::Char(c))), Action::Edited);
    }
    assert_eq!(
        state.event(key(KeyCode::Enter)),
        Action::Answer("12.5".into())
    );
    assert_eq!(state.composer.text(), "");
    assert_eq!(
        state.event(key(KeyCode::Enter)),
        Action::Answer(String::new())
    );
}

#[test]
fn scrolling_leaves_the_bottom_and_comes_back() {
    let mut state = TuiState::default();
    let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    state.apply(vec![entry("m", EntryKind::AgentMessage, &text, json!({}))]);
    let bottom = screen(&mut state, 30, 8);
    // Five transcript rows above the rule, the composer and the status.
    assert_eq!(bottom[4], "  line 30");
    state.event(key(KeyCode::PageUp));
    let up = screen(&mut state, 30, 8);
    assert_eq!(up[4], "  line 26", "{up:?}");
    assert_eq!(up[7], "4 rows below (PgDn)", "{up:?}");
    // New text while scrolled up: the view stays where it is.
    state.apply(vec![RenderOp::AppendText {
        id: "m".into(),
        text: "line 31\n".into(),
    }]);
    assert_eq!(screen(&mut state, 30, 8)[4], "  line 26");
    state.event(key(KeyCode::PageDown));
    assert_eq!(screen(&mut state, 30, 8)[4], "  line 30");
    state.event(key(KeyCode::PageDown));
    // Back at the bottom, it follows again, the appended line included.
    assert_eq!(screen(&mut state, 30, 8)[4], "  line 31");
    assert_eq!(state.scroll_top, None);
    // The mouse wheel scrolls three rows a notch.
    let wheel = |kind| {
        Event::Mouse(ratatui::crossterm::event::MouseEvent {
            kind,
            column: 0,
            row: 0,
            modifiers: KeyModifiers::NONE,
        })
    };
    use ratatui::crossterm::event::MouseEventKind::{ScrollDown, ScrollUp};
    state.event(wheel(ScrollUp));
    assert_eq!(screen(&mut state, 30, 8)[4], "  line 28");
    state.event(wheel(ScrollDown));
    assert_eq!(screen(&mut state, 30, 8)[4], "  line 31");
    assert_eq!(state.scroll_top, None);
}

#[test]
fn wrap_breaks_at_spaces_and_keeps_the_indent() {
    let cases: &[(&str, usize, &[&str])] = &[
        ("short", 10, &["short"]),
        ("one two three", 8, &["one two", "three"]),
        ("    a bb ccc", 8, &["    a bb", "    ccc"]),
        ("abcdefghij", 4, &["abcd", "efgh", "ij"]),
        ("日本語です", 4, &["日本", "語で", "す"]),
    ];
    for (text, width, expected) in cases {
        assert_eq!(wrap(text, *width), *expected, "{text:?}");
    }
}

#[test]
fn a_click_or_ctrl_o_opens_and_closes_tool_calls() {
    use ratatui::crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let click = |row| {
        Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 3,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    let mut state = TuiState::default();
    state.apply(vec![read_tool(), edit_tool()]);
    let closed = screen(&mut state, 30, 12);
    assert_eq!(closed[1], "▸ read Read a.rs · done");
    assert_eq!(closed[3], "▾ edit Edit a.rs · done");
    // A click on the read opens it; on the edit closes it.
    state.event(click(1));
    let opened = screen(&mut state, 30, 12);
    assert_eq!(
        &opened[1..3],
        ["▾ read Read a.rs · done", "    fn main() {}"]
    );
    state.event(click(4));
    assert_eq!(screen(&mut state, 30, 12)[4], "▸ edit Edit a.rs · done");
    // Ctrl-O opens every one, and again closes them to their defaults.
    state.event(Event::Key(KeyEvent::new(
        KeyCode::Char('o'),
        KeyModifiers::CONTROL,
    )));
    let all = screen(&mut state, 30, 12);
    assert_eq!(all[2], "    fn main() {}");
    assert_eq!(all[4], "▾ edit Edit a.rs · done");
    state.event(Event::Key(KeyEvent::new(
        KeyCode::Char('o'),
        KeyModifiers::CONTROL,
    )));
    assert_eq!(screen(&mut state, 30, 12), closed);
}

#[test]
fn a_reply_colours_its_fenced_code_and_bolds_its_headings() {
    use ratatui::style::{Color, Modifier};
    let mut state = TuiState::default();
    let text = "# Plan\nrun it:\n```sh\ncargo test\n```\ndone";
    state.apply(vec![entry("m", EntryKind::AgentMessage, text, json!({}))]);
    let mut terminal = Terminal::new(TestBackend::new(20, 10)).expect("test terminal");
    terminal
        .draw(|frame| draw::draw(&mut state, frame, Instant::now()))
        .expect("draw");
    let buffer = terminal.backend().buffer();
    // Row 0 is the separator; the text starts at column 2, after `● `.
    let cell = |row: u16| &buffer[(2, row)];
    assert_eq!(cell(1).symbol(), "#");
    assert!(cell(1).modifier.contains(Modifier::BOLD));
    assert_eq!(cell(2).fg, Color::Reset);
    assert_eq!(cell(3).fg, Color::DarkGray);
    assert_eq!(cell(4).symbol(), "c");
    assert_eq!(cell(4).fg, Color::Cyan);
    assert_eq!(cell(5).fg, Color::DarkGray);
    assert_eq!(cell(6).fg, Color::Reset);
}

#[test]
fn the_composer_says_what_a_line_sent_while_the_agent_works_becomes() {
    for (at_once, expected) in [
        (false, "what you send now waits for the turn's end"),
        (true, "what you send now goes to it at once"),
    ] {
        let mut state = TuiState {
            prompts_go_at_once: at_once,
            ..TuiState::default()
        };
        state.set_phase(true, false, None);
        let rows = screen(&mut state, 120, 12);
        assert!(
            rows.iter()
                .any(|r| r.contains("the agent is working") && r.contains(expected)),
            "{rows:#?}"
        );
    }
}

#[test]
fn an_observers_composer_says_who_prompts() {
    for (observer, expected) in [
        (true, "observing · the session's controllers prompt"),
        (false, "message the agent"),
    ] {
        let mut state = TuiState {
            observer,
            ..TuiState::default()
        };
        let rows = screen(&mut state, 120, 12);
        assert!(rows.iter().any(|r| r.contains(expected)), "{rows:#?}");
    }
}
