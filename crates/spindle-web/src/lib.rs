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
//!         idle_stop: None,
//!         fs: spindle_web::FsPolicy::Ask,
//!         terminals: true,
//!         remote: None,
//!         mcp_servers: Vec::new(),
//!         checkpoints: None,
//!     },
//!     limits: Default::default(),
//!     replica: Default::default(),
//!     users: Default::default(),
//! };
//! let server = spindle_web::Server::start(config).await?;
//! println!("listening on {}", server.url());
//! server.run_until(async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

pub mod access;
mod acp;
#[cfg(feature = "page")]
mod api;
pub mod attempts;
#[cfg(feature = "page")]
mod checkpoint_routes;
#[cfg(feature = "page")]
mod errors;
#[cfg(feature = "page")]
mod extract;
#[cfg(feature = "page")]
mod markdown_routes;
mod probes;
pub mod proxy;
#[cfg(feature = "page")]
mod queue_routes;
mod remote_agent;
pub mod roles;
#[cfg(feature = "page")]
mod routes;
pub mod security;
pub mod users;
#[cfg(feature = "page")]
mod wire_routes;

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

/// Re-reads the users file of a running server (see [`Server::reload_users`]).
#[derive(Debug, Clone)]
pub struct UsersReloader {
    access: Arc<access::Access>,
    file: Option<PathBuf>,
    acp: Gateway,
}

impl UsersReloader {
    /// Re-reads the file; ends the `/acp` connections of the users removed or changed.
    pub fn reload(&self) -> Result<Vec<String>, ServeError> {
        let changed = reload_users(&self.access, self.file.as_deref())?;
        for name in &changed {
            self.acp.close_user(name);
        }
        Ok(changed)
    }
}

fn reload_users(
    access: &access::Access,
    file: Option<&std::path::Path>,
) -> Result<Vec<String>, ServeError> {
    let Some(file) = file else {
        return Err(ServeError::Config(
            "this server runs without --users".into(),
        ));
    };
    let users = users::Users::load(file).map_err(|e| ServeError::Config(e.0))?;
    access
        .reload(users)
        .map_err(|e| ServeError::Config(e.to_string()))
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
    /// Who is who: `--users FILE` and a trusted proxy (default: none, `token` alone decides).
    pub users: UsersConfig,
}

/// The users of `spindle serve --users FILE` and the reverse proxy that may name them.
#[derive(Debug, Clone, Default)]
pub struct UsersConfig {
    /// The users file (see [`users`]); re-read by [`Server::reload_users`] (SIGHUP).
    pub file: Option<PathBuf>,
    /// `--trust-proxy-user HEADER`: the header a trusted proxy names the user in.
    pub proxy_header: Option<String>,
    /// `--trusted-proxy CIDR`: the proxy's addresses.
    pub trusted_proxies: Vec<String>,
}

impl ServeConfig {
    /// Who may ask what: open, the one `--token`, or the users file.
    fn access(&self) -> Result<access::Access, ServeError> {
        let token = self.token.as_deref().filter(|t| !t.is_empty());
        let proxy = match &self.users.proxy_header {
            Some(header) => Some(
                proxy::TrustedProxy::new(header, &self.users.trusted_proxies)
                    .map_err(ServeError::Config)?,
            ),
            None if !self.users.trusted_proxies.is_empty() => {
                return Err(ServeError::Config(
                    "--trusted-proxy needs --trust-proxy-user HEADER (the header naming the user)"
                        .into(),
                ));
            }
            None => None,
        };
        match (&self.users.file, token) {
            (Some(_), Some(_)) => Err(ServeError::Config(
                "give --users or --token, not both (list an admin in the users file instead)"
                    .into(),
            )),
            (Some(file), None) => {
                let users = users::Users::load(file).map_err(|e| ServeError::Config(e.0))?;
                let tokenless = users.tokenless();
                if proxy.is_none() && !tokenless.is_empty() {
                    tracing::warn!(
                        "users without a token can only sign in through --trust-proxy-user: {}",
                        tokenless.join(", ")
                    );
                }
                Ok(access::Access::users(users, proxy))
            }
            (None, Some(token)) if proxy.is_none() => Ok(access::Access::single_token(token)),
            (None, _) if proxy.is_some() => Err(ServeError::Config(
                "--trust-proxy-user needs --users FILE (the names and roles the proxy may name)"
                    .into(),
            )),
            (None, _) => Ok(access::Access::open()),
        }
    }
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
    access: Arc<access::Access>,
    users_file: Option<PathBuf>,
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
        let access = config.access()?;
        security::AccessPolicy::new(config.bind, access.token_required(), &config.allow_hosts)
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
            page: options.page,
        })
        .map_err(ServeError::Store)?;
        // The real port is known only now (port 0 picks one): the Host allowlist needs it.
        let policy =
            security::AccessPolicy::new(address, access.token_required(), &config.allow_hosts)
                .map_err(ServeError::Config)?;
        let manager = runtime.manager;
        let acp = Gateway::new(manager.clone(), options.acp);
        let access = Arc::new(access);
        let guard = Arc::new(security::Guard {
            policy,
            access: access.clone(),
        });
        let mut router = acp::router(acp.clone());
        if options.page {
            router = router.merge(page_router(&manager)?);
        }
        // Around every router: the body limit (routes with their own keep theirs), the access
        // check and the security headers, also for unknown paths. The probes stay outside.
        let router = router
            .fallback(not_found)
            .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
            .layer(axum::middleware::from_fn_with_state(guard, security::guard))
            .merge(probes::router(manager.clone()));
        Ok(Server {
            listener,
            address,
            token: config.token,
            manager,
            acp,
            router,
            access,
            users_file: config.users.file,
        })
    }

    /// Re-reads the users file (on SIGHUP): a removed user's token is refused at once and their
    /// event streams end. A file that no longer reads keeps the users as they were. Returns
    /// the names removed or whose role changed.
    pub fn reload_users(&self) -> Result<Vec<String>, ServeError> {
        reload_users(&self.access, self.users_file.as_deref())
    }

    /// What [`Server::reload_users`] does, for a caller that outlives `run_until`'s borrow.
    pub fn users_reloader(&self) -> UsersReloader {
        UsersReloader {
            access: self.access.clone(),
            file: self.users_file.clone(),
            acp: self.acp.clone(),
        }
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
        // The peer's address: failed tokens are counted per address, and a trusted proxy is
        // known by its address.
        let service = self
            .router
            .into_make_service_with_connect_info::<SocketAddr>();
        axum::serve(listener, service)
            .with_graceful_shutdown(signal)
            .await
            .map_err(ServeError::Io)
    }
}
