//! Agent `session/update` notifications, v1 client in front of a v2 agent:
//! the hot path for chunks (from the scanner's view, or the serde head),
//! then the routing of every other update kind to its concern.

use serde_json::{Map, Value};
use spindle_wire::extensions::Extension;
use spindle_wire::scan::UpdateView;
use spindle_wire::tags::{self, MessageKind, UpdateTag};

use super::messages::{AUDIENCE_KEY, V1_BLOCKS};
use crate::shapes;
use crate::state::Bridge;
use crate::types::{Severity, Translated, chunk_kind, owned_str};
use crate::wire::{UpdateHead, UpdateParams};

impl Bridge {
    /// The hot path from the scanner. False when the line needs the general
    /// path.
    pub(crate) fn down_fast(
        &mut self,
        line: &str,
        f: &UpdateView<'_>,
        out: &mut Translated,
    ) -> bool {
        match chunk_kind(f.tag) {
            Some(kind)
                if kind != MessageKind::User
                    && f.content_type.is_some_and(|t| V1_BLOCKS.contains(&t))
                    && !line.contains(AUDIENCE_KEY) =>
            {
                self.down_chunk(line, f.session_id, kind, f.message_id, out);
                true
            }
            _ => false,
        }
    }

    pub(crate) fn down_update(
        &mut self,
        line: &str,
        params: UpdateParams<'_>,
        out: &mut Translated,
    ) {
        // Hot path: agent/thought chunks with v1 content blocks pass verbatim.
        if let Ok(head) = serde_json::from_str::<UpdateHead<'_>>(params.update.get())
            && let Some(kind) = chunk_kind(&head.tag)
            && kind != MessageKind::User
            && !line.contains(AUDIENCE_KEY)
            && head
                .content
                .as_ref()
                .is_some_and(|c| V1_BLOCKS.contains(&c.kind.as_ref()))
        {
            self.down_chunk(
                line,
                &params.session_id,
                kind,
                head.message_id.as_deref(),
                out,
            );
            return;
        }
        let session = params.session_id.into_owned();
        let Some(update) = out.update_object(params.update) else {
            return;
        };
        self.down_update_slow(&session, update, out);
    }

    pub(crate) fn down_update_slow(
        &mut self,
        session: &str,
        u: Map<String, Value>,
        out: &mut Translated,
    ) {
        let tag = owned_str(u.get("sessionUpdate"));
        let Some(known) = UpdateTag::parse(&tag) else {
            self.down_unrepresentable(
                session,
                "no_v1_form",
                format!("update {tag:?} has no ACP v1 form for this client"),
                out,
            );
            return;
        };
        if let Some(kind) = MessageKind::of_upsert(known) {
            self.down_upsert(session, kind, u, out);
            return;
        }
        if let Some(kind) = MessageKind::of_chunk(known) {
            self.down_chunk_slow(session, kind, u, out);
            return;
        }
        match known {
            UpdateTag::StateUpdate => self.down_state(session, &u, out),
            UpdateTag::ToolCallUpdate => self.down_tool_call_update(session, u, out),
            UpdateTag::ToolCallContentChunk => self.down_tool_content_chunk(session, u, out),
            UpdateTag::PlanUpdate | UpdateTag::PlanRemoved if self.client_plan_ops => {
                self.down_plan_operation(session, u, out)
            }
            UpdateTag::PlanUpdate => self.down_plan_update(session, &u, out),
            UpdateTag::PlanRemoved => self.down_plan_removed(session, &u, out),
            UpdateTag::ConfigOptionUpdate => self.down_config_option_update(session, u, out),
            UpdateTag::AvailableCommandsUpdate => self.down_commands(session, u, out),
            UpdateTag::UsageUpdate => self.down_usage(session, u, out),
            UpdateTag::SessionInfoUpdate => out.update_to_client(session, u),
            UpdateTag::Notice if self.client_notices => out.update_to_client(session, u),
            UpdateTag::CompactionUpdate | UpdateTag::CompactionSummaryChunk
                if self.client_compaction =>
            {
                self.down_compaction(session, u, out)
            }
            UpdateTag::AgentMessageClear => self.down_clear(session, MessageKind::Agent, u, out),
            UpdateTag::AgentThoughtClear => self.down_clear(session, MessageKind::Thought, u, out),
            UpdateTag::SessionCleared => {
                if self.client_ext.contains(Extension::SessionCleared) {
                    out.update_to_client(session, u);
                } else {
                    out.diag(
                        Severity::Info,
                        "extension_not_negotiated",
                        format!("{tag} not sent: the client did not opt into it"),
                    );
                }
            }
            // The end of the history `session/resume` replays: a v1 client
            // learns it from the `session/load` response, so no line is sent.
            UpdateTag::ReplayComplete => out.diag(
                Severity::Info,
                "replay_marker_dropped",
                format!(
                    "{tag} not sent: for a v1 client the session/load response ends the replay"
                ),
            ),
            UpdateTag::ToolCall => self.down_removed_tool_call(session, u, out),
            UpdateTag::Plan => self.down_removed_plan(session, u, out),
            UpdateTag::CurrentModeUpdate => {
                out.diag(
                    Severity::Warning,
                    "removed_v1_update",
                    format!("the v2 agent sent the v1-only update {tag:?}; relayed as is"),
                );
                out.update_to_client(session, u);
            }
            _ => self.down_unrepresentable(
                session,
                "no_v1_form",
                format!("update {tag:?} has no ACP v1 form for this client"),
                out,
            ),
        }
    }

    /// v2 `available_commands_update`: commands lose their type markers;
    /// unknown command or input types are rejected.
    fn down_commands(&mut self, session: &str, mut u: Map<String, Value>, out: &mut Translated) {
        if let Some(commands) = u.get_mut("availableCommands") {
            let rejected = shapes::commands_v2_to_v1(commands);
            for r in rejected {
                self.down_unrepresentable(session, "unknown_command_type", r, out);
            }
        }
        out.update_to_client(session, u);
    }

    /// `compaction_update` / `compaction_summary_chunk` to a client with
    /// v1's compaction: the summary's content blocks translated as message
    /// blocks are (unknown types, v2-only audience roles). A summary chunk
    /// whose one block is rejected is not sent; a summary whose every block
    /// is rejected is left out rather than sent as `[]` (a clear).
    fn down_compaction(&mut self, session: &str, mut u: Map<String, Value>, out: &mut Translated) {
        if let Some(Value::Array(blocks)) = u.get_mut("summary") {
            let blocks = std::mem::take(blocks);
            let sent = !blocks.is_empty();
            let mut kept = Vec::with_capacity(blocks.len());
            for block in blocks {
                kept.extend(self.down_block(session, block, out));
            }
            // `[]` would clear the summary: when every block was rejected,
            // the summary is left out (unchanged) instead.
            if sent && kept.is_empty() {
                u.remove("summary");
            } else {
                u.insert("summary".into(), Value::Array(kept));
            }
        }
        if let Some(block) = u.remove("content") {
            match self.down_block(session, block, out) {
                Some(block) => {
                    u.insert("content".into(), block);
                }
                None => return,
            }
        }
        out.update_to_client(session, u);
    }

    /// v2 `usage_update`: `cost: null` (a clear) has no v1 form.
    fn down_usage(&mut self, session: &str, mut u: Map<String, Value>, out: &mut Translated) {
        if u.get("cost") == Some(&Value::Null) {
            u.remove("cost");
            self.down_unrepresentable(
                session,
                "cost_cleared",
                format!(
                    "{} clears cost (v1: omitted = unchanged)",
                    tags::USAGE_UPDATE
                ),
                out,
            );
        }
        out.update_to_client(session, u);
    }
}
