//! How an engine is configured: the protocol version of its input and how
//! chunks combine.

/// Which ACP protocol version the input speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProtocolHint {
    /// Infer: v2 once a v2-only update (`agent_message`, `state_update`, ...),
    /// a v2-shaped prompt response or an `initialize` result with
    /// `protocolVersion: 2` is seen; v1 until then.
    #[default]
    Auto,
    /// Protocol v1: the prompt response ends the turn; `null` patch fields
    /// mean "unchanged"; permission requests imply `requires_action`.
    V1,
    /// Protocol v2: the prompt response is acceptance; `state_update` ends turns.
    V2,
}

/// How agent message and thought chunks combine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StreamingPolicy {
    /// Chunks append (the ACP rule).
    #[default]
    Delta,
    /// Every agent chunk is a snapshot that replaces its message's content
    /// (for agents known to stream cumulative text). A chunk's
    /// `_meta.spindle.snapshot` flag still overrides this.
    Snapshot,
}

/// Engine configuration.
#[derive(Debug, Clone, Default)]
pub struct EngineConfig {
    /// Protocol version of the input.
    pub protocol: ProtocolHint,
    /// Chunk combination policy for this session.
    pub streaming: StreamingPolicy,
}
