//! Plans, v1 client in front of a v2 agent (BRIDGE.md "Tool calls, plans,
//! commands, permissions, usage"): v2 `plan_update`s collapse into the one
//! v1 `plan` (or pass as v1 plan operations to a client that has them), and
//! every entry is made v1: a status or priority v1 lacks (`cancelled`, `_x`)
//! drops the entry under strict; degrade keeps it with the nearest v1 value,
//! the original in `_meta.spindle`.

use serde_json::{Map, Value, json};
use spindle_wire::meta::{META_KEY, SPINDLE_META_KEY};
use spindle_wire::tags;

use crate::state::Bridge;
use crate::types::{Policy, Severity, Translated, owned_str};
use crate::wire;

const V1_PLAN_STATUS: [&str; 3] = ["pending", "in_progress", "completed"];
const V1_PLAN_PRIORITY: [&str; 3] = ["high", "medium", "low"];
/// Plan content types v1's unstable plan operations know.
const V1_PLAN_TYPES: [&str; 3] = ["items", "file", "markdown"];

impl Bridge {
    /// v2 plan entries as v1 entries. An entry whose status or priority v1
    /// lacks is rejected: strict leaves it out; degrade keeps it with the
    /// nearest v1 value (`cancelled` -> `completed` with the content marked
    /// `(cancelled) `, another status -> `pending`, a priority -> `medium`)
    /// and the original under `_meta.spindle.status` / `.priority`.
    pub(crate) fn down_plan_entries(
        &mut self,
        session: &str,
        plan_id: &str,
        entries: Vec<Value>,
        out: &mut Translated,
    ) -> Vec<Value> {
        let mut kept = Vec::with_capacity(entries.len());
        for mut e in entries {
            let status = owned_str(e.get("status"));
            let priority = owned_str(e.get("priority"));
            let bad_status = !V1_PLAN_STATUS.contains(&status.as_str());
            let bad_priority = !V1_PLAN_PRIORITY.contains(&priority.as_str());
            if !bad_status && !bad_priority {
                kept.push(e);
                continue;
            }
            if bad_status {
                self.down_unrepresentable(
                    session,
                    "plan_status",
                    format!("plan {plan_id} entry status {status:?}"),
                    out,
                );
            }
            if bad_priority {
                self.down_unrepresentable(
                    session,
                    "plan_priority",
                    format!("plan {plan_id} entry priority {priority:?}"),
                    out,
                );
            }
            if self.config.policy == Policy::Strict || !e.is_object() {
                continue;
            }
            let mut original = Map::new();
            if bad_status {
                let content = e.get("content").and_then(Value::as_str).unwrap_or("");
                e["content"] = format!("({status}) {content}").into();
                e["status"] = if status == "cancelled" {
                    "completed"
                } else {
                    "pending"
                }
                .into();
                original.insert("status".into(), status.into());
            }
            if bad_priority {
                e["priority"] = "medium".into();
                original.insert("priority".into(), priority.into());
            }
            if !e.get(META_KEY).is_some_and(Value::is_object) {
                e[META_KEY] = json!({});
            }
            let meta = &mut e[META_KEY];
            if !meta.get(SPINDLE_META_KEY).is_some_and(Value::is_object) {
                meta[SPINDLE_META_KEY] = json!({});
            }
            if let Some(spindle) = meta[SPINDLE_META_KEY].as_object_mut() {
                spindle.extend(original);
            }
            kept.push(e);
        }
        kept
    }

    /// A v2 agent's `plan` (a v1-only tag v2 removed): still a v1 `plan`,
    /// its entries made v1.
    pub(crate) fn down_removed_plan(
        &mut self,
        session: &str,
        mut u: Map<String, Value>,
        out: &mut Translated,
    ) {
        out.diag(
            Severity::Warning,
            "removed_v1_update",
            "the v2 agent sent the v1-only update \"plan\"; its entries translated".into(),
        );
        let entries = match u.remove("entries") {
            Some(Value::Array(e)) => e,
            _ => Vec::new(),
        };
        let entries = self.down_plan_entries(session, "(v1 plan)", entries, out);
        u.insert("entries".into(), Value::Array(entries));
        out.update_to_client(session, u);
    }

    /// `plan_update` / `plan_removed` to a client with v1's unstable plan
    /// operations: the same update, its entries made v1; a plan type v1
    /// lacks (`_x`) is rejected (degrade drops it with a warning).
    pub(crate) fn down_plan_operation(
        &mut self,
        session: &str,
        mut u: Map<String, Value>,
        out: &mut Translated,
    ) {
        if let Some(plan) = u.get_mut("plan").and_then(Value::as_object_mut) {
            let ty = owned_str(plan.get("type"));
            let plan_id = owned_str(plan.get("planId"));
            if !V1_PLAN_TYPES.contains(&ty.as_str()) {
                self.down_unrepresentable(
                    session,
                    "plan_type",
                    format!(
                        "plan {plan_id} of type {ty:?} (v1 plan operations: items, file, markdown)"
                    ),
                    out,
                );
                return;
            }
            if let Some(Value::Array(entries)) = plan.remove("entries") {
                let entries = self.down_plan_entries(session, &plan_id, entries, out);
                if let Some(plan) = u.get_mut("plan").and_then(Value::as_object_mut) {
                    plan.insert("entries".into(), Value::Array(entries));
                }
            }
        }
        out.update_to_client(session, u);
    }

    pub(crate) fn down_plan_update(
        &mut self,
        session: &str,
        u: &Map<String, Value>,
        out: &mut Translated,
    ) {
        let plan = u.get("plan").cloned().unwrap_or(Value::Null);
        let ty = plan.get("type").and_then(Value::as_str).unwrap_or("");
        let plan_id = owned_str(plan.get("planId"));
        if ty != "items" {
            let ty = ty.to_owned();
            self.down_unrepresentable(
                session,
                "plan_type",
                format!("plan {plan_id} of type {ty:?} (v1 plans are entry lists)"),
                out,
            );
            return;
        }
        let entries = plan["entries"].as_array().cloned().unwrap_or_default();
        let entries = self.down_plan_entries(session, &plan_id, entries, out);
        let s = self.down.session(session);
        match s.plans.iter_mut().find(|(p, _)| *p == plan_id) {
            Some((_, e)) => *e = entries,
            None => s.plans.push((plan_id, entries)),
        }
        self.emit_plan(session, out);
    }

    /// The v1 plan: all v2 plans' entries in first-seen order.
    pub(crate) fn emit_plan(&mut self, session: &str, out: &mut Translated) {
        let s = self.down.session(session);
        if s.plans.len() > 1 {
            out.diag(
                Severity::Info,
                "plans_collapsed",
                format!("{} plans shown as one v1 plan", s.plans.len()),
            );
        }
        let entries: Vec<Value> = s.plans.iter().flat_map(|(_, e)| e.clone()).collect();
        out.to_client.push(wire::update_line(
            session,
            json!({"sessionUpdate": tags::PLAN, "entries": entries}),
        ));
    }

    /// v2 `plan_removed`: the v1 plan is sent again without its entries.
    pub(crate) fn down_plan_removed(
        &mut self,
        session: &str,
        u: &Map<String, Value>,
        out: &mut Translated,
    ) {
        let id = u.get("planId").and_then(Value::as_str).unwrap_or("");
        let s = self.down.session(session);
        s.plans.retain(|(p, _)| p != id);
        self.emit_plan(session, out);
    }
}
