//! spindle-web: the HTTP surfaces of `spindle serve` on top of [`spindle_runtime`].
//!
//! Two routers, each on its own: the page (its embedded assets, its API, the SSE event stream of
//! render ops that browsers only paint, rendered markdown) and `/acp`, ACP's remote transport
//! (HTTP+SSE and WebSocket) in front of the runtime's gateway. A gateway without the page
//! ([`ServeOptions::page`] off, `spindle bridge --listen`) mounts no page route. Both share the
//! access checks of [`security`] (Host, Origin, token) and map the runtime's errors to HTTP in
//! one place (`errors.rs`). No route takes a command: terminals run only at the agent's request.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use spindle_web::{AgentChoice, AgentSettings, ServeConfig};
//! let config = ServeConfig {
//!     bind: "127.0.0.1:0".parse()?,
//!     db: "/tmp/spindle-demo.db".into(),
//!     token: None,
//!     allow_hosts: Vec::new(),
//!     agent: AgentSettings {
//!         agents: vec![AgentChoice {
//!             id: "spindle".into(),
//!             name: "Spindle reference agent".into(),
//!             version: "0.1.0".into(),
//!             command: vec!["spindle".into(), "agent".into()],
//!             env: Vec::new(),
//!         }],
//!         default_agent: "spindle".into(),
//!         protocol_version: 2,
//!         cwd: std::env::current_dir()?,
//!         startup_timeout: std::time::Duration::from_secs(30),
//!         fs: spindle_web::FsPolicy::Ask,
//!         terminals: true,
//!         remote: None,
//!         mcp_servers: Vec::new(),
//!     },
//!     limits: Default::default(),
//!     replica: Default::default(),
//! };
//! let server = spindle_web::Server::start(config).await?;
//! println!("listening on {}", server.url());
//! server.run_until(async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod acp;
#[cfg(feature = "page")]
mod api;
#[cfg(feature = "page")]
mod errors;
#[cfg(feature = "page")]
mod extract;
#[cfg(feature = "page")]
mod markdown_routes;
mod probes;
#[cfg(feature = "page")]
mod queue_routes;
mod remote_agent;
#[cfg(feature = "page")]
mod routes;
pub mod security;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

#[cfg(feature = "page")]
pub use errors::WebError;
pub use remote_agent::remote_agent;
pub use spindle_protocol::transport::remote::RemoteProfile;
pub use spindle_runtime::{
    AcpLimits, AgentChoice, AgentSettings, FsPolicy, HubLimits, MAX_LINE_BYTES, OpenMode,
    RemoteAgent, ReplicaConfig, hub, replica, store,
};
use spindle_runtime::{Gateway, Runtime, RuntimeConfig, SessionManager};

/// Largest accepted request body on every route but the prompt's (`api::MAX_PROMPT_BODY`) and
/// `/acp`'s: 1 MiB.
const MAX_BODY: usize = 1 << 20;

async fn not_found() -> axum::response::Response {
    use axum::response::IntoResponse;
    (axum::http::StatusCode::NOT_FOUND, "not found").into_response()
}

/// The page's router, in a build with the page (feature `page`, on by default).
#[cfg(feature = "page")]
fn page_router(manager: &Arc<SessionManager>) -> Result<axum::Router, ServeError> {
    Ok(routes::router(extract::AppState {
        manager: manager.clone(),
        markdown: Arc::new(spindle_markdown::RenderCache::default()),
    }))
}

/// A build without the feature `page` links no page code: asking for the page is refused.
#[cfg(not(feature = "page"))]
fn page_router(_: &Arc<SessionManager>) -> Result<axum::Router, ServeError> {
    Err(ServeError::Config(
        "this build has no page (spindle-web without the feature `page`): serve /acp only".into(),
    ))
}

/// Everything `spindle serve` is configured with.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Address to listen on (loopback unless a token is set).
    pub bind: SocketAddr,
    /// SQLite database file (created if missing).
    pub db: PathBuf,
    /// Access token; required for a non-loopback bind.
    pub token: Option<String>,
    /// Extra host names accepted in `Host`/`Origin` (e.g. the machine's name on the LAN).
    pub allow_hosts: Vec<String>,
    /// The agent every session runs, fixed at start.
    pub agent: AgentSettings,
    /// Per-session SSE limits.
    pub limits: HubLimits,
    /// This server's place among replicas sharing the database.
    pub replica: ReplicaConfig,
}

/// Why the server could not start or stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The configuration is refused (e.g. a non-loopback bind without a token).
    Config(String),
    /// The database could not be opened or read.
    Store(store::StoreError),
    /// Binding or serving failed.
    Io(std::io::Error),
}

impl std::fmt::Display for ServeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServeError::Config(message) => f.write_str(message),
            ServeError::Store(error) => write!(f, "{error}"),
            ServeError::Io(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for ServeError {}

/// A bound server, not yet serving.
#[derive(Debug)]
pub struct Server {
    listener: tokio::net::TcpListener,
    address: SocketAddr,
    token: Option<String>,
    manager: Arc<SessionManager>,
    acp: Gateway,
    router: axum::Router,
}

/// How [`Server::start_with`] serves.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// Serve the page and its API (`false`: only `/acp`, a headless gateway).
    pub page: bool,
    /// Limits of the `/acp` endpoint.
    pub acp: AcpLimits,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            page: true,
            acp: AcpLimits::from_env(),
        }
    }
}

impl Server {
    /// Checks the configuration, opens the database, rebuilds every stored session and binds.
    pub async fn start(config: ServeConfig) -> Result<Server, ServeError> {
        Server::start_with(config, ServeOptions::default()).await
    }

    /// [`Server::start`] with options (headless, `/acp` limits).
    pub async fn start_with(
        config: ServeConfig,
        options: ServeOptions,
    ) -> Result<Server, ServeError> {
        config.agent.check().map_err(ServeError::Config)?;
        if config.agent.remote.is_none()
            && let Some(agent) = config.agent.agents.iter().find(|a| a.command.is_empty())
        {
            return Err(ServeError::Config(format!(
                "the command of agent {:?} is empty",
                agent.id
            )));
        }
        // Refuse an open bind before touching the database or the network.
        security::AccessPolicy::new(config.bind, config.token.clone(), &config.allow_hosts)
            .map_err(ServeError::Config)?;
        let listener = tokio::net::TcpListener::bind(config.bind)
            .await
            .map_err(ServeError::Io)?;
        let address = listener.local_addr().map_err(ServeError::Io)?;
        let runtime = Runtime::start(RuntimeConfig {
            db: config.db,
            agent: config.agent,
            limits: config.limits,
            replica: config.replica,
            // The default replica id needs the bound port (port 0 picks one).
            replica_port: address.port(),
        })
        .map_err(ServeError::Store)?;
        // The real port is known only now (port 0 picks one): the Host allowlist needs it.
        let policy =
            security::AccessPolicy::new(address, config.token.clone(), &config.allow_hosts)
                .map_err(ServeError::Config)?;
        let manager = runtime.manager;
        let acp = Gateway::new(manager.clone(), options.acp);
        let policy = Arc::new(policy);
        let mut router = acp::router(acp.clone());
        if options.page {
            router = router.merge(page_router(&manager)?);
        }
        // Around every router: the body limit (routes with their own keep theirs), the access
        // check and the security headers, also for unknown paths. The probes stay outside.
        let router = router
            .fallback(not_found)
            .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
            .layer(axum::middleware::from_fn_with_state(
                policy,
                security::guard,
            ))
            .merge(probes::router(manager.clone()));
        Ok(Server {
            listener,
            address,
            token: config.token,
            manager,
            acp,
            router,
        })
    }

    /// The bound address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The URL to open (with the token, which the page trades for a cookie).
    pub fn url(&self) -> String {
        let host = if self.address.ip().is_unspecified() {
            format!("127.0.0.1:{}", self.address.port())
        } else {
            self.address.to_string()
        };
        match &self.token {
            Some(token) => format!("http://{host}/?token={token}"),
            None => format!("http://{host}/"),
        }
    }

    /// Serves until `shutdown` completes, then stops every agent.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let manager = self.manager.clone();
        let acp = self.acp.clone();
        // Agents stop and SSE streams end first; otherwise the graceful shutdown would wait
        // for event streams that never finish on their own.
        let signal = async move {
            shutdown.await;
            // Load balancers stop sending traffic; the sessions' leases are released as their
            // agents stop below, so other replicas take them over at once.
            manager.replica.start_draining();
            acp.close_all();
            manager.shutdown().await;
        };
        // TCP_NODELAY on every accepted connection: a stream's small writes (one SSE event, one
        // WebSocket frame) go out at once instead of waiting on Nagle and the peer's delayed ACK.
        use axum::serve::ListenerExt;
        let listener = self.listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!("TCP_NODELAY: {error}");
            }
        });
        axum::serve(listener, self.router)
            .with_graceful_shutdown(signal)
            .await
            .map_err(ServeError::Io)
    }
}
