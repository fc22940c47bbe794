//! Spindle as the agent toward remote ACP clients: connections ([`conn`]), what each request
//! does to the sessions behind it ([`dispatch`]) and each client's view of a session's feed
//! ([`streams`]). The transport (HTTP+SSE or WebSocket, `spindle-web`'s `/acp`) hands it decoded
//! messages and carries what it gives back; nothing here knows HTTP.

pub mod conn;
pub mod dispatch;
pub mod streams;

use std::sync::Arc;
use std::time::Duration;

pub use conn::AcpLimits;
use conn::Connections;

use crate::registry::SessionManager;

/// How often an idle connection stream gets a keepalive, and the reaper's longest period.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// The gateway's shared state: the sessions and the remote connections.
#[derive(Debug, Clone)]
pub struct Gateway {
    /// The sessions behind the gateway.
    pub manager: Arc<SessionManager>,
    /// The open connections.
    pub conns: Arc<Connections>,
    /// The protocol version the gateway speaks: the one the session agents are asked for.
    pub protocol: u16,
}

impl Gateway {
    /// The gateway of `manager`'s sessions; starts the reaper of idle connections.
    pub fn new(manager: Arc<SessionManager>, limits: AcpLimits) -> Gateway {
        let protocol = manager.protocol_version();
        let conns = Arc::new(Connections::new(limits));
        // The reaper holds the registry weakly: it ends with the server.
        let weak = Arc::downgrade(&conns);
        tokio::spawn(async move {
            let period = (limits.idle_timeout / 4).clamp(Duration::from_millis(50), KEEPALIVE);
            loop {
                tokio::time::sleep(period).await;
                let Some(conns) = weak.upgrade() else { break };
                let reaped = conns.reap(std::time::Instant::now());
                if reaped > 0 {
                    tracing::info!(reaped, "idle /acp connections closed");
                }
            }
        });
        Gateway {
            manager,
            conns,
            protocol,
        }
    }

    /// Closes every connection (server shutdown).
    pub fn close_all(&self) {
        self.conns.close_all();
    }

    /// Closes the connections of user `name` (removed from the users file, or another role).
    pub fn close_user(&self, name: &str) -> usize {
        self.conns.close_user(name)
    }
}
