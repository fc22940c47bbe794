//! An agent's `elicitation/create` as questions in the chat: first whether to answer at all
//! (answer, decline, cancel), then one prompt per field of a form, each typed answer read and
//! checked by `spindle_host`'s form model before the next. A URL elicitation shows the URL and
//! its host and is never opened by the chat.

use std::collections::BTreeMap;

use spindle_host::{
    Elicitation, ElicitationAnswer, ElicitationKind, FieldKind, FieldValue, FormField,
};

use super::render::{Line, Style};
use super::view::Footer;

/// Where a question stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Answer, decline or cancel.
    Start,
    /// The field with this index.
    Field(usize),
}

/// One elicitation being asked.
#[derive(Debug)]
pub(super) struct ElicitationAsk {
    pub(super) elicitation: Elicitation,
    step: Step,
    values: BTreeMap<String, FieldValue>,
    /// Why the last answer was not taken.
    error: Option<String>,
}

/// The line a menu's "cancel" choice sends: no key types it, so no typed answer is mistaken for it.
const CANCEL_LINE: &str = "\u{18}";

/// What a typed line did.
#[derive(Debug, PartialEq)]
pub(super) enum Progress {
    /// The next question (or the same one again, with the error).
    Asking,
    /// Done: the answer to send.
    Answered(ElicitationAnswer),
}

impl ElicitationAsk {
    pub(super) fn new(elicitation: Elicitation) -> ElicitationAsk {
        ElicitationAsk {
            elicitation,
            step: Step::Start,
            values: BTreeMap::new(),
            error: None,
        }
    }

    /// The URL elicitation id, for `elicitation/complete`.
    pub(super) fn url_id(&self) -> Option<&str> {
        match &self.elicitation.kind {
            ElicitationKind::Url(url) => Some(&url.id),
            _ => None,
        }
    }

    /// What the agent asks, as lines: its message, the form's title and description, or the URL
    /// and the host it leads to. Shown above the prompt, and alone when nobody can answer.
    pub(super) fn summary(&self) -> Vec<Line> {
        let e = &self.elicitation;
        let mut lines = vec![Line::new(
            &format!("The agent asks: {}", e.message),
            Style::Bold,
        )];
        match &e.kind {
            ElicitationKind::Form(form) => {
                for text in [&form.title, &form.description].into_iter().flatten() {
                    lines.push(Line::new(text, Style::Plain));
                }
            }
            ElicitationKind::Url(url) => {
                lines.push(Line::new(&format!("URL: {}", url.url), Style::Plain));
                lines.push(Line::new(
                    &match &url.host {
                        Some(host) => format!("It leads to the host: {host}"),
                        None => "It is not an http(s) URL with a host; do not visit it.".to_owned(),
                    },
                    Style::Bold,
                ));
                lines.push(Line::new(
                    "Spindle does not open it; copy it into a browser yourself if you trust that host.",
                    Style::Dim,
                ));
            }
            ElicitationKind::Unsupported { mode } => lines.push(Line::new(
                &format!("(a {mode:?} elicitation, which this chat cannot show)"),
                Style::Dim,
            )),
        }
        for diagnostic in &e.diagnostics {
            lines.push(Line::new(&format!("note: {diagnostic}"), Style::Dim));
        }
        lines
    }

    fn fields(&self) -> &[FormField] {
        match &self.elicitation.kind {
            ElicitationKind::Form(form) => &form.fields,
            _ => &[],
        }
    }

    /// The question and the prompt under it.
    pub(super) fn footer(&self) -> Footer {
        self.footer_listing(true)
    }

    /// [`Self::footer`]; `list_choices: false` leaves out a single choice's numbered options
    /// (the full screen's menu offers them as its choices).
    fn footer_listing(&self, list_choices: bool) -> Footer {
        let mut question = Vec::new();
        if let Some(error) = &self.error {
            question.push(Line::new(&format!("not taken: {error}"), Style::Removed));
        }
        let prompt = match self.step {
            Step::Start => {
                question.extend(self.summary());
                match &self.elicitation.kind {
                    ElicitationKind::Form(_) => "answer? [a]nswer / [d]ecline / [c]ancel: ",
                    ElicitationKind::Url(_) => "done there? [a]ccept / [d]ecline / [c]ancel: ",
                    ElicitationKind::Unsupported { .. } => "[d]ecline / [c]ancel: ",
                }
                .to_owned()
            }
            Step::Field(index) => {
                let field = &self.fields()[index];
                question.extend(field_lines(field, list_choices));
                question.push(Line::new(
                    "(/decline or /cancel gives up the whole form)",
                    Style::Dim,
                ));
                format!("{}: ", field.title)
            }
        };
        Footer::Input { question, prompt }
    }

    /// The full screen's menu: the question's lines, then the choices and the line each sends
    /// (a field's free answer is typed in the composer).
    pub(super) fn menu(&self) -> (Vec<Line>, Vec<(String, String)>) {
        let Footer::Input {
            mut question,
            prompt,
        } = self.footer_listing(false)
        else {
            return (Vec::new(), Vec::new());
        };
        let pair = |label: &str, line: &str| (label.to_owned(), line.to_owned());
        let mut choices = Vec::new();
        match self.step {
            Step::Start => {
                match &self.elicitation.kind {
                    ElicitationKind::Form(_) => choices.push(pair("Answer", "a")),
                    ElicitationKind::Url(_) => choices.push(pair("Done there: accept", "a")),
                    ElicitationKind::Unsupported { .. } => {}
                }
                choices.push(pair("Decline", "d"));
            }
            Step::Field(index) => {
                let field = &self.fields()[index];
                question.push(Line::new(
                    &format!("{prompt}(type it below, or choose)"),
                    Style::Dim,
                ));
                match &field.kind {
                    FieldKind::Boolean { .. } => {
                        choices.extend([pair("Yes", "y"), pair("No", "n")]);
                    }
                    FieldKind::Choice { options, .. } => choices.extend(
                        options
                            .iter()
                            .enumerate()
                            .map(|(i, o)| (o.title.clone(), (i + 1).to_string())),
                    ),
                    _ => {}
                }
                if !field.required || field.default_value().is_some() {
                    choices.push(pair("Skip (default)", ""));
                }
            }
        }
        choices.push(pair("Cancel", CANCEL_LINE));
        (question, choices)
    }

    /// Which part of the form is asked: `start`, or `field N`. Each part is a new menu on the
    /// full screen (its selection starts at the first choice).
    pub(super) fn step_name(&self) -> String {
        match self.step {
            Step::Start => "start".to_owned(),
            Step::Field(index) => format!("field {index}"),
        }
    }

    /// Whether the question now waits for a typed answer (a field whose value is not only picked
    /// from a list).
    pub(super) fn typed(&self) -> bool {
        match self.step {
            Step::Start => false,
            Step::Field(index) => !matches!(
                self.fields()[index].kind,
                FieldKind::Boolean { .. } | FieldKind::Choice { .. }
            ),
        }
    }

    /// Takes one typed line.
    pub(super) fn answer(&mut self, line: &str) -> Progress {
        self.error = None;
        if line == CANCEL_LINE {
            return Progress::Answered(ElicitationAnswer::Cancel);
        }
        let typed = line.trim();
        match self.step {
            Step::Start => match typed.to_ascii_lowercase().as_str() {
                "d" | "decline" | "n" | "no" => Progress::Answered(ElicitationAnswer::Decline),
                "c" | "cancel" => Progress::Answered(ElicitationAnswer::Cancel),
                "a" | "answer" | "accept" | "y" | "yes" => match &self.elicitation.kind {
                    ElicitationKind::Form(_) => self.next_field(0),
                    ElicitationKind::Url(_) => {
                        Progress::Answered(ElicitationAnswer::Accept(Default::default()))
                    }
                    ElicitationKind::Unsupported { .. } => {
                        self.error = Some("this kind of question can only be declined".into());
                        Progress::Asking
                    }
                },
                _ => {
                    self.error = Some(format!("{typed:?}: type a, d or c"));
                    Progress::Asking
                }
            },
            Step::Field(_) if typed == "/decline" => Progress::Answered(ElicitationAnswer::Decline),
            Step::Field(_) if typed == "/cancel" => Progress::Answered(ElicitationAnswer::Cancel),
            Step::Field(index) => {
                let field = self.fields()[index].clone();
                match field.parse_answer(typed) {
                    Ok(Some(value)) => {
                        self.values.insert(field.name.clone(), value);
                    }
                    Ok(None) => match field.default_value() {
                        Some(value) => {
                            self.values.insert(field.name.clone(), value);
                        }
                        None if field.required => {
                            self.error = Some(format!("{} is required", field.title));
                            return Progress::Asking;
                        }
                        None => {}
                    },
                    Err(error) => {
                        self.error = Some(error);
                        return Progress::Asking;
                    }
                }
                self.next_field(index + 1)
            }
        }
    }

    fn next_field(&mut self, index: usize) -> Progress {
        // A field of a type this chat cannot show is not asked; when it is required, the form
        // cannot be accepted (below).
        let next = (index..self.fields().len())
            .find(|i| !matches!(self.fields()[*i].kind, FieldKind::Unsupported { .. }));
        if let Some(index) = next {
            self.step = Step::Field(index);
            return Progress::Asking;
        }
        let ElicitationKind::Form(form) = &self.elicitation.kind else {
            return Progress::Answered(ElicitationAnswer::Cancel);
        };
        match form.accept_content(&self.values) {
            Ok(content) => Progress::Answered(ElicitationAnswer::Accept(content)),
            Err(errors) => {
                // Only a required field this chat cannot show gets here: the form cannot be
                // accepted, so say why and ask again whether to decline.
                let first = &errors[0];
                self.error = Some(format!("{}: {}", first.name, first.message));
                self.step = Step::Start;
                self.values.clear();
                Progress::Asking
            }
        }
    }
}

/// A field's label, description and what may be typed.
/// A field's lines: what it takes, its description, and (`list_choices`, or a multiple choice)
/// its numbered options.
fn field_lines(field: &FormField, list_choices: bool) -> Vec<Line> {
    let mut lines = Vec::new();
    let need = match (field.required, field.default_value().is_some()) {
        (true, _) => "required",
        (false, true) => "optional",
        (false, false) => "optional, Enter skips",
    };
    let hint = match &field.kind {
        FieldKind::Text {
            format,
            min_length,
            max_length,
            ..
        } => {
            let mut parts = vec!["text".to_owned()];
            if let Some(format) = format {
                parts.push(format!("{format:?}").to_lowercase());
            }
            if let Some(min) = min_length {
                parts.push(format!("at least {min} characters"));
            }
            if let Some(max) = max_length.filter(|m| *m < spindle_host::MAX_ANSWER_CHARS as u64) {
                parts.push(format!("at most {max} characters"));
            }
            parts.join(", ")
        }
        FieldKind::Number {
            minimum, maximum, ..
        } => bounds_hint("a number", *minimum, *maximum),
        FieldKind::Integer {
            minimum, maximum, ..
        } => bounds_hint("a whole number", *minimum, *maximum),
        FieldKind::Boolean { .. } => "y or n".to_owned(),
        FieldKind::Choice { .. } => "one number or value".to_owned(),
        FieldKind::MultiChoice { .. } => "numbers or values, separated by commas".to_owned(),
        FieldKind::Unsupported { type_name } => {
            format!("type {type_name:?}, which cannot be answered here")
        }
    };
    let default = field.default_value().map(|v| match v {
        FieldValue::Text(t) => t,
        FieldValue::Number(n) => n.to_string(),
        FieldValue::Integer(i) => i.to_string(),
        FieldValue::Boolean(b) => if b { "y" } else { "n" }.to_owned(),
        FieldValue::Choices(c) => c.join(", "),
    });
    let default = default
        .map(|d| format!("; Enter for {d}"))
        .unwrap_or_default();
    lines.push(Line::new(
        &format!("{} ({hint}; {need}{default})", field.title),
        Style::Bold,
    ));
    if let Some(description) = &field.description {
        lines.push(Line::new(description, Style::Dim));
    }
    let options = match &field.kind {
        FieldKind::Choice { options, .. } if list_choices => Some(options),
        FieldKind::MultiChoice { options, .. } => Some(options),
        _ => None,
    };
    if let Some(options) = options {
        for (i, option) in options.iter().enumerate() {
            lines.push(Line::new(
                &format!("  {}. {}", i + 1, option.title),
                Style::Plain,
            ));
        }
    }
    lines
}

fn bounds_hint<T: std::fmt::Display>(what: &str, minimum: Option<T>, maximum: Option<T>) -> String {
    match (minimum, maximum) {
        (Some(min), Some(max)) => format!("{what} from {min} to {max}"),
        (Some(min), None) => format!("{what}, at least {min}"),
        (None, Some(max)) => format!("{what}, at most {max}"),
        (None, None) => what.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ask(params: serde_json::Value) -> ElicitationAsk {
        ElicitationAsk::new(Elicitation::of_params(&params))
    }

    /// (typed lines, the answer's result JSON after the last line).
    #[test]
    fn typed_lines_walk_the_form() {
        let form = json!({"mode": "form", "sessionId": "s", "message": "Set up",
            "requestedSchema": {"properties": {
                "name": {"type": "string", "minLength": 2},
                "size": {"type": "string", "enum": ["s", "m", "l"], "default": "m"},
                "n": {"type": "integer", "minimum": 1, "maximum": 3},
                "ok": {"type": "boolean"}
            }, "required": ["name", "n"]}});
        let cases: &[(&[&str], serde_json::Value)] = &[
            (&["d"], json!({"action": "decline"})),
            (&["c"], json!({"action": "cancel"})),
            (&["a", "Ada", "/decline"], json!({"action": "decline"})),
            (&["a", "/cancel"], json!({"action": "cancel"})),
            (
                &["a", "Ada", "", "2", ""],
                json!({"action": "accept", "content": {"name": "Ada", "size": "m", "n": 2}}),
            ),
            // Wrong answers are asked again; the right one moves on.
            (
                &["what", "a", "", "A", "Ada", "3", "9", "x", "1", "yes"],
                json!({"action": "accept", "content": {"name": "Ada", "size": "l", "n": 1, "ok": true}}),
            ),
        ];
        for (lines, expected) in cases {
            let mut ask = ask(form.clone());
            let mut last = Progress::Asking;
            for (i, line) in lines.iter().enumerate() {
                last = ask.answer(line);
                if i + 1 < lines.len() {
                    assert_eq!(last, Progress::Asking, "{lines:?} at {line:?}");
                }
            }
            let Progress::Answered(answer) = last else {
                panic!("{lines:?}: not answered")
            };
            assert_eq!(&answer.to_result(), expected, "{lines:?}");
        }
    }

    #[test]
    fn url_mode_shows_the_host_and_a_required_unknown_field_cannot_be_accepted() {
        let mut url = ask(
            json!({"mode": "url", "sessionId": "s", "message": "Sign in",
            "elicitationId": "e1", "url": "https://good.example@evil.example/x"}),
        );
        let Footer::Input { question, .. } = url.footer() else {
            panic!()
        };
        let text: Vec<_> = question.iter().map(|l| l.text.clone()).collect();
        assert!(
            text.contains(&"It leads to the host: evil.example".to_owned()),
            "{text:?}"
        );
        assert_eq!(url.url_id(), Some("e1"));
        assert_eq!(
            url.answer("a"),
            Progress::Answered(ElicitationAnswer::Accept(Default::default()))
        );
        let mut odd = ask(json!({"mode": "form", "message": "m", "requestedSchema": {
            "properties": {"x": {"type": "object"}}, "required": ["x"]}}));
        // The field is not asked; the form goes back to its first question, saying why.
        assert_eq!(odd.answer("a"), Progress::Asking);
        assert_eq!(
            odd.error.as_deref(),
            Some("x: a field of type \"object\" cannot be answered here")
        );
        assert_eq!(
            odd.answer("d"),
            Progress::Answered(ElicitationAnswer::Decline)
        );
    }
}
