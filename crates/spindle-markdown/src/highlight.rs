//! Code blocks highlighted with `syntect` (Sublime Text grammars, pure-Rust `fancy-regex`), into
//! `span`s whose only attribute is one of the `hl-*` classes of [`HighlightClass`]: the grammar's
//! scopes are mapped to a short fixed list, so no theme (and no colour) comes from the server.
//!
//! Bounded work: a block is highlighted only when it is at most [`BLOCK_LIMIT`] bytes and the
//! message still has budget ([`MESSAGE_LIMIT`] in all); a line longer than [`LINE_LIMIT`] ends
//! the highlighting of its block (the rest is plain text). Regex searches that backtrack too far
//! count as no match in syntect's fancy-regex backend, so one search is bounded too. The limits
//! are small because the grammars are slow: about 0.2-0.3 MB/s for Rust, Python or JavaScript in
//! a release build on the 2-core test machine, so a message costs at most a few hundred
//! milliseconds of one blocking worker, once (trees are cached).

use std::sync::OnceLock;

use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;

use super::tree::{Attr, Element, HighlightClass, Node, Tag, push_str};

/// Largest code block that is highlighted (bytes); larger blocks are plain text.
pub(crate) const BLOCK_LIMIT: usize = 32 * 1024;
/// Bytes of code highlighted per message; blocks past it are plain text.
pub(crate) const MESSAGE_LIMIT: usize = 64 * 1024;
/// Longest line the grammar runs over (bytes); a longer line and the rest of its block are plain.
pub(crate) const LINE_LIMIT: usize = 2_000;

/// The highlighting budget of one message.
#[derive(Debug)]
pub(crate) struct Budget {
    remaining: usize,
    /// Bytes the grammar ran over (for the tests' bound on work).
    pub(crate) highlighted: usize,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            remaining: MESSAGE_LIMIT,
            highlighted: 0,
        }
    }
}

struct Highlighter {
    syntaxes: SyntaxSet,
    /// Scope prefixes and the class they give, most specific first.
    rules: Vec<(Scope, HighlightClass)>,
}

const RULES: [(&str, HighlightClass); 25] = [
    ("comment", HighlightClass::Comment),
    ("string", HighlightClass::String),
    ("constant.numeric", HighlightClass::Number),
    ("constant.character.escape", HighlightClass::String),
    ("constant", HighlightClass::Constant),
    ("keyword.operator", HighlightClass::Operator),
    ("keyword", HighlightClass::Keyword),
    ("storage.type", HighlightClass::Keyword),
    ("storage.modifier", HighlightClass::Keyword),
    ("storage", HighlightClass::Keyword),
    ("entity.name.function", HighlightClass::Function),
    ("support.function", HighlightClass::Function),
    ("variable.function", HighlightClass::Function),
    ("support.macro", HighlightClass::Function),
    ("entity.name.tag", HighlightClass::Tag),
    ("entity.other.attribute-name", HighlightClass::Attribute),
    ("entity.name", HighlightClass::Type),
    ("support.type", HighlightClass::Type),
    ("support.class", HighlightClass::Type),
    ("entity.other.inherited-class", HighlightClass::Type),
    ("variable.language", HighlightClass::Constant),
    ("variable.parameter", HighlightClass::Variable),
    ("markup.inserted", HighlightClass::Inserted),
    ("markup.deleted", HighlightClass::Deleted),
    ("markup.heading", HighlightClass::Heading),
];

fn highlighter() -> &'static Highlighter {
    static HIGHLIGHTER: OnceLock<Highlighter> = OnceLock::new();
    HIGHLIGHTER.get_or_init(|| Highlighter {
        syntaxes: SyntaxSet::load_defaults_newlines(),
        rules: RULES
            .iter()
            .filter_map(|(name, class)| Scope::new(name).ok().map(|scope| (scope, *class)))
            .collect(),
    })
}

/// Fence names agents use that the default grammars do not know, and the grammar that fits
/// best: TypeScript and JSX read well enough with JavaScript's, a shell session with bash's.
const ALIASES: [(&str, &str); 11] = [
    ("ts", "js"),
    ("typescript", "js"),
    ("tsx", "js"),
    ("jsx", "js"),
    ("mjs", "js"),
    ("cjs", "js"),
    ("shell", "sh"),
    ("console", "sh"),
    ("shell-session", "sh"),
    ("golang", "go"),
    ("csharp", "cs"),
];

impl Highlighter {
    fn syntax(&self, language: &str) -> Option<&SyntaxReference> {
        let language = ALIASES
            .iter()
            .find(|(alias, _)| alias.eq_ignore_ascii_case(language))
            .map_or(language, |(_, name)| name);
        let syntax = self.syntaxes.find_syntax_by_token(language)?;
        // Plain Text has no scopes worth a span.
        (syntax.name != "Plain Text").then_some(syntax)
    }

    /// The class of the innermost scope of `stack` that has one.
    fn class(&self, stack: &ScopeStack) -> Option<HighlightClass> {
        stack.as_slice().iter().rev().find_map(|scope| {
            self.rules
                .iter()
                .find(|(prefix, _)| prefix.is_prefix_of(*scope))
                .map(|(_, class)| *class)
        })
    }
}

/// Whether `language` (the first word of a fence's info string) names a known grammar.
pub(crate) fn knows(language: &str) -> bool {
    highlighter().syntax(language).is_some()
}

/// `code` as the children of a `code` element: highlighted spans when `language` is known and
/// the budget allows, otherwise one text node.
pub(crate) fn highlight(code: &str, language: Option<&str>, budget: &mut Budget) -> Vec<Node> {
    let plain = || {
        let mut nodes = Vec::new();
        push_str(&mut nodes, code);
        nodes
    };
    let Some(language) = language else {
        return plain();
    };
    if code.len() > BLOCK_LIMIT || code.len() > budget.remaining {
        return plain();
    }
    let highlighter = highlighter();
    let Some(syntax) = highlighter.syntax(language) else {
        return plain();
    };
    budget.remaining -= code.len();
    let mut out = Vec::new();
    let mut state = ParseState::new(syntax);
    let mut stack = ScopeStack::new();
    let mut class = None;
    let mut offset = 0;
    for line in LinesWithEndings::from(code) {
        if line.len() > LINE_LIMIT {
            break;
        }
        let Ok(ops) = state.parse_line(line, &highlighter.syntaxes) else {
            break;
        };
        budget.highlighted += line.len();
        let mut start = 0;
        for (at, op) in ops {
            // Positions are byte offsets on char boundaries, in order.
            let at = at.min(line.len());
            if at > start {
                push_token(&mut out, &line[start..at], class);
                start = at;
            }
            if stack.apply(&op).is_err() {
                break;
            }
            class = highlighter.class(&stack);
        }
        push_token(&mut out, &line[start..], class);
        offset += line.len();
    }
    // What the grammar did not reach (a long line, a parse error) stays plain.
    push_str(&mut out, &code[offset..]);
    out
}

fn push_token(out: &mut Vec<Node>, text: &str, class: Option<HighlightClass>) {
    if text.is_empty() {
        return;
    }
    let Some(class) = class else {
        push_str(out, text);
        return;
    };
    // Adjacent tokens of one class share a span.
    if let Some(Node::Element(last)) = out.last_mut()
        && last.attrs == [Attr::Highlight(class)]
    {
        push_str(&mut last.children, text);
        return;
    }
    out.push(Node::Element(
        Element::new(Tag::Span)
            .with_attr(Attr::Highlight(class))
            .with_text(text),
    ));
}
