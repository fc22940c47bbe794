//! Data-driven tests of the elicitation reading: one table per concern.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;

fn form(params: Value) -> (FormModel, Vec<String>) {
    let e = Elicitation::of_params(&params);
    match e.kind {
        ElicitationKind::Form(model) => (model, e.diagnostics),
        other => panic!("not a form: {other:?}"),
    }
}

fn field(property: Value) -> FormField {
    let (model, _) = form(json!({
        "mode": "form", "message": "m", "sessionId": "s",
        "requestedSchema": {"type": "object", "properties": {"f": property}, "required": ["f"]}
    }));
    model.fields.into_iter().next().expect("one field")
}

/// (property schema, typed input, expected: Ok(json of the value) or Err(message)).
#[test]
fn typed_answers_are_read_and_checked() {
    let cases: &[(Value, &str, Result<Value, &str>)] = &[
        (json!({"type": "string"}), "hello", Ok(json!("hello"))),
        (
            json!({"type": "string", "minLength": 3}),
            "ab",
            Err("at least 3 characters"),
        ),
        (
            json!({"type": "string", "maxLength": 2}),
            "abc",
            Err("at most 2 characters"),
        ),
        (
            json!({"type": "string", "maxLength": 2}),
            "éé",
            Ok(json!("éé")),
        ),
        (
            json!({"type": "string", "format": "email"}),
            "a@b.example",
            Ok(json!("a@b.example")),
        ),
        (
            json!({"type": "string", "format": "email"}),
            "a@b",
            Err("not an email address"),
        ),
        (
            json!({"type": "string", "format": "uri"}),
            "https://x.example/p",
            Ok(json!("https://x.example/p")),
        ),
        (
            json!({"type": "string", "format": "uri"}),
            "no scheme",
            Err("not a URI (scheme:rest)"),
        ),
        (
            json!({"type": "string", "format": "date"}),
            "2024-02-29",
            Ok(json!("2024-02-29")),
        ),
        (
            json!({"type": "string", "format": "date"}),
            "2023-02-29",
            Err("not a date (YYYY-MM-DD)"),
        ),
        (
            json!({"type": "string", "format": "date-time"}),
            "2026-11-28T18:30:00Z",
            Ok(json!("2026-11-28T18:30:00Z")),
        ),
        (
            json!({"type": "string", "format": "date-time"}),
            "2026-11-28T18:30:00.5+01:00",
            Ok(json!("2026-11-28T18:30:00.5+01:00")),
        ),
        (
            json!({"type": "string", "format": "date-time"}),
            "2026-11-28 18:30",
            Err("not a date and time (YYYY-MM-DDTHH:MM:SS)"),
        ),
        (
            json!({"type": "number", "minimum": 0.5, "maximum": 2}),
            "1.25",
            Ok(json!(1.25)),
        ),
        (
            json!({"type": "number", "minimum": 0.5}),
            "0.1",
            Err("at least 0.5"),
        ),
        (
            json!({"type": "number"}),
            "NaN",
            Err("\"NaN\" is not a number"),
        ),
        (
            json!({"type": "number"}),
            "inf",
            Err("\"inf\" is not a number"),
        ),
        (
            json!({"type": "integer", "minimum": 1, "maximum": 10}),
            "10",
            Ok(json!(10)),
        ),
        (
            json!({"type": "integer", "minimum": 1, "maximum": 10}),
            "11",
            Err("at most 10"),
        ),
        (
            json!({"type": "integer"}),
            "1.5",
            Err("\"1.5\" is not a whole number"),
        ),
        (json!({"type": "boolean"}), "Yes", Ok(json!(true))),
        (json!({"type": "boolean"}), "n", Ok(json!(false))),
        (
            json!({"type": "boolean"}),
            "maybe",
            Err("\"maybe\" is not yes or no"),
        ),
        (
            json!({"type": "string", "enum": ["red", "green"]}),
            "green",
            Ok(json!("green")),
        ),
        (
            json!({"type": "string", "enum": ["red", "green"]}),
            "2",
            Ok(json!("green")),
        ),
        (
            json!({"type": "string", "enum": ["red", "green"]}),
            "blue",
            Err("\"blue\" is not one of the choices"),
        ),
        (
            json!({"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]}),
            "large",
            Ok(json!("l")),
        ),
        (
            json!({"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}}),
            "a, c",
            Ok(json!(["a", "c"])),
        ),
        (
            json!({"type": "array", "items": {"anyOf": [{"const": "x", "title": "Ex"}]}}),
            "Ex",
            Ok(json!(["x"])),
        ),
        (
            json!({"type": "array", "minItems": 2, "items": {"type": "string", "enum": ["a", "b"]}}),
            "a",
            Err("choose at least 2"),
        ),
        (
            json!({"type": "array", "maxItems": 1, "items": {"type": "string", "enum": ["a", "b"]}}),
            "a,b",
            Err("choose at most 1"),
        ),
        (
            json!({"type": "object"}),
            "x",
            Err("a field of type \"object\" cannot be answered here"),
        ),
    ];
    for (property, input, expected) in cases {
        let got = field(property.clone())
            .parse_answer(input)
            .map(|v| v.map(|v| v.to_json()).unwrap_or(Value::Null));
        let expected = expected.clone().map_err(str::to_owned);
        assert_eq!(got, expected, "{property} with {input:?}");
    }
}

#[test]
fn an_empty_answer_is_no_answer_and_a_required_field_needs_one() {
    let (model, _) = form(json!({"mode": "form", "message": "m", "requestedSchema": {
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]}}));
    assert_eq!(model.fields[0].parse_answer("  "), Ok(None));
    let errors = model.validate(&BTreeMap::new());
    assert_eq!(
        errors,
        vec![FieldError {
            name: "name".into(),
            message: "required".into()
        }]
    );
    let mut values = BTreeMap::new();
    values.insert("name".to_owned(), FieldValue::Text("Ada".into()));
    values.insert("ghost".to_owned(), FieldValue::Boolean(true));
    assert_eq!(
        model.validate(&values),
        vec![FieldError {
            name: "ghost".into(),
            message: "not a field of this form".into()
        }]
    );
    values.remove("ghost");
    values.insert("age".to_owned(), FieldValue::Text("x".into()));
    assert_eq!(model.validate(&values)[0].message, "wrong kind of value");
}

#[test]
fn defaults_titles_and_the_accept_answer() {
    let (model, diagnostics) = form(json!({"mode": "form", "message": "Pick", "sessionId": "s1",
        "requestedSchema": {"type": "object", "title": "Setup", "description": "Once",
        "properties": {
            "name": {"type": "string", "title": "Your name", "description": "as shown", "default": "Ada"},
            "count": {"type": "integer", "default": 3},
            "ratio": {"type": "number", "default": 0.5},
            "ok": {"type": "boolean", "default": true},
            "color": {"type": "string", "enum": ["red"], "default": "blue"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "default": ["b", "z"]}
        }, "required": ["name"]}}));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(model.title.as_deref(), Some("Setup"));
    assert_eq!(model.fields[0].title, "Your name");
    assert_eq!(model.fields[0].description.as_deref(), Some("as shown"));
    assert!(model.fields[0].required && !model.fields[1].required);
    assert_eq!(model.fields[1].title, "count");
    let defaults = model.defaults();
    // A default that is not among the options is no default.
    assert!(!defaults.contains_key("color"));
    let content = model.accept_content(&defaults).expect("defaults are valid");
    assert_eq!(
        ElicitationAnswer::Accept(content).to_result(),
        json!({"action": "accept", "content": {"name": "Ada", "count": 3, "ratio": 0.5, "ok": true, "tags": ["b"]}})
    );
    assert_eq!(
        ElicitationAnswer::Decline.to_result(),
        json!({"action": "decline"})
    );
    assert_eq!(
        ElicitationAnswer::Cancel.to_result(),
        json!({"action": "cancel"})
    );
    assert_eq!(
        ElicitationAnswer::Accept(Map::new()).to_result(),
        json!({"action": "accept"})
    );
}

#[test]
fn hostile_text_is_data_and_a_huge_schema_is_bounded() {
    let mut properties = Map::new();
    for i in 0..500 {
        properties.insert(
            format!("f{i:03}"),
            json!({"type": "string", "title": "<b>x</b>\u{1b}[31m"}),
        );
    }
    let e = Elicitation::of_params(&json!({"mode": "form", "sessionId": "s",
        "message": format!("<script>alert(1)</script>\u{1b}]52;c;AAAA\u{7}{}", "y".repeat(5000)),
        "requestedSchema": {"properties": properties, "required": ["f499"]}}));
    assert!(
        e.message.starts_with("<script>alert(1)</script>]52;c;AAAA"),
        "{}",
        e.message
    );
    assert!(!e.message.contains('\u{1b}'));
    assert_eq!(e.message.chars().count(), MAX_TEXT_CHARS + 1);
    let ElicitationKind::Form(model) = &e.kind else {
        panic!("form")
    };
    assert_eq!(model.fields.len(), MAX_FIELDS);
    assert_eq!(model.fields[0].title, "<b>x</b>[31m");
    let joined = e.diagnostics.join("\n");
    assert!(
        joined.contains("the message cut at 2000 characters"),
        "{joined}"
    );
    assert!(
        joined.contains("the form has 500 fields; only the first 32 are shown"),
        "{joined}"
    );
    assert!(
        joined.contains("required field \"f499\" is beyond the fields shown"),
        "{joined}"
    );
    let huge = field(json!({"type": "string", "maxLength": 10_000_000}));
    assert_eq!(
        huge.parse_answer(&"z".repeat(MAX_ANSWER_CHARS + 1)),
        Err(format!("at most {MAX_ANSWER_CHARS} characters"))
    );
}

#[test]
fn url_mode_reads_the_host_plainly_and_unknown_modes_are_not_rendered() {
    let cases: &[(&str, Option<&str>)] = &[
        (
            "https://Auth.Example.com/login?x=1",
            Some("auth.example.com"),
        ),
        (
            "https://bank.example@evil.example:8443/",
            Some("evil.example"),
        ),
        ("http://[::1]:8080/p", Some("[::1]")),
        ("javascript:alert(1)", None),
        ("file:///etc/passwd", None),
        ("https:///nohost", None),
        ("not a url", None),
    ];
    for (url, host) in cases {
        assert_eq!(url_host(url).as_deref(), *host, "{url}");
    }
    let e = Elicitation::of_params(
        &json!({"mode": "url", "sessionId": "s", "message": "Sign in",
        "elicitationId": "e1", "url": "https://a.example/\u{1b}[2J"}),
    );
    assert_eq!(
        e.kind,
        ElicitationKind::Url(UrlElicitation {
            id: "e1".into(),
            url: "https://a.example/[2J".into(),
            host: Some("a.example".into())
        })
    );
    let e = Elicitation::of_params(&json!({"mode": "_custom", "message": "?"}));
    assert_eq!(
        e.kind,
        ElicitationKind::Unsupported {
            mode: "_custom".into()
        }
    );
    let e = Elicitation::of_params(&json!(null));
    assert_eq!(
        e.kind,
        ElicitationKind::Unsupported {
            mode: String::new()
        }
    );
}
