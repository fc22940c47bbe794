//! v2 client in front of a v1 agent, one module per concern of BRIDGE.md:
//! the client's v2 requests are lowered to v1 and the agent's answers and
//! requests lifted to v2 ([`requests`]), a v2 prompt is accepted at once and
//! ends when the v1 agent answers it ([`prompt_lifecycle`]), the agent's v1
//! updates get minted messageIds and become v2 upserts ([`updates`]);
//! [`state`] holds the open message of each session and the mode option.

pub(crate) mod prompt_lifecycle;
pub(crate) mod requests;
pub(crate) mod state;
pub(crate) mod updates;
