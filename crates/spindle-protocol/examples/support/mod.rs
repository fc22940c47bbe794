//! What the throughput examples and the framing bench share: the stream of
//! v1 `agent_message_chunk` notifications they feed, and the line count
//! read from the command line.

/// The first command-line argument as a count, `default` when absent or
/// not a number.
#[allow(dead_code)] // the bench takes no arguments
pub fn count_arg(default: usize) -> usize {
    std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

/// `n` newline-terminated `session/update` lines, each an
/// `agent_message_chunk` of session `session_id`; every 100 lines share one
/// message id, numbered with `id_digits` digits.
pub fn chunk_lines(n: usize, session_id: &str, id_digits: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * 230);
    for i in 0..n {
        out.extend_from_slice(
            format!(
                r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{session_id}","update":{{"sessionUpdate":"agent_message_chunk","messageId":"msg_{:0id_digits$}","content":{{"type":"text","text":"token {i} of the stream"}}}}}}}}"#,
                i / 100
            )
            .as_bytes(),
        );
        out.push(b'\n');
    }
    out
}
