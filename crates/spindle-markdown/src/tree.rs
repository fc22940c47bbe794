//! The safe element tree the page builds a finished message from.
//!
//! Invariant (safety): a tree can only hold the tags of [`Tag`] and the attributes of [`Attr`];
//! both are closed enums, so agent text reaches the page as text nodes and nothing else. The
//! page's builder (`assets/markdown.js`) checks the same allow-list again.
//!
//! JSON shape: the tree is an array of nodes; a node is a string (a text node) or
//! `[tag, {attributes}, ...children]`, e.g. `["p",{},"see ",["code",{},"x"]]`.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

/// The tags a tree may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    P,
    H1,
    H2,
    H3,
    H4,
    H5,
    H6,
    Ul,
    Ol,
    Li,
    Blockquote,
    Pre,
    Code,
    Em,
    Strong,
    Del,
    A,
    Table,
    Thead,
    Tbody,
    Tr,
    Th,
    Td,
    Hr,
    Br,
    Span,
}

impl Tag {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Tag::P => "p",
            Tag::H1 => "h1",
            Tag::H2 => "h2",
            Tag::H3 => "h3",
            Tag::H4 => "h4",
            Tag::H5 => "h5",
            Tag::H6 => "h6",
            Tag::Ul => "ul",
            Tag::Ol => "ol",
            Tag::Li => "li",
            Tag::Blockquote => "blockquote",
            Tag::Pre => "pre",
            Tag::Code => "code",
            Tag::Em => "em",
            Tag::Strong => "strong",
            Tag::Del => "del",
            Tag::A => "a",
            Tag::Table => "table",
            Tag::Thead => "thead",
            Tag::Tbody => "tbody",
            Tag::Tr => "tr",
            Tag::Th => "th",
            Tag::Td => "td",
            Tag::Hr => "hr",
            Tag::Br => "br",
            Tag::Span => "span",
        }
    }

    /// The heading tag of `level` (1-6; anything else is clamped).
    pub(crate) fn heading(level: usize) -> Tag {
        match level {
            0 | 1 => Tag::H1,
            2 => Tag::H2,
            3 => Tag::H3,
            4 => Tag::H4,
            5 => Tag::H5,
            _ => Tag::H6,
        }
    }
}

/// A table column's alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Center,
    Right,
}

/// What a token of highlighted code is (the page styles `hl-<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HighlightClass {
    Comment,
    String,
    Number,
    Constant,
    Keyword,
    Operator,
    Function,
    Type,
    Tag,
    Attribute,
    Variable,
    Inserted,
    Deleted,
    Heading,
}

impl HighlightClass {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HighlightClass::Comment => "hl-comment",
            HighlightClass::String => "hl-string",
            HighlightClass::Number => "hl-number",
            HighlightClass::Constant => "hl-constant",
            HighlightClass::Keyword => "hl-keyword",
            HighlightClass::Operator => "hl-operator",
            HighlightClass::Function => "hl-function",
            HighlightClass::Type => "hl-type",
            HighlightClass::Tag => "hl-tag",
            HighlightClass::Attribute => "hl-attribute",
            HighlightClass::Variable => "hl-variable",
            HighlightClass::Inserted => "hl-inserted",
            HighlightClass::Deleted => "hl-deleted",
            HighlightClass::Heading => "hl-heading",
        }
    }
}

/// The attributes a tree may hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Attr {
    /// `a`: an `http:`, `https:` or `mailto:` target (checked by [`super::convert::safe_href`]).
    Href(String),
    /// `ol`: the first number, when not 1.
    Start(u64),
    /// `th`/`td`: the column's alignment.
    Align(Align),
    /// `code` of a fenced block: `language-<name>`, the name reduced to `[A-Za-z0-9_+#.-]`.
    Language(String),
    /// `span` of highlighted code.
    Highlight(HighlightClass),
}

/// One node of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    Text(String),
    Element(Element),
}

/// An element: a tag, its attributes and its children.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Element {
    pub(crate) tag: Tag,
    pub(crate) attrs: Vec<Attr>,
    pub(crate) children: Vec<Node>,
}

impl Element {
    pub(crate) fn new(tag: Tag) -> Element {
        Element {
            tag,
            attrs: Vec::new(),
            children: Vec::new(),
        }
    }

    pub(crate) fn with_attr(mut self, attr: Attr) -> Element {
        self.attrs.push(attr);
        self
    }

    pub(crate) fn with_text(mut self, text: impl Into<String>) -> Element {
        push_text(&mut self.children, text.into());
        self
    }
}

/// Appends `text` to `children`, merged with a text node just before it (compact output).
pub(crate) fn push_text(children: &mut Vec<Node>, text: String) {
    if text.is_empty() {
        return;
    }
    if let Some(Node::Text(last)) = children.last_mut() {
        last.push_str(&text);
    } else {
        children.push(Node::Text(text));
    }
}

/// Appends `text` to `children` (borrowed: copied only once, into the merged node).
pub(crate) fn push_str(children: &mut Vec<Node>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(Node::Text(last)) = children.last_mut() {
        last.push_str(text);
    } else {
        children.push(Node::Text(text.to_string()));
    }
}

struct Attrs<'a>(&'a [Attr]);

impl Serialize for Attrs<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for attr in self.0 {
            match attr {
                Attr::Href(href) => map.serialize_entry("href", href)?,
                Attr::Start(start) => map.serialize_entry("start", start)?,
                Attr::Align(align) => map.serialize_entry(
                    "align",
                    match align {
                        Align::Left => "left",
                        Align::Center => "center",
                        Align::Right => "right",
                    },
                )?,
                Attr::Language(name) => {
                    map.serialize_entry("class", &format!("language-{name}"))?
                }
                Attr::Highlight(class) => map.serialize_entry("class", class.as_str())?,
            }
        }
        map.end()
    }
}

impl Serialize for Element {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(2 + self.children.len()))?;
        seq.serialize_element(self.tag.as_str())?;
        seq.serialize_element(&Attrs(&self.attrs))?;
        for child in &self.children {
            seq.serialize_element(child)?;
        }
        seq.end()
    }
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Text(text) => serializer.serialize_str(text),
            Node::Element(element) => element.serialize(serializer),
        }
    }
}

/// The tree as JSON (an array of nodes).
pub(crate) fn to_json(nodes: &[Node]) -> String {
    // Serializing strings, sequences and maps into memory cannot fail.
    serde_json::to_string(nodes).unwrap_or_else(|_| "[]".to_string())
}

/// How deep the tree is (elements only; text nodes are leaves).
#[cfg(test)]
pub(crate) fn depth(nodes: &[Node]) -> usize {
    // Iterative: a test must be able to look at any tree without overflowing the stack.
    let mut deepest = 0;
    let mut pending: Vec<(&Node, usize)> = nodes.iter().map(|node| (node, 1)).collect();
    while let Some((node, level)) = pending.pop() {
        if let Node::Element(element) = node {
            deepest = deepest.max(level);
            pending.extend(element.children.iter().map(|child| (child, level + 1)));
        }
    }
    deepest
}
