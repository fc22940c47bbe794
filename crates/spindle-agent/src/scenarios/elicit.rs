//! `/scenario elicit-form` and `/scenario elicit-url`: the agent asks the user through the client
//! (`elicitation/create`) and reports the answer in its reply. The form has one field of each
//! kind (text with a format and lengths, number, integer with bounds, boolean, single and
//! multiple choice), required fields and defaults. The URL one points at a loopback address that
//! nothing needs to serve; after an `accept` the agent sends `elicitation/complete`. Only what
//! the client advertised (`elicitation.form`, `elicitation.url`) is asked; otherwise the reply
//! says so. `/scenario elicit-tool` asks the same form from inside a tool call (`toolCallId` in
//! the request, as an agent relaying an MCP server's question does): the tool call runs while
//! the question is open and ends completed on `accept`, failed otherwise.

use serde_json::{Value, json};
use spindle_wire::client_methods::capabilities::{
    ELICITATION, ELICITATION_FORM, ELICITATION_URL, V1_CLIENT, V2,
};
use spindle_wire::client_methods::elicitation as f;
use spindle_wire::client_methods::{ELICITATION_COMPLETE, ELICITATION_CREATE, fields};
use spindle_wire::tags::MessageKind;

use crate::program::{CallOutcome, ClientCall, ClientFlow, Program, Step};
use crate::turn_context::TurnCtx;
use crate::updates;
use crate::wire::Version;

/// The message of the form elicitation.
pub const ELICIT_FORM_MESSAGE: &str = "Set up the demo project";
/// The URL of the URL elicitation (loopback: nothing leaves the machine).
pub const ELICIT_URL: &str = "https://127.0.0.1:9/spindle-demo/sign-in";
/// The title of `/scenario elicit-tool`'s tool call.
pub const ELICIT_TOOL_TITLE: &str = "Configure the demo deployment";
/// The reply when the client did not advertise the mode asked for.
pub const ELICIT_NONE_REPLY: &str =
    "The client did not advertise this kind of elicitation, so I did not ask.";

/// Whether `initialize` params advertise `elicitation.<mode>` for the negotiated version.
pub(crate) fn advertised_elicitation(version: Version, params: &Value, mode: &str) -> bool {
    let caps = match version {
        Version::V1 => V1_CLIENT,
        Version::V2 => V2,
    };
    params
        .get(caps)
        .and_then(|c| c.get(ELICITATION))
        .and_then(|e| e.get(mode))
        .is_some_and(Value::is_object)
}

/// The form's schema: one field of each kind.
fn form_schema() -> Value {
    json!({
        "type": "object",
        "title": "Project",
        "description": "What the demo project should look like.",
        "properties": {
            "name": {"type": "string", "title": "Project name", "minLength": 2, "maxLength": 40},
            "email": {"type": "string", "title": "Contact email", "format": "email"},
            "budget": {"type": "number", "title": "Budget (hours)", "minimum": 0.5, "maximum": 100},
            "workers": {"type": "integer", "title": "Workers", "minimum": 1, "maximum": 8, "default": 2},
            "tests": {"type": "boolean", "title": "Write tests", "default": true},
            "license": {"type": "string", "title": "License",
                "oneOf": [{"const": "mit", "title": "MIT"}, {"const": "apache-2.0", "title": "Apache 2.0"}],
                "default": "mit"},
            "targets": {"type": "array", "title": "Targets",
                "items": {"type": "string", "enum": ["linux", "macos", "windows"]}, "minItems": 1,
                "default": ["linux"]}
        },
        "required": ["name", "workers"]
    })
}

#[derive(Debug)]
pub(crate) struct ElicitFlow {
    url: bool,
    session_id: String,
    elicitation_id: String,
    /// `/scenario elicit-tool`: the tool call the question belongs to.
    tool_call_id: Option<String>,
    asked: bool,
}

impl ElicitFlow {
    pub(crate) fn new(ctx: &mut TurnCtx<'_>, url: bool) -> ElicitFlow {
        ElicitFlow {
            url,
            session_id: ctx.session_id.to_owned(),
            elicitation_id: ctx.state.next_id("elicit_"),
            tool_call_id: None,
            asked: false,
        }
    }

    /// The form, asked from inside a new tool call.
    pub(crate) fn in_tool_call(ctx: &mut TurnCtx<'_>) -> ElicitFlow {
        let mut flow = ElicitFlow::new(ctx, false);
        flow.tool_call_id = Some(ctx.state.next_id("call_"));
        flow
    }

    fn say(ctx: &mut TurnCtx<'_>, steps: &mut Vec<Step>, text: &str) {
        let mut p = Program::new(ctx.delay_ms);
        let id = ctx.state.next_id("msg_a");
        p.say(MessageKind::Agent, &id, text, None);
        steps.extend(p.steps);
    }

    fn params(&self) -> Value {
        if self.url {
            json!({
                fields::SESSION_ID: self.session_id,
                f::MODE: ELICITATION_URL,
                f::MESSAGE: "Sign in to the demo service",
                f::ELICITATION_ID: self.elicitation_id,
                f::URL: ELICIT_URL,
            })
        } else {
            let mut params = json!({
                fields::SESSION_ID: self.session_id,
                f::MODE: ELICITATION_FORM,
                f::MESSAGE: ELICIT_FORM_MESSAGE,
                f::REQUESTED_SCHEMA: form_schema(),
            });
            if let Some(tool_call_id) = &self.tool_call_id {
                params[f::TOOL_CALL_ID] = json!(tool_call_id);
            }
            params
        }
    }

    /// Ends the tool call of `/scenario elicit-tool` with the answer's outcome.
    fn end_tool_call(&self, steps: &mut Vec<Step>, accepted: bool, text: &str) {
        if let Some(tool_call_id) = &self.tool_call_id {
            let status = if accepted { "completed" } else { "failed" };
            steps.push(Step::Update(updates::tool_call_status(
                tool_call_id,
                status,
                Some(vec![updates::tool_text(text)]),
            )));
        }
    }
}

/// The reply for the client's answer.
fn report(answer: &Value) -> String {
    match answer.get(f::ACTION).and_then(Value::as_str) {
        Some(f::ACCEPT) => match answer.get(f::CONTENT).and_then(Value::as_object) {
            Some(content) if !content.is_empty() => {
                let parts: Vec<String> = content.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("You accepted: {}.", parts.join(", "))
            }
            _ => "You accepted.".to_owned(),
        },
        Some(f::DECLINE) => "You declined.".to_owned(),
        Some(f::CANCEL) => "You cancelled.".to_owned(),
        Some(other) => format!("The client answered with the unknown action {other:?}."),
        None => "The client answered without an action.".to_owned(),
    }
}

impl ClientFlow for ElicitFlow {
    fn advance(
        mut self: Box<Self>,
        ctx: &mut TurnCtx<'_>,
        outcome: Option<CallOutcome>,
    ) -> Vec<Step> {
        let mut steps = Vec::new();
        if !self.asked {
            let advertised = if self.url {
                ctx.conn.elicitation_url
            } else {
                ctx.conn.elicitation_form
            };
            if !advertised {
                Self::say(ctx, &mut steps, ELICIT_NONE_REPLY);
                return steps;
            }
            self.asked = true;
            if let Some(tool_call_id) = &self.tool_call_id {
                let start = updates::tool_call_start(
                    ctx.version(),
                    tool_call_id,
                    ELICIT_TOOL_TITLE,
                    "other",
                    json!({"asks": "the deployment's settings"}),
                );
                steps.push(Step::Update(start));
                steps.push(Step::Update(updates::tool_call_status(
                    tool_call_id,
                    "in_progress",
                    None,
                )));
            }
            let params = self.params();
            steps.push(Step::Call(Box::new(ClientCall {
                method: ELICITATION_CREATE,
                params,
                flow: self,
            })));
            return steps;
        }
        match outcome {
            Some(CallOutcome::Ok(answer)) => {
                let accepted = answer.get(f::ACTION).and_then(Value::as_str) == Some(f::ACCEPT);
                if self.url && accepted {
                    steps.push(Step::Raw(json!({
                        "jsonrpc": "2.0",
                        "method": ELICITATION_COMPLETE,
                        "params": {f::ELICITATION_ID: self.elicitation_id},
                    })));
                }
                let reply = report(&answer);
                self.end_tool_call(&mut steps, accepted, &reply);
                Self::say(ctx, &mut steps, &reply);
            }
            Some(CallOutcome::Err { message, .. }) => {
                let reply = format!("The client refused to ask: {message}.");
                self.end_tool_call(&mut steps, false, &reply);
                Self::say(ctx, &mut steps, &reply);
            }
            None => {
                self.end_tool_call(&mut steps, false, "The client did not answer.");
                Self::say(ctx, &mut steps, "The client did not answer.");
            }
        }
        steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_reports_each_answer() {
        let cases = [
            (
                json!({"action": "accept", "content": {"name": "demo", "workers": 2}}),
                "You accepted: name=\"demo\", workers=2.",
            ),
            (json!({"action": "accept"}), "You accepted."),
            (json!({"action": "decline"}), "You declined."),
            (json!({"action": "cancel"}), "You cancelled."),
            (
                json!({"action": "_later"}),
                "The client answered with the unknown action \"_later\".",
            ),
        ];
        for (answer, reply) in cases {
            assert_eq!(report(&answer), reply);
        }
    }

    #[test]
    fn only_what_was_advertised_counts() {
        let v1 = json!({"clientCapabilities": {"elicitation": {"form": {}}}});
        assert!(advertised_elicitation(Version::V1, &v1, "form"));
        assert!(!advertised_elicitation(Version::V1, &v1, "url"));
        assert!(!advertised_elicitation(Version::V2, &v1, "form"));
        let v2 = json!({"capabilities": {"elicitation": {"url": {}, "form": null}}});
        assert!(advertised_elicitation(Version::V2, &v2, "url"));
        assert!(!advertised_elicitation(Version::V2, &v2, "form"));
    }
}
