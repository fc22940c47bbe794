//! Messages, v1 client in front of a v2 agent (BRIDGE.md "Messages"): chunks
//! relay verbatim, whole-message upserts fan out into chunks only where
//! docs/src/semantics.md allows it, replacements and clears use the clear extension or
//! the marked re-push.

use serde_json::{Map, Value, json};
use spindle_wire::extensions::Extension;
use spindle_wire::meta::{META_KEY, SPINDLE_META_KEY};
use spindle_wire::tags::MessageKind;

use super::state::kind_index;
use crate::state::Bridge;
use crate::types::{Policy, Severity, Translated, clear_extension};

pub(crate) const V1_BLOCKS: [&str; 5] = ["text", "image", "audio", "resource_link", "resource"];
const V1_ROLES: [&str; 2] = ["user", "assistant"];
/// A chunk line holding this key may carry a v2-only audience role, so it
/// takes the general path instead of the verbatim relay.
pub(crate) const AUDIENCE_KEY: &str = "\"audience\"";
/// The separator of a marked re-push (the "separator and re-push"
/// workaround of docs/src/semantics.md), flagged in `_meta` so tools can tell it from agent text.
pub(crate) const REPUSH_SEPARATOR: &str = "\n\n---\n\n";

impl Bridge {
    /// An agent/thought chunk with a v1 content block: relayed verbatim.
    pub(crate) fn down_chunk(
        &mut self,
        line: &str,
        session_id: &str,
        kind: MessageKind,
        message_id: Option<&str>,
        out: &mut Translated,
    ) {
        match message_id {
            Some(id) => {
                let k = kind_index(kind);
                let known = matches!(&self.down.last_shown,
                    Some((s, lk, m)) if *lk == k && m == id && s == session_id);
                if !known {
                    let shown = &mut self.down.session(session_id).shown[k];
                    if !shown.contains(id) {
                        shown.insert(id.to_owned());
                    }
                    self.down.last_shown = Some((session_id.to_owned(), k, id.to_owned()));
                }
            }
            None => out.diag(
                Severity::Warning,
                "missing_message_id",
                "v2 chunk without messageId relayed as an id-less v1 chunk".into(),
            ),
        }
        out.to_client.push(line.to_owned());
    }

    /// A message chunk the hot path left: the prompt's echo is dropped, an
    /// unknown content block rejected or replaced.
    pub(crate) fn down_chunk_slow(
        &mut self,
        session: &str,
        kind: MessageKind,
        mut u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let id = u
            .get("messageId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if kind == MessageKind::User
            && let Some(id) = &id
            && self.is_echo(session, id)
        {
            self.down.session(session).shown[0].insert(id.clone());
            return;
        }
        let block = u.remove("content").unwrap_or(Value::Null);
        let Some(block) = self.down_block(session, block, out) else {
            return;
        };
        u.insert("content".into(), block);
        if let Some(id) = id {
            self.down.session(session).shown[kind_index(kind)].insert(id);
        }
        out.update_to_client(session, u);
    }

    /// Checks one content block for v1; None when it has no v1 form and was
    /// rejected or dropped.
    pub(crate) fn down_block(
        &mut self,
        session: &str,
        block: Value,
        out: &mut Translated,
    ) -> Option<Value> {
        let ty = block.get("type").and_then(Value::as_str).unwrap_or("");
        if V1_BLOCKS.contains(&ty) {
            return Some(self.down_audience(session, block, out));
        }
        let ty = ty.to_owned();
        self.down_unrepresentable(
            session,
            "unknown_content_block",
            format!("content block of type {ty:?}"),
            out,
        );
        match self.config.policy {
            Policy::Strict => None,
            Policy::Degrade => Some(json!({
                "type": "text",
                "text": format!("[{ty} content not representable in ACP v1]"),
                META_KEY: {SPINDLE_META_KEY: {"bridgePlaceholder": true}},
            })),
        }
    }

    /// A v1-typed block whose `annotations.audience` names a role v1 lacks
    /// (v2 roles are open, v1's are `user` / `assistant`): the block is kept
    /// and those roles are left out (rejected under strict, a warning under
    /// degrade).
    fn down_audience(&mut self, session: &str, mut block: Value, out: &mut Translated) -> Value {
        let Some(audience) = block
            .get_mut(spindle_wire::routing::ANNOTATIONS_FIELD)
            .and_then(|a| a.get_mut("audience"))
            .and_then(Value::as_array_mut)
        else {
            return block;
        };
        let unknown: Vec<String> = audience
            .iter()
            .filter(|r| !V1_ROLES.contains(&r.as_str().unwrap_or("")))
            .map(Value::to_string)
            .collect();
        if unknown.is_empty() {
            return block;
        }
        audience.retain(|r| V1_ROLES.contains(&r.as_str().unwrap_or("")));
        self.down_unrepresentable(
            session,
            "audience_role",
            format!(
                "content annotation audience {} (v1 roles: user, assistant)",
                unknown.join(", ")
            ),
            out,
        );
        block
    }

    /// Chunks for `blocks`, the first carrying `meta`.
    pub(crate) fn fan_out(
        &mut self,
        session: &str,
        kind: MessageKind,
        id: &str,
        blocks: Vec<Value>,
        meta: Option<Value>,
        out: &mut Translated,
    ) {
        let mut meta = meta;
        for block in blocks {
            let Some(block) = self.down_block(session, block, out) else {
                continue;
            };
            let mut c = Map::new();
            c.insert("sessionUpdate".into(), kind.chunk_tag().as_str().into());
            c.insert("messageId".into(), id.into());
            c.insert("content".into(), block);
            if let Some(m) = meta.take() {
                c.insert(META_KEY.into(), m);
            }
            out.update_to_client(session, c);
            self.down.session(session).shown[kind_index(kind)].insert(id.to_owned());
        }
    }

    /// Degrade fallback for content the client already shows: the clear
    /// extension when negotiated, else a marked re-push separator.
    pub(crate) fn clear_or_separator(
        &mut self,
        session: &str,
        kind: MessageKind,
        id: &str,
        out: &mut Translated,
    ) {
        // An extension's name is the update tag it adds.
        let ext = clear_extension(kind)
            .filter(|e| self.client_ext.contains(*e))
            .map(Extension::name);
        let mut c = Map::new();
        match ext {
            Some(tag) => {
                c.insert("sessionUpdate".into(), tag.into());
                c.insert("messageId".into(), id.into());
                self.down.session(session).shown[kind_index(kind)].remove(id);
                self.down.last_shown = None;
            }
            None => {
                c.insert("sessionUpdate".into(), kind.chunk_tag().as_str().into());
                c.insert("messageId".into(), id.into());
                c.insert(
                    "content".into(),
                    json!({"type": "text", "text": REPUSH_SEPARATOR}),
                );
                c.insert(META_KEY.into(), json!({SPINDLE_META_KEY: {"repush": true}}));
            }
        }
        out.update_to_client(session, c);
    }

    /// The messageId and `_meta` of a whole-message upsert, or None when it
    /// is dropped: no messageId, or the echo of the v1 client's prompt.
    /// `_meta: null` (a clear) has no v1 form and is left out.
    fn down_upsert_head(
        &mut self,
        session: &str,
        kind: MessageKind,
        u: &Map<String, Value>,
        out: &mut Translated,
    ) -> Option<(String, Option<Value>)> {
        let Some(id) = u
            .get("messageId")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            out.diag(
                Severity::Warning,
                "missing_message_id",
                format!("{} without messageId ignored", kind.upsert_tag()),
            );
            return None;
        };
        if kind == MessageKind::User && self.is_echo(session, &id) {
            // The v1 client already shows the prompt it sent.
            self.down.session(session).shown[0].insert(id);
            return None;
        }
        let mut meta = u.get(META_KEY).cloned();
        if meta == Some(Value::Null) {
            self.down_unrepresentable(
                session,
                "meta_null",
                format!("{} {id} clears _meta", kind.upsert_tag()),
                out,
            );
            meta = None;
        }
        Some((id, meta))
    }

    pub(crate) fn down_upsert(
        &mut self,
        session: &str,
        kind: MessageKind,
        u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let Some((id, meta)) = self.down_upsert_head(session, kind, &u, out) else {
            return;
        };
        let shown = self.down.session(session).shown[kind_index(kind)].contains(&id);
        // With the clear extension negotiated a replacement is exact: clear,
        // then the new content as chunks.
        let can_clear = clear_extension(kind).is_some_and(|e| self.client_ext.contains(e));
        match u.get("content") {
            None => {
                if meta.is_some() {
                    self.down_unrepresentable(
                        session,
                        "patch_only_update",
                        format!("{} {id} patches _meta only", kind.upsert_tag()),
                        out,
                    );
                }
            }
            Some(Value::Array(blocks)) if !blocks.is_empty() => {
                if shown && can_clear {
                    self.clear_or_separator(session, kind, &id, out);
                } else if shown {
                    self.down_unrepresentable(
                        session,
                        "replacement_after_chunks",
                        format!(
                            "{} {id} replaces content already streamed",
                            kind.upsert_tag()
                        ),
                        out,
                    );
                    if self.config.policy == Policy::Strict {
                        return;
                    }
                    self.clear_or_separator(session, kind, &id, out);
                }
                self.fan_out(session, kind, &id, blocks.clone(), meta, out);
            }
            Some(Value::Array(_)) | Some(Value::Null) if can_clear => {
                self.clear_or_separator(session, kind, &id, out);
            }
            Some(Value::Array(_)) | Some(Value::Null) => {
                self.down_unrepresentable(
                    session,
                    "content_cleared",
                    format!("{} {id} clears its content", kind.upsert_tag()),
                    out,
                );
                if self.config.policy == Policy::Degrade && shown {
                    self.clear_or_separator(session, kind, &id, out);
                }
            }
            Some(other) => out.diag(
                Severity::Warning,
                "malformed_update",
                format!(
                    "{} {id} content is not an array: {other}",
                    kind.upsert_tag()
                ),
            ),
        }
    }

    /// The agent's `agent_message_clear` / `agent_thought_clear`: relayed
    /// when the client opted in, else rejected (degrade: the fallback of
    /// [`Bridge::clear_or_separator`]).
    pub(crate) fn down_clear(
        &mut self,
        session: &str,
        kind: MessageKind,
        u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let Some(ext) = clear_extension(kind) else {
            return;
        };
        let tag = ext.name();
        if self.client_ext.contains(ext) {
            if let Some(id) = u.get("messageId").and_then(Value::as_str) {
                self.down.session(session).shown[kind_index(kind)].remove(id);
                self.down.last_shown = None;
            }
            out.update_to_client(session, u);
        } else if let Some(id) = u.get("messageId").and_then(Value::as_str) {
            let id = id.to_owned();
            self.down_unrepresentable(
                session,
                "clear_not_negotiated",
                format!("{tag} for {id}: the client did not opt into it"),
                out,
            );
            if self.config.policy == Policy::Degrade {
                self.clear_or_separator(session, kind, &id, out);
            }
        } else {
            self.down_unrepresentable(
                session,
                "clear_not_negotiated",
                format!("{tag} without messageId: the client did not opt into it"),
                out,
            );
        }
    }
}
