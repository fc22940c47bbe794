//! BRIDGE.md names a test for every translation; those tests must exist.

#[test]
fn every_test_named_in_bridge_md_exists() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let doc = std::fs::read_to_string(format!("{root}/BRIDGE.md")).expect("BRIDGE.md");
    let files = [
        "crates/spindle-bridge/tests/v2_client_v1_agent.rs",
        "crates/spindle-bridge/tests/v1_client_v2_agent.rs",
        "crates/spindle-bridge/tests/passthrough.rs",
        "crates/spindle-bridge/tests/bridged_transcript_props.rs",
        "crates/spindle/tests/end_to_end/bridge_e2e.rs",
    ];
    let sources: String = files
        .iter()
        .map(|f| std::fs::read_to_string(format!("{root}/{f}")).expect(f))
        .collect();
    let mut named = 0;
    for prefix in ["A `", "B `", "P `", "E2E `", "Prop `"] {
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
            ["A `", "B `", "P `", "E2E `", "Prop `"]
                .iter()
                .any(|p| row.contains(p)),
            "row without a test: {row}"
        );
    }
    assert!(named > 50);
}
