//! What the v1-client direction reports about input v1 cannot show
//! (rejected under `strict`, degraded under `degrade`).

use crate::state::Bridge;
use crate::types::{Policy, Severity, Translated};

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
}
