//! Several agents in one `spindle serve` (issue 24, item 3): the built-in reference agent and
//! agents installed in the data directory (install records written here directly), each
//! session running the agent it was created with, across restarts; an unknown id refused; a
//! session whose agent is gone stays readable; `spindle chat --agent ID`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use spindle_agents::{AgentsDirs, DistributionKind, InstallRecord};

use crate::harness::TempDir;
use crate::serve_support::{Served, start_serve, temp_dir};

/// The data and config directories of one test, as `XDG_DATA_HOME` / `XDG_CONFIG_HOME`.
struct Homes {
    dir: TempDir,
}

impl Homes {
    fn new(name: &str) -> Homes {
        Homes {
            dir: temp_dir(name),
        }
    }

    fn xdg_data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn xdg_config(&self) -> PathBuf {
        self.dir.join("config")
    }

    fn agents_dirs(&self) -> AgentsDirs {
        AgentsDirs {
            data: self.xdg_data().join("spindle"),
            config: self.xdg_config().join("spindle"),
        }
    }

    fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "XDG_DATA_HOME".into(),
                self.xdg_data().display().to_string(),
            ),
            (
                "XDG_CONFIG_HOME".into(),
                self.xdg_config().display().to_string(),
            ),
        ]
    }

    /// Installs `id`: a shell that checks the record's env reached it, then runs the reference
    /// agent (so a session of this agent answers only when its env was applied).
    fn install(&self, id: &str, name: &str, version: &str) {
        let dirs = self.agents_dirs();
        let path = dirs.agent_dir(id).join(version);
        std::fs::create_dir_all(&path).unwrap();
        let mark = format!("{}_MARK", id.to_uppercase());
        let script = format!(
            "test \"${mark}\" = {id}-env || {{ echo \"{mark} missing\" >&2; exit 9; }}; exec \"$0\" agent"
        );
        InstallRecord {
            id: id.into(),
            name: name.into(),
            version: version.into(),
            distribution: DistributionKind::Binary,
            source: "test".into(),
            path,
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script, env!("CARGO_BIN_EXE_spindle").into()],
            env: BTreeMap::from([(mark, format!("{id}-env"))]),
            installed_at: "2026-11-28T00:00:00Z".into(),
            registry: "test".into(),
        }
        .write(&dirs)
        .unwrap();
    }

    fn serve(&self, db: &Path, args: &[&str]) -> Served {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        start_serve(db, args, &[], None, &env)
    }

    fn spindle(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_spindle"))
            .args(args)
            .envs(self.env())
            .current_dir(self.dir.join(""))
            .output()
            .unwrap()
    }
}

fn create(served: &Served, body: Value) -> Value {
    let response = served.post_json("/api/sessions", &body.to_string());
    assert_eq!(response.status, 201, "{}", response.body);
    serde_json::from_str(&response.body).unwrap()
}

/// Session id -> (agent id, name, version, available) as `GET /api/sessions` lists them.
fn listed_agents(served: &Served) -> BTreeMap<i64, (String, String, String, bool)> {
    let list = served.get_json("/api/sessions");
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let a = &s["agent"];
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (
                s["id"].as_i64().unwrap(),
                (
                    text(&a["id"]),
                    text(&a["name"]),
                    text(&a["version"]),
                    a["available"] == true,
                ),
            )
        })
        .collect()
}

fn entry(id: &str, name: &str, version: &str) -> (String, String, String, bool) {
    (id.into(), name.into(), version.into(), true)
}

#[test]
fn serve_agents_sessions_of_several_agents_run_side_by_side_and_keep_their_agent() {
    let homes = Homes::new("agents-side-by-side");
    homes.install("alpha", "Alpha Agent", "1.2.0");
    homes.install("beta", "Beta Agent", "0.3.1");
    // A damaged install is left out, the others still offered.
    let broken = homes.agents_dirs().agent_dir("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("install.json"), "{not json").unwrap();
    let db = homes.dir.join("db.sqlite");
    let version = env!("CARGO_PKG_VERSION");

    let served = homes.serve(&db, &["--agent", "alpha"]);
    let agents = served.get_json("/api/agents");
    assert_eq!(
        agents,
        json!({"agents": [
            {"id": "spindle", "name": "Spindle reference agent", "version": version, "default": false},
            {"id": "alpha", "name": "Alpha Agent", "version": "1.2.0", "default": true},
            {"id": "beta", "name": "Beta Agent", "version": "0.3.1", "default": false},
        ]})
    );

    let refused = served.post_json("/api/sessions", r#"{"agent": "gamma"}"#);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.body.contains("gamma") && refused.body.contains("spindle, alpha, beta"),
        "{}",
        refused.body
    );

    let default = create(&served, json!({}));
    assert_eq!(
        default["agent"],
        json!({"id": "alpha", "name": "Alpha Agent", "version": "1.2.0", "available": true})
    );
    let default = default["id"].as_i64().unwrap();
    let beta = create(&served, json!({"agent": "beta"}))["id"]
        .as_i64()
        .unwrap();
    let builtin = create(&served, json!({"agent": "spindle"}))["id"]
        .as_i64()
        .unwrap();
    // Three agents at once, one prompt each.
    for (session, text) in [
        (default, "to alpha"),
        (beta, "to beta"),
        (builtin, "to spindle"),
    ] {
        served.prompt(session, text);
    }
    for (session, text) in [
        (default, "to alpha"),
        (beta, "to beta"),
        (builtin, "to spindle"),
    ] {
        served.wait_reply_containing(session, text);
    }
    let expected = BTreeMap::from([
        (default, entry("alpha", "Alpha Agent", "1.2.0")),
        (beta, entry("beta", "Beta Agent", "0.3.1")),
        (
            builtin,
            entry("spindle", "Spindle reference agent", version),
        ),
    ]);
    assert_eq!(listed_agents(&served), expected);
    let info = served.get_json(&format!("/api/sessions/{beta}/agent"));
    assert_eq!(info["agent"]["id"], "beta");
    // The history is asked of the agent named (beta's process starts only with its env).
    let history = served.get_json("/api/agent-sessions?agent=beta");
    assert_eq!(history["supported"], true, "{history}");
    let refused = served.request("GET", "/api/agent-sessions?agent=gamma", None);
    assert_eq!(refused.status, 400, "{}", refused.body);
    let reopened = create(
        &served,
        json!({"agent": "beta", "agentSessionId": "earlier", "open": "resume"}),
    );
    assert_eq!(reopened["agent"]["id"], "beta");
    assert_eq!(reopened["agentSessionId"], "earlier");
    served.stop();

    // Another default after a restart, and alpha updated: every session keeps its own agent,
    // and alpha's records the version it runs once it started.
    homes.install("alpha", "Alpha Agent", "1.3.0");
    let served = homes.serve(&db, &["--agent", "spindle"]);
    let mut listed = listed_agents(&served);
    assert_eq!(
        listed.remove(&reopened["id"].as_i64().unwrap()),
        Some(entry("beta", "Beta Agent", "0.3.1"))
    );
    assert_eq!(listed, expected);
    served.prompt(beta, "beta again");
    served.wait_reply_containing(beta, "beta again");
    served.prompt(default, "alpha again");
    served.wait_reply_containing(default, "alpha again");
    assert_eq!(
        listed_agents(&served)[&default],
        entry("alpha", "Alpha Agent", "1.3.0")
    );
    served.stop();

    // An agent gone: its session says so and stays readable; the others run.
    std::fs::remove_dir_all(homes.agents_dirs().agent_dir("beta")).unwrap();
    let served = homes.serve(&db, &[]);
    let listed = listed_agents(&served);
    assert_eq!(
        listed[&beta],
        ("beta".into(), "beta".into(), "0.3.1".into(), false)
    );
    let refused = served.post_json(
        &format!("/api/sessions/{beta}/prompt"),
        r#"{"text": "anyone?"}"#,
    );
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert!(
        refused.body.contains("\\\"beta\\\" 0.3.1") && refused.body.contains("does not offer"),
        "{}",
        refused.body
    );
    let replies = served.replies(beta);
    assert!(
        replies
            .iter()
            .any(|r| r["text"].as_str().unwrap().contains("beta again")),
        "{replies:?}"
    );
    assert!(
        served
            .get_json(&format!("/api/sessions/{beta}/transcript"))
            .to_string()
            .contains("to beta")
    );
    served.prompt(builtin, "still here");
    served.wait_reply_containing(builtin, "still here");
    served.stop();
}

#[test]
fn serve_agents_a_command_after_dashes_is_offered_and_default_and_agents_toml_names_a_default() {
    let homes = Homes::new("agents-command");
    homes.install("alpha", "Alpha Agent", "1.2.0");
    let db = homes.dir.join("db.sqlite");
    let env = homes.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let agent = [env!("CARGO_BIN_EXE_spindle").into(), "agent".into()];
    let served = start_serve(&db, &[], &agent, None, &env);
    let agents = served.get_json("/api/agents");
    let ids: Vec<(&str, bool)> = agents["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["id"].as_str().unwrap(), a["default"] == true))
        .collect();
    // The command's program is `spindle`, taken by the built-in agent.
    assert_eq!(
        ids,
        [("spindle", false), ("alpha", false), ("spindle-2", true)]
    );
    served.stop();

    std::fs::create_dir_all(homes.agents_dirs().config).unwrap();
    std::fs::write(
        homes.agents_dirs().settings_file(),
        "[agents.alpha]\ndefault = true\n",
    )
    .unwrap();
    let served = homes.serve(&db, &[]);
    let agents = served.get_json("/api/agents");
    assert_eq!(agents["agents"][1]["id"], "alpha");
    assert_eq!(agents["agents"][1]["default"], true);
    served.stop();

    let refused = homes.spindle(&["serve", "--bind", "127.0.0.1:0", "--agent", "gamma"]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("\"gamma\"") && stderr.contains("spindle, alpha"),
        "{stderr}"
    );
}

#[test]
fn serve_agents_chat_runs_an_installed_agent_by_id_with_its_env() {
    let homes = Homes::new("agents-chat");
    homes.install("beta", "Beta Agent", "0.3.1");
    let done = homes.spindle(&["chat", "--agent", "beta", "--prompt", "hello beta"]);
    assert_eq!(
        done.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(String::from_utf8_lossy(&done.stdout).contains("hello beta"));

    let builtin = homes.spindle(&["chat", "--agent", "spindle", "--prompt", "hello builtin"]);
    assert_eq!(builtin.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&builtin.stdout).contains("hello builtin"));

    let unknown = homes.spindle(&["chat", "--agent", "gamma", "--prompt", "x"]);
    assert_eq!(unknown.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(stderr.contains("\"gamma\" is not installed"), "{stderr}");
}
