//! One table of permission requests run through the calls `spindle chat` makes and the calls the
//! web page makes: both must read the same title and tool rule, and a standing answer must pick
//! the same option.

use serde_json::Value;
use spindle_host::{PermissionOption, PermissionQuestion, is_standing_kind, standing_option};

/// What a front end makes of one request, given the standing answer remembered for its tool.
#[derive(Debug, PartialEq, Eq)]
struct Reading {
    title: String,
    rule_key: Option<String>,
    /// The option the standing answer picks (`None`: the user is asked).
    standing: Option<String>,
}

/// The chat: the params arrive as text; the question answers from its own options.
fn chat_path(params: &str, remembered: &str) -> Reading {
    let question = PermissionQuestion::parse(params);
    Reading {
        rule_key: question.rule.as_ref().map(|r| r.key.clone()),
        standing: question.standing_option(remembered).map(|o| o.id.clone()),
        title: question.title,
    }
}

/// The page: the params are parsed JSON; the shown op keeps the agent's `options` array as sent,
/// and the standing answer is looked up among the options read from it.
fn page_path(params: &str, remembered: &str) -> Reading {
    let params: Value = serde_json::from_str(params).unwrap_or(Value::Null);
    let question = PermissionQuestion::of_params(&params);
    let options = PermissionOption::list(params.get("options").unwrap_or(&Value::Null));
    Reading {
        rule_key: question.rule.as_ref().map(|r| r.key.clone()),
        standing: standing_option(remembered, &options).map(|o| o.id.clone()),
        title: question.title,
    }
}

/// One request, the standing answer remembered for its tool, and what both front ends must read.
struct Case {
    case: &'static str,
    params: &'static str,
    /// The kind of the standing answer.
    remembered: &'static str,
    title: &'static str,
    rule_key: Option<&'static str>,
    /// The option the standing answer picks.
    standing: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case {
        case: "v1 tool call title; allow_always offered",
        params: r#"{"sessionId":"s","toolCall":{"toolCallId":"t1","title":"rm -rf build","kind":"execute"},
           "options":[{"optionId":"once","kind":"allow_once"},{"optionId":"always","kind":"allow_always"}]}"#,
        remembered: "allow_always",
        title: "rm -rf build",
        rule_key: Some("execute:rm"),
        standing: Some("always"),
    },
    Case {
        case: "standing allow, only allow_once offered: the once option",
        params: r#"{"sessionId":"s","toolCall":{"toolCallId":"t1","title":"rm x","kind":"execute"},
           "options":[{"optionId":"no","kind":"reject_once"},{"optionId":"yes","kind":"allow_once"}]}"#,
        remembered: "allow_always",
        title: "rm x",
        rule_key: Some("execute:rm"),
        standing: Some("yes"),
    },
    Case {
        case: "standing reject, only allow options: asked",
        params: r#"{"sessionId":"s","toolCall":{"toolCallId":"t1","title":"rm x","kind":"execute"},
           "options":[{"optionId":"yes","kind":"allow_once"},{"optionId":"always","kind":"allow_always"}]}"#,
        remembered: "reject_always",
        title: "rm x",
        rule_key: Some("execute:rm"),
        standing: None,
    },
    Case {
        case: "standing reject_always offered after reject_once",
        params: r#"{"sessionId":"s","toolCall":{"toolCallId":"t1","title":"curl x","kind":"fetch"},
           "options":[{"optionId":"r1","kind":"reject_once"},{"optionId":"ra","kind":"reject_always"}]}"#,
        remembered: "reject_always",
        title: "curl x",
        rule_key: Some("fetch:curl"),
        standing: Some("ra"),
    },
    Case {
        case: "v2: the request's own title wins over the tool call's",
        params: r#"{"sessionId":"s","title":"Allow editing a.rs?","subject":{"type":"tool_call",
           "toolCall":{"toolCallId":"t2","title":"Edit a.rs","kind":"edit"}},
           "options":[{"optionId":"a","kind":"allow_always"}]}"#,
        remembered: "allow_always",
        title: "Allow editing a.rs?",
        rule_key: Some("edit:Edit"),
        standing: Some("a"),
    },
    Case {
        case: "v2 without titles: the tool call's id",
        params: r#"{"sessionId":"s","subject":{"type":"tool_call","toolCall":{"toolCallId":"t3"}},
           "options":[{"optionId":"a","kind":"allow_once"}]}"#,
        remembered: "allow_always",
        title: "t3",
        rule_key: Some("other:"),
        standing: Some("a"),
    },
    Case {
        case: "the agent's tool name makes the rule",
        params: r#"{"sessionId":"s","toolCall":{"toolCallId":"t","title":"ls -la",
           "_meta":{"claudeCode":{"toolName":"Bash"}}},
           "options":[{"optionId":"a","name":"Always","kind":"allow_always"}]}"#,
        remembered: "allow_always",
        title: "ls -la",
        rule_key: Some("tool:Bash"),
        standing: Some("a"),
    },
    Case {
        case: "no tool call, no title: unnamed, no rule",
        params: r#"{"sessionId":"s","options":[{"optionId":"a","kind":"allow_once"}]}"#,
        remembered: "allow_always",
        title: spindle_host::UNNAMED_ACTION,
        rule_key: None,
        standing: Some("a"),
    },
    Case {
        case: "a remembered kind that is not an always kind picks nothing",
        params: r#"{"sessionId":"s","toolCall":{"toolCallId":"t","title":"x"},
           "options":[{"optionId":"a","kind":"allow_once"}]}"#,
        remembered: "allow_once",
        title: "x",
        rule_key: Some("other:x"),
        standing: None,
    },
    Case {
        case: "options without an id are left out",
        params: r#"{"sessionId":"s","toolCall":{"toolCallId":"t","title":"x"},
           "options":[{"name":"broken","kind":"allow_always"},{"optionId":"ok","kind":"allow_once"}]}"#,
        remembered: "allow_always",
        title: "x",
        rule_key: Some("other:x"),
        standing: Some("ok"),
    },
    Case {
        case: "malformed params",
        params: "{not json",
        remembered: "allow_always",
        title: spindle_host::UNNAMED_ACTION,
        rule_key: None,
        standing: None,
    },
];

#[test]
fn chat_and_page_read_every_request_alike() {
    for Case {
        case,
        params,
        remembered,
        title,
        rule_key,
        standing,
    } in CASES
    {
        let expected = Reading {
            title: title.to_string(),
            rule_key: rule_key.map(str::to_owned),
            standing: standing.map(str::to_owned),
        };
        let chat = chat_path(params, remembered);
        let page = page_path(params, remembered);
        assert_eq!(chat, page, "{case}: chat and page disagree");
        assert_eq!(chat, expected, "{case}");
    }
}

#[test]
fn only_always_kinds_make_standing_answers() {
    for (kind, stands) in [
        ("allow_always", true),
        ("reject_always", true),
        ("allow_once", false),
        ("reject_once", false),
        ("", false),
    ] {
        assert_eq!(is_standing_kind(kind), stands, "{kind:?}");
    }
}
