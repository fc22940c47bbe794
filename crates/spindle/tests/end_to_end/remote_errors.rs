//! What an `/acp` client is answered when the session runtime refuses a request: the runtime's
//! typed errors mapped to ACP's JSON-RPC codes, never a bare internal error.

use serde_json::json;

use crate::remote_support::AcpHttp;
use crate::serve_support::{reference_agent_with, serve_version, temp_dir};

#[test]
fn remote_errors_a_prompt_to_a_session_that_needs_sign_in_gets_auth_required_with_the_methods() {
    for protocol in [1u8, 2] {
        let dir = temp_dir(&format!("remote-auth-v{protocol}"));
        let agent = reference_agent_with(protocol, &["--require-auth"]);
        let served = serve_version(&dir, &dir.path, protocol, &[], &agent);
        let mut client = AcpHttp::connect(&served, &[]);
        let mut connection_stream = client.connection_stream(None);
        let session = client.new_session(&mut connection_stream);
        let number: i64 = session.parse().expect("a page session's id");
        let info = served.wait_agent_info(number, "needs_auth", |i| i["needsAuth"] == true);
        let offered = info["authMethods"]
            .as_array()
            .expect("the agent's methods")
            .clone();
        assert!(!offered.is_empty(), "{info}");
        let mut stream = client.session_stream(&session, None);

        let prompt = json!({ "sessionId": session,
                             "prompt": [{ "type": "text", "text": "hello" }] });
        let (id, status) = client.request("session/prompt", prompt, Some(&session));
        assert_eq!(status, 202);
        let answer = stream.response(id);
        let error = &answer["error"];
        assert_eq!(
            error["code"], -32000,
            "auth_required (agent v{protocol}): {answer}"
        );
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("authentication"),
            "{answer}"
        );
        // The client speaks v1 (initialize_params): the methods in v1's shape.
        let methods = error["data"]["authMethods"]
            .as_array()
            .expect("authMethods");
        let ids: Vec<&str> = methods.iter().map(|m| m["id"].as_str().unwrap()).collect();
        let expected: Vec<&str> = offered.iter().map(|m| m["id"].as_str().unwrap()).collect();
        assert_eq!(ids, expected, "{answer}");
        assert!(methods.iter().all(|m| m["name"].is_string()), "{answer}");
        served.stop();
    }
}
