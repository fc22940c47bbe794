//! Field names `spindle serve` reads from session results that no other vocabulary module
//! spells: the v1 `modes` object of `session/new`, `session/load` and `session/resume` results.

/// `modes` (v1 session results: `{currentModeId, availableModes}`).
pub const MODES: &str = "modes";
/// `currentModeId` (in `modes` and in `current_mode_update`).
pub const CURRENT_MODE_ID: &str = "currentModeId";
/// `availableModes` (in `modes`).
pub const AVAILABLE_MODES: &str = "availableModes";
/// `sessionUpdate` (the tag member of an update).
pub const SESSION_UPDATE_TAG: &str = "sessionUpdate";
