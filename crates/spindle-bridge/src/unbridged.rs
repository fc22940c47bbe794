//! Client methods the bridge does not translate (BRIDGE.md "Forks,
//! sessions, logout, elicitation"): `nes/*`, whose fields differ between v1 and v2
//! (`nes/accept`'s `id` is v2's `suggestionId`, ...). The agent's `nes`
//! capability is not advertised across the bridge; a client that sends one
//! anyway gets `-32601` (a request) or a warning on the bridge's stderr (a
//! notification), never a line in the wrong version's shape.

use crate::state::Bridge;
use crate::types::{Severity, Translated};
use crate::wire::{self, Frame};

/// The prefix of the next-edit-suggestion methods.
const NES_METHOD_PREFIX: &str = "nes/";

impl Bridge {
    /// Refuses a client line calling a method the bridge does not translate;
    /// returns whether it did.
    pub(crate) fn refuse_untranslated(&mut self, frame: &Frame<'_>, out: &mut Translated) -> bool {
        let Some(method) = frame.method.as_deref() else {
            return false;
        };
        if !method.starts_with(NES_METHOD_PREFIX) {
            return false;
        }
        let versions = format!(
            "between ACP v{} (client) and v{} (agent)",
            self.client_version.unwrap_or(1),
            self.agent_version.unwrap_or(1)
        );
        match frame.id_key() {
            Some(id) => {
                out.diag(
                    Severity::Warning,
                    "method_not_bridged",
                    format!("answered {method} with -32601: not translated {versions}"),
                );
                out.to_client.push(wire::error_response(
                    &id,
                    -32601,
                    &format!("{method} is not translated by spindle bridge {versions}"),
                    None,
                ));
            }
            None => out.diag(
                Severity::Warning,
                "method_not_bridged",
                format!("notification {method} not forwarded: not translated {versions}"),
            ),
        }
        true
    }
}
