//! What the bridge's examples share: the agent chunk lines they translate
//! and a bridge already past `initialize`.

use spindle_bridge::{Bridge, BridgeConfig, Policy};

/// Chunk `i` of a streamed agent reply as protocol `version` sends it (v2
/// with a `messageId` that changes every 50 chunks). `escaped`: text full
/// of JSON escapes instead of plain text.
pub fn chunk_line(version: u16, i: u64, escaped: bool) -> String {
    let id = if version == 2 {
        format!(r#""messageId":"msg_{}","#, i / 50)
    } else {
        String::new()
    };
    let text = if escaped {
        format!(r#"line {i}:\n\t\"quoted\" and a \\ backslash, then some plain text to read"#)
    } else {
        format!("token {i} of a streamed reply, about eighty bytes of text per chunk.")
    };
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"sess_1","update":{{"sessionUpdate":"agent_message_chunk",{id}"content":{{"type":"text","text":"{text}"}}}}}}}}"#
    )
}

/// A strict bridge between a `client`-version client and an `agent`-version
/// agent, with `initialize` already passed both ways.
pub fn initialized_bridge(client: u16, agent: u16) -> Bridge {
    let mut b = Bridge::new(BridgeConfig {
        client_protocol: Some(client),
        agent_protocol: Some(agent),
        policy: Policy::Strict,
    });
    let init = if client == 2 {
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"b","version":"1"}}}"#
    } else {
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#
    };
    b.from_client(init);
    b.from_agent(&format!(
        r#"{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":{agent},"info":{{"name":"a","version":"1"}}}}}}"#
    ));
    b
}
