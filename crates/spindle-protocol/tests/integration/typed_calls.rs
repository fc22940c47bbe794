//! The typed calls (authenticate, modes, config options, session/list) in
//! v1 and v2: the method and params each version spells, the capability
//! checks, and the reading of the results. Every message the client sends
//! validates against the schema of the negotiated version.

use crate::common::*;
use serde_json::json;
use spindle_protocol::{ClientError, ClientOptions, ProtocolChoice};

fn v2_options() -> ClientOptions {
    ClientOptions {
        protocol: ProtocolChoice::V2Preferred,
        ..ClientOptions::default()
    }
}

#[tokio::test]
async fn v1_authentication_follows_the_advertised_methods_and_auth_required() {
    let (client, _events, mut agent) = start(ClientOptions::default());
    let result = json!({"protocolVersion": 1, "agentCapabilities": {},
    "authMethods": [
        {"id": "spindle-token", "name": "Token", "description": "A token"},
        {"id": "tui", "name": "Terminal login", "type": "terminal", "args": ["--login"]},
    ]});
    let init = initialize_with(&client, &mut agent, 1, result).await;
    let methods = init.auth_methods();
    assert_eq!(methods.len(), 2);
    assert_eq!(methods[0].name, "Token");
    // session/new refused until the client authenticates.
    let c = client.clone();
    let t = tokio::spawn(async move { c.new_session("/w", &json!([])).await });
    let (id, _) = agent.expect_request("session/new").await;
    agent.reply_err(id, -32000, "Authentication required").await;
    let refused = t.await.unwrap().unwrap_err();
    assert!(refused.is_auth_required(), "{refused}");
    assert!(!ClientError::Disconnected.is_auth_required());
    // Unknown and terminal-type methods never reach the agent.
    let unknown = client.authenticate("nope").await.unwrap_err();
    assert!(
        matches!(&unknown, ClientError::Unsupported(m) if m.contains("spindle-token")),
        "{unknown}"
    );
    assert!(matches!(
        client.authenticate("tui").await,
        Err(ClientError::Unsupported(_))
    ));
    let c = client.clone();
    let t = tokio::spawn(async move { c.authenticate("spindle-token").await });
    let (id, params) = agent.expect_request("authenticate").await;
    assert_eq!(params, json!({"methodId": "spindle-token"}));
    agent.reply(id, json!({})).await;
    t.await.unwrap().unwrap();
    new_session(&client, &mut agent, "s1").await;
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn v2_authentication_is_auth_login_with_method_id() {
    let (client, _events, mut agent) = start(v2_options());
    let result = json!({"protocolVersion": 2, "info": {"name": "a", "version": "0"},
        "capabilities": {"session": {}},
        "authMethods": [{"type": "agent", "methodId": "key", "name": "API key"}]});
    let init = initialize_with(&client, &mut agent, 2, result).await;
    assert_eq!(init.auth_methods()[0].id, "key");
    let c = client.clone();
    let t = tokio::spawn(async move { c.authenticate("key").await });
    let (id, params) = agent.expect_request("auth/login").await;
    assert_eq!(params, json!({"methodId": "key"}));
    agent.reply(id, json!({})).await;
    t.await.unwrap().unwrap();
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn modes_and_config_options_per_version() {
    let (client, _events, mut agent) = start(ClientOptions::default());
    init_v1(&client, &mut agent, json!({})).await;
    new_session(&client, &mut agent, "s1").await;
    let c = client.clone();
    let t = tokio::spawn(async move { c.set_mode("s1", "plan").await });
    let (id, params) = agent.expect_request("session/set_mode").await;
    assert_eq!(params, json!({"sessionId": "s1", "modeId": "plan"}));
    agent.reply(id, json!({})).await;
    t.await.unwrap().unwrap();
    for (value, expected) in [
        (
            json!("fast"),
            json!({"sessionId": "s1", "configId": "model", "value": "fast"}),
        ),
        (
            json!(true),
            json!({"sessionId": "s1", "configId": "model", "type": "boolean", "value": true}),
        ),
    ] {
        let c = client.clone();
        let t = tokio::spawn(async move { c.set_config_option("s1", "model", value).await });
        let (id, params) = agent.expect_request("session/set_config_option").await;
        assert_eq!(params, expected);
        agent.reply(id, json!({"configOptions": []})).await;
        assert!(t.await.unwrap().unwrap().get().contains("configOptions"));
    }
    assert!(matches!(
        client.set_config_option("s1", "model", json!(3)).await,
        Err(ClientError::Protocol(_))
    ));
    agent.assert_client_messages_valid();

    let (client, _events, mut agent) = start(v2_options());
    init_v2(&client, &mut agent).await;
    new_session(&client, &mut agent, "s1").await;
    let unsupported = client.set_mode("s1", "plan").await.unwrap_err();
    assert!(
        matches!(&unsupported, ClientError::Unsupported(m) if m.contains("config")),
        "{unsupported}"
    );
    let c = client.clone();
    let t = tokio::spawn(async move { c.set_config_option("s1", "mode", json!("plan")).await });
    let (id, params) = agent.expect_request("session/set_config_option").await;
    assert_eq!(
        params,
        json!({"sessionId": "s1", "configId": "mode", "type": "id", "value": "plan"})
    );
    agent.reply(id, json!({"configOptions": []})).await;
    t.await.unwrap().unwrap();
    agent.assert_client_messages_valid();
}

#[tokio::test]
async fn session_list_needs_the_capability_and_reads_pages() {
    let (client, _events, mut agent) = start(ClientOptions::default());
    init_v1(
        &client,
        &mut agent,
        json!({"sessionCapabilities": {"resume": {}}}),
    )
    .await;
    let refused = client.list_sessions(None, None).await.unwrap_err();
    assert!(
        matches!(&refused, ClientError::Unsupported(m) if m.contains("sessionCapabilities.list")),
        "{refused}"
    );

    for options in [ClientOptions::default(), v2_options()] {
        let v2 = options.protocol == ProtocolChoice::V2Preferred;
        let (client, _events, mut agent) = start(options);
        if v2 {
            init_v2(&client, &mut agent).await;
        } else {
            init_v1(
                &client,
                &mut agent,
                json!({"sessionCapabilities": {"list": {}}}),
            )
            .await;
        }
        let outcome = client.initialize_outcome().unwrap();
        assert!(outcome.can_list_sessions());
        let c = client.clone();
        let t = tokio::spawn(async move { c.list_sessions(Some("/w"), Some("p2")).await });
        let (id, params) = agent.expect_request("session/list").await;
        assert_eq!(params, json!({"cwd": "/w", "cursor": "p2"}));
        agent
            .reply(
                id,
                json!({"sessions": [
                    {"sessionId": "a", "cwd": "/w", "title": "Fix the build",
                     "updatedAt": "2026-11-26T06:00:00Z"},
                    {"sessionId": "b", "cwd": "/w"},
                    {"cwd": "/w"},
                ], "nextCursor": "p3"}),
            )
            .await;
        let list = t.await.unwrap().unwrap();
        assert_eq!(list.next_cursor.as_deref(), Some("p3"));
        assert_eq!(
            list.sessions.len(),
            2,
            "the entry without sessionId is skipped"
        );
        assert_eq!(list.sessions[0].title.as_deref(), Some("Fix the build"));
        assert_eq!(list.sessions[1].updated_at, None);
        // session/close follows the same capability rule (v1: not advertised here).
        if v2 {
            let c = client.clone();
            let t = tokio::spawn(async move { c.close_session("a").await });
            let (id, params) = agent.expect_request("session/close").await;
            assert_eq!(params, json!({"sessionId": "a"}));
            agent.reply(id, json!({})).await;
            t.await.unwrap().unwrap();
        } else {
            assert!(matches!(
                client.close_session("a").await,
                Err(ClientError::Unsupported(_))
            ));
        }
        // No filter: empty params.
        let c = client.clone();
        let t = tokio::spawn(async move { c.list_sessions(None, None).await });
        let (id, params) = agent.expect_request("session/list").await;
        assert_eq!(params, json!({}));
        agent.reply(id, json!({"nextCursor": null})).await;
        assert!(matches!(
            t.await.unwrap(),
            Err(ClientError::Protocol(m)) if m.contains("sessions")
        ));
        agent.assert_client_messages_valid();
    }
}
