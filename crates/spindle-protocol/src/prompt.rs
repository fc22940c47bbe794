//! Prompt content without I/O: `@path` mentions found in what the user
//! typed, and the content blocks a `session/prompt` carries, checked
//! against what the agent accepts ([`PromptCapabilities`]).
//!
//! The blocks are the same in v1 and v2:
//! - text: `{"type":"text","text":...}`;
//! - a mentioned file the agent may read itself: `{"type":"resource_link",
//!   "uri":"file:///...","name":"main.rs","mimeType":"text/x-rust"}` (every
//!   agent accepts these);
//! - a mentioned file with its text embedded, when the agent advertises
//!   `embeddedContext`: `{"type":"resource","resource":{"uri":...,
//!   "mimeType":...,"text":...}}`;
//! - an image, when the agent advertises `image`: `{"type":"image",
//!   "mimeType":"image/png","data":<base64>}`.
//!
//! ```
//! use spindle_protocol::PromptCapabilities;
//! use spindle_protocol::prompt::{PromptBuilder, PromptError, parse_mentions};
//!
//! let text = r#"explain @src/main.rs and @"docs/read me.md", mail a@b.c"#;
//! let paths: Vec<String> = parse_mentions(text).into_iter().map(|m| m.path).collect();
//! assert_eq!(paths, ["src/main.rs", "docs/read me.md"]);
//!
//! let caps = PromptCapabilities { image: false, audio: false, embedded_context: true };
//! let blocks = PromptBuilder::new(caps)
//!     .text(text)
//!     .mention("file:///w/src/main.rs", "main.rs", "text/x-rust", Some("fn main() {}"))
//!     .mention("file:///w/docs/read%20me.md", "read me.md", "text/markdown", None)
//!     .build()
//!     .unwrap();
//! assert_eq!(blocks[1]["type"], "resource");
//! assert_eq!(blocks[2]["type"], "resource_link");
//!
//! let refused = PromptBuilder::new(caps).image("image/png", "iVBORw0KGgo=").build();
//! assert_eq!(refused, Err(PromptError::ImagesNotSupported));
//! ```

use std::ops::Range;
use std::path::Path;

use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::{DecodeError, Engine as _, alphabet};
use serde_json::{Map, Value, json};
use spindle_wire::client_methods::blocks;

pub use crate::client::PromptCapabilities;

/// One `@path` mention in a prompt's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// The mentioned path, as typed (without `@` and quotes).
    pub path: String,
    /// Byte range of the whole mention in the text, `@` and quotes included.
    pub range: Range<usize>,
}

/// Characters that may come right before a mention's `@` (besides
/// whitespace and the start of the text): opening brackets and separators.
/// A letter or digit there makes it an e-mail address (`a@b.c`), not a mention.
const OPENERS: &[char] = &['(', '[', '{', '<', ',', ';', ':', '\'', '"'];

/// Trailing punctuation that ends a sentence rather than a path
/// (`see @src/main.rs.` mentions `src/main.rs`).
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '>', '\'', '"'];

/// The `@path` and `@"quoted path"` mentions in `text`, in order.
///
/// A mention starts with `@` at the start of the text or after whitespace
/// or an opening bracket (so `a@b.c` is not one); an unquoted path runs to
/// the next whitespace, without trailing sentence punctuation; a quoted one
/// runs to the closing quote (an unclosed quote is no mention). Mentions
/// inside inline code (between backticks) are ignored.
pub fn parse_mentions(text: &str) -> Vec<Mention> {
    let mut mentions = Vec::new();
    let mut in_code = false;
    let mut prev: Option<char> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '`' {
            in_code = !in_code;
        }
        let starts =
            c == '@' && !in_code && prev.is_none_or(|p| p.is_whitespace() || OPENERS.contains(&p));
        prev = Some(c);
        if !starts {
            continue;
        }
        let rest = &text[i + 1..];
        let found = if let Some(quoted) = rest.strip_prefix('"') {
            quoted.find('"').and_then(|end| {
                let path = &quoted[..end];
                (!path.trim().is_empty()).then(|| (path.to_owned(), i + 1 + 1 + end + 1))
            })
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let path = rest[..end].trim_end_matches(TRAILING);
            (!path.is_empty() && !path.starts_with('@') && !path.contains('`'))
                .then(|| (path.to_owned(), i + 1 + path.len()))
        };
        if let Some((path, end)) = found {
            mentions.push(Mention {
                path,
                range: i..end,
            });
            // Continue after the mention.
            while chars.peek().is_some_and(|(j, _)| *j < end) {
                let (_, skipped) = chars.next().unwrap_or((0, ' '));
                prev = Some(skipped);
            }
        }
    }
    mentions
}

/// Why prompt content could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptError {
    /// An image, but the agent did not advertise the `image` prompt capability.
    ImagesNotSupported,
    /// The image's MIME type or data is not usable (the message says why).
    InvalidImage(String),
    /// A mention without a URI or a name.
    InvalidMention(String),
    /// Nothing to send.
    Empty,
}

impl std::fmt::Display for PromptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PromptError::ImagesNotSupported => f.write_str("the agent does not accept images"),
            PromptError::InvalidImage(why) => write!(f, "unusable image: {why}"),
            PromptError::InvalidMention(why) => write!(f, "unusable mention: {why}"),
            PromptError::Empty => f.write_str("the prompt is empty"),
        }
    }
}

impl std::error::Error for PromptError {}

/// Builds a prompt's content blocks in order; errors are reported by
/// [`PromptBuilder::build`] (the first one wins).
#[derive(Debug, Clone)]
pub struct PromptBuilder {
    capabilities: PromptCapabilities,
    blocks: Vec<Value>,
    error: Option<PromptError>,
}

impl PromptBuilder {
    /// A builder for an agent that accepts `capabilities`.
    pub fn new(capabilities: PromptCapabilities) -> Self {
        PromptBuilder {
            capabilities,
            blocks: Vec::new(),
            error: None,
        }
    }

    fn fail(&mut self, error: PromptError) {
        self.error.get_or_insert(error);
    }

    /// A text block (empty text adds nothing).
    pub fn text(mut self, text: &str) -> Self {
        if !text.is_empty() {
            self.blocks
                .push(json!({"type": blocks::TEXT, "text": text}));
        }
        self
    }

    /// A mentioned file: an embedded `resource` with its text when the agent
    /// advertises `embeddedContext` and `text` is known, else a
    /// `resource_link` (`uri` and `name` required; an empty `mime` is left
    /// out).
    pub fn mention(mut self, uri: &str, name: &str, mime: &str, text: Option<&str>) -> Self {
        if uri.is_empty() || name.is_empty() {
            self.fail(PromptError::InvalidMention(format!(
                "a mention needs a uri and a name (uri {uri:?}, name {name:?})"
            )));
            return self;
        }
        let block = match text {
            Some(text) if self.capabilities.embedded_context => {
                let mut resource = Map::new();
                resource.insert(blocks::URI.into(), json!(uri));
                if !mime.is_empty() {
                    resource.insert(blocks::MIME_TYPE.into(), json!(mime));
                }
                resource.insert("text".into(), json!(text));
                json!({"type": blocks::RESOURCE, "resource": resource})
            }
            _ => {
                let mut link = Map::new();
                link.insert("type".into(), json!(blocks::RESOURCE_LINK));
                link.insert(blocks::URI.into(), json!(uri));
                link.insert("name".into(), json!(name));
                if !mime.is_empty() {
                    link.insert(blocks::MIME_TYPE.into(), json!(mime));
                }
                if let Some(text) = text {
                    link.insert(blocks::SIZE.into(), json!(text.len()));
                }
                Value::Object(link)
            }
        };
        self.blocks.push(block);
        self
    }

    /// An image (`data` is base64): refused with
    /// [`PromptError::ImagesNotSupported`] unless the agent advertises `image`.
    pub fn image(mut self, mime: &str, data: &str) -> Self {
        if !self.capabilities.image {
            self.fail(PromptError::ImagesNotSupported);
            return self;
        }
        if !mime.starts_with("image/") || mime.len() <= "image/".len() {
            self.fail(PromptError::InvalidImage(format!(
                "{mime:?} is not an image MIME type"
            )));
            return self;
        }
        if let Err(why) = check_base64(data) {
            self.fail(PromptError::InvalidImage(why));
            return self;
        }
        self.blocks.push(json!({
            "type": blocks::IMAGE,
            blocks::MIME_TYPE: mime,
            blocks::DATA: data,
        }));
        self
    }

    /// The content blocks (a JSON array), or the first error.
    pub fn build(self) -> Result<Value, PromptError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        if self.blocks.is_empty() {
            return Err(PromptError::Empty);
        }
        Ok(Value::Array(self.blocks))
    }
}

/// Image data's base64: the standard alphabet, padded (any bits after the
/// last byte are let through, as agents decode them).
const IMAGE_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

fn check_base64(data: &str) -> Result<(), String> {
    if data.is_empty() {
        return Err("the image data is empty".into());
    }
    if !data.len().is_multiple_of(4) {
        return Err("the image data is not padded base64 (length not a multiple of 4)".into());
    }
    match IMAGE_BASE64.decode(data) {
        Ok(_) => Ok(()),
        Err(DecodeError::InvalidByte(at, b'=')) => Err(format!(
            "the image data has misplaced or too much base64 padding (byte {at})"
        )),
        Err(DecodeError::InvalidByte(at, _)) => {
            Err(format!("the image data is not base64 (byte {at})"))
        }
        Err(other) => Err(format!("the image data is not base64 ({other})")),
    }
}

/// Standard base64 with padding (for image data).
pub fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The MIME type of an image file, by its extension (png, jpeg, gif, webp,
/// svg); `None` for anything else.
pub fn image_mime_type(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_data_must_be_padded_base64() {
        assert_eq!(encode_base64(b"hi"), "aGk=");
        assert_eq!(encode_base64(b"\x89PNG"), "iVBORw==");
        for ok in ["aGk=", "aGVsbG8h", "iVBORw==", "aGl="] {
            assert_eq!(check_base64(ok), Ok(()), "{ok}");
        }
        for bad in [
            "", "aGk", "aGk==", "a===", "====", "aG=k", "aGk!", "aGk =", "aGVsbG8",
        ] {
            assert!(check_base64(bad).is_err(), "{bad}");
        }
        assert_eq!(
            check_base64("aGk!"),
            Err("the image data is not base64 (byte 3)".into())
        );
    }

    fn paths(text: &str) -> Vec<String> {
        parse_mentions(text).into_iter().map(|m| m.path).collect()
    }

    #[test]
    fn mentions_are_paths_after_an_at_sign_not_mail_addresses() {
        assert_eq!(paths("@a.rs"), ["a.rs"]);
        assert_eq!(paths("see @src/main.rs."), ["src/main.rs"]);
        assert_eq!(paths("(@lib.rs, @x/y)"), ["lib.rs", "x/y"]);
        assert_eq!(
            paths("mail me: a@b.c or @ alone or @@x"),
            Vec::<String>::new()
        );
        assert_eq!(
            paths(r#"@"with space.txt" and @"unclosed"#),
            ["with space.txt"]
        );
        assert_eq!(paths("`@not/this` but @this"), ["this"]);
        assert_eq!(paths("é @ü/ñ.md"), ["ü/ñ.md"]);
        let text = r#"x @"a b" y"#;
        let m = &parse_mentions(text)[0];
        assert_eq!(&text[m.range.clone()], r#"@"a b""#);
        let text = "go @src/x.rs!";
        let m = &parse_mentions(text)[0];
        assert_eq!(&text[m.range.clone()], "@src/x.rs");
    }

    #[test]
    fn images_are_checked_and_need_the_capability() {
        let yes = PromptCapabilities {
            image: true,
            ..Default::default()
        };
        let ok = PromptBuilder::new(yes)
            .image("image/png", &encode_base64(b"\x89PNG"))
            .build()
            .unwrap();
        assert_eq!(
            ok[0],
            json!({"type": "image", "mimeType": "image/png", "data": "iVBORw=="})
        );
        for (mime, data) in [
            ("text/plain", "AAAA"),
            ("image/png", "A"),
            ("image/png", "AA!A"),
            ("image/png", ""),
        ] {
            assert!(matches!(
                PromptBuilder::new(yes).image(mime, data).build(),
                Err(PromptError::InvalidImage(_))
            ));
        }
        let no = PromptCapabilities::default();
        let refused = PromptBuilder::new(no)
            .text("x")
            .image("image/png", "AAAA")
            .build();
        assert_eq!(refused, Err(PromptError::ImagesNotSupported));
        assert_eq!(
            PromptError::ImagesNotSupported.to_string(),
            "the agent does not accept images"
        );
        assert_eq!(
            PromptBuilder::new(no).text("").build(),
            Err(PromptError::Empty)
        );
    }

    #[test]
    fn a_mention_is_a_link_unless_its_text_can_be_embedded() {
        let embed = PromptCapabilities {
            embedded_context: true,
            ..Default::default()
        };
        let plain = PromptCapabilities::default();
        let link = PromptBuilder::new(plain)
            .mention("file:///w/a.txt", "a.txt", "text/plain", Some("hi"))
            .build()
            .unwrap();
        assert_eq!(
            link[0],
            json!({"type": "resource_link", "uri": "file:///w/a.txt", "name": "a.txt", "mimeType": "text/plain", "size": 2})
        );
        let embedded = PromptBuilder::new(embed)
            .mention("file:///w/a.txt", "a.txt", "", Some("hi"))
            .mention("file:///w/b.bin", "b.bin", "application/octet-stream", None)
            .build()
            .unwrap();
        assert_eq!(
            embedded[0],
            json!({"type": "resource", "resource": {"uri": "file:///w/a.txt", "text": "hi"}})
        );
        assert_eq!(embedded[1]["type"], "resource_link");
        assert!(matches!(
            PromptBuilder::new(plain).mention("", "x", "", None).build(),
            Err(PromptError::InvalidMention(_))
        ));
    }

    #[test]
    fn image_types_by_extension() {
        assert_eq!(image_mime_type(Path::new("a/B.PNG")), Some("image/png"));
        assert_eq!(image_mime_type(Path::new("x.jpeg")), Some("image/jpeg"));
        assert_eq!(image_mime_type(Path::new("x.txt")), None);
        assert_eq!(image_mime_type(Path::new("noext")), None);
    }
}
