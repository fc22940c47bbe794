//! Prints `{"replyBytes":N,"replyFnv1a64":"..."}` for stdin, so the benchmark can
//! hash a 200 MB reply printed by `spindle chat --prompt` without a slow script.
//! `--strip-newline` drops one trailing `\n` (the line end `--prompt` adds).

use std::io::Read;

use spindle_interop_rust_sdk::fnv1a64;

fn main() -> std::io::Result<()> {
    let strip = std::env::args().any(|a| a == "--strip-newline");
    let mut bytes = Vec::new();
    std::io::stdin().lock().read_to_end(&mut bytes)?;
    if strip && bytes.last() == Some(&b'\n') {
        bytes.pop();
    }
    println!(
        "{{\"replyBytes\":{},\"replyFnv1a64\":\"{:016x}\"}}",
        bytes.len(),
        fnv1a64(&bytes)
    );
    Ok(())
}
