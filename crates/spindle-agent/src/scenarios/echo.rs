//! `/scenario echo-content`: the reply describes every content block of the
//! prompt, one line each (type, MIME type, URI, name, sizes), so tests can
//! check that mentions and images arrived as they should.

use serde_json::Value;
use spindle_wire::client_methods::blocks;

/// One line describing a prompt content block.
pub fn describe_block(block: &Value) -> String {
    let text = |key: &str| block.get(key).and_then(Value::as_str);
    let kind = text("type").unwrap_or("(no type)");
    let mut parts: Vec<String> = Vec::new();
    let mut field = |name: &str, value: Option<&str>| {
        if let Some(v) = value {
            parts.push(format!("{name}={v}"));
        }
    };
    match kind {
        blocks::TEXT => {
            let len = text("text").map_or(0, str::len);
            return format!("{kind}: {len} bytes");
        }
        blocks::RESOURCE_LINK => {
            field("uri", text(blocks::URI));
            field("name", text("name"));
            field("mimeType", text(blocks::MIME_TYPE));
            if let Some(size) = block.get(blocks::SIZE).and_then(Value::as_u64) {
                parts.push(format!("size={size}"));
            }
        }
        blocks::RESOURCE => {
            let resource = block.get("resource");
            let inner = |key: &str| resource.and_then(|r| r.get(key)).and_then(Value::as_str);
            field("uri", inner(blocks::URI));
            field("mimeType", inner(blocks::MIME_TYPE));
            if let Some(t) = inner("text") {
                parts.push(format!("text {} bytes", t.len()));
            } else if let Some(b) = inner("blob") {
                parts.push(format!(
                    "blob {} base64 chars ({} bytes)",
                    b.len(),
                    decoded_len(b)
                ));
            }
        }
        blocks::IMAGE | blocks::AUDIO => {
            field("mimeType", text(blocks::MIME_TYPE));
            field("uri", text(blocks::URI));
            let data = text(blocks::DATA).unwrap_or_default();
            parts.push(format!(
                "data {} base64 chars ({} bytes)",
                data.len(),
                decoded_len(data)
            ));
        }
        _ => {}
    }
    if parts.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {}", parts.join(", "))
    }
}

/// The decoded size of padded base64 text.
fn decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count().min(2);
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// The reply of `/scenario echo-content`.
pub fn echo_content_reply(prompt: &[Value]) -> String {
    let mut reply = format!(
        "I received {} content block{}:",
        prompt.len(),
        if prompt.len() == 1 { "" } else { "s" }
    );
    for (i, block) in prompt.iter().enumerate() {
        reply.push_str(&format!("\n{}. {}", i + 1, describe_block(block)));
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_block_kind_is_described() {
        let reply = echo_content_reply(&[
            json!({"type": "text", "text": "héllo"}),
            json!({"type": "resource_link", "uri": "file:///w/a.txt", "name": "a.txt", "mimeType": "text/plain", "size": 3}),
            json!({"type": "resource", "resource": {"uri": "file:///w/b.md", "mimeType": "text/markdown", "text": "# b"}}),
            json!({"type": "image", "mimeType": "image/png", "data": "iVBORw=="}),
        ]);
        assert_eq!(
            reply,
            "I received 4 content blocks:\n\
             1. text: 6 bytes\n\
             2. resource_link: uri=file:///w/a.txt, name=a.txt, mimeType=text/plain, size=3\n\
             3. resource: uri=file:///w/b.md, mimeType=text/markdown, text 3 bytes\n\
             4. image: mimeType=image/png, data 8 base64 chars (4 bytes)"
        );
    }
}
