//! Data-driven cases (**S**): the methods schema 1.20 added or renamed, in
//! both directions: `session/fork` (answered like `session/new`),
//! `session/delete`, `session/close`, `session/list`, v1 `authenticate` /
//! `logout` <-> v2 `auth/login` / `auth/logout`, `additionalDirectories`,
//! `elicitation/create` and `elicitation/complete`, MCP servers of each
//! transport, the capabilities of `initialize`, and the `nes/*` methods the
//! bridge refuses. Each case is a list of steps (a line from one side, the
//! exact lines each side then receives); the rig validates every line the
//! bridge emits against the official schema of the side it goes to.

use crate::common::Rig;
use serde_json::{Value, json};
use spindle_bridge::Policy;

#[derive(Clone, Copy)]
enum From {
    Client,
    Agent,
}

struct Step {
    from: From,
    line: Value,
    to_agent: Vec<Value>,
    to_client: Vec<Value>,
}

struct Case {
    name: &'static str,
    /// (client version, agent version).
    versions: (u16, u16),
    policy: Policy,
    /// The client's capabilities in its `initialize`.
    client_caps: Value,
    /// The agent's `initialize` result, without `protocolVersion` and info.
    agent_init: Value,
    steps: Vec<Step>,
    errors: &'static [&'static str],
    warnings: &'static [&'static str],
    infos: &'static [&'static str],
}

fn client(line: Value, to_agent: Vec<Value>, to_client: Vec<Value>) -> Step {
    Step {
        from: From::Client,
        line,
        to_agent,
        to_client,
    }
}

fn agent(line: Value, to_agent: Vec<Value>, to_client: Vec<Value>) -> Step {
    Step {
        from: From::Agent,
        line,
        to_agent,
        to_client,
    }
}

fn req(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":method,"params":params})
}

fn ok(id: u64, result: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"result":result})
}

fn note(method: &str, params: Value) -> Value {
    json!({"jsonrpc":"2.0","method":method,"params":params})
}

fn err(id: u64, code: i64, message: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"error":{"code":code,"message":message}})
}

/// A bridge after `initialize` with the case's capabilities (id 0).
fn start(case: &Case) -> Rig {
    let (c, a) = case.versions;
    let mut r = Rig::new(c, a, case.policy);
    let params = if c == 2 {
        json!({"protocolVersion":2,"info":{"name":"c","version":"1"},"capabilities":case.client_caps})
    } else {
        json!({"protocolVersion":1,"clientInfo":{"name":"c","version":"1"},"clientCapabilities":case.client_caps})
    };
    r.client(req(0, "initialize", params));
    let mut result = case.agent_init.clone();
    result["protocolVersion"] = a.into();
    let info_key = if a == 2 { "info" } else { "agentInfo" };
    result[info_key] = json!({"name":"a","version":"1"});
    r.agent(ok(0, result));
    r
}

/// The agent's initialize result with its capabilities `caps`.
fn agent_caps(version: u16, caps: Value) -> Value {
    if version == 2 {
        json!({"capabilities": caps})
    } else {
        json!({"agentCapabilities": caps})
    }
}

fn mcp_v2() -> Value {
    json!([
        {"type":"stdio","name":"files","command":"/bin/f","args":[],"env":[{"name":"K","value":"v"}]},
        {"type":"http","name":"web","url":"https://mcp.example/x"},
        {"type":"_pipe","name":"odd"}
    ])
}

fn mcp_v1_from_v2() -> Value {
    json!([
        {"name":"files","command":"/bin/f","args":[],"env":[{"name":"K","value":"v"}]},
        {"type":"http","name":"web","url":"https://mcp.example/x","headers":[]}
    ])
}

fn mcp_v1() -> Value {
    json!([
        {"name":"files","command":"/bin/f","args":[],"env":[]},
        {"type":"sse","name":"events","url":"https://mcp.example/e","headers":[]}
    ])
}

fn mcp_v2_from_v1() -> Value {
    json!([{"type":"stdio","name":"files","command":"/bin/f","args":[],"env":[]}])
}

fn form(format: &str) -> Value {
    json!({"sessionId":"s1","mode":"form","message":"Who?","requestedSchema":{"type":"object",
        "properties":{"mail":{"type":"string","format":format},"age":{"type":"integer","minimum":0}},
        "required":["mail"]}})
}

fn session_cases() -> Vec<Case> {
    let v2_session = json!({"session":{"prompt":{},"mcp":{"stdio":{}}}});
    let v1_session = json!({"loadSession":true});
    let dirs = json!(["/w/lib", "/w/docs"]);
    let modes = json!({"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code"}]});
    let mode_option = json!({"type":"select","configId":"mode","name":"Mode","category":"mode",
        "currentValue":"ask","options":[{"value":"ask","name":"Ask"},{"value":"code","name":"Code"}]});
    vec![
        Case {
            name: "v2 client forks a v1 agent's session: MCP servers lowered, modes become a config option",
            versions: (2, 1),
            policy: Policy::Strict,
            client_caps: json!({}),
            agent_init: agent_caps(
                1,
                json!({"loadSession":true,"sessionCapabilities":{"fork":{}}}),
            ),
            steps: vec![
                client(
                    req(
                        3,
                        "session/fork",
                        json!({"sessionId":"s1","cwd":"/w","additionalDirectories":dirs,"mcpServers":mcp_v2()}),
                    ),
                    vec![req(
                        3,
                        "session/fork",
                        json!({"sessionId":"s1","cwd":"/w","additionalDirectories":dirs,"mcpServers":mcp_v1_from_v2()}),
                    )],
                    vec![],
                ),
                agent(
                    ok(3, json!({"sessionId":"s2","modes":modes})),
                    vec![],
                    vec![ok(
                        3,
                        json!({"sessionId":"s2","configOptions":[mode_option]}),
                    )],
                ),
            ],
            errors: &[],
            warnings: &["mcp_server_type"],
            infos: &[],
        },
        Case {
            name: "v1 client forks a v2 agent's session: SSE server left out, the mode option becomes modes",
            versions: (1, 2),
            policy: Policy::Strict,
            client_caps: json!({}),
            agent_init: agent_caps(
                2,
                json!({"session":{"prompt":{},"mcp":{"stdio":{}},"fork":{}}}),
            ),
            steps: vec![
                client(
                    req(
                        3,
                        "session/fork",
                        json!({"sessionId":"s1","cwd":"/w","additionalDirectories":dirs,"mcpServers":mcp_v1()}),
                    ),
                    vec![req(
                        3,
                        "session/fork",
                        json!({"sessionId":"s1","cwd":"/w","additionalDirectories":dirs,"mcpServers":mcp_v2_from_v1()}),
                    )],
                    vec![],
                ),
                agent(
                    ok(3, json!({"sessionId":"s2","configOptions":[mode_option]})),
                    vec![],
                    vec![ok(
                        3,
                        json!({"sessionId":"s2","modes":modes,"configOptions":[
                        {"type":"select","id":"mode","name":"Mode","category":"mode","currentValue":"ask",
                         "options":[{"value":"ask","name":"Ask"},{"value":"code","name":"Code"}]}]}),
                    )],
                ),
            ],
            errors: &[],
            warnings: &["sse_mcp_server"],
            infos: &[],
        },
        Case {
            name: "v2 client: new, resume and load-by-replay keep additionalDirectories for a v1 agent",
            versions: (2, 1),
            policy: Policy::Strict,
            client_caps: json!({}),
            agent_init: agent_caps(
                1,
                json!({"loadSession":true,"sessionCapabilities":{"additionalDirectories":{},"resume":{}}}),
            ),
            steps: vec![
                client(
                    req(
                        1,
                        "session/new",
                        json!({"cwd":"/w","additionalDirectories":dirs,"mcpServers":[]}),
                    ),
                    vec![req(
                        1,
                        "session/new",
                        json!({"cwd":"/w","additionalDirectories":dirs,"mcpServers":[]}),
                    )],
                    vec![],
                ),
                agent(
                    ok(1, json!({"sessionId":"s1"})),
                    vec![],
                    vec![ok(1, json!({"sessionId":"s1"}))],
                ),
                client(
                    req(
                        2,
                        "session/resume",
                        json!({"sessionId":"s1","cwd":"/w","additionalDirectories":dirs}),
                    ),
                    vec![req(
                        2,
                        "session/resume",
                        json!({"sessionId":"s1","cwd":"/w","additionalDirectories":dirs}),
                    )],
                    vec![],
                ),
                client(
                    req(
                        3,
                        "session/resume",
                        json!({"sessionId":"s1","cwd":"/w","additionalDirectories":dirs,"replayFrom":{"type":"start"}}),
                    ),
                    vec![req(
                        3,
                        "session/load",
                        json!({"sessionId":"s1","cwd":"/w","additionalDirectories":dirs,"mcpServers":[]}),
                    )],
                    vec![],
                ),
            ],
            errors: &[],
            warnings: &[],
            infos: &[],
        },
        Case {
            name: "v1 client: session/load keeps additionalDirectories as v2 session/resume with replay",
            versions: (1, 2),
            policy: Policy::Strict,
            client_caps: json!({}),
            agent_init: agent_caps(
                2,
                json!({"session":{"prompt":{},"mcp":{"stdio":{}},"additionalDirectories":{}}}),
            ),
            steps: vec![client(
                req(
                    2,
                    "session/load",
                    json!({"sessionId":"s1","cwd":"/w","additionalDirectories":dirs,"mcpServers":[]}),
                ),
                vec![req(
                    2,
                    "session/resume",
                    json!({"sessionId":"s1","cwd":"/w","additionalDirectories":dirs,"mcpServers":[],"replayFrom":{"type":"start"}}),
                )],
                vec![],
            )],
            errors: &[],
            warnings: &[],
            infos: &[],
        },
        Case {
            name: "v2 client: delete, close and list pass to a v1 agent and back unchanged",
            versions: (2, 1),
            policy: Policy::Strict,
            client_caps: json!({}),
            agent_init: agent_caps(
                1,
                json!({"loadSession":true,"sessionCapabilities":{"delete":{},"close":{},"list":{}}}),
            ),
            steps: vec![
                client(
                    req(4, "session/delete", json!({"sessionId":"s1"})),
                    vec![req(4, "session/delete", json!({"sessionId":"s1"}))],
                    vec![],
                ),
                agent(ok(4, json!({})), vec![], vec![ok(4, json!({}))]),
                client(
                    req(5, "session/close", json!({"sessionId":"s2"})),
                    vec![req(5, "session/close", json!({"sessionId":"s2"}))],
                    vec![],
                ),
                agent(ok(5, json!({})), vec![], vec![ok(5, json!({}))]),
                client(
                    req(6, "session/list", json!({"cwd":"/w"})),
                    vec![req(6, "session/list", json!({"cwd":"/w"}))],
                    vec![],
                ),
                agent(
                    ok(
                        6,
                        json!({"sessions":[{"sessionId":"s3","cwd":"/w","title":"Fixing","updatedAt":"2026-11-28T20:00:00Z"}]}),
                    ),
                    vec![],
                    vec![ok(
                        6,
                        json!({"sessions":[{"sessionId":"s3","cwd":"/w","title":"Fixing","updatedAt":"2026-11-28T20:00:00Z"}]}),
                    )],
                ),
            ],
            errors: &[],
            warnings: &[],
            infos: &[],
        },
        Case {
            name: "v1 client: delete and close pass to a v2 agent; the agent's error is relayed",
            versions: (1, 2),
            policy: Policy::Strict,
            client_caps: json!({}),
            agent_init: agent_caps(2, v2_session.clone()),
            steps: vec![
                client(
                    req(4, "session/delete", json!({"sessionId":"s1"})),
                    vec![req(4, "session/delete", json!({"sessionId":"s1"}))],
                    vec![],
                ),
                agent(
                    err(4, -32601, "Method not found"),
                    vec![],
                    vec![err(4, -32601, "Method not found")],
                ),
                client(
                    req(5, "session/close", json!({"sessionId":"s1"})),
                    vec![req(5, "session/close", json!({"sessionId":"s1"}))],
                    vec![],
                ),
                agent(ok(5, json!({})), vec![], vec![ok(5, json!({}))]),
            ],
            errors: &[],
            warnings: &[],
            infos: &[],
        },
        Case {
            name: "v2 client: auth/login and auth/logout become v1 authenticate and logout",
            versions: (2, 1),
            policy: Policy::Strict,
            client_caps: json!({}),
            agent_init: json!({"agentCapabilities":{"auth":{"logout":{}}},"authMethods":[{"id":"key","name":"API key"}]}),
            steps: vec![
                client(
                    req(7, "auth/login", json!({"methodId":"key"})),
                    vec![req(7, "authenticate", json!({"methodId":"key"}))],
                    vec![],
                ),
                agent(ok(7, json!({})), vec![], vec![ok(7, json!({}))]),
                client(
                    req(8, "auth/logout", json!({})),
                    vec![req(8, "logout", json!({}))],
                    vec![],
                ),
                agent(ok(8, json!({})), vec![], vec![ok(8, json!({}))]),
            ],
            errors: &[],
            warnings: &[],
            infos: &[],
        },
        Case {
            name: "v2 client: auth/logout to a v1 agent without the logout capability is answered -32601",
            versions: (2, 1),
            policy: Policy::Strict,
            client_caps: json!({}),
            agent_init: json!({"agentCapabilities":{},"authMethods":[{"id":"key","name":"API key"}]}),
            steps: vec![client(
                req(8, "auth/logout", json!({})),
                vec![],
                vec![err(
                    8,
                    -32601,
                    "logout is not available: the (v1) agent does not advertise agentCapabilities.auth.logout",
                )],
            )],
            errors: &[],
            warnings: &["logout_not_advertised"],
            infos: &[],
        },
        Case {
            name: "v1 client: authenticate and logout become v2 auth/login and auth/logout",
            versions: (1, 2),
            policy: Policy::Strict,
            client_caps: json!({}),
            agent_init: json!({"capabilities":{},"authMethods":[{"methodId":"key","name":"API key","type":"agent"}]}),
            steps: vec![
                client(
                    req(7, "authenticate", json!({"methodId":"key"})),
                    vec![req(7, "auth/login", json!({"methodId":"key"}))],
                    vec![],
                ),
                agent(ok(7, json!({})), vec![], vec![ok(7, json!({}))]),
                client(
                    req(8, "logout", json!({})),
                    vec![req(8, "auth/logout", json!({}))],
                    vec![],
                ),
                agent(ok(8, json!({})), vec![], vec![ok(8, json!({}))]),
            ],
            errors: &[],
            warnings: &[],
            infos: &[],
        },
        Case {
            name: "nes/* is refused both ways: requests get -32601, notifications a warning",
            versions: (1, 2),
            policy: Policy::Strict,
            client_caps: json!({}),
            agent_init: agent_caps(2, v2_session.clone()),
            steps: vec![
                client(
                    req(9, "nes/start", json!({})),
                    vec![],
                    vec![err(
                        9,
                        -32601,
                        "nes/start is not translated by spindle bridge between ACP v1 (client) and v2 (agent)",
                    )],
                ),
                client(
                    note("nes/accept", json!({"sessionId":"n1","id":"x"})),
                    vec![],
                    vec![],
                ),
            ],
            errors: &[],
            warnings: &["method_not_bridged", "method_not_bridged"],
            infos: &[],
        },
        Case {
            name: "nes/* from a v2 client to a v1 agent is refused the same way",
            versions: (2, 1),
            policy: Policy::Degrade,
            client_caps: json!({}),
            agent_init: agent_caps(1, v1_session.clone()),
            steps: vec![client(
                req(9, "nes/close", json!({"sessionId":"n1"})),
                vec![],
                vec![err(
                    9,
                    -32601,
                    "nes/close is not translated by spindle bridge between ACP v2 (client) and v1 (agent)",
                )],
            )],
            errors: &[],
            warnings: &["method_not_bridged"],
            infos: &[],
        },
    ]
}

fn elicitation_cases() -> Vec<Case> {
    let elicit = json!({"elicitation":{"form":{},"url":{}}});
    let url = json!({"sessionId":"s1","mode":"url","elicitationId":"e1","url":"https://login.example/x","message":"Sign in"});
    let accept = json!({"action":"accept","content":{"mail":"a@b.c","age":3}});
    vec![
        Case {
            name: "v1 agent asks a v2 client (form then URL); answers and completion pass both ways",
            versions: (2, 1),
            policy: Policy::Strict,
            client_caps: elicit.clone(),
            agent_init: agent_caps(1, json!({"loadSession":true})),
            steps: vec![
                agent(
                    req(20, "elicitation/create", form("email")),
                    vec![],
                    vec![req(20, "elicitation/create", form("email"))],
                ),
                client(ok(20, accept.clone()), vec![ok(20, accept.clone())], vec![]),
                agent(
                    req(21, "elicitation/create", url.clone()),
                    vec![],
                    vec![req(21, "elicitation/create", url.clone())],
                ),
                agent(
                    note("elicitation/complete", json!({"elicitationId":"e1"})),
                    vec![],
                    vec![note("elicitation/complete", json!({"elicitationId":"e1"}))],
                ),
                client(
                    ok(21, json!({"action":"accept"})),
                    vec![ok(21, json!({"action":"accept"}))],
                    vec![],
                ),
            ],
            errors: &[],
            warnings: &[],
            infos: &[],
        },
        Case {
            name: "v2 agent asks a v1 client; a decline and a cancel pass back",
            versions: (1, 2),
            policy: Policy::Strict,
            client_caps: elicit.clone(),
            agent_init: agent_caps(2, json!({"session":{"prompt":{},"mcp":{"stdio":{}}}})),
            steps: vec![
                agent(
                    req(20, "elicitation/create", form("date")),
                    vec![],
                    vec![req(20, "elicitation/create", form("date"))],
                ),
                client(
                    ok(20, json!({"action":"decline"})),
                    vec![ok(20, json!({"action":"decline"}))],
                    vec![],
                ),
                agent(
                    req(21, "elicitation/create", url.clone()),
                    vec![],
                    vec![req(21, "elicitation/create", url.clone())],
                ),
                agent(
                    note("elicitation/complete", json!({"elicitationId":"e1"})),
                    vec![],
                    vec![note("elicitation/complete", json!({"elicitationId":"e1"}))],
                ),
                client(
                    ok(21, json!({"action":"cancel"})),
                    vec![ok(21, json!({"action":"cancel"}))],
                    vec![],
                ),
            ],
            errors: &[],
            warnings: &[],
            infos: &[],
        },
        Case {
            name: "strict: a v2-only string format is refused to the agent, the v1 client is not asked",
            versions: (1, 2),
            policy: Policy::Strict,
            client_caps: elicit.clone(),
            agent_init: agent_caps(2, json!({"session":{"prompt":{}}})),
            steps: vec![agent(
                req(22, "elicitation/create", form("hostname")),
                vec![err(
                    22,
                    -32603,
                    "elicitation/create: string format(s) v1 lacks: mail (format hostname) (the client speaks ACP v1)",
                )],
                vec![],
            )],
            errors: &["elicitation_format"],
            warnings: &[],
            infos: &[],
        },
        Case {
            name: "degrade: a v2-only string format is left out, the field asks for a plain string",
            versions: (1, 2),
            policy: Policy::Degrade,
            client_caps: elicit.clone(),
            agent_init: agent_caps(2, json!({"session":{"prompt":{}}})),
            steps: vec![agent(
                req(22, "elicitation/create", form("hostname")),
                vec![],
                vec![req(
                    22,
                    "elicitation/create",
                    json!({"sessionId":"s1","mode":"form","message":"Who?",
                    "requestedSchema":{"type":"object","properties":{"mail":{"type":"string"},
                    "age":{"type":"integer","minimum":0}},"required":["mail"]}}),
                )],
            )],
            errors: &[],
            warnings: &["elicitation_format"],
            infos: &[],
        },
        Case {
            name: "an empty choice list from a v1 agent has no v2 form: the agent gets -32603",
            versions: (2, 1),
            policy: Policy::Degrade,
            client_caps: elicit.clone(),
            agent_init: agent_caps(1, json!({})),
            steps: vec![agent(
                req(
                    23,
                    "elicitation/create",
                    json!({"sessionId":"s1","mode":"form","message":"Pick",
                    "requestedSchema":{"type":"object","properties":{"color":{"type":"string","enum":[]}}}}),
                ),
                vec![err(
                    23,
                    -32603,
                    "elicitation/create: field(s) color offer an empty choice list, which v2 forbids (the client speaks ACP v2)",
                )],
                vec![],
            )],
            errors: &["elicitation_empty_choice"],
            warnings: &[],
            infos: &[],
        },
    ]
}

/// The `initialize` exchange: capabilities converted both ways.
fn capability_cases() -> Vec<Case> {
    vec![
        Case {
            name: "v2 client before a v1 agent: elicitation and auth.terminal down, session, auth.logout, providers up",
            versions: (2, 1),
            policy: Policy::Strict,
            client_caps: json!({"elicitation":{"form":{},"url":{}},"auth":{"terminal":{}},"nes":{"jump":{}}}),
            agent_init: json!({"agentCapabilities":{"loadSession":true,
                "promptCapabilities":{"image":true},"mcpCapabilities":{"http":true,"sse":true,"acp":true},
                "sessionCapabilities":{"fork":{},"delete":{},"close":{},"additionalDirectories":{}},
                "auth":{"logout":{}},"providers":{},"nes":{}},
                "authMethods":[{"id":"key","name":"API key"}]}),
            steps: vec![],
            errors: &[],
            warnings: &[],
            infos: &[
                "capability_not_bridged",
                "capability_not_bridged",
                "capability_not_bridged",
            ],
        },
        Case {
            name: "v1 client before a v2 agent: fs and terminal stay behind; fork, delete, logout, acp reach the client",
            versions: (1, 2),
            policy: Policy::Strict,
            client_caps: json!({"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,
                "elicitation":{"form":{}},"auth":{"terminal":true}}),
            agent_init: json!({"capabilities":{"session":{"prompt":{"image":{}},
                "mcp":{"stdio":{},"http":{},"acp":{}},"fork":{},"delete":{},"additionalDirectories":{}},
                "providers":{}},
                "authMethods":[{"methodId":"key","name":"API key","type":"agent"}]}),
            steps: vec![],
            errors: &[],
            warnings: &[],
            infos: &["capability_not_bridged", "capability_not_bridged"],
        },
    ]
}

fn run(case: &Case) -> Rig {
    let mut r = start(case);
    for (n, step) in case.steps.iter().enumerate() {
        let t = match step.from {
            From::Client => r.client(step.line.clone()),
            From::Agent => r.agent(step.line.clone()),
        };
        let parse = |lines: &[String]| -> Vec<Value> {
            lines
                .iter()
                .map(|l| serde_json::from_str(l).expect("JSON"))
                .collect()
        };
        assert_eq!(
            parse(&t.to_agent),
            step.to_agent,
            "{} step {n}: to the agent",
            case.name
        );
        assert_eq!(
            parse(&t.to_client),
            step.to_client,
            "{} step {n}: to the client",
            case.name
        );
    }
    assert_eq!(r.errors(), case.errors, "{}: errors", case.name);
    assert_eq!(r.warnings(), case.warnings, "{}: warnings", case.name);
    assert_eq!(
        r.codes(spindle_bridge::Severity::Info),
        case.infos,
        "{}: infos",
        case.name
    );
    r
}

#[test]
fn fork_delete_close_list_logout_and_directories_cross_the_bridge() {
    for case in session_cases() {
        run(&case);
    }
}

#[test]
fn elicitation_crosses_the_bridge_both_ways() {
    for case in elicitation_cases() {
        run(&case);
    }
}

#[test]
fn initialize_converts_the_session_auth_and_elicitation_capabilities() {
    let cases = capability_cases();
    // v2 client, v1 agent.
    let r = run(&cases[0]);
    assert_eq!(
        r.agent_log[0]["params"]["clientCapabilities"],
        json!({"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,
               "session":{"compaction":{}},"elicitation":{"form":{},"url":{}},"auth":{"terminal":true}})
    );
    assert_eq!(
        r.client_log[0]["result"]["capabilities"],
        json!({"session":{"prompt":{"image":{}},"mcp":{"stdio":{},"http":{},"acp":{}},
               "fork":{},"delete":{},"additionalDirectories":{}},"providers":{}})
    );
    assert_eq!(
        r.client_log[0]["result"]["authMethods"],
        json!([{"methodId":"key","name":"API key","type":"agent"}])
    );
    // v1 client, v2 agent.
    let r = run(&cases[1]);
    assert_eq!(
        r.agent_log[0]["params"]["capabilities"],
        json!({"elicitation":{"form":{}},"auth":{"terminal":{}}})
    );
    assert_eq!(
        r.client_log[0]["result"]["agentCapabilities"],
        json!({"loadSession":true,"promptCapabilities":{"image":true,"audio":false,"embeddedContext":false},
               "mcpCapabilities":{"http":true,"sse":false,"acp":true},
               "sessionCapabilities":{"list":{},"resume":{},"close":{},"fork":{},"delete":{},"additionalDirectories":{}},
               "auth":{"logout":{}},"providers":{}})
    );
}
