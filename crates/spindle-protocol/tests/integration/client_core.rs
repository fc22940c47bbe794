//! `ClientCore` driven by hand, without a runtime: lines in, lines and
//! events out (the way `spindle serve` drives it over its own link).

use serde_json::{Value, json};
use spindle_protocol::{
    ClientCore, ClientError, ClientEvent, ClientOptions, HandshakePhase, ProtocolChoice, RequestId,
    ResponseError,
};

fn sent(core: &mut ClientCore<&'static str>) -> Vec<Value> {
    core.take_outgoing()
        .iter()
        .map(|m| serde_json::from_str(&m.to_json()).unwrap())
        .collect()
}

fn line(v: Value) -> String {
    v.to_string()
}

fn initialized_v1(core: &mut ClientCore<&'static str>) {
    core.initialize("init").unwrap();
    let init = sent(core).remove(0);
    core.receive_line(&line(json!({"jsonrpc": "2.0", "id": init["id"],
        "result": {"protocolVersion": 1, "agentCapabilities": {}}})));
    assert_eq!(core.take_completions().len(), 1);
}

#[test]
fn the_handshake_falls_back_to_v1_without_any_io() {
    let mut core = ClientCore::with_id_prefix(
        ClientOptions {
            protocol: ProtocolChoice::V2Preferred,
            ..ClientOptions::default()
        },
        "c-",
    );
    assert_eq!(core.handshake_phase(), HandshakePhase::NotStarted);
    core.initialize("init").unwrap();
    assert_eq!(core.handshake_phase(), HandshakePhase::Initializing);
    let first = sent(&mut core).remove(0);
    assert_eq!(first["id"], "c-0");
    assert_eq!(first["params"]["protocolVersion"], 2);
    core.receive_line(&line(json!({"jsonrpc": "2.0", "id": "c-0",
        "error": {"code": -32602, "message": "v2? never heard of it"}})));
    assert!(core.take_completions().is_empty(), "the request goes on");
    let retry = sent(&mut core).remove(0);
    assert_eq!(
        (&retry["id"], &retry["params"]["protocolVersion"]),
        (&json!("c-1"), &json!(1))
    );
    assert!(
        matches!(&core.take_events()[..], [ClientEvent::Diagnostic { message }]
        if message.contains("retrying with v1"))
    );
    core.receive_line(&line(json!({"jsonrpc": "2.0", "id": "c-1",
        "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": true}}})));
    let done = core.take_completions();
    assert_eq!((done[0].data, done[0].result.is_ok()), ("init", true));
    assert_eq!(core.handshake_phase(), HandshakePhase::Initialized);
    assert_eq!(core.protocol_version(), Some(1));
    let init = core.initialize_outcome().unwrap();
    assert!(init.can_load_session() && !init.can_resume_session());
    assert!(matches!(
        core.resume_session("s", "/", &json!([]), None, "resume"),
        Err(ClientError::Unsupported(_))
    ));
}

#[test]
fn agent_requests_are_answered_and_withdrawn_and_garbage_is_diagnosed() {
    let mut core: ClientCore<&'static str> = ClientCore::new(ClientOptions::default());
    initialized_v1(&mut core);
    // Not a capability of this client: answered "method not found" at once.
    core.receive_line(r#"{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{}}"#);
    assert_eq!(sent(&mut core)[0]["error"]["code"], -32601);
    // A request whose params are broken still gets its error response.
    core.receive_line(r#"{"jsonrpc":"2.0","id":8,"method":"x","params":3}"#);
    assert_eq!(sent(&mut core)[0]["id"], 8);
    core.receive_line("not json");
    core.receive_line(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"nobody","update":{}}}"#);
    let diagnostics = core
        .take_events()
        .into_iter()
        .filter(|e| matches!(e, ClientEvent::Diagnostic { .. }))
        .count();
    assert_eq!(diagnostics, 3, "two malformed lines and an unknown session");
    // A permission question, withdrawn by the agent: dropped and answered once.
    core.receive_line(&line(json!({"jsonrpc": "2.0", "id": "p1",
        "method": "session/request_permission", "params": {"sessionId": "s", "options": []}})));
    assert!(matches!(
        &core.take_events()[..],
        [ClientEvent::PermissionRequest { .. }]
    ));
    core.receive_line(
        r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"p1"}}"#,
    );
    assert!(matches!(
        &core.take_events()[..],
        [ClientEvent::RequestCancelled { .. }]
    ));
    assert_eq!(sent(&mut core)[0]["error"]["code"], -32800);
    let answer = core.respond_permission(
        &spindle_protocol::RequestId::String("p1".into()),
        &json!({"outcome": "cancelled"}),
    );
    assert!(matches!(answer, Err(ClientError::UnknownRequest(_))));
}

#[test]
fn under_v2_file_and_terminal_requests_are_refused_with_a_diagnostic_whatever_was_offered() {
    for version in [1, 2] {
        // Offered for a v1 fallback (v2's initialize carries the v1 capabilities too).
        let options = ClientOptions {
            protocol: ProtocolChoice::V2Preferred,
            fs_read_text_file: true,
            fs_write_text_file: true,
            terminal: true,
            ..ClientOptions::default()
        };
        let mut core: ClientCore<&'static str> = ClientCore::new(options);
        core.initialize("init").unwrap();
        let init = sent(&mut core).remove(0);
        assert!(init["params"]["capabilities"].get("fs").is_none());
        assert!(init["params"]["capabilities"].get("terminal").is_none());
        core.receive_line(&line(json!({"jsonrpc": "2.0", "id": init["id"],
            "result": {"protocolVersion": version, "agentCapabilities": {}, "capabilities": {}}})));
        assert_eq!(core.protocol_version(), Some(version));
        core.take_events();
        for (n, method) in ["fs/read_text_file", "fs/write_text_file", "terminal/create"]
            .into_iter()
            .enumerate()
        {
            core.receive_line(&line(json!({"jsonrpc": "2.0", "id": n, "method": method,
                "params": {"sessionId": "s", "path": "/a", "content": "x", "command": "ls"}})));
            let events = core.take_events();
            let out = sent(&mut core);
            if version == 1 {
                // v1: the client's to serve.
                assert!(out.is_empty(), "{method}: {out:?}");
                assert!(matches!(&events[..], [ClientEvent::AgentRequest { .. }]));
            } else {
                assert_eq!(out[0]["error"]["code"], -32601, "{method}");
                assert!(matches!(&events[..], [ClientEvent::Diagnostic { message }]
                    if message.contains(method) && message.contains("protocol v2")));
            }
        }
    }
}

#[test]
fn closing_fails_what_is_pending_and_refuses_new_requests() {
    let mut core: ClientCore<&'static str> = ClientCore::new(ClientOptions::default());
    initialized_v1(&mut core);
    core.new_session("/", &json!([]), "new").unwrap();
    core.close();
    let done = core.take_completions();
    assert_eq!(done.len(), 1);
    assert!(matches!(done[0].result, Err(ClientError::Disconnected)));
    assert!(matches!(
        core.prompt("s", &json!([]), "prompt"),
        Err(ClientError::Disconnected)
    ));
}

#[test]
fn elicitation_reaches_the_application_only_when_the_client_handles_it() {
    let create = json!({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create",
        "params": {"sessionId": "s", "mode": "form", "message": "Name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}});
    // Not offered: method not found, as before.
    let mut core: ClientCore<&'static str> = ClientCore::new(ClientOptions::default());
    initialized_v1(&mut core);
    core.receive_line(&line(create.clone()));
    assert_eq!(sent(&mut core)[0]["error"]["code"], -32601);
    // Offered: the application answers it.
    let mut core: ClientCore<&'static str> = ClientCore::new(ClientOptions {
        elicitation: true,
        ..ClientOptions::default()
    });
    initialized_v1(&mut core);
    core.receive_line(&line(create));
    assert!(sent(&mut core).is_empty());
    let events = core.take_events();
    let [
        ClientEvent::AgentRequest {
            request_id, method, ..
        },
    ] = &events[..]
    else {
        panic!("{events:?}")
    };
    assert_eq!(method, "elicitation/create");
    core.respond(
        request_id,
        Ok(serde_json::value::to_raw_value(&json!({"action": "decline"})).unwrap()),
    )
    .unwrap();
    let out = sent(&mut core);
    assert_eq!(
        out[0],
        json!({"jsonrpc": "2.0", "id": "e1", "result": {"action": "decline"}})
    );
    spindle_protocol::schema_check::validate_with_method(
        1,
        spindle_protocol::schema_check::Direction::ClientToAgent,
        &out[0].to_string(),
        Some("elicitation/create"),
    )
    .unwrap();
    // The completion of a URL elicitation is a notification for the application.
    core.receive_line(
        r#"{"jsonrpc":"2.0","method":"elicitation/complete","params":{"elicitationId":"u1"}}"#,
    );
    assert!(matches!(&core.take_events()[..],
        [ClientEvent::AgentNotification { method, .. }] if method == "elicitation/complete"));
}

/// Gemini CLI cannot recognise any client's not-found error for a file it is about to create
/// (COMPATIBILITY.md, Quirks): for that agent, and only for a missing file's read, the answer is
/// an empty file, with a diagnostic. Other agents and other errors are answered as they are.
#[test]
fn a_missing_file_read_by_gemini_cli_is_answered_as_empty_and_said() {
    for (agent, empty) in [("gemini-cli", true), ("qwen-code", false)] {
        let options = ClientOptions {
            fs_read_text_file: true,
            ..ClientOptions::default()
        };
        let mut core: ClientCore<&'static str> = ClientCore::new(options);
        core.initialize("init").unwrap();
        let init = sent(&mut core).remove(0);
        core.receive_line(&line(json!({"jsonrpc": "2.0", "id": init["id"],
            "result": {"protocolVersion": 1, "agentCapabilities": {},
                       "agentInfo": {"name": agent, "version": "1"}}})));
        core.take_events();
        for (id, code) in [(1, -32002), (2, -32602)] {
            core.receive_line(&line(json!({"jsonrpc": "2.0", "id": id,
                "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/w/new.txt"}})));
            core.take_events();
            let error = ResponseError::new(code, "Resource not found: /w/new.txt");
            core.respond(&RequestId::Number(id), Err(error)).unwrap();
            let answer = sent(&mut core).remove(0);
            if empty && code == -32002 {
                assert_eq!(answer["result"], json!({"content": ""}), "{agent}");
                assert!(
                    matches!(&core.take_events()[..], [ClientEvent::Diagnostic { message }]
                    if message.contains("answered as an empty file"))
                );
            } else {
                assert_eq!(answer["error"]["code"], code, "{agent} {code}");
                assert!(core.take_events().is_empty());
            }
        }
    }
}

/// v2 with two prompts in flight: each answer names its own request, a refusal of the second
/// leaves the first's work running, and the idle that ends it is reported once.
#[test]
fn v2_a_second_prompt_refused_while_the_first_runs_leaves_its_turn_running() {
    let options = ClientOptions {
        protocol: ProtocolChoice::V2Preferred,
        ..ClientOptions::default()
    };
    let mut core: ClientCore<&'static str> = ClientCore::new(options);
    core.initialize("init").unwrap();
    let init = sent(&mut core).remove(0);
    core.receive_line(&line(json!({"jsonrpc": "2.0", "id": init["id"],
        "result": {"protocolVersion": 2, "agentCapabilities": {}, "capabilities": {}}})));
    assert_eq!(core.protocol_version(), Some(2));
    core.take_events();
    core.take_completions();
    let update = |update: Value| {
        line(json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s", "update": update}}))
    };
    let first = core
        .prompt("s", &json!([{"type": "text", "text": "one"}]), "first")
        .unwrap();
    core.receive_line(&line(
        json!({"jsonrpc": "2.0", "id": first, "result": {"messageId": "u1"}}),
    ));
    core.receive_line(&update(
        json!({"sessionUpdate": "state_update", "state": "running"}),
    ));
    let second = core
        .prompt("s", &json!([{"type": "audio", "data": ""}]), "second")
        .unwrap();
    core.receive_line(&line(json!({"jsonrpc": "2.0", "id": second,
        "error": {"code": -32602, "message": "audio is not supported"}})));
    let answers: Vec<(RequestId, bool)> = core
        .take_events()
        .into_iter()
        .filter_map(|e| match e {
            ClientEvent::PromptResponse {
                request_id, result, ..
            } => Some((request_id, result.is_ok())),
            _ => None,
        })
        .collect();
    assert_eq!(answers, vec![(first, true), (second, false)]);
    core.receive_line(&update(
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    ));
    let ends = core
        .take_events()
        .into_iter()
        .filter(|e| matches!(e, ClientEvent::TurnFinished { .. }))
        .count();
    assert_eq!(ends, 1, "the first prompt's turn still ends");
}

/// What the application sees, with a scanned update's params as their text
/// (the scanned fields are the runtime's business).
fn described(events: Vec<ClientEvent>) -> Vec<String> {
    events
        .into_iter()
        .map(|e| match e {
            ClientEvent::SessionUpdate { session_id, params } => {
                format!("update {session_id} {}", params.get())
            }
            other => format!("{other:?}"),
        })
        .collect()
}

/// `text` with each run of digits as one `#`.
fn without_numbers(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if !c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('#') {
            out.push('#');
        }
    }
    out
}

/// The reader scans `session/update` lines the decoder would also accept;
/// the events must be the ones the decoded message gives, under v1 and v2,
/// for a known and an unknown session. A core that leaves updates unreported
/// (`spindle serve`'s) gives the same events without the updates themselves.
#[test]
fn scanned_updates_give_the_events_of_decoded_ones() {
    let env = |params: &str| {
        format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{params}}}"#)
    };
    let lines = [
        env(
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"hi \u00e9"}}}"#,
        ),
        env(
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","rawInput":{"a":[1,2.5,null]}}}"#,
        ),
        env(r#"{"sessionId":"s" , "update":{"sessionUpdate":"plan","entries":[]},"extra":{}}"#),
        env(
            r#"{"sessionId":"nobody","update":{"sessionUpdate":"usage_update","used":1,"size":2}}"#,
        ),
        env(r#"{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"running"}}"#),
        env(
            r#"{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}"#,
        ),
        env(r#"{"update":{"sessionUpdate":"plan","entries":[]},"sessionId":"s"}"#),
        env(r#"{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[1,]}}"#),
        env(r#"{"update":{}}"#),
    ];
    for version in [1, 2] {
        let mut cores: Vec<ClientCore<&'static str>> = (0..3)
            .map(|_| {
                let mut core = ClientCore::new(ClientOptions {
                    protocol: ProtocolChoice::V2Preferred,
                    ..ClientOptions::default()
                });
                core.initialize("init").unwrap();
                let init = sent(&mut core).remove(0);
                core.receive_line(&line(json!({"jsonrpc": "2.0", "id": init["id"],
                    "result": {"protocolVersion": version, "agentCapabilities": {},
                        "capabilities": {}}})));
                core.take_events();
                core
            })
            .collect();
        cores[2].leave_updates_unreported();
        for known in [false, true] {
            if known {
                for core in &mut cores {
                    core.prompt("s", &json!([]), "prompt").unwrap();
                    sent(core);
                }
            }
            for l in &lines {
                // One core reads the line as a connection does (scanning),
                // the other gets the decoded message.
                cores[0].receive_line(l);
                match spindle_protocol::decode_line(l) {
                    Ok(spindle_protocol::Frame::Single(m)) => cores[1].receive_message(m),
                    Ok(other) => panic!("{l}: {other:?}"),
                    Err(e) => cores[1].receive_malformed(0, e),
                }
                cores[2].receive_line(l);
                // The malformed line's number differs by construction.
                let normalized = |core: &mut ClientCore<&'static str>| -> Vec<String> {
                    described(core.take_events())
                        .into_iter()
                        .map(|e| {
                            if e.starts_with("Diagnostic") {
                                without_numbers(&e)
                            } else {
                                e
                            }
                        })
                        .collect()
                };
                let scanned = normalized(&mut cores[0]);
                let decoded = normalized(&mut cores[1]);
                let unreported = normalized(&mut cores[2]);
                assert!(!decoded.is_empty(), "{l}");
                assert_eq!(scanned, decoded, "v{version} known={known}: {l}");
                // Only a compact update the core does not act on goes unreported.
                let routed_unparsed = spindle_wire::scan::update_notification(l).is_some()
                    && !l.contains(r#""state_update""#);
                let expected: Vec<String> = scanned
                    .into_iter()
                    .filter(|e| !(routed_unparsed && e.starts_with("update ")))
                    .collect();
                assert_eq!(unreported, expected, "v{version} known={known}: {l}");
            }
        }
    }
}
