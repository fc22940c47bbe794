//! Agent `session/update` notifications, v2 client in front of a v1 agent
//! (BRIDGE.md "Messages", "Tool calls, plans, commands"): chunks are relayed
//! with at most a spliced minted `messageId`, the other kinds become their
//! v2 upserts.

use serde_json::{Map, Value, json};
use spindle_wire::extensions::Extension;
use spindle_wire::meta::{CLEAR_BOUNDARY_FLAG, META_KEY};
use spindle_wire::scan::UpdateView;
use spindle_wire::tags::{self, MessageKind, UpdateTag};

use super::state::UpSession;
use crate::shapes;
use crate::state::Bridge;
use crate::types::{Severity, Translated, chunk_kind, owned_str};
use crate::wire::{self, UpdateHead, UpdateParams};

impl Bridge {
    /// The hot path from the scanner: message chunks. False when the line
    /// needs the general path.
    pub(crate) fn up_fast(&mut self, line: &str, f: &UpdateView<'_>, out: &mut Translated) -> bool {
        let Some(kind) = chunk_kind(f.tag) else {
            return false;
        };
        let boundary = f.meta.is_some_and(|m| m.contains(CLEAR_BOUNDARY_FLAG));
        self.up_chunk(
            line,
            f.session_id,
            f.update,
            kind,
            f.message_id,
            boundary,
            out,
        );
        true
    }

    /// A v1 chunk: relayed verbatim, or with a spliced minted messageId.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn up_chunk(
        &mut self,
        line: &str,
        session_id: &str,
        update: &str,
        kind: MessageKind,
        message_id: Option<&str>,
        boundary: bool,
        out: &mut Translated,
    ) {
        let up = &mut self.up;
        if !boundary
            && let (Some(id), Some((s, k, m))) = (message_id, &up.last_chunk)
            && *k == kind
            && m == id
            && s == session_id
        {
            // The same message goes on: `open` already names it.
            out.to_client.push(line.to_owned());
            return;
        }
        up.last_chunk = None;
        if !up.sessions.contains_key(session_id) {
            up.sessions
                .insert(session_id.to_owned(), UpSession::default());
        }
        let Some(session) = up.sessions.get_mut(session_id) else {
            return;
        };
        if boundary {
            session.open = None;
        }
        match message_id {
            Some(id) => {
                let same = matches!(&session.open, Some((k, o)) if *k == kind && o == id);
                if !same {
                    session.open = Some((kind, id.to_owned()));
                }
                up.last_chunk = Some((session_id.to_owned(), kind, id.to_owned()));
                out.to_client.push(line.to_owned());
            }
            None => {
                if !matches!(&session.open, Some((k, _)) if *k == kind) {
                    up.next_id += 1;
                    session.open = Some((kind, format!("spindle-msg-{}", up.next_id)));
                }
                let id = match &session.open {
                    Some((_, id)) => id.as_str(),
                    None => "",
                };
                // Minted ids need no escaping: quoted in place, no allocation.
                match wire::splice_first_field(line, update, "messageId", id) {
                    Some(l) => out.to_client.push(l),
                    None => out.diag(
                        Severity::Error,
                        "splice_failed",
                        "could not add a messageId to a chunk".into(),
                    ),
                }
            }
        }
    }

    /// The serde path: message chunks are relayed with at most a spliced
    /// messageId; everything else goes through [`Bridge::up_update_slow`].
    pub(crate) fn up_update(&mut self, line: &str, params: UpdateParams<'_>, out: &mut Translated) {
        let head: Option<UpdateHead<'_>> = serde_json::from_str(params.update.get()).ok();
        if let Some(head) = head
            && let Some(kind) = chunk_kind(&head.tag)
            // `messageId: null` must be replaced, not shadowed by a splice.
            && (head.message_id.is_some() || !params.update.get().contains("\"messageId\""))
        {
            let boundary = head
                .meta
                .is_some_and(|m| m.get().contains(CLEAR_BOUNDARY_FLAG));
            let id = head.message_id.as_deref();
            self.up_chunk(
                line,
                &params.session_id,
                params.update.get(),
                kind,
                id,
                boundary,
                out,
            );
            return;
        }
        let session = params.session_id.into_owned();
        let Some(update) = out.update_object(params.update) else {
            return;
        };
        self.up_update_slow(&session, update, out);
    }

    pub(crate) fn up_update_slow(
        &mut self,
        session: &str,
        mut u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let tag = owned_str(u.get("sessionUpdate"));
        let Some(known) = UpdateTag::parse(&tag) else {
            out.diag(
                Severity::Info,
                "unknown_update",
                format!("update {tag:?} forwarded as an unknown v2 update"),
            );
            out.update_to_client(session, u);
            return;
        };
        if let Some(kind) = MessageKind::of_chunk(known) {
            // A chunk whose messageId is not a string: v1 reads it as none.
            let id = self.up_open_message(session, kind);
            u.insert("messageId".into(), id.into());
            out.update_to_client(session, u);
            return;
        }
        match known {
            UpdateTag::ToolCall | UpdateTag::ToolCallUpdate => {
                self.up.session(session).open = None;
                u.insert("sessionUpdate".into(), tags::TOOL_CALL_UPDATE.into());
                shapes::tool_v1_to_v2(&mut u);
                out.update_to_client(session, u);
            }
            UpdateTag::Plan => out.update_to_client(session, plan_v1_to_v2(u)),
            UpdateTag::CurrentModeUpdate => self.up_current_mode(session, &u, out),
            UpdateTag::ConfigOptionUpdate => {
                if let Some(Value::Array(options)) = u.remove("configOptions") {
                    self.up.session(session).options = shapes::config_options_v1_to_v2(&options);
                }
                let options = self.up.all_options(session);
                u.insert("configOptions".into(), Value::Array(options));
                out.update_to_client(session, u);
            }
            UpdateTag::AvailableCommandsUpdate => {
                if let Some(commands) = u.get_mut("availableCommands") {
                    shapes::commands_v1_to_v2(commands);
                }
                out.update_to_client(session, u);
            }
            UpdateTag::AgentMessageClear | UpdateTag::AgentThoughtClear => {
                self.up_clear(session, known, &u, out)
            }
            UpdateTag::SessionCleared => self.up_session_cleared(session, u, out),
            UpdateTag::CompactionUpdate | UpdateTag::CompactionSummaryChunk => {
                self.up.session(session).open = None;
                out.update_to_client(session, u);
            }
            UpdateTag::UsageUpdate
            | UpdateTag::SessionInfoUpdate
            | UpdateTag::Notice
            | UpdateTag::PlanUpdate
            | UpdateTag::PlanRemoved => out.update_to_client(session, u),
            _ => {
                out.diag(
                    Severity::Info,
                    "unknown_update",
                    format!("update {tag:?} forwarded as an unknown v2 update"),
                );
                out.update_to_client(session, u);
            }
        }
    }

    /// `session_cleared`: ends the open message; sent only to a client that
    /// opted into it.
    fn up_session_cleared(&mut self, session: &str, u: Map<String, Value>, out: &mut Translated) {
        self.up.session(session).open = None;
        if self.client_ext.contains(Extension::SessionCleared) {
            out.update_to_client(session, u);
        } else {
            out.diag(
                Severity::Info,
                "extension_not_negotiated",
                format!(
                    "{} not sent: the client did not opt into it",
                    tags::SESSION_CLEARED
                ),
            );
        }
    }

    /// The id of the message of `kind` open on `session`, minted when none
    /// is.
    fn up_open_message(&mut self, session: &str, kind: MessageKind) -> String {
        let s = self.up.session(session);
        match &s.open {
            Some((k, id)) if *k == kind => id.clone(),
            _ => {
                let id = self.up.mint("msg");
                self.up.session(session).open = Some((kind, id.clone()));
                id
            }
        }
    }

    /// v1 `current_mode_update`: the mode config option changes value.
    pub(crate) fn up_current_mode(
        &mut self,
        session: &str,
        u: &Map<String, Value>,
        out: &mut Translated,
    ) {
        let mode = u.get("currentModeId").cloned().unwrap_or(Value::Null);
        let s = self.up.session(session);
        match s.modes.as_mut() {
            Some(modes) => {
                modes["currentModeId"] = mode;
                let options = self.up.all_options(session);
                out.to_client.push(wire::update_line(
                    session,
                    json!({"sessionUpdate": tags::CONFIG_OPTION_UPDATE, "configOptions": options}),
                ));
            }
            None => out.diag(
                Severity::Warning,
                "mode_without_modes",
                format!(
                    "{} to {mode} for a session that reported no modes; not shown",
                    tags::CURRENT_MODE_UPDATE
                ),
            ),
        }
    }

    /// A v1 `agent_message_clear` / `agent_thought_clear`: the v2 upsert of
    /// the named (or open) message with empty content.
    pub(crate) fn up_clear(
        &mut self,
        session: &str,
        tag: UpdateTag,
        u: &Map<String, Value>,
        out: &mut Translated,
    ) {
        let kind = if tag == UpdateTag::AgentMessageClear {
            MessageKind::Agent
        } else {
            MessageKind::Thought
        };
        let s = self.up.session(session);
        let id = match u.get("messageId").and_then(Value::as_str) {
            Some(id) => Some(id.to_owned()),
            None => match &s.open {
                Some((k, id)) if *k == kind => Some(id.clone()),
                _ => None,
            },
        };
        match id {
            Some(id) => out.to_client.push(wire::update_line(
                session,
                json!({"sessionUpdate": kind.upsert_tag().as_str(), "messageId": id, "content": []}),
            )),
            None => out.diag(
                Severity::Info,
                "clear_without_message",
                format!("{tag} with no message streaming: nothing to clear"),
            ),
        }
    }
}

/// A v1 `plan` as the v2 `plan_update` of the plan `main`.
fn plan_v1_to_v2(mut u: Map<String, Value>) -> Map<String, Value> {
    let entries = u.remove("entries").unwrap_or_else(|| json!([]));
    let mut p = Map::new();
    p.insert("sessionUpdate".into(), tags::PLAN_UPDATE.into());
    p.insert(
        "plan".into(),
        json!({"type": "items", "planId": "main", "entries": entries}),
    );
    if let Some(meta) = u.remove(META_KEY) {
        p.insert(META_KEY.into(), meta);
    }
    p
}
