//! BRIDGE.md names a test for every translation; those tests must exist.

#[test]
fn every_test_named_in_bridge_md_exists() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let doc = std::fs::read_to_string(format!("{root}/BRIDGE.md")).expect("BRIDGE.md");
    // Every test source of the bridge crate and of the `spindle` binary's
    // tests, wherever a module lives.
    let mut sources = String::new();
    for dir in ["crates/spindle-bridge/tests", "crates/spindle/tests"] {
        read_rust_files(std::path::Path::new(&format!("{root}/{dir}")), &mut sources);
    }
    let mut named = 0;
    for prefix in ["A `", "B `", "P `", "E2E `", "Prop `", "S `"] {
        for (at, _) in doc.match_indices(prefix) {
            let rest = &doc[at + prefix.len()..];
            let name = &rest[..rest.find('`').expect("closing backtick")];
            named += 1;
            assert!(
                sources.contains(&format!("fn {name}(")),
                "BRIDGE.md names {name}, which is not a test"
            );
        }
    }
    // Every table row names at least one test.
    for row in doc
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Translation"))
    {
        assert!(
            ["A `", "B `", "P `", "E2E `", "Prop `", "S `"]
                .iter()
                .any(|p| row.contains(p)),
            "row without a test: {row}"
        );
    }
    assert!(named > 50);
}

/// Appends the text of every `.rs` file under `dir`.
fn read_rust_files(dir: &std::path::Path, into: &mut String) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_rust_files(&path, into);
        } else if path.extension().is_some_and(|x| x == "rs") {
            into.push_str(&std::fs::read_to_string(&path).expect("a test source"));
        }
    }
}
