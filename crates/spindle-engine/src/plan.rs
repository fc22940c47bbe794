//! Plans: v1 `plan` (one plan, id `main`), `plan_update` (upsert by
//! `planId`) and `plan_removed`; one entry per plan and turn.

use serde_json::{Map, Value};

use crate::core::TranscriptEngine;
use crate::ids::Domain;
use crate::model::{EntryBody, EntryKind};

impl TranscriptEngine {
    /// A plan's latest version: its entry updated in place, or a new entry
    /// when the plan is new or its entry belongs to an earlier turn than the
    /// open one (each turn keeps the plan as it left it; the newest entry is
    /// the current plan).
    fn plan_entry(&mut self, plan_id: &str, plan: Value) {
        let known = self.keys.get(Domain::Plan, plan_id);
        let earlier_turn = known.is_some_and(|idx| {
            let open = self.turn_if_open();
            open.is_some() && self.t.entries[idx].turn != open
        });
        if let Some(idx) = known.filter(|_| !earlier_turn) {
            if let EntryBody::Plan { plan: p, removed } = &mut self.t.entries[idx].body {
                **p = plan;
                *removed = false;
            }
            self.emit_update(idx);
        } else {
            let turn = self.output_turn();
            let id = match turn {
                Some(n) if earlier_turn => format!("plan:{plan_id}:turn:{n}"),
                _ => format!("plan:{plan_id}"),
            };
            let idx = self.push_entry(
                &id,
                EntryKind::Plan,
                EntryBody::Plan {
                    plan: Box::new(plan),
                    removed: false,
                },
                turn,
            );
            self.keys.insert(Domain::Plan, plan_id, idx);
            self.emit_insert(idx);
        }
    }

    pub(crate) fn plan_v1(&mut self, mut u: Map<String, Value>) {
        if !u.get("entries").is_some_and(Value::is_array) {
            return self.diag("malformed_update", "plan: entries must be an array");
        }
        u.shift_remove("sessionUpdate");
        self.plan_entry("main", Value::Object(u));
    }

    pub(crate) fn plan_update(&mut self, u: Map<String, Value>) {
        let plan_id = u
            .get("plan")
            .and_then(|p| p.get("planId"))
            .and_then(Value::as_str);
        match (plan_id, u.get("plan")) {
            (Some(id), Some(plan @ Value::Object(_))) => {
                let id = id.to_owned();
                self.plan_entry(&id, plan.clone());
            }
            _ => self.diag(
                "malformed_update",
                "plan_update: plan object with a planId string required",
            ),
        }
    }

    pub(crate) fn plan_removed(&mut self, u: Map<String, Value>) {
        let Some(Value::String(id)) = u.get("planId") else {
            return self.diag("malformed_update", "plan_removed: planId must be a string");
        };
        if let Some(idx) = self.keys.get(Domain::Plan, id) {
            if let EntryBody::Plan { removed, .. } = &mut self.t.entries[idx].body {
                *removed = true;
            }
            self.emit_update(idx);
        }
    }
}
