//! What `/acp` clients get of a session, below the gateway: the session's second hub
//! ([`AcpFeed`], fed by `SessionCore::record` from the same logged lines as the page), its items
//! with a part per protocol version, one translation per session into the version the agent does
//! not speak, and the history a joining client is sent. Nothing here knows about connections
//! (`crate::gateway`) or HTTP.

pub mod client_lines;
pub mod feed;
pub mod history;
pub mod item;
pub(crate) mod setup;
pub mod subscription;
pub mod versions;

pub use feed::AcpFeed;
pub use history::HistoryPolicy;
pub use subscription::Subscription;
