//! Markdown to the safe tree: `pulldown-cmark` events folded onto an explicit stack (no
//! recursion over the input, so nesting cannot overflow the stack).
//!
//! Raw HTML (blocks and inline) is shown as its text. Links keep an `href` only for `http:`,
//! `https:` and `mailto:` targets; any other link shows its label and target as text. Images are
//! never loaded: a safe image becomes a link to it, labelled with its alt text. Headings are shown
//! two levels down (`#` is `h3`, `####` and deeper `h6`). Elements nest at
//! most [`MAX_DEPTH`] deep; deeper constructs keep their text, without their element.

use pulldown_cmark::{
    Alignment, CodeBlockKind, Event, LinkType, Options, Parser, Tag as MdTag, TagEnd,
};

use super::highlight::{self, Budget};
use super::tree::{Align, Attr, Element, Node, Tag, push_str, push_text};

/// Deepest element nesting kept (the page's DOM and the JSON stay shallow whatever the input).
pub(crate) const MAX_DEPTH: usize = 32;

/// Table cells kept per message; later cells keep their text without their element. GFM pads
/// short rows with empty cells, so a wide head over many short rows would otherwise make a tree
/// far larger than its text.
pub(crate) const MAX_CELLS: usize = 20_000;

/// Longest language name kept on a code block's class.
const MAX_LANGUAGE: usize = 32;

/// The CommonMark extensions rendered: GFM tables, strikethrough and task lists.
fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// `href` when it is an `http:`, `https:` or `mailto:` target without control characters or
/// spaces, otherwise `None`.
pub(crate) fn safe_href(href: &str) -> Option<&str> {
    let (scheme, rest) = href.split_once(':')?;
    let allowed = ["http", "https", "mailto"]
        .iter()
        .any(|known| scheme.eq_ignore_ascii_case(known));
    let clean = !href.chars().any(|c| c.is_control() || c.is_whitespace());
    (allowed && clean && !rest.is_empty()).then_some(href)
}

/// What an open frame of the stack becomes when it closes.
enum Frame {
    /// An element (children collected in it).
    Element(Element),
    /// A construct whose element is dropped (too deep, past the cell limit, an unsafe link): its
    /// children go to the parent, then `suffix` as text (a separator is dropped when there were
    /// no children: GFM's padded empty cells add nothing).
    Transparent {
        children: Vec<Node>,
        suffix: String,
        separator: bool,
    },
    /// A fenced or indented code block: its text, highlighted when it closes.
    Code {
        language: Option<String>,
        text: String,
    },
    /// A raw HTML block: shown as its text, lines kept.
    Html { text: String },
}

struct Builder {
    root: Vec<Node>,
    stack: Vec<Frame>,
    /// Elements open on the stack (the depth the next element would have, minus one).
    depth: usize,
    /// Column alignments of the innermost open table, and the next cell's column.
    alignments: Vec<Alignment>,
    column: usize,
    /// Whether the cells being read are the table's head.
    in_head: bool,
    /// Whether the open table's `tbody` is open (GFM tables do not nest).
    in_body: bool,
    /// Table cells made so far (see [`MAX_CELLS`]).
    cells: usize,
    budget: Budget,
}

/// Renders `text` into a tree. Work is linear in the text; highlighting is bounded by the limits
/// of [`highlight`]. Returns the tree and the highlighting budget left (for tests).
pub(crate) fn markdown_to_tree(text: &str) -> (Vec<Node>, Budget) {
    let mut builder = Builder {
        root: Vec::new(),
        stack: Vec::new(),
        depth: 0,
        alignments: Vec::new(),
        column: 0,
        in_head: false,
        in_body: false,
        cells: 0,
        budget: Budget::default(),
    };
    for event in Parser::new_ext(text, options()) {
        builder.event(event);
    }
    // The parser balances every start with an end; close anything left all the same.
    while !builder.stack.is_empty() {
        builder.close();
    }
    (builder.root, builder.budget)
}

impl Builder {
    fn children(&mut self) -> &mut Vec<Node> {
        match self.stack.last_mut() {
            None => &mut self.root,
            Some(Frame::Element(element)) => &mut element.children,
            Some(Frame::Transparent { children, .. }) => children,
            // Code and HTML frames take text through `text`; a stray node is kept in the parent.
            Some(Frame::Code { .. } | Frame::Html { .. }) => &mut self.root,
        }
    }

    fn text(&mut self, text: &str) {
        match self.stack.last_mut() {
            Some(Frame::Code { text: buffer, .. } | Frame::Html { text: buffer }) => {
                buffer.push_str(text)
            }
            _ => push_str(self.children(), text),
        }
    }

    fn leaf(&mut self, element: Element) {
        if self.depth < MAX_DEPTH {
            self.children().push(Node::Element(element));
        } else {
            let text: String = element
                .children
                .into_iter()
                .filter_map(|node| match node {
                    Node::Text(text) => Some(text),
                    Node::Element(_) => None,
                })
                .collect();
            push_text(self.children(), text);
        }
    }

    fn open(&mut self, element: Element) {
        if self.depth < MAX_DEPTH {
            self.depth += 1;
            self.stack.push(Frame::Element(element));
        } else {
            // Block constructs past the depth keep a space between their texts.
            if is_block(element.tag) {
                self.separated();
            } else {
                self.transparent(String::new());
            }
        }
    }

    /// A construct shown as its children, then `suffix`.
    fn transparent(&mut self, suffix: String) {
        self.stack.push(Frame::Transparent {
            children: Vec::new(),
            suffix,
            separator: false,
        });
    }

    /// A construct shown as its children, then a space when it had any.
    fn separated(&mut self) {
        self.stack.push(Frame::Transparent {
            children: Vec::new(),
            suffix: " ".to_string(),
            separator: true,
        });
    }

    fn close(&mut self) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        match frame {
            Frame::Element(element) => {
                self.depth -= 1;
                self.children().push(Node::Element(element));
            }
            Frame::Transparent {
                children,
                suffix,
                separator,
            } => {
                if separator && children.is_empty() {
                    return;
                }
                let parent = self.children();
                for child in children {
                    match child {
                        Node::Text(text) => push_text(parent, text),
                        element => parent.push(element),
                    }
                }
                push_text(parent, suffix);
            }
            Frame::Code { language, text } => {
                let mut code = Element::new(Tag::Code);
                if let Some(name) = &language {
                    code.attrs.push(Attr::Language(name.clone()));
                }
                let known = language.as_deref().filter(|name| highlight::knows(name));
                code.children = highlight::highlight(&text, known, &mut self.budget);
                let mut pre = Element::new(Tag::Pre);
                pre.children.push(Node::Element(code));
                self.leaf(pre);
            }
            Frame::Html { text } => {
                let mut p = Element::new(Tag::P);
                for (n, line) in text.trim_end_matches('\n').split('\n').enumerate() {
                    if n > 0 {
                        p.children.push(Node::Element(Element::new(Tag::Br)));
                    }
                    push_str(&mut p.children, line);
                }
                self.leaf(p);
            }
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(TagEnd::TableHead) => {
                // The head's cells sit in a row of their own (see `start`).
                self.close();
                self.close();
                self.in_head = false;
            }
            Event::End(TagEnd::Table) => {
                if self.in_body {
                    self.close();
                    self.in_body = false;
                }
                self.close();
            }
            Event::End(_) => self.close(),
            Event::Text(text) => self.text(&text),
            Event::Code(text) => self.leaf(Element::new(Tag::Code).with_text(text.as_ref())),
            // Raw HTML is text: the agent's markup is shown, never interpreted.
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::InlineMath(math) | Event::DisplayMath(math) => {
                self.leaf(Element::new(Tag::Code).with_text(math.as_ref()))
            }
            Event::FootnoteReference(name) => self.text(&format!("[^{name}]")),
            // A line break in a message is kept, as the streaming renderer keeps it (chat
            // messages are written line by line, not reflowed like documents).
            Event::SoftBreak => self.leaf(Element::new(Tag::Br)),
            Event::HardBreak => self.leaf(Element::new(Tag::Br)),
            Event::Rule => self.leaf(Element::new(Tag::Hr)),
            Event::TaskListMarker(checked) => {
                self.text(if checked { "\u{2611} " } else { "\u{2610} " })
            }
        }
    }

    fn start(&mut self, tag: MdTag<'_>) {
        match tag {
            MdTag::Paragraph => self.open(Element::new(Tag::P)),
            // Two levels down: a message is a part of the page, its `#` is not the page's title
            // (the page's streaming renderer shows headings the same way).
            MdTag::Heading { level, .. } => {
                self.open(Element::new(Tag::heading(level as usize + 2)))
            }
            MdTag::BlockQuote(_) => self.open(Element::new(Tag::Blockquote)),
            MdTag::CodeBlock(kind) => {
                let language = match kind {
                    CodeBlockKind::Fenced(info) => language_of(&info),
                    CodeBlockKind::Indented => None,
                };
                self.stack.push(Frame::Code {
                    language,
                    text: String::new(),
                });
            }
            MdTag::HtmlBlock => self.stack.push(Frame::Html {
                text: String::new(),
            }),
            MdTag::List(Some(start)) => {
                let mut ol = Element::new(Tag::Ol);
                if start != 1 {
                    ol.attrs.push(Attr::Start(start));
                }
                self.open(ol)
            }
            MdTag::List(None) => self.open(Element::new(Tag::Ul)),
            MdTag::Item => self.open(Element::new(Tag::Li)),
            MdTag::Table(alignments) => {
                self.alignments = alignments;
                self.in_body = false;
                self.open(Element::new(Tag::Table));
            }
            MdTag::TableHead => {
                // pulldown-cmark puts the head's cells straight in the head: a row is added.
                self.in_head = true;
                self.column = 0;
                self.open(Element::new(Tag::Thead));
                self.open(Element::new(Tag::Tr));
            }
            MdTag::TableRow => {
                if !self.in_body {
                    self.in_body = true;
                    self.open(Element::new(Tag::Tbody));
                }
                self.column = 0;
                self.open(Element::new(Tag::Tr));
            }
            MdTag::TableCell if self.cells >= MAX_CELLS => {
                self.column += 1;
                self.separated();
            }
            MdTag::TableCell => {
                self.cells += 1;
                let mut cell = Element::new(if self.in_head { Tag::Th } else { Tag::Td });
                let align = match self.alignments.get(self.column) {
                    Some(Alignment::Left) => Some(Align::Left),
                    Some(Alignment::Center) => Some(Align::Center),
                    Some(Alignment::Right) => Some(Align::Right),
                    _ => None,
                };
                if let Some(align) = align {
                    cell.attrs.push(Attr::Align(align));
                }
                self.column += 1;
                self.open(cell);
            }
            MdTag::Emphasis => self.open(Element::new(Tag::Em)),
            MdTag::Strong => self.open(Element::new(Tag::Strong)),
            MdTag::Strikethrough => self.open(Element::new(Tag::Del)),
            MdTag::Link {
                link_type,
                dest_url,
                ..
            } => match safe_href(&dest_url) {
                Some(href) => self.open(Element::new(Tag::A).with_attr(Attr::Href(href.into()))),
                None => {
                    // The label is shown, then where the link pointed (an autolink's label is
                    // already its target).
                    let shown_inline = matches!(link_type, LinkType::Autolink | LinkType::Email);
                    let suffix = if shown_inline || dest_url.is_empty() {
                        String::new()
                    } else {
                        format!(" ({dest_url})")
                    };
                    self.transparent(suffix);
                }
            },
            MdTag::Image { dest_url, .. } => match safe_href(&dest_url) {
                Some(href) => self.open(Element::new(Tag::A).with_attr(Attr::Href(href.into()))),
                None => self.transparent(format!(" ({dest_url})")),
            },
            // Not enabled in `options`; kept as their text should a later option add them.
            MdTag::FootnoteDefinition(_)
            | MdTag::DefinitionList
            | MdTag::DefinitionListTitle
            | MdTag::DefinitionListDefinition
            | MdTag::Superscript
            | MdTag::Subscript
            | MdTag::MetadataBlock(_) => self.separated(),
        }
    }
}

/// Block elements (a block dropped past the depth leaves a space between its neighbours' texts).
fn is_block(tag: Tag) -> bool {
    !matches!(
        tag,
        Tag::Em | Tag::Strong | Tag::Del | Tag::A | Tag::Code | Tag::Span
    )
}

/// The language of a fence's info string: its first word, reduced to `[A-Za-z0-9_+#.-]`.
fn language_of(info: &str) -> Option<String> {
    let word = info.split_whitespace().next()?;
    // `{.rust}` and `rust,ignore` name the language too.
    let word = word.trim_start_matches(['{', '.']);
    let word = word.split([',', '}']).next().unwrap_or("");
    let name: String = word
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '#' | '.' | '-'))
        .take(MAX_LANGUAGE)
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The tree of `text` as JSON (an array of nodes; see the `tree` module).
pub fn render_json(text: &str) -> String {
    let (nodes, _) = markdown_to_tree(text);
    super::tree::to_json(&nodes)
}
