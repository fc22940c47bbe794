//! Replaying a whole recording from a reader, and writing the replay JSON to a writer as it
//! is built: `spindle replay`'s input and output, for sessions too large to hold as one string.
//! The engine still does no I/O of its own: the caller owns the reader and the writer.

use std::io::{BufRead, Write};

use crate::config::EngineConfig;
use crate::core::TranscriptEngine;

impl TranscriptEngine {
    /// Writes `serde_json::to_writer_pretty(&self.replay_json())` byte for byte, one entry at a
    /// time (the pretty twin of [`Self::write_replay_json`]): a session of 100,000 entries never
    /// has all of their JSON in memory at once.
    pub fn write_replay_json_pretty(&self, out: &mut impl Write) -> std::io::Result<()> {
        // Pretty JSON has no raw newline inside strings, so this line is the top-level key only.
        const SLOT: &str = "\n  \"entries\": []";
        let shell = serde_json::to_string_pretty(&self.replay_json_without_entries())?;
        let entries = &self.transcript().entries;
        let Some(at) = shell.find(SLOT).filter(|_| !entries.is_empty()) else {
            return out.write_all(shell.as_bytes());
        };
        let (head, tail) = shell.split_at(at + SLOT.len() - 1);
        out.write_all(head.as_bytes())?;
        for (index, entry) in entries.iter().enumerate() {
            out.write_all(if index == 0 { b"\n" } else { b",\n" })?;
            let pretty = serde_json::to_string_pretty(&entry.replay_json())?;
            for (line_index, line) in pretty.lines().enumerate() {
                if line_index > 0 {
                    out.write_all(b"\n")?;
                }
                out.write_all(b"    ")?;
                out.write_all(line.as_bytes())?;
            }
        }
        out.write_all(b"\n  ")?;
        out.write_all(tail.as_bytes())
    }

    /// Replays a recording (`spindle replay`'s input: JSONL in wire order) read line by line,
    /// with one reused buffer, so memory stays at the size of the longest line plus the
    /// transcript. Render ops are not built: nothing renders a batch replay.
    pub fn replay_recording(
        mut reader: impl BufRead,
        config: EngineConfig,
    ) -> std::io::Result<TranscriptEngine> {
        let mut engine = TranscriptEngine::new(config);
        // Batch replay: nothing renders, so skip building render ops.
        engine.set_render_ops(false);
        let mut buf = Vec::new();
        let mut line_no = 0u64;
        loop {
            buf.clear();
            if reader.read_until(b'\n', &mut buf)? == 0 {
                break;
            }
            line_no += 1;
            let text = String::from_utf8_lossy(&buf);
            let line = text.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty() {
                continue;
            }
            engine.set_next_line_number(line_no);
            engine.apply_recorded_line(line);
        }
        Ok(engine)
    }
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::io::BufReader;

    use crate::config::EngineConfig;
    use crate::core::TranscriptEngine;

    /// Every golden fixture: the streamed writer prints exactly what pretty-printing the whole
    /// object does.
    #[test]
    fn streamed_json_equals_the_whole_object_pretty_printed() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let mut checked = 0;
        for path in std::fs::read_dir(&dir)
            .expect("fixtures")
            .flatten()
            .map(|e| e.path())
        {
            if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let file = File::open(&path).expect("fixture");
            let engine =
                TranscriptEngine::replay_recording(BufReader::new(file), EngineConfig::default())
                    .expect("read");
            let mut streamed = Vec::new();
            engine
                .write_replay_json_pretty(&mut streamed)
                .expect("write");
            let whole = serde_json::to_string_pretty(&engine.replay_json()).expect("pretty");
            assert_eq!(
                String::from_utf8(streamed).unwrap(),
                whole,
                "{}",
                path.display()
            );
            checked += 1;
        }
        assert!(checked > 10, "only {checked} fixtures found");
        // No entries at all: the object as it is.
        let empty = TranscriptEngine::new(EngineConfig::default());
        let mut streamed = Vec::new();
        empty
            .write_replay_json_pretty(&mut streamed)
            .expect("write");
        let whole = serde_json::to_string_pretty(&empty.replay_json()).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), whole);
    }
}
