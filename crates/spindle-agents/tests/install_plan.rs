//! Choosing what to install (kind, version, source) and the errors before any download; the
//! per-agent lock; what `remove` and `launch` see of a directory without a record.

use spindle_agents::{
    AgentLock, AgentsDirs, AgentsError, DistributionKind, InstallOptions, RegistryEntry,
    find_entry, parse_registry, plan_install_on, remove,
};

fn registry() -> spindle_agents::Registry {
    let text = serde_json::json!({
        "version": "1.0.0",
        "agents": [
            {"id": "all", "name": "All", "version": "0.9.2", "description": "d", "distribution": {
                "binary": {"linux-x86_64": {"archive": "https://h/all.tar.gz", "cmd": "./all"},
                           "darwin-aarch64": {"archive": "https://h/all-mac.zip", "cmd": "./all"}},
                "npx": {"package": "@scope/all@0.9.2"},
                "uvx": {"package": "all-agent"}}},
            {"id": "npx-only", "name": "N", "version": "1.0.0", "description": "d", "distribution": {
                "npx": {"package": "plain-name"}}},
            {"id": "mac-only", "name": "M", "version": "1.0.0", "description": "d", "distribution": {
                "binary": {"darwin-aarch64": {"archive": "https://h/m.zip", "cmd": "./m"}},
                "uvx": {"package": "m-agent==1.0.0"}}},
            {"id": "broken", "name": "B", "version": "1.0.0", "description": "d", "distribution": {}}
        ]
    })
    .to_string();
    parse_registry(&text).unwrap()
}

fn entry<'a>(registry: &'a spindle_agents::Registry, id: &str) -> &'a RegistryEntry {
    registry.agent(id).unwrap()
}

/// (id, platform, tools present, --dist, --version) -> kind, version, source, or the error.
#[test]
fn the_distribution_version_and_source_chosen() {
    use DistributionKind::*;
    let registry = registry();
    let all_tools = |_: DistributionKind| true;
    let no_tools = |k: DistributionKind| k == Binary;
    let no_node = |k: DistributionKind| k != Npx;
    type Present = dyn Fn(DistributionKind) -> bool;
    type Expected = Result<(DistributionKind, &'static str, &'static str), &'static str>;
    type Case<'a> = (
        &'a str,
        &'a str,
        &'a Present,
        Option<DistributionKind>,
        Option<&'a str>,
        Expected,
    );
    let cases: &[Case] = &[
        (
            "all",
            "linux-x86_64",
            &all_tools,
            None,
            None,
            Ok((Binary, "0.9.2", "https://h/all.tar.gz")),
        ),
        (
            "all",
            "linux-aarch64",
            &all_tools,
            None,
            None,
            Ok((Npx, "0.9.2", "@scope/all@0.9.2")),
        ),
        (
            "all",
            "linux-aarch64",
            &no_node,
            None,
            None,
            Ok((Uvx, "0.9.2", "all-agent==0.9.2")),
        ),
        (
            "all",
            "linux-x86_64",
            &all_tools,
            Some(Uvx),
            Some("1.0.0"),
            Ok((Uvx, "1.0.0", "all-agent==1.0.0")),
        ),
        (
            "all",
            "linux-x86_64",
            &all_tools,
            Some(Npx),
            Some("1.2.3-beta.1"),
            Ok((Npx, "1.2.3-beta.1", "@scope/all@1.2.3-beta.1")),
        ),
        (
            "npx-only",
            "linux-x86_64",
            &no_tools,
            None,
            None,
            Ok((Npx, "1.0.0", "plain-name@1.0.0")),
        ),
        (
            "mac-only",
            "linux-x86_64",
            &all_tools,
            None,
            None,
            Ok((Uvx, "1.0.0", "m-agent==1.0.0")),
        ),
        (
            "mac-only",
            "linux-x86_64",
            &all_tools,
            Some(Binary),
            None,
            Err(
                "mac-only has no binary for linux-x86_64 (it has: darwin-aarch64); it also offers uvx (use --dist)",
            ),
        ),
        (
            "npx-only",
            "linux-x86_64",
            &all_tools,
            Some(Binary),
            None,
            Err("npx-only is not distributed as binary (it offers: npx)"),
        ),
        (
            "all",
            "linux-x86_64",
            &all_tools,
            None,
            Some("1.0.0"),
            Err(
                "all's binary archives are those of version 0.9.2 (the registry's); --version 1.0.0 needs an npx or uvx distribution",
            ),
        ),
        (
            "all",
            "linux-x86_64",
            &all_tools,
            Some(Npx),
            Some("../1"),
            Err(
                "\"../1\" is not a version (MAJOR.MINOR.PATCH, letters, digits, '.', '-', '+', '_')",
            ),
        ),
    ];
    for (id, platform, present, dist, version, expected) in cases {
        let options = InstallOptions {
            dist: *dist,
            version: version.map(str::to_owned),
            ..InstallOptions::default()
        };
        let got = plan_install_on(entry(&registry, id), &options, platform, present)
            .map(|p| (p.kind, p.version, p.source))
            .map_err(|e| e.to_string());
        let expected = expected
            .map(|(k, v, s)| (k, v.to_owned(), s.to_owned()))
            .map_err(str::to_owned);
        assert_eq!(
            got, expected,
            "{id} on {platform} with {dist:?} {version:?}"
        );
    }
}

#[test]
fn unknown_and_broken_ids() {
    let registry = registry();
    let message = |id: &str| {
        find_entry(&registry, "reg.json", id)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        message("nobody"),
        "no agent \"nobody\" in the registry reg.json (see `spindle agents list`)"
    );
    assert_eq!(
        message("broken"),
        "the registry entry of \"broken\" cannot be used: registry entry agents[3] (\"broken\"): distribution: offers none of binary, npx, uvx"
    );
    assert!(message("../etc").contains("is not an agent id"));
}

#[test]
fn one_operation_per_agent_at_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = AgentsDirs {
        data: tmp.path().join("data"),
        config: tmp.path().join("config"),
    };
    let held = AgentLock::acquire(&dirs, "codex-acp").unwrap();
    // flock locks belong to open files: a second open in this process contends like another process.
    let second = AgentLock::acquire(&dirs, "codex-acp").unwrap_err();
    assert!(
        matches!(second, AgentsError::Busy { holder: Some(pid), .. } if pid == std::process::id()),
        "{second}"
    );
    assert!(AgentLock::acquire(&dirs, "other-agent").is_ok());
    let error = remove(&dirs, "codex-acp").unwrap_err().to_string();
    assert!(
        error.starts_with(
            "agent \"codex-acp\" is being installed, updated or removed by another process (pid "
        ),
        "{error}"
    );
    drop(held);
    // A directory without a record is not an install: remove says so, launch too.
    let error = remove(&dirs, "codex-acp").unwrap_err().to_string();
    assert_eq!(
        error,
        "agent \"codex-acp\" is not installed (see `spindle agents list`, then `spindle agents install codex-acp`)"
    );
    assert!(matches!(
        spindle_agents::launch(&dirs, "codex-acp"),
        Err(AgentsError::NotInstalled(_))
    ));
}
