//! Markdown of finished messages, rendered on the server into a safe element tree.
//!
//! `pulldown-cmark` parses (CommonMark with GFM tables, strikethrough and task lists), `syntect`
//! highlights fenced code ([`highlight`]), and [`convert`] folds both into the tree of [`tree`]:
//! an allow-list of tags and attributes, as JSON the page turns into DOM nodes with
//! `createElement`/`textContent` (`assets/markdown.js`). Agent text never becomes HTML.
//!
//! The page asks for the trees of the message entries it shows (`POST
//! /api/sessions/{id}/rendered`, served by `spindle-web`; the answer is made by [`batch`]);
//! nothing is added to the event stream. Trees are kept by text in a bounded [`RenderCache`].
//!
//! Invariant (bounded work): rendering is linear in the text; highlighting stops at the limits of
//! [`highlight`]; elements nest at most [`convert::MAX_DEPTH`] deep.

//!
//! ```
//! // Raw HTML in the text stays text: it never becomes an element.
//! let json = spindle_markdown::render_json("**bold** <b>");
//! assert_eq!(json, r#"[["p",{},["strong",{},"bold"]," <b>"]]"#);
//! ```
#![deny(missing_docs)]

pub mod batch;
mod cache;
mod convert;
mod highlight;
mod tree;

#[cfg(test)]
mod tests;

pub use batch::{MAX_BATCH, Source, batch_json, refusal, rendered_item};
pub use cache::{DEFAULT_LIMIT, RenderCache};
pub use convert::render_json;
