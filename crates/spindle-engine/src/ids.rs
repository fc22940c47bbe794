//! The id spaces of addressable entities and the fingerprint of entry ids.

use crate::model::EntryKind;
use spindle_wire::hash::FxHasher;
use spindle_wire::tags::MessageKind;

/// The four message identity spaces (ACP gives each message type its own ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum MsgKind {
    User = 0,
    Agent = 1,
    Thought = 2,
    PlanText = 3,
}

impl From<MessageKind> for MsgKind {
    fn from(kind: MessageKind) -> MsgKind {
        match kind {
            MessageKind::User => MsgKind::User,
            MessageKind::Agent => MsgKind::Agent,
            MessageKind::Thought => MsgKind::Thought,
        }
    }
}

impl MsgKind {
    pub(crate) fn entry_kind(self) -> EntryKind {
        match self {
            MsgKind::User => EntryKind::UserMessage,
            MsgKind::Agent => EntryKind::AgentMessage,
            MsgKind::Thought => EntryKind::AgentThought,
            MsgKind::PlanText => EntryKind::PlanText,
        }
    }
}

/// Id spaces of addressable entities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Domain {
    Msg(MsgKind),
    Tool,
    Terminal,
    Compaction,
    Plan,
}

/// A 64-bit fingerprint of an entry id: the Fx hash with a final avalanche
/// (murmur3's fmix64), so ids differing in one byte spread over all bits.
pub(crate) fn id_fingerprint(id: &str) -> u64 {
    use std::hash::Hasher;
    let mut hasher = FxHasher::default();
    hasher.write(id.as_bytes());
    hasher.write_usize(id.len());
    fmix64(hasher.finish())
}

/// murmur3's 64-bit finalizer: spreads the Fx hash over all bits (the table
/// takes its control bytes from the top ones).
pub(crate) fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}
