//! Two spindle-bridge instances back to back, shared by the round-trip targets: the client
//! speaks the outer version to the client-side bridge, the two bridges speak the inner version to
//! each other, and the agent-side bridge speaks the outer version to the scripted agent. Lines
//! travel through a work queue until both bridges are quiet.

use std::collections::VecDeque;

use serde_json::Value;
use spindle_bridge::{Bridge, BridgeConfig, Policy, Severity, Translated};

/// One line on its way into one bridge.
enum Hop {
    ClientSideFromClient(String),
    AgentSideFromClient(String),
    AgentSideFromAgent(String),
    ClientSideFromAgent(String),
}

pub struct Chain {
    /// Outer version towards the client, inner version towards the other bridge.
    client_side: Bridge,
    /// Inner version towards the other bridge, outer version towards the agent.
    agent_side: Bridge,
    /// What reached the client.
    pub to_client: Vec<String>,
    /// What reached the agent.
    pub to_agent: Vec<String>,
    /// A warning or error was reported: the round trip may differ.
    pub lossy: bool,
}

impl Chain {
    pub fn new(outer: u16, inner: u16, policy: Policy) -> Chain {
        let bridge = |client, agent| {
            Bridge::new(BridgeConfig {
                client_protocol: Some(client),
                agent_protocol: Some(agent),
                policy,
            })
        };
        Chain {
            client_side: bridge(outer, inner),
            agent_side: bridge(inner, outer),
            to_client: Vec::new(),
            to_agent: Vec::new(),
            lossy: false,
        }
    }

    /// A line the client sends.
    pub fn run_from_client(&mut self, line: String) {
        self.run(Hop::ClientSideFromClient(line));
    }

    /// A line the agent sends.
    pub fn run_from_agent(&mut self, line: String) {
        self.run(Hop::AgentSideFromAgent(line));
    }

    fn note(&mut self, input_is_json: bool, out: &Translated) {
        if out
            .diagnostics
            .iter()
            .any(|d| d.severity >= Severity::Warning)
        {
            self.lossy = true;
        }
        if input_is_json {
            for line in out.to_agent.iter().chain(&out.to_client) {
                assert!(!line.contains('\n'), "one line per message: {line:?}");
                assert!(
                    serde_json::from_str::<Value>(line).is_ok(),
                    "a bridge emitted non-JSON: {line:?}"
                );
            }
        }
    }

    fn run(&mut self, first: Hop) {
        let mut queue = VecDeque::from([first]);
        let mut steps = 0u32;
        while let Some(hop) = queue.pop_front() {
            steps += 1;
            assert!(steps < 10_000, "the bridges keep bouncing lines");
            match hop {
                Hop::ClientSideFromClient(line) => {
                    let json = is_json(&line);
                    let out = self.client_side.from_client(&line);
                    self.note(json, &out);
                    queue.extend(out.to_agent.into_iter().map(Hop::AgentSideFromClient));
                    self.to_client.extend(out.to_client);
                }
                Hop::AgentSideFromClient(line) => {
                    let json = is_json(&line);
                    let out = self.agent_side.from_client(&line);
                    self.note(json, &out);
                    self.to_agent.extend(out.to_agent);
                    queue.extend(out.to_client.into_iter().map(Hop::ClientSideFromAgent));
                }
                Hop::AgentSideFromAgent(line) => {
                    let json = is_json(&line);
                    let out = self.agent_side.from_agent(&line);
                    self.note(json, &out);
                    queue.extend(out.to_client.into_iter().map(Hop::ClientSideFromAgent));
                    self.to_agent.extend(out.to_agent);
                }
                Hop::ClientSideFromAgent(line) => {
                    let json = is_json(&line);
                    let out = self.client_side.from_agent(&line);
                    self.note(json, &out);
                    self.to_client.extend(out.to_client);
                    queue.extend(out.to_agent.into_iter().map(Hop::AgentSideFromClient));
                }
            }
        }
    }
}

fn is_json(line: &str) -> bool {
    serde_json::from_str::<Value>(line).is_ok()
}
