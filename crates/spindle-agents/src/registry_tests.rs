use super::*;
use serde_json::json;

fn entry(distribution: Value) -> Value {
    json!({"id": "codex-acp", "name": "Codex", "version": "0.9.2", "description": "d", "distribution": distribution})
}

fn index(agents: Value) -> String {
    json!({"version": "1.0.0", "agents": agents}).to_string()
}

/// The whole index is refused: (input, message).
#[test]
fn unreadable_indexes_are_errors() {
    let cases = [
        (
            "{",
            "the registry index is not JSON: EOF while parsing an object at line 1 column 1",
        ),
        (
            "[]",
            "the registry index: (top level): expected an object, found an array",
        ),
        ("{\"agents\": []}", "the registry index: version: missing"),
        (
            "{\"version\": 1, \"agents\": []}",
            "the registry index: version: expected a string, found a number",
        ),
        (
            "{\"version\": \"1.0.0\"}",
            "the registry index: agents: missing",
        ),
        (
            "{\"version\": \"1.0.0\", \"agents\": {}}",
            "the registry index: agents: expected an array, found an object",
        ),
    ];
    for (input, message) in cases {
        assert_eq!(
            parse_registry(input).unwrap_err().to_string(),
            message,
            "{input}"
        );
    }
}

/// One bad entry is dropped, named by position, id and field; the others stay usable.
#[test]
fn bad_entries_are_reported_by_index_id_and_field() {
    let binary = |target: Value| entry(json!({"binary": {"linux-x86_64": target}}));
    let cases = [
        (
            json!("text"),
            "registry entry agents[0]: (entry): expected an object, found a string",
        ),
        (
            json!({"name": "x"}),
            "registry entry agents[0]: id: missing",
        ),
        (
            json!({"id": 7}),
            "registry entry agents[0]: id: expected a string, found a number",
        ),
        (
            json!({"id": "Bad_Id"}),
            "registry entry agents[0] (\"Bad_Id\"): id: \"Bad_Id\" is not an id (lowercase letters, digits and '-', starting with a letter)",
        ),
        (
            json!({"id": "a", "version": "1.0"}),
            "registry entry agents[0] (\"a\"): version: \"1.0\" is not a version (MAJOR.MINOR.PATCH...)",
        ),
        (
            json!({"id": "a", "version": "1.0.0/../x"}),
            "registry entry agents[0] (\"a\"): version: \"1.0.0/../x\" is not a version (MAJOR.MINOR.PATCH...)",
        ),
        (
            json!({"id": "a", "version": "1.0.0", "name": "A", "description": "d"}),
            "registry entry agents[0] (\"a\"): distribution: missing",
        ),
        (
            entry(json!({})),
            "registry entry agents[0] (\"codex-acp\"): distribution: offers none of binary, npx, uvx",
        ),
        (
            entry(json!({"binary": {}})),
            "registry entry agents[0] (\"codex-acp\"): distribution.binary: no platform",
        ),
        (
            binary(json!({"cmd": "./x"})),
            "registry entry agents[0] (\"codex-acp\"): distribution.binary.linux-x86_64.archive: missing",
        ),
        (
            binary(json!({"archive": 3, "cmd": "./x"})),
            "registry entry agents[0] (\"codex-acp\"): distribution.binary.linux-x86_64.archive: expected a string, found a number",
        ),
        (
            binary(json!({"archive": "ftp://h/x.zip", "cmd": "./x"})),
            "registry entry agents[0] (\"codex-acp\"): distribution.binary.linux-x86_64.archive: \"ftp://h/x.zip\" is not an http(s) URL",
        ),
        (
            binary(json!({"archive": "https://h/x.zip"})),
            "registry entry agents[0] (\"codex-acp\"): distribution.binary.linux-x86_64.cmd: missing",
        ),
        (
            binary(json!({"archive": "https://h/x.zip", "cmd": "./x", "args": "--acp"})),
            "registry entry agents[0] (\"codex-acp\"): distribution.binary.linux-x86_64.args: expected an array of strings, found a string",
        ),
        (
            binary(json!({"archive": "https://h/x.zip", "cmd": "./x", "args": [1]})),
            "registry entry agents[0] (\"codex-acp\"): distribution.binary.linux-x86_64.args[0]: expected a string, found a number",
        ),
        (
            binary(json!({"archive": "https://h/x.zip", "cmd": "./x", "env": {"K": 1}})),
            "registry entry agents[0] (\"codex-acp\"): distribution.binary.linux-x86_64.env.K: expected a string, found a number",
        ),
        (
            binary(json!({"archive": "https://h/x.zip", "cmd": "./x", "sha256": "abc"})),
            "registry entry agents[0] (\"codex-acp\"): distribution.binary.linux-x86_64.sha256: \"abc\" is not a SHA-256 digest (64 hex digits)",
        ),
        (
            entry(json!({"npx": {"args": []}})),
            "registry entry agents[0] (\"codex-acp\"): distribution.npx.package: missing",
        ),
        (
            entry(json!({"uvx": {"package": ""}})),
            "registry entry agents[0] (\"codex-acp\"): distribution.uvx.package: empty",
        ),
        (
            entry(json!({"npx": {"package": "p", "cmd": "../bin/x"}})),
            "registry entry agents[0] (\"codex-acp\"): distribution.npx.cmd: \"../bin/x\" is not a program name (no '/', not starting with '.')",
        ),
    ];
    for (bad, message) in cases {
        let good = entry(json!({"npx": {"package": "@scope/good@1.0.0"}}));
        let mut good = good;
        good["id"] = "good".into();
        let registry = parse_registry(&index(json!([bad, good]))).unwrap();
        assert_eq!(registry.problems.len(), 1, "{message}");
        assert_eq!(registry.problems[0].to_string(), message);
        assert_eq!(registry.agents.len(), 1);
        assert_eq!(registry.agents[0].id, "good");
    }
}

#[test]
fn the_format_as_published_reads_with_unknown_fields_and_the_newest_additions() {
    let text = json!({
        "version": "1.0.0",
        "agents": [{
            "id": "codex-acp", "name": "Codex CLI", "version": "0.9.2", "description": "ACP adapter",
            "repository": "https://github.com/zed-industries/codex-acp", "website": "https://openai.com/codex",
            "authors": ["OpenAI"], "license": "Apache-2.0", "icon": "./icon.svg", "somethingNew": [1, 2],
            "distribution": {
                "binary": {"linux-x86_64": {"archive": "https://h/codex.tar.gz", "cmd": "./codex-acp", "env": {"RUST_LOG": "warn"},
                                            "sha256": "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789"}},
                "npx": {"package": "@zed-industries/codex-acp@0.9.2", "cmd": "codex-acp", "args": ["--acp"]},
                "uvx": {"package": "codex-acp==0.9.2"}
            }
        }],
        "extensions": []
    })
    .to_string();
    let registry = parse_registry(&text).unwrap();
    assert!(registry.problems.is_empty());
    let e = registry.agent("codex-acp").unwrap();
    assert_eq!(e.website.as_deref(), Some("https://openai.com/codex"));
    assert_eq!(e.distribution.kinds(), ["binary", "npx", "uvx"]);
    let target = &e.distribution.binary["linux-x86_64"];
    assert_eq!(
        target.sha256.as_deref(),
        Some("abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789")
    );
    assert_eq!(target.env["RUST_LOG"], "warn");
    assert_eq!(
        e.distribution.npx.as_ref().unwrap().cmd.as_deref(),
        Some("codex-acp")
    );
    // Without `extensions` (optional) and with a duplicate id.
    let text = index(json!([
        entry(json!({"npx": {"package": "a"}})),
        entry(json!({"npx": {"package": "b"}}))
    ]));
    let registry = parse_registry(&text).unwrap();
    assert_eq!(registry.agents.len(), 1);
    assert_eq!(
        registry.problems[0].to_string(),
        "registry entry agents[1] (\"codex-acp\"): id: the same id as an earlier entry (the earlier one is used)"
    );
}

#[test]
fn versions_that_name_directories() {
    for good in ["0.9.2", "1.0.0-beta.1", "2.6.0+build_7"] {
        assert!(valid_version(good), "{good}");
    }
    for bad in [
        "", "1", "1.0", "1.0.x", ".1.0.0", "1.0.0/..", "1.0.0 x", "a.b.c",
    ] {
        assert!(!valid_version(bad), "{bad}");
    }
}

#[test]
fn the_platform_key_is_one_the_registry_spells() {
    let platform = current_platform();
    if cfg!(any(target_os = "linux", target_os = "macos"))
        && cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
    {
        assert!(PLATFORMS.contains(&platform.as_str()), "{platform}");
    }
}
