//! `elicitation/create` between versions (BRIDGE.md "Forks, sessions,
//! logout, elicitation"): the request is the same in v1 and v2 but for two values. v2's
//! string `format` is open (any string), v1's is closed (`email`, `uri`,
//! `date`, `date-time`); v2 requires a choice list (`enum`, `oneOf`,
//! `anyOf`) to hold at least one item, v1 does not. The answer
//! (`CreateElicitationResponse`) and `elicitation/complete` are the same in
//! both versions and pass unchanged.

use serde_json::{Map, Value};
use spindle_wire::client_methods::ELICITATION_CREATE;

use crate::state::Bridge;
use crate::types::{Policy, Severity, Translated};
use crate::wire::{self, Frame};

/// The string formats of v1's closed `StringFormat`.
const V1_STRING_FORMATS: [&str; 4] = ["email", "uri", "date", "date-time"];

/// The choice lists v2 requires to be non-empty.
const CHOICE_LISTS: [&str; 3] = ["enum", "oneOf", "anyOf"];

/// The properties of the request's `requestedSchema` (form mode).
fn properties(params: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    params
        .get_mut("requestedSchema")?
        .get_mut("properties")?
        .as_object_mut()
}

/// Whether `schema` (a property, or its `items`) holds an empty choice list.
fn has_empty_choice(schema: &Value) -> bool {
    CHOICE_LISTS.iter().any(|k| {
        schema
            .get(*k)
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
    }) || schema.get("items").is_some_and(has_empty_choice)
}

impl Bridge {
    /// A v2 agent's `elicitation/create` to a v1 client: a string format v1
    /// lacks is rejected (strict: the agent gets `-32603`, the client is not
    /// asked) or left out (degrade: the field asks for a plain string).
    pub(crate) fn down_elicitation(
        &mut self,
        line: &str,
        id: &str,
        frame: &Frame<'_>,
        out: &mut Translated,
    ) {
        let mut params = wire::object_of(frame.params).unwrap_or_default();
        let mut odd = Vec::new();
        if let Some(props) = properties(&mut params) {
            for (name, prop) in props.iter() {
                if let Some(format) = prop.get("format").and_then(Value::as_str)
                    && !V1_STRING_FORMATS.contains(&format)
                {
                    odd.push(format!("{name} (format {format})"));
                }
            }
        }
        if odd.is_empty() {
            out.to_client.push(line.to_owned());
            return;
        }
        let what = format!(
            "elicitation/create: string format(s) v1 lacks: {}",
            odd.join(", ")
        );
        match self.config.policy {
            Policy::Strict => {
                out.diag(Severity::Error, "elicitation_format", what.clone());
                out.to_agent.push(wire::error_response(
                    id,
                    -32603,
                    &format!("{what} (the client speaks ACP v1)"),
                    None,
                ));
            }
            Policy::Degrade => {
                out.diag(
                    Severity::Warning,
                    "elicitation_format",
                    format!("{what}: the format is left out"),
                );
                if let Some(props) = properties(&mut params) {
                    for prop in props.values_mut() {
                        if let Some(p) = prop.as_object_mut()
                            && p.get("format")
                                .and_then(Value::as_str)
                                .is_some_and(|f| !V1_STRING_FORMATS.contains(&f))
                        {
                            p.remove("format");
                        }
                    }
                }
                out.to_client
                    .push(wire::request(id, ELICITATION_CREATE, Value::Object(params)));
            }
        }
    }

    /// A v1 agent's `elicitation/create` to a v2 client: an empty choice list
    /// has no v2 form (v2 requires at least one item); the agent gets
    /// `-32603` under both policies, the client is not asked.
    pub(crate) fn up_elicitation(
        &mut self,
        line: &str,
        id: &str,
        frame: &Frame<'_>,
        out: &mut Translated,
    ) {
        let mut params = wire::object_of(frame.params).unwrap_or_default();
        let empty: Vec<String> = properties(&mut params)
            .map(|props| {
                props
                    .iter()
                    .filter(|(_, p)| has_empty_choice(p))
                    .map(|(name, _)| name.clone())
                    .collect()
            })
            .unwrap_or_default();
        if empty.is_empty() {
            out.to_client.push(line.to_owned());
            return;
        }
        let what = format!(
            "elicitation/create: field(s) {} offer an empty choice list, which v2 forbids",
            empty.join(", ")
        );
        out.diag(Severity::Error, "elicitation_empty_choice", what.clone());
        out.to_agent.push(wire::error_response(
            id,
            -32603,
            &format!("{what} (the client speaks ACP v2)"),
            None,
        ));
    }
}
