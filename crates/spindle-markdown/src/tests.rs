//! Tests of the markdown tree: data-driven cases (`cases.txt`, rewritten with `UPDATE_EXPECT=1`),
//! hostile input, bounded work (checked by sizes, never by the clock), the cache and the sources.

use serde_json::Value;
use spindle_engine::{EngineConfig, TranscriptEngine};

use super::batch::{Source, batch_json};
use super::cache::RenderCache;
use super::convert::{MAX_CELLS, MAX_DEPTH, markdown_to_tree, safe_href};
use super::highlight::{BLOCK_LIMIT, LINE_LIMIT, MESSAGE_LIMIT};
use super::render_json;
use super::tree::depth;

const CASES: &str = "src/cases.txt";

struct Case {
    name: String,
    input: String,
    expected: String,
}

fn parse_cases(text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    for chunk in text.split("\n=== ").map(|c| c.trim_start_matches("=== ")) {
        let Some((head, rest)) = chunk.split_once('\n') else {
            continue;
        };
        // The input may be empty: the marker line then follows the name at once.
        let rest = format!("\n{rest}");
        let (input, expected) = rest
            .split_once("\n--- tree\n")
            .unwrap_or_else(|| panic!("case {head}: no '--- tree' line"));
        cases.push(Case {
            name: head.trim().to_string(),
            input: input.trim_start_matches('\n').to_string(),
            expected: expected.trim().to_string(),
        });
    }
    cases
}

fn write_cases(cases: &[Case]) -> String {
    cases
        .iter()
        .map(|c| {
            let input = if c.input.is_empty() {
                String::new()
            } else {
                format!("{}\n", c.input)
            };
            format!("=== {}\n{input}--- tree\n{}\n", c.name, c.actual())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Case {
    fn actual(&self) -> String {
        render_json(&self.input)
    }
}

#[test]
fn every_case_renders_its_expected_tree() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(CASES);
    let text = std::fs::read_to_string(&path).expect("cases file");
    let cases = parse_cases(&text);
    assert!(cases.len() >= 30, "the cases file lost cases");
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, write_cases(&cases)).expect("rewrite cases");
        return;
    }
    let failures: Vec<String> = cases
        .iter()
        .filter(|c| c.actual() != c.expected)
        .map(|c| {
            format!(
                "case {}:\n  input:    {:?}\n  expected: {}\n  actual:   {}",
                c.name,
                c.input,
                c.expected,
                c.actual()
            )
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ (UPDATE_EXPECT=1 rewrites them):\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

const TAGS: [&str; 26] = [
    "p",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ul",
    "ol",
    "li",
    "blockquote",
    "pre",
    "code",
    "em",
    "strong",
    "del",
    "a",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "hr",
    "br",
    "span",
];

/// Walks the JSON tree (iteratively) and checks the allow-list; returns every text node joined.
fn check_allowed(json: &str) -> String {
    let tree: Value = serde_json::from_str(json).expect("the tree is JSON");
    let mut texts = String::new();
    let mut pending: Vec<&Value> = tree.as_array().expect("an array").iter().rev().collect();
    while let Some(node) = pending.pop() {
        match node {
            Value::String(text) => texts.push_str(text),
            Value::Array(parts) => {
                let tag = parts[0].as_str().expect("a tag name");
                assert!(TAGS.contains(&tag), "tag {tag} is not allowed");
                let attrs = parts[1].as_object().expect("attributes");
                for (name, value) in attrs {
                    let value = value.to_string();
                    let ok = match (tag, name.as_str()) {
                        ("a", "href") => {
                            let v = value.trim_matches('"').to_ascii_lowercase();
                            v.starts_with("http:")
                                || v.starts_with("https:")
                                || v.starts_with("mailto:")
                        }
                        ("ol", "start") => value.parse::<u64>().is_ok(),
                        ("th" | "td", "align") => {
                            ["\"left\"", "\"center\"", "\"right\""].contains(&value.as_str())
                        }
                        ("code", "class") => value.starts_with("\"language-"),
                        ("span", "class") => value.starts_with("\"hl-"),
                        _ => false,
                    };
                    assert!(ok, "attribute {name}={value} on {tag} is not allowed");
                }
                pending.extend(parts[2..].iter().rev());
            }
            other => panic!("a node is a string or an array, not {other}"),
        }
    }
    texts
}

#[test]
fn hostile_html_and_links_stay_text() {
    let hostile = [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "a <b onclick=\"x()\">bold</b> word",
        "<div>\n<script>alert(1)</script>\n</div>",
        "[click](javascript:alert(1))",
        "[click](JaVaScRiPt:alert(1))",
        "[click](&#106;avascript:alert(1))",
        "[click](java\tscript:alert(1))",
        "[click](data:text/html,<script>alert(1)</script>)",
        "[click](vbscript:msgbox)",
        "[rel](/relative/path)",
        "<javascript:alert(1)>",
        "![x](javascript:alert(1))",
        "![x](https://example.com/x.png \"t\")",
        "[ref]\n\n[ref]: javascript:alert(1)",
        "```html\n<script>alert(1)</script>\n```",
        "`<script>`",
        "<!-- comment --> text",
        "<a href=\"javascript:alert(1)\">x</a>",
    ];
    for input in hostile {
        let json = render_json(input);
        let texts = check_allowed(&json);
        assert!(
            !json.contains("javascript")
                || texts.contains("javascript")
                || texts.contains("JaVaScRiPt"),
            "{input}: javascript left outside text: {json}"
        );
        if input.contains("<script>") {
            assert!(
                texts.contains("<script>"),
                "{input}: the markup is shown as text: {json}"
            );
        }
        let tree: Value = serde_json::from_str(&json).unwrap();
        let links = find_hrefs(&tree);
        for href in &links {
            assert!(safe_href(href).is_some(), "{input}: unsafe href {href}");
        }
    }
    // A refused link shows its label and where it pointed.
    let json = render_json("[click](javascript:alert(1))");
    assert_eq!(json, r#"[["p",{},"click (javascript:alert(1))"]]"#);
    // An image is never loaded: a safe one is a link to it.
    let json = render_json("![diagram](https://example.com/d.png)");
    assert_eq!(
        json,
        r#"[["p",{},["a",{"href":"https://example.com/d.png"},"diagram"]]]"#
    );
}

fn find_hrefs(tree: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = vec![tree];
    while let Some(v) = pending.pop() {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(href)) = map.get("href") {
                    out.push(href.clone());
                }
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    out
}

#[test]
fn safe_href_takes_only_web_and_mail_targets() {
    for ok in [
        "http://a.b",
        "https://a.b/c?d#e",
        "HTTPS://A.B",
        "mailto:a@b.c",
    ] {
        assert_eq!(safe_href(ok), Some(ok), "{ok}");
    }
    for bad in [
        "javascript:alert(1)",
        " https://a.b",
        "https://a.b/ c",
        "https://a\u{0}b",
        "data:text/html,x",
        "/relative",
        "//a.b/protocol-relative",
        "https:",
        "file:///etc/passwd",
        "",
    ] {
        assert_eq!(safe_href(bad), None, "{bad:?}");
    }
}

#[test]
fn deep_nesting_is_cut_at_the_depth_limit_and_keeps_the_text() {
    for (name, input) in [
        ("quotes", format!("{}deep", ">".repeat(10_000))),
        (
            "lists",
            (0..2_000)
                .map(|n| format!("{}- level {n}\n", "  ".repeat(n)))
                .collect::<String>(),
        ),
        (
            "emphasis",
            format!("{}x{}", "*_".repeat(5_000), "_*".repeat(5_000)),
        ),
        (
            "links",
            format!("{}x{}", "[".repeat(5_000), "](https://a.b)".repeat(5_000)),
        ),
    ] {
        let (nodes, _) = markdown_to_tree(&input);
        let levels = depth(&nodes);
        assert!(levels <= MAX_DEPTH + 1, "{name}: {levels} levels");
        let texts = check_allowed(&super::tree::to_json(&nodes));
        if name == "quotes" {
            assert!(texts.contains("deep"), "{name}: the text is kept");
        }
        if name == "lists" {
            assert!(
                texts.contains("level 1999"),
                "{name}: the deepest item's text is kept"
            );
        }
    }
}

/// Table cells in a tree's JSON (a text node cannot contain this: its quotes are escaped).
fn cells(json: &str) -> usize {
    json.matches(r#"["td","#).count() + json.matches(r#"["th","#).count()
}

/// Output size is linear in the input: for inputs that are known worst cases for markdown
/// parsers, the JSON stays within a small multiple of the input (table cells, which GFM pads, are
/// at most MAX_CELLS).
#[test]
fn giant_inputs_give_output_linear_in_their_size() {
    let mb = 1 << 20;
    let cases: Vec<(&str, String)> = vec![
        ("one paragraph", "word ".repeat(mb / 5)),
        ("many paragraphs", "a line of text\n\n".repeat(mb / 16)),
        ("unclosed emphasis", "*a ".repeat(mb / 3)),
        ("unclosed links", "[a](".repeat(mb / 4)),
        ("brackets", "[".repeat(mb / 2) + &"]".repeat(mb / 2)),
        ("backticks", "`a ``b ```c ".repeat(mb / 12)),
        ("list items", "- item\n".repeat(mb / 7)),
        (
            "table rows",
            format!("|a|b|\n|-|-|\n{}", "|x|y|\n".repeat(mb / 6)),
        ),
        ("html", "<div>".repeat(mb / 5)),
        ("entities", "&amp;&#123;&nope;".repeat(mb / 17)),
        ("nested quotes", ">".repeat(mb / 2) + " deep"),
        ("nested list markers", "- ".repeat(mb / 4) + "x"),
        ("nested ordered markers", "1. ".repeat(mb / 6) + "x"),
        (
            "short rows under a wide head",
            "|a".repeat(1_000) + "|\n" + &"|-".repeat(1_000) + "|\n" + &"x\n".repeat(mb / 2),
        ),
    ];
    for (name, input) in cases {
        let json = render_json(&input);
        let cells = cells(&json);
        assert!(cells <= MAX_CELLS, "{name}: {cells} cells");
        assert!(
            json.len() <= 8 * input.len() + 64,
            "{name}: {} bytes of JSON for {} bytes of markdown",
            json.len(),
            input.len()
        );
        check_allowed(&json);
    }
}

#[test]
fn highlighting_stops_at_its_limits_and_the_rest_is_plain() {
    // A code block past the block limit: one plain text node.
    let big = format!("```rust\n{}```\n", "let x = 1;\n".repeat(BLOCK_LIMIT / 10));
    let (nodes, budget) = markdown_to_tree(&big);
    assert_eq!(budget.highlighted, 0);
    let json = super::tree::to_json(&nodes);
    assert!(!json.contains("hl-"), "a block past the limit is plain");
    // Many blocks: the grammar runs over at most MESSAGE_LIMIT bytes in all.
    let block = format!(
        "```rust\n{}```\n\n",
        "fn main() { let x = 1; }\n".repeat(1_000)
    );
    let many = block.repeat(4 * MESSAGE_LIMIT / block.len() + 1);
    let (nodes, budget) = markdown_to_tree(&many);
    assert!(budget.highlighted > 0 && budget.highlighted <= MESSAGE_LIMIT);
    let json = super::tree::to_json(&nodes);
    let last = json.rfind("[\"pre\"").unwrap();
    assert!(
        !json[last..].contains("hl-"),
        "the last block is past the budget"
    );
    // A long line ends the highlighting of its block; the text is all there.
    let long = format!(
        "```rust\nlet a = 1;\n{}\nlet b = 2;\n```",
        "x".repeat(LINE_LIMIT + 1)
    );
    let (nodes, budget) = markdown_to_tree(&long);
    assert_eq!(budget.highlighted, "let a = 1;\n".len());
    let texts = check_allowed(&super::tree::to_json(&nodes));
    assert!(texts.ends_with("let b = 2;\n"));
}

#[test]
fn highlighted_code_keeps_the_text_exactly() {
    let code = "fn main() {\n    // hi <b>\n    let s = \"x\";\n    println!(\"{}\", 42);\n}\n";
    let json = render_json(&format!("```rust\n{code}```"));
    let texts = check_allowed(&json);
    assert_eq!(texts, code);
    for class in ["hl-keyword", "hl-comment", "hl-string", "hl-number"] {
        assert!(json.contains(class), "{class} in {json}");
    }
    assert!(
        json.contains(r#"["span",{"class":"hl-function"},"println!"]"#),
        "{json}"
    );
    // An unknown language: its class is kept, the code is plain.
    let json = render_json("```no-such-language\nx = 1\n```");
    assert_eq!(
        json,
        r#"[["pre",{},["code",{"class":"language-no-such-language"},"x = 1\n"]]]"#
    );
}

#[test]
fn the_cache_renders_a_text_once_and_a_changed_text_again() {
    let cache = RenderCache::new(1 << 20);
    let first = cache.tree_json("**a**");
    let again = cache.tree_json("**a**");
    assert_eq!(first, again);
    assert_eq!(cache.renders(), 1);
    let changed = cache.tree_json("**a** b");
    assert_ne!(first, changed);
    assert_eq!(cache.renders(), 2);
}

#[test]
fn requests_for_one_text_at_the_same_time_render_it_once() {
    let cache = RenderCache::default();
    let text = "# many tabs\n\n".to_string() + &"a *line* of `text`\n\n".repeat(20_000);
    let trees: Vec<_> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| cache.tree_json(&text)))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(cache.renders(), 1);
    assert!(trees.iter().all(|tree| *tree == trees[0]));
    assert_eq!(cache.bytes(), trees[0].len());
}

#[test]
fn the_cache_stays_within_its_byte_limit() {
    let cache = RenderCache::new(10_000);
    for n in 0..1_000 {
        cache.tree_json(&format!("paragraph number {n} with some words"));
        assert!(cache.bytes() <= 10_000);
    }
    // The most recent text is still there; the oldest is rendered again.
    let renders = cache.renders();
    cache.tree_json("paragraph number 999 with some words");
    assert_eq!(cache.renders(), renders);
    cache.tree_json("paragraph number 0 with some words");
    assert_eq!(cache.renders(), renders + 1);
}

fn engine_with_messages() -> TranscriptEngine {
    let mut engine = TranscriptEngine::new(EngineConfig::default());
    for update in [
        r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"**hi** <b>"}}}"#,
        r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"read"}}"#,
        r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"m2","content":{"type":"text","text":"caf\u00e9 \ud83d\ude00"}}}"#,
    ] {
        engine.apply_session_update(update);
    }
    engine
}

#[test]
fn sources_name_messages_and_refuse_other_entries() {
    let engine = engine_with_messages();
    let ids: Vec<String> = ["m2", "t1", "nope", "m1", "m2"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let sources = engine.message_sources(&ids);
    assert_eq!(
        sources,
        vec![
            Source::Message("caf\u{e9} \u{1f600}".into()),
            Source::NotMessage("tool_call"),
            Source::Missing,
            Source::Message("**hi** <b>".into()),
            Source::Message("caf\u{e9} \u{1f600}".into()),
        ]
    );
    let cache = RenderCache::default();
    let json: Value = serde_json::from_str(&batch_json(&ids, &sources, &cache)).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "rendered": [
                // UTF-16 length: the emoji counts twice, as in the page's strings.
                {"id": "m2", "length": 7, "tree": [["p", {}, "caf\u{e9} \u{1f600}"]]},
                {"id": "m1", "length": 10, "tree": [["p", {}, ["strong", {}, "hi"], " <b>"]]},
            ],
            "refused": [
                {"id": "t1", "reason": "a tool_call entry has no markdown"},
                {"id": "nope", "reason": "no entry has this id"},
            ],
        })
    );
}

mod properties {
    use proptest::prelude::*;

    use super::{MAX_CELLS, MAX_DEPTH, cells, check_allowed, depth, markdown_to_tree};

    /// Pieces that mean something to a markdown parser, mixed with words and raw HTML.
    fn piece() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "*",
            "**",
            "_",
            "`",
            "```",
            "```rust\n",
            "~~",
            "[",
            "]",
            "(",
            ")",
            "](",
            "<",
            ">",
            "> ",
            "- ",
            "1. ",
            "#",
            "# ",
            "|",
            "|-|",
            "\n",
            "\n\n",
            "    ",
            "\t",
            "\\",
            "&amp;",
            "&#x3c;",
            "word",
            " ",
            "https://a.b",
            "javascript:x",
            "<script>",
            "</script>",
            "<img src=x onerror=y>",
            "![",
            "[x]: ",
            "---",
            "- [ ] ",
            "é",
            "\u{1f600}",
            "\r\n",
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever the input: JSON of allowed tags and attributes only, bounded depth and size
        /// (per input byte at most one element opens, about 30 bytes of JSON; a highlighted
        /// token costs about 40; a table cell GFM pads costs 16).
        #[test]
        fn any_input_gives_a_safe_bounded_tree(pieces in prop::collection::vec(piece(), 0..300)) {
            let input: String = pieces.concat();
            let (nodes, budget) = markdown_to_tree(&input);
            prop_assert!(depth(&nodes) <= MAX_DEPTH + 1);
            let json = super::super::tree::to_json(&nodes);
            let cells = cells(&json);
            prop_assert!(cells <= MAX_CELLS);
            let bound = 40 * input.len() + 40 * budget.highlighted + 16 * cells + 64;
            prop_assert!(json.len() <= bound, "{} bytes -> {} of JSON", input.len(), json.len());
            check_allowed(&json);
        }
    }
}

#[test]
fn table_cells_past_the_limit_keep_their_text_without_their_element() {
    let rows = MAX_CELLS / 2 + 10;
    let input = format!("|a|b|\n|-|-|\n{}|last|row|\n", "|x|y|\n".repeat(rows));
    let json = render_json(&input);
    assert_eq!(cells(&json), MAX_CELLS);
    assert!(
        json.ends_with(r#"["tr",{},"last row "]]]]"#),
        "{}",
        &json[json.len() - 80..]
    );
}
