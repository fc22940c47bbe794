//! `--record`: the client's wire tap written as `spindle replay` input lines.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use spindle_protocol::WireRecord;
use tokio::sync::mpsc;

/// `--record`: the client's wire tap written as recording lines.
#[derive(Debug)]
pub(crate) struct Recorder {
    rx: mpsc::UnboundedReceiver<WireRecord>,
    pub(crate) out: BufWriter<std::fs::File>,
    pub(crate) path: PathBuf,
}

impl Recorder {
    pub(crate) fn new(
        rx: mpsc::UnboundedReceiver<WireRecord>,
        file: std::fs::File,
        path: PathBuf,
    ) -> Recorder {
        Recorder {
            rx,
            out: BufWriter::new(file),
            path,
        }
    }

    /// Writes a local line (what the client's own services did) after what
    /// the tap holds, so it lands in the order the chat saw it.
    pub(crate) fn write_local(&mut self, line: &str) -> anyhow::Result<()> {
        self.drain()?;
        writeln!(self.out, "{line}").with_context(|| format!("writing {}", self.path.display()))?;
        self.out
            .flush()
            .with_context(|| format!("writing {}", self.path.display()))
    }

    /// Writes what the tap holds and flushes it, so the file is complete up
    /// to the last batch handled even if the chat itself is killed.
    pub(crate) fn drain(&mut self) -> anyhow::Result<()> {
        let mut wrote = false;
        while let Ok(mut record) = self.rx.try_recv() {
            // The user's MCP secrets go to the agent, never to a file.
            if let Some(redacted) = spindle_host::mcp_servers::redact_mcp_secrets(&record.json) {
                record.json = redacted;
            }
            writeln!(self.out, "{}", record.recording_line())
                .with_context(|| format!("writing {}", self.path.display()))?;
            wrote = true;
        }
        if wrote {
            self.out
                .flush()
                .with_context(|| format!("writing {}", self.path.display()))?;
        }
        Ok(())
    }
}
