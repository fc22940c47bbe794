//! The session lifecycle calls of schema 1.20.0 in v1 and v2: session/fork,
//! session/delete, logout (v1 `logout`, v2 `auth/logout`) and
//! `additionalDirectories` on session/new, load, resume and fork. Each is
//! refused without the agent's capability, spelled per version when
//! advertised, and every message the client sends validates against the
//! schema of the negotiated version.

use crate::common::*;
use serde_json::{Value, json};
use spindle_protocol::schema_check::SchemaConversation;
use spindle_protocol::{
    AcpClient, ClientError, ClientEvent, ClientOptions, ProtocolChoice, SessionFeatures,
};

fn v2_options() -> ClientOptions {
    ClientOptions {
        protocol: ProtocolChoice::V2Preferred,
        ..ClientOptions::default()
    }
}

/// A v1 agent advertising every lifecycle capability.
fn v1_everything() -> Value {
    json!({"protocolVersion": 1, "authMethods": [{"id": "tok", "name": "Token"}],
           "agentCapabilities": {"loadSession": true,
               "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "fork": {}, "delete": {},
                                       "additionalDirectories": {}},
               "auth": {"logout": {}}}})
}

/// A v2 agent advertising every lifecycle capability.
fn v2_everything() -> Value {
    json!({"protocolVersion": 2, "info": {"name": "a", "version": "0"},
           "authMethods": [{"type": "agent", "methodId": "tok", "name": "Token"}],
           "capabilities": {"session": {"fork": {}, "delete": {}, "additionalDirectories": {}}}})
}

fn all_features() -> SessionFeatures {
    SessionFeatures {
        can_close: true,
        can_fork: true,
        can_delete: true,
        can_logout: true,
        additional_directories: true,
    }
}

/// Every message both ways validates against the negotiated version's
/// schema (the agent's answers here are the shapes a real agent sends).
fn assert_all_messages_valid(agent: &ScriptedAgent) {
    agent.assert_client_messages_valid();
    let mut conversation = SchemaConversation::new();
    for (direction, json) in &agent.log {
        if let Err(errors) = conversation.check(*direction, json) {
            panic!("message violates the schema: {json}\n{errors:#?}");
        }
    }
}

/// Answers the next request `method` with `result` and returns its params.
async fn answer(agent: &mut ScriptedAgent, method: &str, result: Value) -> Value {
    let (id, params) = agent.expect_request(method).await;
    agent.reply(id, result).await;
    params
}

#[tokio::test]
async fn fork_delete_logout_and_directories_when_advertised() {
    for v2 in [false, true] {
        let options = if v2 {
            v2_options()
        } else {
            ClientOptions::default()
        };
        let (client, mut events, mut agent) = start(options);
        let result = if v2 { v2_everything() } else { v1_everything() };
        let init = initialize_with(&client, &mut agent, if v2 { 2 } else { 1 }, result).await;
        assert_eq!(init.session_features(), all_features(), "v2: {v2}");
        let dirs = vec!["/extra/one".to_owned(), "/extra/two".to_owned()];
        assert_eq!(init.additional_directories_note(&dirs), None);

        // session/new with additional directories.
        let (c, d) = (client.clone(), dirs.clone());
        let t =
            tokio::spawn(async move { c.new_session_with_directories("/w", &json!([]), &d).await });
        let params = answer(&mut agent, "session/new", json!({"sessionId": "s1"})).await;
        assert_eq!(
            params,
            json!({"cwd": "/w", "mcpServers": [], "additionalDirectories": dirs})
        );
        assert_eq!(t.await.unwrap().unwrap().0, "s1");

        // session/fork: the new session's updates sent before the answer are
        // expected (no "unknown session" diagnostic).
        let (c, d) = (client.clone(), dirs.clone());
        let t = tokio::spawn(async move { c.fork_session("s1", "/w", &json!([]), &d).await });
        let (id, params) = agent.expect_request("session/fork").await;
        assert_eq!(
            params,
            json!({"sessionId": "s1", "cwd": "/w", "mcpServers": [], "additionalDirectories": dirs})
        );
        agent
            .update(
                "s2",
                json!({"sessionUpdate": "session_info_update", "title": "forked"}),
            )
            .await;
        agent.reply(id, json!({"sessionId": "s2"})).await;
        let (forked, raw) = t.await.unwrap().unwrap();
        assert_eq!(forked, "s2");
        assert!(raw.get().contains("s2"));
        match next_event(&mut events).await {
            ClientEvent::SessionUpdate { session_id, .. } => assert_eq!(&*session_id, "s2"),
            other => panic!("expected the fork's update, got {other:?}"),
        }

        // Load (v1 session/load, v2 session/resume with replay) and resume
        // carry the directories too.
        let (c, d) = (client.clone(), dirs.clone());
        let t = tokio::spawn(async move {
            c.load_session_with_directories("s1", "/w", &json!([]), &d)
                .await
        });
        let method = if v2 { "session/resume" } else { "session/load" };
        let params = answer(&mut agent, method, json!({})).await;
        assert_eq!(params["additionalDirectories"], json!(dirs));
        t.await.unwrap().unwrap();
        let (c, d) = (client.clone(), dirs.clone());
        let t = tokio::spawn(async move {
            c.resume_session_with_directories("s2", "/w", &json!([]), &d, None)
                .await
        });
        let params = answer(&mut agent, "session/resume", json!({})).await;
        assert_eq!(params["additionalDirectories"], json!(dirs));
        assert_eq!(params.get("replayFrom"), None);
        t.await.unwrap().unwrap();

        // session/list reports each session's directories.
        let c = client.clone();
        let t = tokio::spawn(async move { c.list_sessions(None, None).await });
        answer(
            &mut agent,
            "session/list",
            json!({"sessions": [
                {"sessionId": "s1", "cwd": "/w", "additionalDirectories": dirs},
                {"sessionId": "s2", "cwd": "/w"},
            ]}),
        )
        .await;
        let list = t.await.unwrap().unwrap();
        assert_eq!(list.sessions[0].additional_directories, dirs);
        assert!(list.sessions[1].additional_directories.is_empty());

        // session/delete, session/close, logout.
        let c = client.clone();
        let t = tokio::spawn(async move { c.delete_session("s2").await });
        let params = answer(&mut agent, "session/delete", json!({})).await;
        assert_eq!(params, json!({"sessionId": "s2"}));
        t.await.unwrap().unwrap();
        let c = client.clone();
        let t = tokio::spawn(async move { c.close_session("s1").await });
        answer(&mut agent, "session/close", json!({})).await;
        t.await.unwrap().unwrap();
        let c = client.clone();
        let t = tokio::spawn(async move { c.logout().await });
        let method = if v2 { "auth/logout" } else { "logout" };
        let params = answer(&mut agent, method, json!({})).await;
        assert_eq!(params, json!({}));
        t.await.unwrap().unwrap();

        // A relative directory never reaches the agent.
        let refused = client
            .new_session_with_directories("/w", &json!([]), &["rel/dir".to_owned()])
            .await
            .unwrap_err();
        assert!(
            matches!(&refused, ClientError::Protocol(m) if m.contains("rel/dir") && m.contains("absolute")),
            "{refused}"
        );
        assert_all_messages_valid(&agent);
    }
}

/// Expects `call` to be refused with [`ClientError::Unsupported`] naming
/// `capability`.
async fn assert_refused<F, Fut, R>(client: &AcpClient, call: F, capability: &str)
where
    F: FnOnce(AcpClient) -> Fut,
    Fut: std::future::Future<Output = Result<R, ClientError>>,
    R: std::fmt::Debug,
{
    let refused = call(client.clone()).await.unwrap_err();
    assert!(
        matches!(&refused, ClientError::Unsupported(m) if m.contains(capability)),
        "expected a refusal naming {capability}: {refused}"
    );
}

#[tokio::test]
async fn refused_without_the_capabilities_and_directories_left_out_with_a_note() {
    for v2 in [false, true] {
        let options = if v2 {
            v2_options()
        } else {
            ClientOptions::default()
        };
        let (client, _events, mut agent) = start(options);
        // v1: auth methods but no auth.logout; v2: no auth methods at all.
        let init = if v2 {
            init_v2(&client, &mut agent).await;
            client.initialize_outcome().unwrap()
        } else {
            initialize_with(
                &client,
                &mut agent,
                1,
                json!({"protocolVersion": 1, "authMethods": [{"id": "tok", "name": "Token"}],
                       "agentCapabilities": {"loadSession": true}}),
            )
            .await
        };
        let features = init.session_features();
        assert!(!features.can_fork && !features.can_delete && !features.can_logout);
        assert!(!features.additional_directories);
        assert_eq!(features.can_close, v2, "close is baseline in v2 only");
        let (fork_cap, delete_cap, logout_cap, dirs_cap) = if v2 {
            (
                "capabilities.session.fork",
                "capabilities.session.delete",
                "authMethods",
                "capabilities.session.additionalDirectories",
            )
        } else {
            (
                "sessionCapabilities.fork",
                "sessionCapabilities.delete",
                "auth.logout",
                "sessionCapabilities.additionalDirectories",
            )
        };
        assert_refused(
            &client,
            |c| async move { c.fork_session("s1", "/w", &json!([]), &[]).await },
            fork_cap,
        )
        .await;
        assert_refused(
            &client,
            |c| async move { c.delete_session("s1").await },
            delete_cap,
        )
        .await;
        assert_refused(&client, |c| async move { c.logout().await }, logout_cap).await;

        // Directories the agent does not accept are left out; the note names
        // the capability and each directory.
        let dirs = vec!["/extra/one".to_owned()];
        let note = init.additional_directories_note(&dirs).unwrap();
        assert!(
            note.contains(dirs_cap) && note.contains("/extra/one"),
            "{note}"
        );
        assert_eq!(init.additional_directories_note(&[]), None);
        let (c, d) = (client.clone(), dirs.clone());
        let t =
            tokio::spawn(async move { c.new_session_with_directories("/w", &json!([]), &d).await });
        let params = answer(&mut agent, "session/new", json!({"sessionId": "s1"})).await;
        assert_eq!(params, json!({"cwd": "/w", "mcpServers": []}));
        t.await.unwrap().unwrap();
        let (c, d) = (client.clone(), dirs.clone());
        let t = tokio::spawn(async move {
            c.load_session_with_directories("s1", "/w", &json!([]), &d)
                .await
        });
        let method = if v2 { "session/resume" } else { "session/load" };
        let params = answer(&mut agent, method, json!({})).await;
        assert_eq!(params.get("additionalDirectories"), None);
        t.await.unwrap().unwrap();
        agent.assert_client_messages_valid();
    }
}
