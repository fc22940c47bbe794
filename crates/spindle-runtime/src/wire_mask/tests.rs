//! The masking rule, case by case: a line as logged, then the line as the inspector shows it
//! (`=` when it is shown unchanged).

use super::*;

/// (what the case pins, the logged line, the shown line or `=`).
const CASES: &[(&str, &str, &str)] = &[
    (
        "authenticate: every param but the method id",
        r#"{"jsonrpc":"2.0","id":3,"method":"authenticate","params":{"methodId":"api-key","apiKey":"sk-1","_meta":{"note":"x","n":7,"ok":true}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"authenticate","params":{"methodId":"api-key","apiKey":"<redacted>","_meta":{"note":"<redacted>","n":"<redacted>","ok":true}}}"#,
    ),
    (
        "auth/login (v2) the same",
        r#"{"jsonrpc":"2.0","id":1,"method":"auth/login","params":{"methodId":"m","code":"123456"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"auth/login","params":{"methodId":"m","code":"<redacted>"}}"#,
    ),
    (
        "authenticate with nothing but the method id",
        r#"{"jsonrpc":"2.0","id":1,"method":"authenticate","params":{"methodId":"oauth"}}"#,
        "=",
    ),
    (
        "session/new: MCP env and header values, names and the rest kept",
        r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[{"name":"gh","command":"gh-mcp","args":["--x"],"env":[{"name":"REGION","value":"eu"}]},{"type":"http","name":"web","url":"https://mcp.example/","headers":[{"name":"X-Trace","value":"t1"}]}]}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[{"name":"gh","command":"gh-mcp","args":["--x"],"env":[{"name":"REGION","value":"<redacted>"}]},{"type":"http","name":"web","url":"https://mcp.example/","headers":[{"name":"X-Trace","value":"<redacted>"}]}]}}"#,
    ),
    (
        "session/load, resume, fork: the same, env as an object too",
        r#"{"jsonrpc":"2.0","id":4,"method":"session/resume","params":{"sessionId":"s","cwd":"/w","mcpServers":[{"name":"a","command":"a","env":{"DB_URL":"postgres://u:p@h/db"}}]}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"session/resume","params":{"sessionId":"s","cwd":"/w","mcpServers":[{"name":"a","command":"a","env":{"DB_URL":"<redacted>"}}]}}"#,
    ),
    (
        "already redacted by the log: unchanged",
        r#"{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"s","cwd":"/w","mcpServers":[{"name":"gh","command":"c","args":[],"env":[{"name":"GITHUB_TOKEN","value":"<redacted>"}]}]}}"#,
        "=",
    ),
    (
        "a key that looks secret, anywhere, nested values included",
        r#"{"jsonrpc":"2.0","id":5,"result":{"accessToken":"a","refresh_token":"r","X-API-Key":"k","client_secret":"c","credentials":{"user":"u","pin":1234},"password":null,"cookieSet":true}}"#,
        r#"{"jsonrpc":"2.0","id":5,"result":{"accessToken":"<redacted>","refresh_token":"<redacted>","X-API-Key":"<redacted>","client_secret":"<redacted>","credentials":{"user":"<redacted>","pin":"<redacted>"},"password":null,"cookieSet":true}}"#,
    ),
    (
        "an environment variable whose name looks secret (terminal/create)",
        r#"{"jsonrpc":"2.0","id":"t","method":"terminal/create","params":{"sessionId":"s","command":"make","env":[{"name":"GITHUB_TOKEN","value":"ghp_x"},{"name":"PATH","value":"/bin"}]}}"#,
        r#"{"jsonrpc":"2.0","id":"t","method":"terminal/create","params":{"sessionId":"s","command":"make","env":[{"name":"GITHUB_TOKEN","value":"<redacted>"},{"name":"PATH","value":"/bin"}]}}"#,
    ),
    (
        "an Authorization header as a pair",
        r#"{"jsonrpc":"2.0","method":"x/y","params":{"headers":[{"name":"Authorization","value":"Bearer b"}]}}"#,
        r#"{"jsonrpc":"2.0","method":"x/y","params":{"headers":[{"name":"Authorization","value":"<redacted>"}]}}"#,
    ),
    (
        "counts of tokens are not secrets",
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":10,"size":100,"maxTokens":5,"inputTokens":3,"tokenizer":"t"}}}"#,
        "=",
    ),
    (
        "free text is not searched",
        r#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"my password is hunter2, token abc"}]}}"#,
        "=",
    ),
    (
        "a line that is not JSON is shown as it is",
        r#"{"jsonrpc":"2.0","method":"authenticate","params":{"apiKey":"sk-1""#,
        "=",
    ),
    (
        "a local line with a secret-looking key",
        r#"{"local":{"terminalExit":{"sessionId":"s","terminalId":"t1","exitCode":0,"signal":null,"authToken":"z"}}}"#,
        r#"{"local":{"terminalExit":{"sessionId":"s","terminalId":"t1","exitCode":0,"signal":null,"authToken":"<redacted>"}}}"#,
    ),
];

#[test]
fn each_case_is_masked_as_the_rule_says() {
    let mut failures = Vec::new();
    for (name, logged, shown) in CASES {
        let expected = if *shown == "=" { None } else { Some(*shown) };
        let got = mask_secrets(logged);
        if got.as_deref() != expected {
            failures.push(format!(
                "{name}\n  got:      {got:?}\n  expected: {expected:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn masking_twice_changes_nothing_more() {
    for (_, logged, _) in CASES {
        if let Some(once) = mask_secrets(logged) {
            assert_eq!(mask_secrets(&once), None, "{once}");
        }
    }
}

#[test]
fn keys_that_look_secret() {
    for key in [
        "token",
        "idToken",
        "API_KEY",
        "x-api-key",
        "AccessKeyId",
        "private_key",
        "Password",
        "passwd",
        "clientSecret",
        "Proxy-Authorization",
        "Set-Cookie",
        "awsCredentials",
    ] {
        assert!(key_looks_secret(key), "{key}");
    }
    for key in [
        "maxTokens",
        "inputTokens",
        "tokenizer",
        "methodId",
        "sessionId",
        "keys",
        "monkey",
        "path",
        "name",
    ] {
        assert!(!key_looks_secret(key), "{key}");
    }
}
