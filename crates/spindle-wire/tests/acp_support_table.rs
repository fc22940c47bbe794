//! `docs/src/acp-support.md` lists every method, session update kind and capability of the
//! official schemas (`tests/schema/v1/schema.unstable.json`, `tests/schema/v2/...`) with what
//! each part of Spindle does with it. This keeps the table true to the schemas: it fails naming
//! each schema item no row names (in the right section, for the right version), each row naming
//! something neither schema has, each row whose "unstable" mark disagrees with the schema, and
//! each support cell that is not "yes", "no: <why>" or "passes through".
//!
//! The table's first cell names items as code spans: `name` for both versions, v1 `name` or
//! v2 `name` for one. Methods are their wire names (`session/new`), update kinds their
//! `sessionUpdate` tag, capabilities their dotted path inside `AgentCapabilities` or
//! `ClientCapabilities` (`sessionCapabilities.fork`; `_meta` left out); `nes.*` stands for
//! every path under `nes`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::{Map, Value};

/// The sections of the page, each holding one kind of item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Section {
    AgentMethods,
    ClientMethods,
    BothSidesMethods,
    SessionUpdates,
    AgentCapabilities,
    ClientCapabilities,
}

const SECTIONS: [(&str, Section); 6] = [
    ("## Methods the agent serves", Section::AgentMethods),
    ("## Methods the client serves", Section::ClientMethods),
    ("## Methods of either side", Section::BothSidesMethods),
    ("## Session updates", Section::SessionUpdates),
    ("## Agent capabilities", Section::AgentCapabilities),
    ("## Client capabilities", Section::ClientCapabilities),
];

/// The support columns, after the item and status columns.
const SUPPORT_COLUMNS: [&str; 5] = ["chat", "page", "`/acp`", "bridge", "reference agent"];

/// One schema item: its section, name and whether the schema marks it unstable.
type Items = BTreeMap<(Section, String), bool>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schema(version: u16) -> Map<String, Value> {
    let path = root().join(format!("tests/schema/v{version}/schema.unstable.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: Value = serde_json::from_str(&text).expect("a schema is JSON");
    value["$defs"].as_object().expect("$defs").clone()
}

fn unstable(value: &Value) -> bool {
    value
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| d.contains("**UNSTABLE**"))
}

/// The `$defs` name a property refers to (directly, or in `anyOf` / `allOf` with null).
fn referenced(property: &Value) -> Option<&str> {
    let direct = property.get("$ref").and_then(Value::as_str);
    let nested = || {
        ["anyOf", "allOf", "oneOf"].iter().find_map(|k| {
            property
                .get(*k)?
                .as_array()?
                .iter()
                .find_map(|alt| alt.get("$ref").and_then(Value::as_str))
        })
    };
    direct.or_else(nested).and_then(|r| r.rsplit('/').next())
}

/// The properties of a capabilities object and of the `*Capabilities` objects under it.
fn capability_paths(
    defs: &Map<String, Value>,
    name: &str,
    prefix: &str,
    inherited_unstable: bool,
    section: Section,
    into: &mut Items,
) {
    let Some(properties) = defs[name].get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, property) in properties {
        if key == "_meta" {
            continue;
        }
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        let target = referenced(property);
        let is_unstable =
            inherited_unstable || unstable(property) || target.is_some_and(|t| unstable(&defs[t]));
        into.insert((section, path.clone()), is_unstable);
        if let Some(t) = target.filter(|t| t.ends_with("Capabilities")) {
            capability_paths(defs, t, &path, is_unstable, section, into);
        }
    }
}

/// Every item of one version's schema.
fn schema_items(version: u16) -> Items {
    let defs = schema(version);
    let mut items = Items::new();
    for def in defs.values() {
        let (Some(method), Some(side)) = (
            def.get("x-method").and_then(Value::as_str),
            def.get("x-side").and_then(Value::as_str),
        ) else {
            continue;
        };
        let section = match side {
            "agent" => Section::AgentMethods,
            "client" => Section::ClientMethods,
            _ => Section::BothSidesMethods,
        };
        let was = items.get(&(section, method.to_owned())).copied();
        items.insert(
            (section, method.to_owned()),
            was.unwrap_or(false) || unstable(def),
        );
    }
    let update = &defs["SessionUpdate"];
    let alternatives = update
        .get("oneOf")
        .or_else(|| update.get("anyOf"))
        .and_then(Value::as_array)
        .expect("SessionUpdate alternatives");
    for alt in alternatives {
        // The open alternative (custom and future updates) has no tag.
        if let Some(tag) = alt
            .pointer("/properties/sessionUpdate/const")
            .and_then(Value::as_str)
        {
            items.insert((Section::SessionUpdates, tag.to_owned()), unstable(alt));
        }
    }
    capability_paths(
        &defs,
        "AgentCapabilities",
        "",
        false,
        Section::AgentCapabilities,
        &mut items,
    );
    capability_paths(
        &defs,
        "ClientCapabilities",
        "",
        false,
        Section::ClientCapabilities,
        &mut items,
    );
    items
}

/// One table row: its section, the items it names (version, name), its cells, its line.
struct Row {
    section: Section,
    named: Vec<(u16, String)>,
    cells: Vec<String>,
    line: usize,
}

/// The code spans of a first cell with the version each names (`v1 `x``, `v2 `x``, or both).
fn named_items(cell: &str) -> Vec<(u16, String)> {
    let mut named = Vec::new();
    let parts: Vec<&str> = cell.split('`').collect();
    for (i, span) in parts.iter().enumerate().skip(1).step_by(2) {
        let before = parts[i - 1].trim_end();
        let versions: &[u16] = if before.ends_with("v1") {
            &[1]
        } else if before.ends_with("v2") {
            &[2]
        } else {
            &[1, 2]
        };
        for v in versions {
            named.push((*v, (*span).to_owned()));
        }
    }
    named
}

fn split_cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split(" | ").map(|c| c.trim().to_owned()).collect()
}

fn table_rows(doc: &str) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut section = None;
    for (n, line) in doc.lines().enumerate() {
        if line.starts_with("## ") {
            section = SECTIONS
                .iter()
                .find(|(heading, _)| line.trim() == *heading)
                .map(|(_, s)| *s);
            continue;
        }
        let Some(section) = section else { continue };
        if !line.starts_with('|') || line.starts_with("|---") || line.starts_with("| what ") {
            continue;
        }
        let cells = split_cells(line);
        rows.push(Row {
            section,
            named: named_items(&cells[0]),
            cells,
            line: n + 1,
        });
    }
    rows
}

/// Whether the name written in the table covers the schema path `name` (`nes.*` covers `nes`
/// and everything under it).
fn covers(written: &str, name: &str) -> bool {
    match written.strip_suffix(".*") {
        Some(prefix) => name == prefix || name.starts_with(&format!("{prefix}.")),
        None => written == name,
    }
}

#[test]
fn the_support_table_names_every_schema_item_and_nothing_else() {
    let path = root().join("docs/src/acp-support.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for (heading, _) in SECTIONS {
        assert!(
            doc.lines().any(|l| l.trim() == heading),
            "acp-support.md lacks the section {heading:?}"
        );
    }
    let rows = table_rows(&doc);
    let schemas: BTreeMap<u16, Items> = [1, 2].into_iter().map(|v| (v, schema_items(v))).collect();
    let mut problems = Vec::new();

    // Every schema item is named by a row of its section, for its version.
    for (version, items) in &schemas {
        for (section, name) in items.keys() {
            let named = rows.iter().any(|row| {
                row.section == *section
                    && row
                        .named
                        .iter()
                        .any(|(v, written)| v == version && covers(written, name))
            });
            if !named {
                problems.push(format!("v{version} {section:?} `{name}` has no row"));
            }
        }
    }

    let mut seen_unstable = BTreeSet::new();
    for row in &rows {
        let where_ = format!("acp-support.md:{}", row.line);
        if row.named.is_empty() {
            problems.push(format!("{where_}: a row names no item in its first cell"));
        }
        if row.cells.len() != 2 + SUPPORT_COLUMNS.len() {
            problems.push(format!(
                "{where_}: {} cells, expected {}",
                row.cells.len(),
                2 + SUPPORT_COLUMNS.len()
            ));
            continue;
        }
        // Each named item is in that version's schema, in this section.
        let mut any_unstable = false;
        for (version, written) in &row.named {
            let found: Vec<bool> = schemas[version]
                .iter()
                .filter(|((s, name), _)| *s == row.section && covers(written, name))
                .map(|(_, u)| *u)
                .collect();
            if found.is_empty() {
                problems.push(format!(
                    "{where_}: v{version} `{written}` is not a {:?} item of the v{version} schema",
                    row.section
                ));
            }
            any_unstable |= found.iter().any(|u| *u);
        }
        let marked = row.cells[1].contains("unstable");
        if marked != any_unstable {
            problems.push(format!(
                "{where_}: status {:?}, but the schema marks {} of its items unstable",
                row.cells[1],
                if any_unstable { "some" } else { "none" }
            ));
        }
        seen_unstable.insert(marked);
        for (cell, column) in row.cells[2..].iter().zip(SUPPORT_COLUMNS) {
            let ok = cell == "yes"
                || cell.starts_with("yes: ")
                || cell.starts_with("yes (")
                || cell.starts_with("no: ")
                || cell == "passes through"
                || cell.starts_with("passes through: ")
                || cell.starts_with("passes through (");
            if !ok {
                problems.push(format!(
                    "{where_}: column {column} says {cell:?}; expected yes, no: <why> or passes through"
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/src/acp-support.md disagrees with the schemas:\n{}",
        problems.join("\n")
    );
    // The walk found what the schemas hold (a broken walk must not pass vacuously).
    assert!(schemas[&1].len() > 80 && schemas[&2].len() > 80);
    assert!(rows.len() > 40 && seen_unstable.len() == 2);
}
