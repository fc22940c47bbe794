//! An [`Elicitation`] as JSON for a page that renders it (the web page's form card), and a page's
//! JSON answer read back into typed values: the page shows and checks what this reading says, and
//! the server checks the answer again with the same [`FormModel`] before it is sent.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::elicitation::{
    Elicitation, ElicitationKind, FieldError, FieldKind, FieldValue, FormField, FormModel,
    TextFormat,
};

fn field_view(field: &FormField) -> Value {
    let mut view = json!({
        "name": field.name,
        "title": field.title,
        "description": field.description,
        "required": field.required,
    });
    let options = |options: &[crate::elicitation::ChoiceOption]| -> Value {
        options
            .iter()
            .map(|o| json!({"value": o.value, "title": o.title}))
            .collect()
    };
    let extra = match &field.kind {
        FieldKind::Text {
            format,
            min_length,
            max_length,
            default,
        } => json!({
            "kind": "text",
            "format": format.map(|f| match f {
                TextFormat::Email => "email",
                TextFormat::Uri => "uri",
                TextFormat::Date => "date",
                TextFormat::DateTime => "date-time",
            }),
            "minLength": min_length, "maxLength": max_length, "default": default,
        }),
        FieldKind::Number {
            minimum,
            maximum,
            default,
        } => json!({"kind": "number", "minimum": minimum, "maximum": maximum, "default": default}),
        FieldKind::Integer {
            minimum,
            maximum,
            default,
        } => json!({"kind": "integer", "minimum": minimum, "maximum": maximum, "default": default}),
        FieldKind::Boolean { default } => json!({"kind": "boolean", "default": default}),
        FieldKind::Choice {
            options: o,
            default,
        } => {
            json!({"kind": "choice", "options": options(o), "default": default})
        }
        FieldKind::MultiChoice {
            options: o,
            min_items,
            max_items,
            default,
        } => json!({"kind": "multi", "options": options(o), "minItems": min_items,
                    "maxItems": max_items, "default": default}),
        FieldKind::Unsupported { type_name } => json!({"kind": "unsupported", "type": type_name}),
    };
    if let (Some(view), Value::Object(extra)) = (view.as_object_mut(), extra) {
        view.extend(extra);
    }
    view
}

impl Elicitation {
    /// The page's view: `{message, mode, diagnostics, toolCallId?, form?: {title, description,
    /// fields}, url?: {url, host}}`; each field `{name, title, description, required, kind, ...}` with `kind`
    /// one of `text`, `number`, `integer`, `boolean`, `choice`, `multi`, `unsupported`.
    pub fn view_json(&self) -> Value {
        let mut view = json!({
            "message": self.message,
            "diagnostics": self.diagnostics,
        });
        if let Some(tool_call_id) = &self.tool_call_id {
            view["toolCallId"] = json!(tool_call_id);
        }
        match &self.kind {
            ElicitationKind::Form(form) => {
                view["mode"] = json!("form");
                view["form"] = json!({
                    "title": form.title,
                    "description": form.description,
                    "fields": form.fields.iter().map(field_view).collect::<Vec<_>>(),
                });
            }
            ElicitationKind::Url(url) => {
                view["mode"] = json!("url");
                view["url"] = json!({"url": url.url, "host": url.host});
            }
            ElicitationKind::Unsupported { mode } => {
                view["mode"] = json!("unsupported");
                view["unsupportedMode"] = json!(mode);
            }
        }
        view
    }
}

impl FormModel {
    /// Reads an answer's `content` (JSON values by field name) into typed values, then checks
    /// them ([`FormModel::validate`]); the errors name each field that is wrong.
    pub fn values_from_json(
        &self,
        content: &Map<String, Value>,
    ) -> Result<BTreeMap<String, FieldValue>, Vec<FieldError>> {
        let mut values = BTreeMap::new();
        let mut errors = Vec::new();
        for (name, value) in content {
            let kind = self
                .fields
                .iter()
                .find(|f| &f.name == name)
                .map(|f| &f.kind);
            let typed = match (kind, value) {
                (None, _) => {
                    errors.push(FieldError {
                        name: name.clone(),
                        message: "not a field of this form".into(),
                    });
                    continue;
                }
                (Some(FieldKind::Text { .. } | FieldKind::Choice { .. }), Value::String(s)) => {
                    Some(FieldValue::Text(s.clone()))
                }
                (Some(FieldKind::Integer { .. }), v) => v.as_i64().map(FieldValue::Integer),
                (Some(FieldKind::Number { .. }), v) => v.as_f64().map(FieldValue::Number),
                (Some(FieldKind::Boolean { .. }), Value::Bool(b)) => Some(FieldValue::Boolean(*b)),
                (Some(FieldKind::MultiChoice { .. }), Value::Array(items)) => items
                    .iter()
                    .map(|i| i.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
                    .map(FieldValue::Choices),
                _ => None,
            };
            match typed {
                Some(typed) => {
                    values.insert(name.clone(), typed);
                }
                None => errors.push(FieldError {
                    name: name.clone(),
                    message: "wrong kind of value".into(),
                }),
            }
        }
        errors.extend(self.validate(&values));
        if errors.is_empty() {
            Ok(values)
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn model() -> Elicitation {
        Elicitation::of_params(
            &json!({"mode": "form", "sessionId": "s", "message": "<b>hi</b>",
            "requestedSchema": {"properties": {
                "name": {"type": "string", "maxLength": 5, "format": "email"},
                "n": {"type": "integer", "minimum": 1, "default": 2},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}}
            }, "required": ["n"]}}),
        )
    }

    #[test]
    fn the_view_carries_every_constraint() {
        let view = model().view_json();
        assert_eq!(view["message"], "<b>hi</b>");
        assert_eq!(view["mode"], "form");
        assert_eq!(
            view["form"]["fields"][0],
            json!({"name": "name", "title": "name", "description": null, "required": false,
                   "kind": "text", "format": "email", "minLength": null, "maxLength": 5, "default": null})
        );
        assert_eq!(view["form"]["fields"][1]["minimum"], 1);
        assert_eq!(
            view["form"]["fields"][2]["options"][1],
            json!({"value": "b", "title": "b"})
        );
        let url =
            Elicitation::of_params(&json!({"mode": "url", "message": "m", "elicitationId": "e",
            "url": "https://x@y.example/"}));
        assert_eq!(
            url.view_json()["url"],
            json!({"url": "https://x@y.example/", "host": "y.example"})
        );
    }

    /// The number of values read, or the first error as (field, message).
    type Expected = Result<usize, (&'static str, &'static str)>;

    /// (content, expected: Ok(number of values) or Err(first error)).
    #[test]
    fn a_page_answer_is_typed_and_checked() {
        let ElicitationKind::Form(form) = model().kind else {
            panic!()
        };
        let cases: &[(Value, Expected)] = &[
            (json!({"n": 3}), Ok(1)),
            (json!({"n": 3, "tags": ["a"], "name": "a@b.c"}), Ok(3)),
            (json!({}), Err(("n", "required"))),
            (json!({"n": "3"}), Err(("n", "wrong kind of value"))),
            (json!({"n": 1.5}), Err(("n", "wrong kind of value"))),
            (json!({"n": 0}), Err(("n", "at least 1"))),
            (
                json!({"n": 1, "tags": ["z"]}),
                Err(("tags", "\"z\" is not one of the choices")),
            ),
            (
                json!({"n": 1, "ghost": 1}),
                Err(("ghost", "not a field of this form")),
            ),
        ];
        for (content, expected) in cases {
            let got = form
                .values_from_json(content.as_object().unwrap())
                .map(|v| v.len())
                .map_err(|e| (e[0].name.clone(), e[0].message.clone()));
            let expected = expected.map_err(|(n, m)| (n.to_owned(), m.to_owned()));
            assert_eq!(got, expected, "{content}");
        }
    }
}
