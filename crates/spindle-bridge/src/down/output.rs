//! What the v1-client direction sends and reports: v1 update lines, and
//! input v1 cannot show (rejected under `strict`, degraded under `degrade`).

use serde_json::{Map, Value};

use crate::state::Bridge;
use crate::types::{Policy, Severity, Translated};
use crate::wire::{self, Frame, UpdateParams};

impl Bridge {
    /// Reports something v1 cannot show: strict rejects it (and fails the
    /// pending prompt), degrade reports the fallback it used.
    pub(crate) fn down_unrepresentable(
        &mut self,
        session: &str,
        code: &'static str,
        what: String,
        out: &mut Translated,
    ) {
        match self.config.policy {
            Policy::Strict => {
                if let Some(p) = self.down.session(session).prompt.as_mut() {
                    p.rejected.push(format!("{code}: {what}"));
                }
                out.diag(Severity::Error, code, format!("rejected: {what}"));
            }
            Policy::Degrade => out.diag(Severity::Warning, code, format!("degraded: {what}")),
        }
    }

    pub(crate) fn emit_v1(&self, session: &str, u: Map<String, Value>, out: &mut Translated) {
        out.to_client
            .push(wire::update_line(session, Value::Object(u)));
    }

    /// A session/update whose params did not parse as `{sessionId, update}`.
    pub(crate) fn down_update_malformed(&mut self, frame: &Frame<'_>, out: &mut Translated) {
        let detail = match frame.params {
            None => "session/update without params".to_owned(),
            Some(p) => match serde_json::from_str::<UpdateParams<'_>>(p.get()) {
                Err(e) => format!("session/update params: {e}"),
                Ok(_) => "session/update could not be read".to_owned(),
            },
        };
        out.diag(Severity::Warning, "malformed_update", detail);
    }
}
