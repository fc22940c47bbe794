//! Golden fixtures: every `tests/fixtures/<name>.jsonl` (repo root) is replayed
//! and compared with `<name>.expected.json`. Fixtures whose name contains
//! `_ops` also compare the full render-op stream with `<name>.ops.expected.json`.
//! `<name>.args` holds `spindle replay` flags (`--snapshot`, `--protocol 1|2`).
//! `UPDATE_EXPECT=1 cargo test -p spindle-engine --test engine fixtures` rewrites the
//! expectations; review the diff by eye.

use std::path::{Path, PathBuf};

use serde_json::Value;
use spindle_engine::{EngineConfig, ProtocolHint, RenderOp, StreamingPolicy, TranscriptEngine};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn config_for(path: &Path) -> EngineConfig {
    let mut config = EngineConfig::default();
    let args = std::fs::read_to_string(path.with_extension("args")).unwrap_or_default();
    let mut words = args.split_whitespace();
    while let Some(word) = words.next() {
        match word {
            "--snapshot" => config.streaming = StreamingPolicy::Snapshot,
            "--protocol" => {
                config.protocol = match words.next() {
                    Some("1") => ProtocolHint::V1,
                    Some("2") => ProtocolHint::V2,
                    _ => ProtocolHint::Auto,
                }
            }
            other => panic!("{}: unknown fixture arg {other}", path.display()),
        }
    }
    config
}

/// Replays like `spindle replay` does, collecting every op.
fn replay(path: &Path) -> (TranscriptEngine, Vec<RenderOp>) {
    let input = std::fs::read_to_string(path).expect("fixture readable");
    let mut engine = TranscriptEngine::new(config_for(path));
    let mut ops = Vec::new();
    for (i, line) in input.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        engine.set_next_line_number(i as u64 + 1);
        ops.extend(engine.apply_recorded_line(line).ops);
    }
    (engine, ops)
}

fn check(expected_path: &Path, actual: &Value, failures: &mut Vec<String>) {
    let rendered = serde_json::to_string_pretty(actual).unwrap() + "\n";
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(expected_path, &rendered).unwrap();
        return;
    }
    match std::fs::read_to_string(expected_path) {
        Ok(expected) if expected == rendered => {}
        Ok(expected) => failures.push(format!(
            "{} differs\n--- expected\n{expected}\n--- actual\n{rendered}",
            expected_path.display()
        )),
        Err(_) => failures.push(format!(
            "{} missing (run with UPDATE_EXPECT=1)",
            expected_path.display()
        )),
    }
}

#[test]
fn golden_fixtures() {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 20,
        "expected the full fixture set, found {}",
        paths.len()
    );
    let mut failures = Vec::new();
    for path in &paths {
        let (engine, ops) = replay(path);
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        check(
            &path.with_file_name(format!("{stem}.expected.json")),
            &engine.replay_json(),
            &mut failures,
        );
        if stem.contains("_ops") {
            let ops = serde_json::to_value(&ops).unwrap();
            check(
                &path.with_file_name(format!("{stem}.ops.expected.json")),
                &ops,
                &mut failures,
            );
        }
        // The streaming writer gives the same bytes as serializing the whole value.
        assert_eq!(
            engine.replay_json_text(),
            engine.replay_json().to_string(),
            "{stem}: write_replay_json differs"
        );
        // Replay is deterministic, and the recorded ops rebuild the transcript.
        let (again, _) = replay(path);
        assert_eq!(
            engine.replay_json(),
            again.replay_json(),
            "{stem}: replay not deterministic"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
