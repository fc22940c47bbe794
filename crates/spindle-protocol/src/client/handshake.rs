//! The `initialize` exchange without I/O: the request params a client sends
//! for a protocol version and the reading of the agent's answer (what the
//! answer offers is read in `capabilities`).
//!
//! Version negotiation (ask for v2, fall back to v1 when the agent answers 1
//! or rejects the request) is driven by [`ClientCore`](super::ClientCore);
//! this module holds the pieces it uses.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use spindle_wire::client_methods::capabilities as caps;
use spindle_wire::meta::{META_KEY, TERMINAL_OUTPUT_META_KEY};

use super::types::{ClientError, ClientOptions, InitializeOutcome, ProtocolChoice};
use crate::extensions::{Extensions, listed_extension_names};
use crate::jsonrpc::{raw_null, to_raw};

/// The version a client asks for first.
pub(super) fn first_version(options: &ClientOptions) -> u16 {
    match options.protocol {
        ProtocolChoice::V1 => 1,
        ProtocolChoice::V2Preferred => 2,
    }
}

/// The `initialize` params for `version`.
pub(super) fn initialize_params(options: &ClientOptions, version: u16) -> Box<RawValue> {
    let o = options;
    let mut v1_caps = json!({
        "fs": { "readTextFile": o.fs_read_text_file, "writeTextFile": o.fs_write_text_file },
        "terminal": o.terminal,
    });
    let mut v1_session = Map::new();
    let mut v2_session = Map::new();
    if o.session_compaction {
        v1_session.insert("compaction".into(), json!({}));
    }
    if o.session_notices {
        v1_session.insert("notices".into(), json!({}));
        v2_session.insert("notices".into(), json!({}));
    }
    if !v1_session.is_empty() {
        v1_caps["session"] = Value::Object(v1_session);
    }
    if o.display_terminal_output {
        v1_caps[META_KEY] = json!({ TERMINAL_OUTPUT_META_KEY: true });
    }
    let elicitation = json!({ caps::ELICITATION_FORM: {}, caps::ELICITATION_URL: {} });
    if o.elicitation {
        v1_caps[caps::ELICITATION] = elicitation.clone();
    }
    let mut params = if version >= 2 {
        let mut v2_caps = json!({});
        if o.elicitation {
            v2_caps[caps::ELICITATION] = elicitation;
        }
        if !v2_session.is_empty() {
            v2_caps["session"] = Value::Object(v2_session);
        }
        // v1 fields ride along so that a v1-only agent answering `1` still
        // sees the client's identity and capabilities.
        json!({
            "protocolVersion": 2,
            "info": o.client_info,
            "capabilities": v2_caps,
            "clientInfo": o.client_info,
            "clientCapabilities": v1_caps,
        })
    } else {
        json!({
            "protocolVersion": 1,
            "clientInfo": o.client_info,
            "clientCapabilities": v1_caps,
        })
    };
    if o.spindle_extensions {
        params[META_KEY] = Extensions::all().to_meta();
    }
    to_raw(&params).unwrap_or_else(|_| raw_null())
}

/// Reads the agent's `initialize` result; `asked` is the version requested.
pub(super) fn parse_initialize(
    raw: Box<RawValue>,
    asked: u16,
) -> Result<InitializeOutcome, ClientError> {
    #[derive(Deserialize)]
    struct Init<'a> {
        #[serde(rename = "protocolVersion")]
        protocol_version: Value,
        #[serde(rename = "agentCapabilities", borrow, default)]
        agent_capabilities: Option<&'a RawValue>,
        #[serde(borrow, default)]
        capabilities: Option<&'a RawValue>,
        #[serde(rename = "agentInfo", borrow, default)]
        agent_info: Option<&'a RawValue>,
        #[serde(borrow, default)]
        info: Option<&'a RawValue>,
        #[serde(rename = "authMethods", borrow, default)]
        auth_methods: Option<&'a RawValue>,
    }
    let init: Init<'_> = serde_json::from_str(raw.get())
        .map_err(|e| ClientError::Protocol(format!("malformed initialize result: {e}")))?;
    let version = match init.protocol_version.as_u64() {
        Some(1) => 1,
        Some(2) if asked >= 2 => 2,
        _ => {
            return Err(ClientError::Protocol(format!(
                "agent chose protocol version {} which this client did not offer",
                init.protocol_version
            )));
        }
    };
    let mut compatibility_notes = Vec::new();
    let (caps, info) = if version == 2 {
        (init.capabilities, init.info.or(init.agent_info))
    } else {
        (init.agent_capabilities, init.agent_info)
    };
    let empty = || RawValue::from_string("{}".into()).unwrap_or_else(|_| raw_null());
    let mut caps = caps.map(|c| c.to_owned());
    // Degrade, not break: an agent that agreed to 2 and still spoke v1's shape (fast-agent
    // does) keeps what it advertised, read as v2 says it, with a note saying so.
    if version == 2
        && caps.is_none()
        && let Some(v1) = init.agent_capabilities
        && let Ok(v1) = serde_json::from_str::<Value>(v1.get())
    {
        let v2 = super::legacy_caps::v1_capabilities_as_v2(&v1);
        caps = serde_json::value::to_raw_value(&v2).ok();
        let note = "the agent agreed to protocol 2 but advertised its capabilities in v1's \
                    shape (agentCapabilities); they are read as their v2 equivalents";
        tracing::warn!("{note}");
        compatibility_notes.push(note.to_owned());
    }
    Ok(InitializeOutcome {
        protocol_version: version,
        agent_capabilities: caps.unwrap_or_else(empty),
        compatibility_notes,
        agent_info: info.map(|c| c.to_owned()),
        auth_methods: init.auth_methods.map(|c| c.to_owned()),
        agent_spindle_extensions: serde_json::from_str::<Value>(raw.get())
            .ok()
            .and_then(|result| result.get(META_KEY).map(listed_extension_names))
            .unwrap_or_default(),
        raw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(options: &ClientOptions, version: u16) -> Value {
        let params: Value = serde_json::from_str(initialize_params(options, version).get())
            .expect("initialize params are JSON");
        params["clientCapabilities"].clone()
    }

    #[test]
    fn the_terminal_output_convention_is_asked_for_only_when_displayed() {
        let plain = ClientOptions::default();
        assert!(caps(&plain, 1).get("_meta").is_none());
        let shown = ClientOptions {
            display_terminal_output: true,
            ..ClientOptions::default()
        };
        for version in [1, 2] {
            assert_eq!(
                caps(&shown, version)["_meta"],
                json!({"terminal_output": true})
            );
            // The standard terminal capability stays what the client offers.
            assert_eq!(caps(&shown, version)["terminal"], json!(false));
        }
    }

    #[test]
    fn a_v2_request_offers_no_client_files_or_terminals() {
        let host = ClientOptions {
            fs_read_text_file: true,
            fs_write_text_file: true,
            terminal: true,
            session_notices: true,
            ..ClientOptions::default()
        };
        let params: Value = serde_json::from_str(initialize_params(&host, 2).get()).unwrap();
        // What a v2 agent reads: the session capabilities only (v2 has no client files or
        // terminals).
        assert_eq!(params["capabilities"], json!({"session": {"notices": {}}}));
        // The v1 fields ride along for a v1 agent answering 1, which may use them.
        assert_eq!(params["clientCapabilities"]["terminal"], json!(true));
        assert_eq!(caps(&host, 1)["fs"]["writeTextFile"], json!(true));
    }

    #[test]
    fn elicitation_is_advertised_in_both_versions_only_when_handled() {
        let plain = ClientOptions::default();
        for version in [1, 2] {
            let params: Value =
                serde_json::from_str(initialize_params(&plain, version).get()).unwrap();
            assert!(params.pointer("/clientCapabilities/elicitation").is_none());
            assert!(params.pointer("/capabilities/elicitation").is_none());
        }
        let asking = ClientOptions {
            elicitation: true,
            ..ClientOptions::default()
        };
        let both = json!({"form": {}, "url": {}});
        assert_eq!(caps(&asking, 1)["elicitation"], both);
        let v2: Value = serde_json::from_str(initialize_params(&asking, 2).get()).unwrap();
        assert_eq!(v2["capabilities"]["elicitation"], both);
        for version in [1, 2] {
            let params: Value =
                serde_json::from_str(initialize_params(&asking, version).get()).unwrap();
            let message =
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params});
            crate::schema_check::validate_outgoing(
                version,
                crate::schema_check::Direction::ClientToAgent,
                &message.to_string(),
            )
            .unwrap_or_else(|e| panic!("v{version}: {e:?}"));
        }
    }

    #[test]
    fn a_v2_answer_in_v1_shape_degrades_with_a_note() {
        let answer = json!({"protocolVersion": 2,
            "agentCapabilities": {"loadSession": true,
                "promptCapabilities": {"image": true},
                "sessionCapabilities": {"list": {}, "fork": {}}},
            "agentInfo": {"name": "fast-agent", "version": "0.10.48"}});
        let raw = to_raw(&answer).unwrap();
        let init = parse_initialize(raw, 2).expect("a usable answer");
        assert_eq!(init.protocol_version, 2);
        assert!(init.can_list_sessions() && init.can_fork_session());
        assert!(init.prompt_capabilities().image);
        assert_eq!(
            init.compatibility_notes.len(),
            1,
            "{:?}",
            init.compatibility_notes
        );
        assert!(init.agent_info.is_some(), "v1's agentInfo is kept too");
        // A proper v2 answer needs no note.
        let proper = json!({"protocolVersion": 2, "capabilities": {"session": {}}});
        let init = parse_initialize(to_raw(&proper).unwrap(), 2).unwrap();
        assert!(init.compatibility_notes.is_empty());
        assert!(init.can_list_sessions());
    }
}
