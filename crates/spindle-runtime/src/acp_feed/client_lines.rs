//! What a logged line of a session becomes for `/acp` clients: the agent's notifications and
//! requests with the session id clients know, and prompts as `user_message_chunk` updates.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use spindle_wire::client_methods::{SESSION_PROMPT, SESSION_UPDATE, fields};
use spindle_wire::json_text::push_json_string;

/// The method and id of a logged line, read without parsing the rest.
#[derive(Deserialize)]
pub(crate) struct Probe<'a> {
    #[serde(borrow, default)]
    pub(crate) method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    pub(crate) id: Option<Value>,
}

/// The params of a logged line with the client-facing session id.
pub(crate) fn client_params(session_id: &str, line: &str) -> Option<Value> {
    let mut value: Value = serde_json::from_str(line).ok()?;
    let params = value.get_mut("params")?.as_object_mut()?;
    params.insert(
        fields::SESSION_ID.into(),
        Value::String(session_id.to_string()),
    );
    value.get_mut("params").map(Value::take)
}

/// A logged `session/prompt` with the client-facing session id, under its logged id.
pub(crate) fn client_prompt(session_id: &str, key: &str, line: &str) -> Option<String> {
    let params = client_params(session_id, line)?;
    let id = serde_json::from_str::<Value>(key).unwrap_or(Value::Null);
    Some(
        json!({ "jsonrpc": "2.0", "id": id, "method": SESSION_PROMPT, "params": params })
            .to_string(),
    )
}

/// An agent notification as clients receive it: the logged line, `sessionId` replaced.
///
/// Every update of every attached session passes here, so the line is read one level deep
/// only: the members of `params` are kept as the agent wrote them (raw JSON text, in their
/// order) and only `sessionId`'s value is written anew (appended when it was missing). The
/// line must still be JSON with an object `params` (else `None`, as before).
pub(crate) fn client_line(session_id: &str, line: &str) -> Option<String> {
    let top: Top<'_> = serde_json::from_str(line).ok()?;
    let members = top.params.0;
    let mut out = String::with_capacity(line.len() + session_id.len() + 16);
    out.push_str(r#"{"jsonrpc":"2.0","method":""#);
    out.push_str(SESSION_UPDATE);
    out.push_str(r#"","params":{"#);
    let mut replaced = false;
    for (n, (key, value)) in members.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        push_json_string(&mut out, key);
        out.push(':');
        if key.as_ref() == fields::SESSION_ID {
            push_json_string(&mut out, session_id);
            replaced = true;
        } else {
            out.push_str(value.get());
        }
    }
    if !replaced {
        if !members.is_empty() {
            out.push(',');
        }
        push_json_string(&mut out, fields::SESSION_ID);
        out.push(':');
        push_json_string(&mut out, session_id);
    }
    out.push_str("}}");
    Some(out)
}

/// [`client_line`] for the common case, without a JSON parse: a `session/update` notification
/// written compactly with `jsonrpc`, `method` and `params` in that order and nothing after (how
/// agents and the reference agent write them), whose `sessionId` the shared scanner finds
/// ([`spindle_wire::scan::update_view`]). Only the session id's value is replaced,
/// so the result is [`client_line`]'s text when `params` is compact, and the same JSON with the
/// agent's spacing kept otherwise. `None` sends the line to [`client_line`]. (The feed uses its
/// two halves, [`scanned_update_session_id`] and [`with_session_id`], to skip the copy while no
/// client is attached.)
#[cfg(test)]
fn client_update_line_scanned(session_id: &str, line: &str) -> Option<String> {
    scanned_update_session_id(line).map(|span| with_session_id(line, span, session_id))
}

/// Where the value of `sessionId` (with its quotes) lies in `line`, when `line` is an update
/// [`client_update_line_scanned`] takes.
pub(crate) fn scanned_update_session_id(line: &str) -> Option<std::ops::Range<usize>> {
    let params = line
        .strip_prefix(r#"{"jsonrpc":"2.0","method":""#)?
        .strip_prefix(SESSION_UPDATE)?
        .strip_prefix(r#"","params":{"#)?;
    if !params.ends_with("}}") {
        return None;
    }
    let view = spindle_wire::scan::update_view(line)?;
    let start = spindle_wire::scan::offset_in(line, view.session_id)?;
    let end = start + view.session_id.len();
    // The scanner's session id is a plain string's inside: its quotes are around it.
    if line.as_bytes().get(start.checked_sub(1)?) != Some(&b'"')
        || line.as_bytes().get(end) != Some(&b'"')
    {
        return None;
    }
    Some(start - 1..end + 1)
}

/// `line` with the JSON text at `span` replaced by `session_id` as a JSON string.
pub(crate) fn with_session_id(
    line: &str,
    span: std::ops::Range<usize>,
    session_id: &str,
) -> String {
    let mut out = String::with_capacity(line.len() + session_id.len());
    out.push_str(&line[..span.start]);
    push_json_string(&mut out, session_id);
    out.push_str(&line[span.end..]);
    out
}

/// A logged line read as far as [`client_line`] needs: `params`, one level deep.
#[derive(Deserialize)]
struct Top<'a> {
    #[serde(borrow)]
    params: RawMembers<'a>,
}

/// An object's members in order, each value as its raw JSON text.
struct RawMembers<'a>(Vec<(std::borrow::Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for RawMembers<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Members<'a> {
            type Value = RawMembers<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Self::Value, M::Error> {
                let mut members = Vec::new();
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    let value: &'de RawValue = map.next_value()?;
                    members.push((key, value));
                }
                Ok(RawMembers(members))
            }
        }
        deserializer.deserialize_map(Members(std::marker::PhantomData))
    }
}

/// A member's name: borrowed from the line unless it had escapes.
struct Key<'a>(std::borrow::Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl<'de> serde::de::Visitor<'de> for Name {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, name: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(name)))
            }
            fn visit_str<E>(self, name: &str) -> Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(name.to_string())))
            }
        }
        deserializer.deserialize_str(Name)
    }
}

/// The prompt of a logged `session/prompt` request as `user_message_chunk` updates.
pub(crate) fn user_chunks(
    session_id: &str,
    protocol: u16,
    prompts: &mut u64,
    line: &str,
) -> Vec<String> {
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return Vec::new();
    };
    let Some(blocks) = value.pointer("/params/prompt").and_then(Value::as_array) else {
        return Vec::new();
    };
    *prompts += 1;
    let message_id = format!("spindle-prompt-{prompts}");
    blocks
        .iter()
        .map(|block| {
            let mut update = json!({
                spindle_wire::web::SESSION_UPDATE_TAG: spindle_wire::tags::USER_MESSAGE_CHUNK,
                "content": block,
            });
            if protocol >= 2 {
                update["messageId"] = Value::String(message_id.clone());
            }
            json!({
                "jsonrpc": "2.0", "method": SESSION_UPDATE,
                "params": { "sessionId": session_id, "update": update },
            })
            .to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPDATE: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"agent-7","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#;
    const PROMPT: &str = r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"agent-7","prompt":[{"type":"text","text":"go"}]}}"#;

    /// `client_line` as it was (the whole line parsed and written again): the reference the
    /// one-level reading must agree with.
    fn client_line_by_value(session_id: &str, line: &str) -> Option<Value> {
        let params = client_params(session_id, line)?;
        Some(json!({ "jsonrpc": "2.0", "method": SESSION_UPDATE, "params": params }))
    }

    #[test]
    fn client_line_replaces_only_the_session_id_and_agrees_with_a_full_parse() {
        let cases = [
            UPDATE,
            // Spacing, members before and after, `_meta`, escapes kept as written.
            r#"{ "params" : { "update" : {"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\"b\u00e9\n"}} , "sessionId" : "x", "_meta": {"k": [1, 2.5e3, null, true]} }, "method":"session/update", "jsonrpc":"2.0" }"#,
            // No sessionId: appended. An escaped member name. An empty object.
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"up\u0064ate":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#,
        ];
        for line in cases {
            let fast = client_line("12", line).unwrap_or_else(|| panic!("no line for {line}"));
            let fast: Value = serde_json::from_str(&fast).expect("JSON");
            assert_eq!(Some(fast), client_line_by_value("12", line), "{line}");
        }
        // What has no object `params`, or is not JSON, gives nothing (as before).
        for line in [
            r#"{"jsonrpc":"2.0","method":"session/update","params":[1]}"#,
            r#"{"jsonrpc":"2.0","method":"session/update"}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x"}"#,
            "not json",
        ] {
            assert_eq!(client_line("12", line), None, "{line}");
            assert_eq!(client_line_by_value("12", line), None, "{line}");
        }
        // The member order is the agent's; a session id needing escapes is escaped.
        assert_eq!(
            client_line("a\"b", r#"{"params":{"update":1,"sessionId":"x","z":2}}"#).as_deref(),
            Some(
                r#"{"jsonrpc":"2.0","method":"session/update","params":{"update":1,"sessionId":"a\"b","z":2}}"#
            )
        );
    }

    #[test]
    fn the_scanned_update_line_is_client_lines_text_or_left_to_it() {
        // Compact and in the usual order: exactly `client_line`'s text.
        let same = [
            UPDATE,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\"b\u00e9\n"}},"sessionId":"x","_meta":{"k":[1,2.5e3,null,true]}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"agent-7","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"x","status":"pending"}}}"#,
        ];
        for line in same {
            for session in ["12", "a\"b"] {
                assert_eq!(
                    client_update_line_scanned(session, line),
                    client_line(session, line),
                    "{line}"
                );
            }
        }
        // Spacing inside `params`: the same JSON, the agent's spacing kept.
        let spaced = r#"{"jsonrpc":"2.0","method":"session/update","params":{ "sessionId" : "x" , "update" : {"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}} }}"#;
        let scanned = client_update_line_scanned("12", spaced).expect("scanned");
        assert_eq!(
            serde_json::from_str::<Value>(&scanned).expect("JSON"),
            client_line_by_value("12", spaced).expect("reference")
        );
        // Anything else goes to `client_line`: another order or spacing at the top, members
        // after `params`, no session id, an escaped session id, another method, a cut line.
        for line in [
            r#"{"method":"session/update","jsonrpc":"2.0","params":{"sessionId":"x","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#,
            r#"{"jsonrpc": "2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}},"x":1}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"a\"b","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/updates","params":{"sessionId":"x","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"#,
        ] {
            assert_eq!(client_update_line_scanned("12", line), None, "{line}");
        }
    }

    #[test]
    fn what_clients_get_validates_against_the_official_schemas() {
        use spindle_protocol::schema_check::{Direction as Side, validate_outgoing};
        for version in [1u16, 2] {
            let mut prompts = 0;
            let mut lines = user_chunks("12", version, &mut prompts, PROMPT);
            if version == 1 {
                lines.extend(client_line("12", UPDATE));
            }
            assert!(!lines.is_empty());
            for line in lines {
                validate_outgoing(version, Side::AgentToClient, &line)
                    .unwrap_or_else(|e| panic!("v{version}: {e:?}\n{line}"));
            }
        }
    }
}
