//! An agent's `elicitation/create` as something to show the user, without I/O: the one reading
//! `spindle chat` and the web page share. Form mode becomes a [`FormModel`] (one [`FormField`]
//! per property of `requestedSchema`), typed answers are checked against it, and
//! [`FormModel::accept_content`] builds the `content` of an `accept` answer. URL mode becomes an
//! [`UrlElicitation`] whose host is read out plainly (the part a user must trust), never opened.
//!
//! Parsing never fails: what cannot be used becomes a diagnostic beside the result. Everything the
//! agent wrote (message, titles, descriptions, option labels) is data: control characters are
//! dropped and each text is cut at [`MAX_TEXT_CHARS`]; at most [`MAX_FIELDS`] fields and
//! [`MAX_OPTIONS`] options per field are kept, so a huge schema stays a bounded form.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use spindle_wire::client_methods::capabilities::{ELICITATION_FORM, ELICITATION_URL};
use spindle_wire::client_methods::elicitation as f;

pub use crate::elicitation_format::TextFormat;
use crate::elicitation_format::format_matches;

/// Most fields a form keeps; later properties are dropped with a diagnostic.
pub const MAX_FIELDS: usize = 32;
/// Most options a choice field keeps.
pub const MAX_OPTIONS: usize = 64;
/// Most characters kept of a message, title, description or option label.
pub const MAX_TEXT_CHARS: usize = 2_000;
/// Most characters a text answer may have, whatever `maxLength` the agent asked for.
pub const MAX_ANSWER_CHARS: usize = 10_000;

/// One `elicitation/create`, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    /// What the agent asks for (`message`), as plain text.
    pub message: String,
    /// The session it belongs to (`sessionId`), when session-scoped.
    pub session_id: Option<String>,
    /// The tool call it belongs to (`toolCallId`), when there is one.
    pub tool_call_id: Option<String>,
    /// Form, URL, or a mode this client does not know.
    pub kind: ElicitationKind,
    /// What was dropped or cut while reading, for the user and the logs.
    pub diagnostics: Vec<String>,
}

/// The mode of an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationKind {
    /// `mode: "form"`.
    Form(FormModel),
    /// `mode: "url"`.
    Url(UrlElicitation),
    /// Any other mode (custom or future): never rendered as a known one; answered `decline`.
    Unsupported {
        /// The mode as sent (empty when missing).
        mode: String,
    },
}

/// A URL elicitation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlElicitation {
    /// `elicitationId`, which `elicitation/complete` names.
    pub id: String,
    /// The URL as sent (control characters dropped).
    pub url: String,
    /// The host the URL leads to, lower-cased, without user info or port; `None` when the URL
    /// is not an `http`/`https` URL with a host (then it must not be offered as a link).
    pub host: Option<String>,
}

/// The form of `requestedSchema`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FormModel {
    /// The schema's `title`.
    pub title: Option<String>,
    /// The schema's `description`.
    pub description: Option<String>,
    /// The fields, in the agent's order.
    pub fields: Vec<FormField>,
}

/// One property of the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// The property name (the key of its answer).
    pub name: String,
    /// The label to show: the property's `title`, else its name.
    pub title: String,
    /// The property's `description`.
    pub description: Option<String>,
    /// Whether `required` names it.
    pub required: bool,
    /// Its type and constraints.
    pub kind: FieldKind,
}

/// One choice of a choice field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChoiceOption {
    /// The value sent back.
    pub value: String,
    /// The label (the value when untitled).
    pub title: String,
}

/// A field's type and constraints.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// `string` without choices.
    Text {
        /// `format`.
        format: Option<TextFormat>,
        /// `minLength` (characters).
        min_length: Option<u64>,
        /// `maxLength` (characters), never above [`MAX_ANSWER_CHARS`].
        max_length: Option<u64>,
        /// `default`.
        default: Option<String>,
    },
    /// `number`.
    Number {
        /// `minimum`.
        minimum: Option<f64>,
        /// `maximum`.
        maximum: Option<f64>,
        /// `default`.
        default: Option<f64>,
    },
    /// `integer`.
    Integer {
        /// `minimum`.
        minimum: Option<i64>,
        /// `maximum`.
        maximum: Option<i64>,
        /// `default`.
        default: Option<i64>,
    },
    /// `boolean`.
    Boolean {
        /// `default`.
        default: Option<bool>,
    },
    /// `string` with `enum` or `oneOf`: one of the options.
    Choice {
        /// The options.
        options: Vec<ChoiceOption>,
        /// `default` (when it is one of the options).
        default: Option<String>,
    },
    /// `array` of `enum`/`anyOf` strings: any of the options.
    MultiChoice {
        /// The options.
        options: Vec<ChoiceOption>,
        /// `minItems`.
        min_items: Option<u64>,
        /// `maxItems`.
        max_items: Option<u64>,
        /// `default` (only values among the options).
        default: Vec<String>,
    },
    /// A type this client does not render; a form with one cannot be accepted when it is
    /// required, and it is left out of the answer otherwise.
    Unsupported {
        /// The `type` as sent.
        type_name: String,
    },
}

/// A typed answer to one field.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    /// A string (text or a single choice).
    Text(String),
    /// A number.
    Number(f64),
    /// An integer.
    Integer(i64),
    /// A boolean.
    Boolean(bool),
    /// The values of a multiple choice.
    Choices(Vec<String>),
}

impl FieldValue {
    fn to_json(&self) -> Value {
        match self {
            FieldValue::Text(t) => json!(t),
            FieldValue::Number(n) => json!(n),
            FieldValue::Integer(i) => json!(i),
            FieldValue::Boolean(b) => json!(b),
            FieldValue::Choices(c) => json!(c),
        }
    }
}

/// A field whose answer is missing or wrong, and why (a sentence for the user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The property name.
    pub name: String,
    /// What is wrong.
    pub message: String,
}

/// How the user answered.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// Accepted, with the content (empty for a URL elicitation).
    Accept(Map<String, Value>),
    /// Declined.
    Decline,
    /// Dismissed without a choice.
    Cancel,
}

impl ElicitationAnswer {
    /// The `elicitation/create` result.
    pub fn to_result(&self) -> Value {
        match self {
            ElicitationAnswer::Accept(content) if content.is_empty() => {
                json!({ f::ACTION: f::ACCEPT })
            }
            ElicitationAnswer::Accept(content) => {
                json!({ f::ACTION: f::ACCEPT, f::CONTENT: content })
            }
            ElicitationAnswer::Decline => json!({ f::ACTION: f::DECLINE }),
            ElicitationAnswer::Cancel => json!({ f::ACTION: f::CANCEL }),
        }
    }
}

/// Keeps what is safe to show of an agent's text: control characters (escape sequences
/// included) dropped except newlines and tabs, cut at `max` characters.
fn plain_text(raw: &str, max: usize, what: &str, diagnostics: &mut Vec<String>) -> String {
    let mut out = String::new();
    let mut count = 0;
    for c in raw.chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            continue;
        }
        if count == max {
            diagnostics.push(format!("{what} cut at {max} characters"));
            out.push('…');
            break;
        }
        out.push(c);
        count += 1;
    }
    out
}

impl Elicitation {
    /// Reads the params of `elicitation/create`.
    pub fn of_params(params: &Value) -> Elicitation {
        let mut diagnostics = Vec::new();
        let text = |key: &str| params.get(key).and_then(Value::as_str);
        let message = plain_text(
            text(f::MESSAGE).unwrap_or(""),
            MAX_TEXT_CHARS,
            "the message",
            &mut diagnostics,
        );
        let mode = text(f::MODE).unwrap_or("");
        let kind = match mode {
            ELICITATION_FORM => ElicitationKind::Form(FormModel::of_schema(
                params.get(f::REQUESTED_SCHEMA).unwrap_or(&Value::Null),
                &mut diagnostics,
            )),
            ELICITATION_URL => {
                let url = plain_text(
                    text(f::URL).unwrap_or(""),
                    MAX_TEXT_CHARS,
                    "the URL",
                    &mut diagnostics,
                );
                let host = url_host(&url);
                if host.is_none() {
                    diagnostics.push("the URL is not an http or https URL with a host".into());
                }
                ElicitationKind::Url(UrlElicitation {
                    id: text(f::ELICITATION_ID).unwrap_or("").to_owned(),
                    url,
                    host,
                })
            }
            other => {
                diagnostics.push(format!("unknown elicitation mode {other:?}"));
                ElicitationKind::Unsupported {
                    mode: other.to_owned(),
                }
            }
        };
        Elicitation {
            message,
            session_id: text("sessionId").map(str::to_owned),
            tool_call_id: text(f::TOOL_CALL_ID).map(str::to_owned),
            kind,
            diagnostics,
        }
    }
}

/// The host of an `http`/`https` URL, lower-cased, without user info and port: what the user
/// must read before visiting it (`https://bank.example@evil.example/` leads to `evil.example`).
pub fn url_host(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        format!("[{}]", bracketed.split(']').next()?)
    } else {
        host_port.split(':').next()?.to_owned()
    };
    let host = host.to_lowercase();
    let valid = !host.is_empty()
        && !host
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '\\');
    valid.then_some(host)
}

impl FormModel {
    /// Reads `requestedSchema`; what cannot be used is reported in `diagnostics`.
    pub fn of_schema(schema: &Value, diagnostics: &mut Vec<String>) -> FormModel {
        let text = |key: &str, what: &str, d: &mut Vec<String>| {
            schema
                .get(key)
                .and_then(Value::as_str)
                .map(|t| plain_text(t, MAX_TEXT_CHARS, what, d))
        };
        let title = text("title", "the form title", diagnostics);
        let description = text("description", "the form description", diagnostics);
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut fields = Vec::new();
        let properties = schema.get("properties").and_then(Value::as_object);
        if schema.get("properties").is_some() && properties.is_none() {
            diagnostics.push("requestedSchema.properties is not an object".into());
        }
        for (index, (name, property)) in properties.into_iter().flatten().enumerate() {
            if index == MAX_FIELDS {
                diagnostics.push(format!(
                    "the form has {} fields; only the first {MAX_FIELDS} are shown",
                    properties.map_or(0, Map::len)
                ));
                break;
            }
            let name_shown = plain_text(name, 200, "a field name", diagnostics);
            fields.push(FormField::of_property(
                name,
                &name_shown,
                property,
                required.contains(&name.as_str()),
                diagnostics,
            ));
        }
        for name in &required {
            if !fields.iter().any(|field| field.name == *name)
                && properties.is_some_and(|p| p.contains_key(*name))
            {
                diagnostics.push(format!("required field {name:?} is beyond the fields shown; the form cannot be accepted"));
            }
        }
        FormModel {
            title,
            description,
            fields,
        }
    }

    /// Checks every answer: required fields present, each value of its field's type and within
    /// its bounds, no answer for a field the form does not have.
    pub fn validate(&self, values: &BTreeMap<String, FieldValue>) -> Vec<FieldError> {
        let mut errors = Vec::new();
        for field in &self.fields {
            let result = match values.get(&field.name) {
                Some(value) => field.check(value),
                None if field.required => match &field.kind {
                    FieldKind::Unsupported { type_name } => Err(format!(
                        "a field of type {type_name:?} cannot be answered here"
                    )),
                    _ => Err("required".to_owned()),
                },
                None => Ok(()),
            };
            if let Err(message) = result {
                errors.push(FieldError {
                    name: field.name.clone(),
                    message,
                });
            }
        }
        for name in values.keys() {
            if !self.fields.iter().any(|field| &field.name == name) {
                errors.push(FieldError {
                    name: name.clone(),
                    message: "not a field of this form".into(),
                });
            }
        }
        errors
    }

    /// The `content` of an `accept` answer, or what is wrong with the values.
    pub fn accept_content(
        &self,
        values: &BTreeMap<String, FieldValue>,
    ) -> Result<Map<String, Value>, Vec<FieldError>> {
        let errors = self.validate(values);
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(values
            .iter()
            .map(|(name, value)| (name.clone(), value.to_json()))
            .collect())
    }

    /// Every field's default, for a form that starts filled in.
    pub fn defaults(&self) -> BTreeMap<String, FieldValue> {
        self.fields
            .iter()
            .filter_map(|field| Some((field.name.clone(), field.default_value()?)))
            .collect()
    }
}

fn options_of(items: &[Value], diagnostics: &mut Vec<String>) -> Vec<ChoiceOption> {
    let mut options = Vec::new();
    for item in items {
        if options.len() == MAX_OPTIONS {
            diagnostics.push(format!(
                "a field has {} options; only the first {MAX_OPTIONS} are shown",
                items.len()
            ));
            break;
        }
        let option = match item {
            Value::String(value) => Some((value.clone(), value.clone())),
            Value::Object(o) => o.get("const").and_then(Value::as_str).map(|value| {
                let title = o.get("title").and_then(Value::as_str).unwrap_or(value);
                (value.to_owned(), title.to_owned())
            }),
            _ => None,
        };
        if let Some((value, title)) = option {
            options.push(ChoiceOption {
                title: plain_text(&title, 200, "an option label", diagnostics),
                value,
            });
        }
    }
    options
}

impl FormField {
    fn of_property(
        name: &str,
        name_shown: &str,
        property: &Value,
        required: bool,
        diagnostics: &mut Vec<String>,
    ) -> FormField {
        let get = |key: &str| property.get(key).filter(|v| !v.is_null());
        let u64_of = |key: &str| get(key).and_then(Value::as_u64);
        let i64_of = |key: &str| get(key).and_then(Value::as_i64);
        let f64_of = |key: &str| get(key).and_then(Value::as_f64);
        let list = |key: &str| get(key).and_then(Value::as_array).map(Vec::as_slice);
        let type_name = get("type").and_then(Value::as_str).unwrap_or("");
        let kind = match type_name {
            "string" => match list("enum").or_else(|| list("oneOf")) {
                Some(items) => {
                    let options = options_of(items, diagnostics);
                    let default = get("default")
                        .and_then(Value::as_str)
                        .filter(|d| options.iter().any(|o| o.value == *d))
                        .map(str::to_owned);
                    FieldKind::Choice { options, default }
                }
                None => FieldKind::Text {
                    format: match get("format").and_then(Value::as_str) {
                        Some("email") => Some(TextFormat::Email),
                        Some("uri") => Some(TextFormat::Uri),
                        Some("date") => Some(TextFormat::Date),
                        Some("date-time") => Some(TextFormat::DateTime),
                        Some(other) => {
                            diagnostics.push(format!(
                                "field {name_shown:?}: unknown format {other:?} is not checked"
                            ));
                            None
                        }
                        None => None,
                    },
                    min_length: u64_of("minLength"),
                    max_length: Some(
                        u64_of("maxLength")
                            .map_or(MAX_ANSWER_CHARS as u64, |m| m.min(MAX_ANSWER_CHARS as u64)),
                    ),
                    default: get("default").and_then(Value::as_str).map(str::to_owned),
                },
            },
            "number" => FieldKind::Number {
                minimum: f64_of("minimum"),
                maximum: f64_of("maximum"),
                default: f64_of("default"),
            },
            "integer" => FieldKind::Integer {
                minimum: i64_of("minimum"),
                maximum: i64_of("maximum"),
                default: i64_of("default"),
            },
            "boolean" => FieldKind::Boolean {
                default: get("default").and_then(Value::as_bool),
            },
            "array" => {
                let items = get("items");
                let values = items.and_then(|i| {
                    i.get("enum")
                        .or_else(|| i.get("anyOf"))
                        .and_then(Value::as_array)
                });
                match values {
                    Some(values) => {
                        let options = options_of(values, diagnostics);
                        let default = get("default")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .filter(|d| options.iter().any(|o| o.value == *d))
                            .map(str::to_owned)
                            .collect();
                        FieldKind::MultiChoice {
                            options,
                            min_items: u64_of("minItems"),
                            max_items: u64_of("maxItems"),
                            default,
                        }
                    }
                    None => {
                        diagnostics.push(format!(
                            "field {name_shown:?}: an array without enum items is not shown"
                        ));
                        FieldKind::Unsupported {
                            type_name: "array".into(),
                        }
                    }
                }
            }
            other => {
                diagnostics.push(format!("field {name_shown:?}: type {other:?} is not shown"));
                FieldKind::Unsupported {
                    type_name: plain_text(other, 100, "a type name", diagnostics),
                }
            }
        };
        let text = |key: &str, d: &mut Vec<String>| {
            get(key)
                .and_then(Value::as_str)
                .map(|t| plain_text(t, MAX_TEXT_CHARS, "a field text", d))
        };
        FormField {
            name: name.to_owned(),
            title: text("title", diagnostics).unwrap_or_else(|| name_shown.to_owned()),
            description: text("description", diagnostics),
            required,
            kind,
        }
    }

    /// The field's default as a value, when it has one.
    pub fn default_value(&self) -> Option<FieldValue> {
        match &self.kind {
            FieldKind::Text { default, .. } | FieldKind::Choice { default, .. } => {
                default.clone().map(FieldValue::Text)
            }
            FieldKind::Number { default, .. } => default.map(FieldValue::Number),
            FieldKind::Integer { default, .. } => default.map(FieldValue::Integer),
            FieldKind::Boolean { default } => default.map(FieldValue::Boolean),
            FieldKind::MultiChoice { default, .. } if !default.is_empty() => {
                Some(FieldValue::Choices(default.clone()))
            }
            FieldKind::MultiChoice { .. } | FieldKind::Unsupported { .. } => None,
        }
    }

    /// Reads an answer typed as text (a line in chat, an input in the page): empty means no
    /// answer; a boolean is `y`/`yes`/`true` or `n`/`no`/`false`; a choice is an option's value,
    /// label or 1-based number; a multiple choice lists them separated by commas. The value is
    /// then [checked](FormField::check).
    pub fn parse_answer(&self, input: &str) -> Result<Option<FieldValue>, String> {
        let input = input.trim();
        if input.is_empty() {
            return Ok(None);
        }
        let value = match &self.kind {
            FieldKind::Text { .. } => FieldValue::Text(input.to_owned()),
            FieldKind::Number { .. } => FieldValue::Number(
                input
                    .parse::<f64>()
                    .ok()
                    .filter(|n| n.is_finite())
                    .ok_or_else(|| format!("{input:?} is not a number"))?,
            ),
            FieldKind::Integer { .. } => FieldValue::Integer(
                input
                    .parse::<i64>()
                    .map_err(|_| format!("{input:?} is not a whole number"))?,
            ),
            FieldKind::Boolean { .. } => FieldValue::Boolean(match input.to_lowercase().as_str() {
                "y" | "yes" | "true" => true,
                "n" | "no" | "false" => false,
                _ => return Err(format!("{input:?} is not yes or no")),
            }),
            FieldKind::Choice { options, .. } => FieldValue::Text(pick(options, input)?),
            FieldKind::MultiChoice { options, .. } => FieldValue::Choices(
                input
                    .split(',')
                    .map(str::trim)
                    .filter(|part| !part.is_empty())
                    .map(|part| pick(options, part))
                    .collect::<Result<_, _>>()?,
            ),
            FieldKind::Unsupported { type_name } => {
                return Err(format!(
                    "a field of type {type_name:?} cannot be answered here"
                ));
            }
        };
        self.check(&value)?;
        Ok(Some(value))
    }

    /// Checks a value against the field's type and constraints.
    pub fn check(&self, value: &FieldValue) -> Result<(), String> {
        match (&self.kind, value) {
            (
                FieldKind::Text {
                    format,
                    min_length,
                    max_length,
                    ..
                },
                FieldValue::Text(text),
            ) => {
                let length = text.chars().count() as u64;
                if let Some(min) = min_length.filter(|min| length < *min) {
                    return Err(format!("at least {min} characters"));
                }
                if let Some(max) = max_length.filter(|max| length > *max) {
                    return Err(format!("at most {max} characters"));
                }
                match format {
                    Some(format) if !format_matches(*format, text) => Err(match format {
                        TextFormat::Email => "not an email address".to_owned(),
                        TextFormat::Uri => "not a URI (scheme:rest)".to_owned(),
                        TextFormat::Date => "not a date (YYYY-MM-DD)".to_owned(),
                        TextFormat::DateTime => {
                            "not a date and time (YYYY-MM-DDTHH:MM:SS)".to_owned()
                        }
                    }),
                    _ => Ok(()),
                }
            }
            (
                FieldKind::Number {
                    minimum, maximum, ..
                },
                FieldValue::Number(n),
            ) => bounds(*n, *minimum, *maximum, n.is_finite()),
            (
                FieldKind::Number {
                    minimum, maximum, ..
                },
                FieldValue::Integer(i),
            ) => bounds(*i as f64, *minimum, *maximum, true),
            (
                FieldKind::Integer {
                    minimum, maximum, ..
                },
                FieldValue::Integer(i),
            ) => bounds(*i, *minimum, *maximum, true),
            (FieldKind::Boolean { .. }, FieldValue::Boolean(_)) => Ok(()),
            (FieldKind::Choice { options, .. }, FieldValue::Text(text)) => {
                if options.iter().any(|o| o.value == *text) {
                    Ok(())
                } else {
                    Err("not one of the choices".to_owned())
                }
            }
            (
                FieldKind::MultiChoice {
                    options,
                    min_items,
                    max_items,
                    ..
                },
                FieldValue::Choices(chosen),
            ) => {
                if let Some(bad) = chosen
                    .iter()
                    .find(|c| !options.iter().any(|o| o.value == **c))
                {
                    return Err(format!("{bad:?} is not one of the choices"));
                }
                let count = chosen.len() as u64;
                if let Some(min) = min_items.filter(|min| count < *min) {
                    return Err(format!("choose at least {min}"));
                }
                if let Some(max) = max_items.filter(|max| count > *max) {
                    return Err(format!("choose at most {max}"));
                }
                Ok(())
            }
            (FieldKind::Unsupported { type_name }, _) => Err(format!(
                "a field of type {type_name:?} cannot be answered here"
            )),
            _ => Err("wrong kind of value".to_owned()),
        }
    }
}

fn bounds<T: PartialOrd + std::fmt::Display>(
    value: T,
    minimum: Option<T>,
    maximum: Option<T>,
    finite: bool,
) -> Result<(), String> {
    if !finite {
        return Err("not a finite number".to_owned());
    }
    if let Some(min) = minimum.filter(|min| value < *min) {
        return Err(format!("at least {min}"));
    }
    if let Some(max) = maximum.filter(|max| value > *max) {
        return Err(format!("at most {max}"));
    }
    Ok(())
}

/// An option by value, by label (case-insensitive) or by 1-based number.
fn pick(options: &[ChoiceOption], input: &str) -> Result<String, String> {
    if let Some(o) = options.iter().find(|o| o.value == input) {
        return Ok(o.value.clone());
    }
    if let Some(o) = options.iter().find(|o| o.title.eq_ignore_ascii_case(input)) {
        return Ok(o.value.clone());
    }
    if let Some(o) = input
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| options.get(i))
    {
        return Ok(o.value.clone());
    }
    Err(format!("{input:?} is not one of the choices"))
}

#[cfg(test)]
#[path = "elicitation_tests.rs"]
mod tests;
