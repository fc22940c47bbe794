//! `--script FILE`: a JSONL file the agent plays instead of its scenarios.
//!
//! Format, one JSON value per line (blank lines and lines starting with `#`
//! or `//` are ignored):
//!
//! | line | effect |
//! |---|---|
//! | `{"sessionUpdate": ...}` | sent as the `update` of a `session/update` for the current session |
//! | `{"update": {...}}` | the same, spelled explicitly |
//! | `{"wait_for_prompt": true}` | ends the current segment; the next segment plays when a prompt arrives |
//! | `{"sleep_ms": N}` | pause N milliseconds |
//! | `{"end_turn": "end_turn"}` | end the turn with this stop reason (v1 response / v2 idle) |
//! | `{"raw": {...}}` | write any JSON-RPC message verbatim |
//! | `{"exit": N}` | exit the process with code N |
//!
//! Segments: the lines before the first `wait_for_prompt` play right after
//! `session/new` (agent-initiated). Each prompt then plays the next segment;
//! a segment without `end_turn` ends with `end_turn`. Lines after an
//! `end_turn` in the same segment run after the turn ended (background).
//! When the script is exhausted, prompts get the built-in scenarios.
//! The agent still answers the handshake and, in v2, acknowledges each prompt
//! (`user_message` + `state_update` running) itself.

use serde_json::Value;

use crate::program::{Program, Step};

#[derive(Debug, Clone)]
enum Line {
    Update(Value),
    WaitForPrompt,
    Sleep(u64),
    EndTurn(String),
    Raw(Value),
    Exit(i32),
}

/// A parsed script.
#[derive(Debug, Clone)]
pub struct Script {
    lines: Vec<Line>,
}

impl Script {
    /// Parses script text; errors name the 1-based line.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut lines = Vec::new();
        for (n, raw) in text.lines().enumerate() {
            let raw = raw.trim();
            if raw.is_empty() || raw.starts_with('#') || raw.starts_with("//") {
                continue;
            }
            let value: Value =
                serde_json::from_str(raw).map_err(|e| format!("line {}: {e}", n + 1))?;
            lines.push(parse_line(value).map_err(|e| format!("line {}: {e}", n + 1))?);
        }
        Ok(Script { lines })
    }

    /// The agent-initiated opening segment; advances `pos` past it.
    /// `sleeps: false` drops `sleep_ms` lines (tests).
    pub(crate) fn opening(&self, pos: &mut usize, sleeps: bool) -> Program {
        let mut program = Program::new(0);
        self.segment(pos, &mut program, sleeps);
        program
    }

    /// The segment played for a prompt, or `None` when the script is exhausted.
    pub(crate) fn turn(&self, pos: &mut usize, sleeps: bool) -> Option<Program> {
        if *pos >= self.lines.len() {
            return None;
        }
        let mut program = Program::new(0);
        let ended = self.segment(pos, &mut program, sleeps);
        if !ended {
            program.end("end_turn");
        }
        Some(program)
    }

    /// Compiles lines from `pos` up to the next `wait_for_prompt`; returns
    /// whether the segment contained an `end_turn`.
    fn segment(&self, pos: &mut usize, program: &mut Program, sleeps: bool) -> bool {
        let mut ended = false;
        while let Some(line) = self.lines.get(*pos) {
            *pos += 1;
            match line {
                Line::WaitForPrompt => break,
                Line::Update(u) => program.steps.push(Step::Update(u.clone())),
                Line::Sleep(ms) if sleeps => program.steps.push(Step::Delay(*ms)),
                Line::Sleep(_) => {}
                Line::EndTurn(reason) => {
                    ended = true;
                    program.steps.push(Step::End(reason.clone()));
                }
                Line::Raw(v) => program.steps.push(Step::Raw(v.clone())),
                Line::Exit(code) => program.steps.push(Step::Exit(*code)),
            }
        }
        ended
    }
}

fn parse_line(value: Value) -> Result<Line, String> {
    let Value::Object(obj) = &value else {
        return Err("expected a JSON object".into());
    };
    if obj.contains_key("sessionUpdate") {
        return Ok(Line::Update(value));
    }
    if obj.len() != 1 {
        return Err("a directive object has exactly one key".into());
    }
    let (key, arg) = obj.iter().next().expect("one key");
    match key.as_str() {
        "update" if arg.get("sessionUpdate").is_some() => Ok(Line::Update(arg.clone())),
        "update" => Err("update needs a sessionUpdate field".into()),
        "wait_for_prompt" => Ok(Line::WaitForPrompt),
        "sleep_ms" => arg
            .as_u64()
            .map(Line::Sleep)
            .ok_or_else(|| "sleep_ms needs a non-negative integer".into()),
        "end_turn" => arg
            .as_str()
            .map(|s| Line::EndTurn(s.to_owned()))
            .ok_or_else(|| "end_turn needs a stop reason string".into()),
        "raw" if arg.is_object() || arg.is_array() => Ok(Line::Raw(arg.clone())),
        "raw" => Err("raw needs a JSON object or array".into()),
        "exit" => arg
            .as_i64()
            .and_then(|c| i32::try_from(c).ok())
            .map(Line::Exit)
            .ok_or_else(|| "exit needs an integer code".into()),
        other => Err(format!("unknown directive {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_split_at_wait_for_prompt() {
        let script = Script::parse(
            "# opening\n{\"sessionUpdate\":\"usage_update\",\"used\":1,\"size\":2}\n{\"wait_for_prompt\":true}\n{\"sleep_ms\":0}\n{\"end_turn\":\"refusal\"}\n{\"wait_for_prompt\":true}\n{\"raw\":{\"jsonrpc\":\"2.0\",\"method\":\"x\"}}\n",
        )
        .unwrap();
        let mut pos = 0;
        assert_eq!(script.opening(&mut pos, true).steps.len(), 1);
        let turn = script.turn(&mut pos, true).unwrap();
        assert!(matches!(turn.steps.last(), Some(Step::End(r)) if r == "refusal"));
        let turn = script.turn(&mut pos, true).unwrap();
        assert!(matches!(turn.steps[0], Step::Raw(_)));
        assert!(matches!(turn.steps.last(), Some(Step::End(r)) if r == "end_turn"));
        assert!(script.turn(&mut pos, true).is_none());
    }

    #[test]
    fn errors_name_the_line() {
        let err = Script::parse("\n{\"bogus\": 1}").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(Script::parse("not json").is_err());
        assert!(Script::parse("{\"sleep_ms\": -1}").is_err());
    }
}
