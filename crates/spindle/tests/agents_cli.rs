//! `spindle agents` end to end: a registry file whose `binary` entry is an archive of this very
//! `spindle` binary (cmd `./spindle`, args `["agent"]`), served on loopback; install, list, show,
//! doctor, update, remove; and an install killed halfway through its download.

mod agents_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use agents_support::{Body, Server, tar_gz};
use serde_json::{Value, json};

struct Env {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    config: PathBuf,
    home: PathBuf,
    registry: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let (data, config, home) = (
            tmp.path().join("data"),
            tmp.path().join("config"),
            tmp.path().join("home"),
        );
        for d in [&data, &config, &home] {
            std::fs::create_dir_all(d).unwrap();
        }
        let registry = tmp.path().join("registry.json");
        Env {
            data,
            config,
            home,
            registry,
            _tmp: tmp,
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let registry = self.registry.display().to_string();
        let mut with_registry = vec!["--registry", registry.as_str()];
        with_registry.extend_from_slice(args);
        self.command_without_registry(&with_registry)
    }

    /// `spindle agents ARGS` without `--registry` (and without `SPINDLE_REGISTRY`).
    fn command_without_registry(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_spindle"));
        cmd.arg("agents")
            .args(args)
            .env("XDG_DATA_HOME", &self.data)
            .env("XDG_CONFIG_HOME", &self.config)
            .env("HOME", &self.home)
            .env_remove("SPINDLE_REGISTRY")
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "spindle agents {args:?} failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn write_registry(&self, version: &str, archive_url: &str, sha256: Option<&str>) {
        let mut target = json!({"archive": archive_url, "cmd": "./spindle", "args": ["agent"]});
        if let Some(sha) = sha256 {
            target["sha256"] = sha.into();
        }
        let registry = json!({
            "version": "1.0.0",
            "agents": [
                {
                    "id": "spindle-reference",
                    "name": "Spindle reference agent",
                    "version": version,
                    "description": "The built-in deterministic agent",
                    "website": "https://example.invalid/spindle",
                    "futureField": {"tolerated": true},
                    "distribution": {"binary": {spindle_agents::current_platform(): target}}
                },
                {
                    "id": "elsewhere",
                    "name": "Elsewhere",
                    "version": "2.0.0",
                    "description": "Only on another platform",
                    "distribution": {"binary": {"windows-aarch64": {"archive": "https://example.invalid/x.zip", "cmd": "x.exe"}}}
                }
            ]
        });
        std::fs::write(
            &self.registry,
            serde_json::to_vec_pretty(&registry).unwrap(),
        )
        .unwrap();
    }

    fn agent_dir(&self) -> PathBuf {
        self.data.join("spindle/agents/spindle-reference")
    }

    fn record(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.agent_dir().join("install.json")).unwrap())
            .unwrap()
    }

    /// Every path under the data directory, relative, sorted.
    fn data_tree(&self) -> Vec<String> {
        fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                let is_dir = std::fs::symlink_metadata(&path).unwrap().is_dir();
                out.push(rel);
                if is_dir
                    && !path.ends_with("spindle-reference/1.0.0")
                    && !path.ends_with("spindle-reference/1.1.0")
                {
                    walk(root, &path, out);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.data, &self.data, &mut out);
        out.sort();
        out
    }
}

fn spindle_archive() -> Vec<u8> {
    let binary = std::fs::read(env!("CARGO_BIN_EXE_spindle")).unwrap();
    tar_gz(&[("spindle", &binary, 0o755)])
}

#[test]
fn install_list_show_doctor_update_remove() {
    let env = Env::new();
    let archive = spindle_archive();
    let sha = agents_support::sha256_hex(&archive);
    let server = Server::start(vec![
        ("/v1/spindle.tar.gz", Body::Full(archive.clone())),
        ("/v2/spindle.tar.gz", Body::Full(archive)),
    ]);
    env.write_registry("1.0.0", &server.url("/v1/spindle.tar.gz"), Some(&sha));

    let list = env.ok(&["list"]);
    assert!(
        list.contains("spindle-reference") && list.contains("1.0.0"),
        "{list}"
    );
    let out = env.ok(&["install", "spindle-reference"]);
    assert!(out.contains("installed spindle-reference 1.0.0"), "{out}");
    let record = env.record();
    assert_eq!(record["version"], "1.0.0");
    assert_eq!(record["distribution"], "binary");
    assert_eq!(record["args"], json!(["agent"]));
    let program = PathBuf::from(record["program"].as_str().unwrap());
    assert_eq!(program, env.agent_dir().join("1.0.0/spindle"));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&program).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert!(record["installedAt"].as_str().unwrap().ends_with('Z'));

    let again = env.ok(&["install", "spindle-reference"]);
    assert!(again.contains("already installed"), "{again}");

    let list: Value = serde_json::from_str(&env.ok(&["list", "--json"])).unwrap();
    let row = &list["agents"][0];
    assert_eq!(
        (
            row["id"].as_str(),
            row["installedVersion"].as_str(),
            row["updateAvailable"].as_bool()
        ),
        (Some("spindle-reference"), Some("1.0.0"), Some(false))
    );
    assert_eq!(list["agents"][1]["installedVersion"], Value::Null);

    let show = env.ok(&["show", "spindle-reference"]);
    for needle in [
        "Spindle reference agent (spindle-reference)",
        "website: https://example.invalid/spindle",
        "installed: 1.0.0 (binary)",
        &format!("sha256 {sha}"),
    ] {
        assert!(show.contains(needle), "{needle:?} missing from:\n{show}");
    }

    let doctor = env.ok(&["doctor", "spindle-reference"]);
    for needle in [
        "protocol version: 2",
        "session/new: ok",
        "Spindle extensions: agent_message_clear",
        // v2 names a config option `configId`; the values are shown.
        "config options: mode=default, model=spindle-fast",
        // The registry matrix's method probes: what the reference agent answers and lacks.
        "methods: session/list supported, session/set_model method not found, \
         session/fork supported, session/resume supported, session/close supported",
    ] {
        assert!(
            doctor.contains(needle),
            "{needle:?} missing from:\n{doctor}"
        );
    }
    let report: Value =
        serde_json::from_str(env.ok(&["doctor", "--json", "spindle-reference"]).trim()).unwrap();
    assert_eq!(report["protocolVersion"], 2);
    assert_eq!(report["sessionNew"]["outcome"], "ok");
    assert_eq!(
        report["methodProbes"][0],
        serde_json::json!({"method": "session/list", "outcome": "supported"})
    );
    assert_eq!(report["methodProbes"][2]["outcome"], "methodNotFound");

    // The registry moves on: update installs the new version beside, then drops the old.
    env.write_registry("1.1.0", &server.url("/v2/spindle.tar.gz"), None);
    let list = env.ok(&["list"]);
    assert!(list.contains("update available"), "{list}");
    let out = env.ok(&["update"]);
    assert!(
        out.contains("updated spindle-reference 1.0.0 -> 1.1.0"),
        "{out}"
    );
    assert!(env.agent_dir().join("1.1.0/spindle").is_file());
    assert!(!env.agent_dir().join("1.0.0").exists());
    let out = env.ok(&["update", "spindle-reference"]);
    assert!(
        out.contains("spindle-reference 1.1.0 is up to date"),
        "{out}"
    );

    let out = env.ok(&["remove", "spindle-reference"]);
    assert!(out.contains("removed spindle-reference 1.1.0"), "{out}");
    assert!(!env.agent_dir().exists());
    let out = env.run(&["remove", "spindle-reference"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not installed"));
}

#[test]
fn bad_input_is_a_clear_error() {
    let env = Env::new();
    let archive = tar_gz(&[("spindle", b"#!/bin/sh\n", 0o755)]);
    let server = Server::start(vec![
        ("/a.tar.gz", Body::Full(archive.clone())),
        (
            "/short.tar.gz",
            Body::Short {
                declared: archive.len() as u64 + 100,
                body: archive,
            },
        ),
    ]);
    let cases: &[(&str, &[&str], &str)] = &[
        ("{not json", &["list"], "the registry index is not JSON"),
        ("{\"version\": \"1.0.0\"}", &["list"], "agents: missing"),
        (
            "{\"version\": \"1.0.0\", \"agents\": []}",
            &["install", "nobody"],
            "no agent \"nobody\" in the registry",
        ),
        (
            "{\"version\": \"1.0.0\", \"agents\": []}",
            &["install", "../x"],
            "is not an agent id",
        ),
    ];
    for (registry, args, expected) in cases {
        std::fs::write(&env.registry, registry).unwrap();
        let out = env.run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{args:?}: {expected:?} missing from {stderr}"
        );
    }
    // A checksum that does not match, a platform with no binary, a truncated download.
    env.write_registry("1.0.0", &server.url("/a.tar.gz"), Some(&"0".repeat(64)));
    let stderr = String::from_utf8(env.run(&["install", "spindle-reference"]).stderr).unwrap();
    assert!(stderr.contains("but the registry says 0000"), "{stderr}");
    let stderr = String::from_utf8(env.run(&["install", "elsewhere"]).stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "elsewhere has no binary for {} (it has: windows-aarch64)",
            spindle_agents::current_platform()
        )),
        "{stderr}"
    );
    env.write_registry("1.0.0", &server.url("/short.tar.gz"), None);
    let stderr = String::from_utf8(env.run(&["install", "spindle-reference"]).stderr).unwrap();
    assert!(stderr.contains("was cut short"), "{stderr}");
    // Nothing but the lock is left of the failed installs.
    assert_eq!(
        env.data_tree(),
        [
            "spindle",
            "spindle/agents",
            "spindle/agents/spindle-reference",
            "spindle/agents/spindle-reference/.lock"
        ]
    );
}

#[test]
fn an_install_killed_halfway_leaves_the_earlier_one_working() {
    let env = Env::new();
    let archive = spindle_archive();
    let half = archive.len() / 2;
    let (stalled_tx, stalled_rx) = std::sync::mpsc::channel();
    let server = Server::start(vec![
        ("/v1/spindle.tar.gz", Body::Full(archive.clone())),
        (
            "/v2/spindle.tar.gz",
            Body::Stall {
                declared: archive.len() as u64,
                first: archive[..half].to_vec(),
                sent: stalled_tx,
            },
        ),
        ("/v3/spindle.tar.gz", Body::Full(archive)),
    ]);
    env.write_registry("1.0.0", &server.url("/v1/spindle.tar.gz"), None);
    env.ok(&["install", "spindle-reference"]);
    let record_before = env.record();

    env.write_registry("1.1.0", &server.url("/v2/spindle.tar.gz"), None);
    let mut child = env
        .command(&["update", "spindle-reference"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    stalled_rx.recv().unwrap();
    // The first half is on the wire; wait until it reached the download file, then kill.
    while !env.data_tree().iter().any(|p| p.ends_with(".download")) {
        std::thread::yield_now();
    }
    child.kill().unwrap();
    child.wait().unwrap();

    assert_eq!(env.record(), record_before);
    let dirs = spindle_agents::AgentsDirs {
        data: env.data.join("spindle"),
        config: env.config.join("spindle"),
    };
    let launch = spindle_agents::launch(&dirs, "spindle-reference").unwrap();
    let out = Command::new(&launch.program)
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).starts_with("spindle"));
    let leftovers: Vec<String> = env
        .data_tree()
        .into_iter()
        .filter(|p| p.contains(".staging-"))
        .collect();
    assert!(
        !leftovers.is_empty(),
        "the kill left no staging files: {:?}",
        env.data_tree()
    );
    assert!(
        leftovers
            .iter()
            .all(|p| p.starts_with("spindle/agents/spindle-reference/.staging-")),
        "{leftovers:?}"
    );

    env.write_registry("1.1.0", &server.url("/v3/spindle.tar.gz"), None);
    let out = env.ok(&["install", "spindle-reference"]);
    assert!(
        out.contains("installed spindle-reference 1.1.0 (replacing 1.0.0)"),
        "{out}"
    );
    assert_eq!(
        env.data_tree(),
        [
            "spindle",
            "spindle/agents",
            "spindle/agents/spindle-reference",
            "spindle/agents/spindle-reference/.lock",
            "spindle/agents/spindle-reference/1.1.0",
            "spindle/agents/spindle-reference/install.json",
        ]
    );
}

#[test]
fn a_registry_url_that_fails_falls_back_to_the_cached_copy() {
    let env = Env::new();
    env.write_registry("1.0.0", "https://example.invalid/spindle.tar.gz", None);
    let index = std::fs::read(&env.registry).unwrap();
    let server = Server::start(vec![(
        "/registry.json",
        Body::Once(std::sync::Mutex::new(Some(index))),
    )]);
    let url = server.url("/registry.json");
    let run = |args: &[&str]| {
        let mut cmd = env.command_without_registry(args);
        cmd.env("SPINDLE_REGISTRY", &url).output().unwrap()
    };
    let first = run(&["list"]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(env.data.join("spindle/agents/registry.json").is_file());
    let second = run(&["show", "spindle-reference"]);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(
        stderr.contains("the server answered 503; using the copy fetched"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("ago from {url}")), "{stderr}");
    assert!(String::from_utf8_lossy(&second.stdout).contains("registry version: 1.0.0"));
}

#[test]
fn doctor_checks_any_command() {
    let env = Env::new();
    let spindle = env!("CARGO_BIN_EXE_spindle");
    let v1 = env.ok(&["doctor", "--", spindle, "agent", "--protocol", "1"]);
    for needle in [
        "== command",
        "protocol version: 1",
        "capabilities: loadSession, promptCapabilities.image",
        "session/new: ok",
        "modes: default*, plan",
    ] {
        assert!(v1.contains(needle), "{needle:?} missing from:\n{v1}");
    }
    // A program named relative to the current directory is found although the agent runs in a
    // directory of its own.
    let exe = std::path::Path::new(spindle);
    let relative = std::process::Command::new(exe)
        .current_dir(exe.parent().unwrap())
        .args(["agents", "doctor", "--"])
        .arg(std::path::Path::new(".").join(exe.file_name().unwrap()))
        .arg("agent")
        .env("XDG_DATA_HOME", &env.data)
        .env("XDG_CONFIG_HOME", &env.config)
        .env("HOME", &env.home)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&relative.stdout);
    assert!(text.contains("session/new: ok"), "{text}");
    let out = env.run(&["doctor", "--", "sh", "-c", "echo dying >&2; exit 3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    for needle in [
        "failed: initialize failed: agent connection closed; the agent exited (exit status: 3)",
        "agent stderr (last lines):\n  dying",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    let out = env.run(&["doctor", "--json", "--", "/nonexistent/agent"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        report["failure"]
            .as_str()
            .unwrap()
            .starts_with("cannot start /nonexistent/agent"),
        "{report}"
    );
}
