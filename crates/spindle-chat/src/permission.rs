//! Permission requests: what is asked, and which answer `--yes` or a
//! non-interactive run gives. Never approves unless told to.

use serde_json::{Value, json};
pub use spindle_host::PermissionOption;
use spindle_host::{PermissionQuestion, is_standing_kind};
use spindle_wire::client_methods::permission_kinds::{
    ALLOW_ALWAYS, ALLOW_ONCE, REJECT_ALWAYS, REJECT_ONCE,
};

use super::render::{Line, Style};

/// A permission request as the chat shows it: read by `spindle_host`, as the
/// page reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionAsk {
    /// What the agent wants to do (see [`PermissionQuestion::title`]).
    pub subject: String,
    /// The options, in the agent's order.
    pub options: Vec<PermissionOption>,
    /// Which tool this is, for standing "always" answers, as shown: the
    /// agent's tool name, else the tool call's kind and the first word of its
    /// title (`execute: rm`); see [`spindle_host::PermissionRule`].
    pub tool: String,
    /// What identifies that tool (the rule's key).
    pub tool_key: String,
}

impl PermissionAsk {
    /// Reads the request params (malformed parts become empty).
    pub fn parse(params: &str) -> PermissionAsk {
        let question = PermissionQuestion::parse(params);
        // A request without a tool call still gets one shared rule, so an
        // "always" answer to it stands for the next such request.
        let (tool_key, tool) = question
            .rule
            .map(|r| (r.key, r.label))
            .unwrap_or_else(|| ("other:".to_owned(), "other".to_owned()));
        PermissionAsk {
            subject: question.title,
            options: question.options,
            tool,
            tool_key,
        }
    }

    /// `--yes`: the narrowest allowing option: an `allow_once`, else an
    /// `allow_always`. Agents often list "always" first (Claude Code, Gemini
    /// CLI, Qwen Code), and taking it would widen the agent's standing
    /// permissions beyond the one run the user approved.
    pub fn allow_for_yes(&self) -> Option<&PermissionOption> {
        self.first_of_kind(&[ALLOW_ONCE, ALLOW_ALWAYS])
    }

    /// Nobody can be asked: the narrowest rejecting option (`reject_once`,
    /// else `reject_always`), else `None` (answer `cancelled`).
    pub fn reject_unasked(&self) -> Option<&PermissionOption> {
        self.first_of_kind(&[REJECT_ONCE, REJECT_ALWAYS])
    }

    /// The first option of the first kind in `kinds` that is offered.
    fn first_of_kind(&self, kinds: &[&str]) -> Option<&PermissionOption> {
        kinds
            .iter()
            .find_map(|kind| self.options.iter().find(|o| o.kind == *kind))
    }

    /// The question as shown above the input prompt.
    pub fn question(&self) -> Vec<Line> {
        let mut lines = vec![Line::new(
            &format!("The agent asks permission: {}", self.subject),
            Style::Bold,
        )];
        for (i, option) in self.options.iter().enumerate() {
            lines.push(Line::new(
                &format!("  {}) {} [{}]", i + 1, option.name, option.kind),
                Style::Plain,
            ));
        }
        lines
    }

    /// The outcome for a typed answer: a number from the list, or `None`
    /// when the answer is not one.
    pub fn option_for_answer(&self, answer: &str) -> Option<&PermissionOption> {
        let n: usize = answer.trim().parse().ok()?;
        self.options.get(n.checked_sub(1)?)
    }
}

/// "Always" answers given in this session, per tool: later requests for the
/// same tool are answered from here without asking.
#[derive(Debug, Default)]
pub struct Standing {
    /// Tool key, tool as shown, and the option kind chosen (`allow_always` /
    /// `reject_always`).
    answers: Vec<(String, String, String)>,
}

impl Standing {
    /// Remembers the answer when `option_id` is an "always" option of `ask`;
    /// returns the line to show ("standing: allow always execute: rm").
    pub fn remember(&mut self, ask: &PermissionAsk, option_id: &str) -> Option<String> {
        let option = ask.options.iter().find(|o| o.id == option_id)?;
        if !is_standing_kind(&option.kind) {
            return None;
        }
        self.answers.retain(|(key, _, _)| *key != ask.tool_key);
        self.answers
            .push((ask.tool_key.clone(), ask.tool.clone(), option.kind.clone()));
        Some(standing_line(&option.kind, &ask.tool))
    }

    /// The standing answer for `ask`'s tool, as an option of this request
    /// (picked by [`spindle_host::standing_option`], as in the page), with the
    /// line to show.
    pub fn answer_for<'a>(&self, ask: &'a PermissionAsk) -> Option<(&'a PermissionOption, String)> {
        let (_, _, kind) = self
            .answers
            .iter()
            .find(|(key, _, _)| *key == ask.tool_key)?;
        let option = spindle_host::standing_option(kind, &ask.options)?;
        Some((option, standing_line(kind, &ask.tool)))
    }

    /// `/permissions [forget N]`: the standing answers, numbered, or the
    /// removal of one.
    pub fn command(&mut self, arg: &str) -> Vec<String> {
        if let Some(n) = arg.strip_prefix("forget") {
            let index = n
                .trim()
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1));
            return match index.filter(|&i| i < self.answers.len()) {
                Some(i) => {
                    let (_, tool, kind) = self.answers.remove(i);
                    vec![format!("forgot: {}", standing_line(&kind, &tool))]
                }
                None => vec![format!(
                    "type /permissions forget N with N from 1 to {}",
                    self.answers.len()
                )],
            };
        }
        if !arg.is_empty() {
            return vec![
                "/permissions lists the standing answers; /permissions forget N drops one"
                    .to_owned(),
            ];
        }
        if self.answers.is_empty() {
            return vec![
                "no standing answers (an \"always\" answer to a permission request makes one)"
                    .to_owned(),
            ];
        }
        let mut lines = vec!["standing answers (/permissions forget N drops one):".to_owned()];
        for (i, (_, tool, kind)) in self.answers.iter().enumerate() {
            lines.push(format!("  {}) {}", i + 1, standing_line(kind, tool)));
        }
        lines
    }
}

fn standing_line(kind: &str, tool: &str) -> String {
    let verb = if kind == ALLOW_ALWAYS {
        "allow"
    } else {
        "reject"
    };
    format!("standing: {verb} always {tool}")
}

/// `{"outcome":"selected","optionId":...}` for `option`.
pub fn selected(option: &PermissionOption) -> Value {
    json!({"outcome": "selected", "optionId": option.id})
}

/// `{"outcome":"cancelled"}`.
pub fn cancelled() -> Value {
    json!({"outcome": "cancelled"})
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: &str = r#"{"sessionId":"s","toolCall":{"toolCallId":"t1","title":"Edit main.rs"},
        "options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},
                   {"optionId":"reject","name":"Reject","kind":"reject_once"}]}"#;

    #[test]
    fn picks_allow_for_yes_and_reject_otherwise() {
        let ask = PermissionAsk::parse(PARAMS);
        assert_eq!(ask.subject, "Edit main.rs");
        assert_eq!(ask.allow_for_yes().map(|o| o.id.as_str()), Some("allow"));
        assert_eq!(ask.reject_unasked().map(|o| o.id.as_str()), Some("reject"));
    }

    #[test]
    fn yes_takes_allow_once_even_when_always_is_listed_first() {
        // Claude Code's adapter lists "Always Allow" before "Allow".
        let ask = PermissionAsk::parse(
            r#"{"sessionId":"s","toolCall":{"toolCallId":"t1"},"options":[
                {"optionId":"allow_always","name":"Always Allow","kind":"allow_always"},
                {"optionId":"reject_always","name":"Never","kind":"reject_always"},
                {"optionId":"allow","name":"Allow","kind":"allow_once"},
                {"optionId":"reject","name":"Reject","kind":"reject_once"}]}"#,
        );
        assert_eq!(ask.allow_for_yes().map(|o| o.id.as_str()), Some("allow"));
        assert_eq!(ask.reject_unasked().map(|o| o.id.as_str()), Some("reject"));
        let only_always = PermissionAsk::parse(
            r#"{"sessionId":"s","toolCall":{"toolCallId":"t1"},"options":[
                {"optionId":"a","name":"Always","kind":"allow_always"}]}"#,
        );
        assert_eq!(
            only_always.allow_for_yes().map(|o| o.id.as_str()),
            Some("a")
        );
        assert!(only_always.reject_unasked().is_none());
    }

    #[test]
    fn always_answers_stand_for_the_same_tool_only() {
        let params = |title: &str| {
            format!(
                r#"{{"sessionId":"s","toolCall":{{"toolCallId":"t","title":"{title}","kind":"execute"}},
                "options":[{{"optionId":"a1","name":"Allow","kind":"allow_once"}},
                           {{"optionId":"aa","name":"Always","kind":"allow_always"}}]}}"#
            )
        };
        let first = PermissionAsk::parse(&params("rm -rf x"));
        assert_eq!(first.tool, "execute: rm");
        let mut standing = Standing::default();
        assert_eq!(standing.remember(&first, "a1"), None);
        assert!(standing.answer_for(&first).is_none());
        assert_eq!(
            standing.remember(&first, "aa").as_deref(),
            Some("standing: allow always execute: rm")
        );
        let again = PermissionAsk::parse(&params("rm other"));
        let (option, line) = standing.answer_for(&again).expect("standing answer");
        assert_eq!(option.id, "aa");
        assert_eq!(line, "standing: allow always execute: rm");
        assert!(
            standing
                .answer_for(&PermissionAsk::parse(&params("ls")))
                .is_none()
        );
        // The same tool offered without an "always" option: the standing
        // answer picks its "once" option, as the page does.
        let once_only = PermissionAsk::parse(
            r#"{"sessionId":"s","toolCall":{"toolCallId":"t","title":"rm y","kind":"execute"},
            "options":[{"optionId":"r1","name":"Reject","kind":"reject_once"},
                       {"optionId":"a1","name":"Allow","kind":"allow_once"}]}"#,
        );
        let (option, _) = standing.answer_for(&once_only).expect("standing answer");
        assert_eq!(option.id, "a1");
        assert_eq!(
            standing.command(""),
            [
                "standing answers (/permissions forget N drops one):",
                "  1) standing: allow always execute: rm"
            ]
        );
        assert!(standing.command("forget 2")[0].starts_with("type /permissions forget N"));
        assert_eq!(
            standing.command("forget 1"),
            ["forgot: standing: allow always execute: rm"]
        );
        assert!(standing.answer_for(&again).is_none());
        assert!(standing.command("")[0].starts_with("no standing answers"));
    }

    #[test]
    fn typed_answers_are_one_based_and_checked() {
        let ask = PermissionAsk::parse(PARAMS);
        assert_eq!(
            ask.option_for_answer(" 2 ").map(selected),
            Some(json!({"outcome":"selected","optionId":"reject"}))
        );
        assert_eq!(ask.option_for_answer("0"), None);
        assert_eq!(ask.option_for_answer("3"), None);
        assert_eq!(ask.option_for_answer("yes"), None);
    }
}
