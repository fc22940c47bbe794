//! Several `spindle serve` replicas on one database (issue #17): which replica runs a session.
//!
//! A session's agent runs on exactly one replica, the holder of the session's lease (a row of
//! `session_leases`, claimed with one conditional write by [`spindle_store::Store::claim_lease`]).
//! A replica claims the lease before it starts the agent, renews it while the agent runs (every
//! third of the lease time) and gives it up when the agent stops. When a renewal finds another
//! owner, or the database cannot be reached for a whole lease time, the lease is lost: the
//! session task stops its agent without writing anything more, since another replica may now
//! run the session. With one replica (SQLite, the default) the lease is always granted.

pub mod follow;
pub mod takeover;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use spindle_store::Lease;

use crate::store::Store;

/// How `spindle serve` takes part in a group of replicas.
#[derive(Debug, Clone)]
pub struct ReplicaConfig {
    /// This replica's id, unique in the group (default: the host name and the bound port).
    pub id: Option<String>,
    /// How long a lease lasts unless renewed: after the owner dies, another replica may take its
    /// sessions once this much time has passed.
    pub lease_ttl: Duration,
}

/// The lease time when none is given.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

impl Default for ReplicaConfig {
    fn default() -> Self {
        ReplicaConfig {
            id: None,
            lease_ttl: DEFAULT_LEASE_TTL,
        }
    }
}

/// The default replica id: `HOST:PORT`.
pub fn default_id(port: u16) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}:{port}")
}

/// Counters of lease changes, for `/metrics`.
#[derive(Debug, Default)]
pub struct LeaseCounters {
    /// Leases this replica claimed (a session it began to run).
    pub taken: AtomicU64,
    /// Leases it lost to another replica or to an unreachable database.
    pub lost: AtomicU64,
    /// Leases it gave up (the agent stopped, or a drain).
    pub released: AtomicU64,
    /// Change notices from the database this replica followed.
    pub notices: AtomicU64,
    /// Sessions this replica took over by itself after their owner stopped without handing
    /// them over ([`takeover`]).
    pub takeovers: AtomicU64,
}

/// This replica: its id, lease time and the store the leases live in.
#[derive(Debug)]
pub struct Replica {
    id: String,
    ttl: Duration,
    store: Store,
    /// What happened to this replica's leases.
    pub counters: LeaseCounters,
    /// Set at SIGTERM: `/readyz` fails and no new lease is claimed.
    draining: std::sync::atomic::AtomicBool,
    /// Commands this replica forwarded, for their unique ids.
    commands_sent: AtomicU64,
}

/// Why a lease could not be claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Another replica runs the session (or ran it and its lease has not expired yet).
    Owned(Lease),
    /// The database could not be asked.
    Store(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Owned(lease) => write!(f, "the session runs on replica {}", lease.owner),
            Refused::Store(error) => write!(f, "the session's lease cannot be claimed: {error}"),
        }
    }
}

impl Replica {
    /// Replica `id` on `store`, holding leases for `ttl`.
    pub fn new(id: String, ttl: Duration, store: Store) -> Replica {
        Replica {
            id,
            ttl: ttl.max(Duration::from_millis(300)),
            store,
            counters: LeaseCounters::default(),
            draining: std::sync::atomic::AtomicBool::new(false),
            commands_sent: AtomicU64::new(0),
        }
    }

    /// This replica's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the replica is draining (about to exit).
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Starts draining: `/readyz` fails from now on.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// A command id no other command has: this replica's id, its start time and a counter.
    pub fn command_id(&self) -> String {
        static STARTED: std::sync::OnceLock<u128> = std::sync::OnceLock::new();
        let started = STARTED.get_or_init(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        });
        let n = self.commands_sent.fetch_add(1, Ordering::Relaxed);
        format!("{}/{started}/{n}", self.id)
    }

    /// The lease time.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Clears every lease: for a store only one server uses (a SQLite file), whose leases can
    /// only be left over from an earlier run of this same server (e.g. after kill -9).
    pub fn clear_stale_leases(&self) -> Result<(), crate::store::StoreError> {
        for lease in self.store.leases()? {
            self.store.release_lease(lease.session, &lease.owner)?;
        }
        Ok(())
    }

    /// Claims the lease of `session` and keeps renewing it until the returned hold is released
    /// or dropped.
    pub fn hold(self: &Arc<Self>, session: i64) -> Result<LeaseHold, Refused> {
        let lease = self
            .store
            .claim_lease(session, &self.id, self.ttl)
            .map_err(|e| Refused::Store(e.to_string()))?;
        if lease.owner != self.id {
            return Err(Refused::Owned(lease));
        }
        self.counters.taken.fetch_add(1, Ordering::Relaxed);
        let (lost_tx, lost) = watch::channel(None);
        let renewer = tokio::spawn(renew(self.clone(), session, lease.epoch, lost_tx));
        Ok(LeaseHold {
            replica: self.clone(),
            session,
            epoch: lease.epoch,
            commands_recovered: false,
            lost,
            renewer: Some(renewer),
        })
    }
}

/// Renews a lease (of `epoch`) every third of its time; reports why it was lost.
async fn renew(
    replica: Arc<Replica>,
    session: i64,
    epoch: i64,
    lost: watch::Sender<Option<String>>,
) {
    let period = replica.ttl / 3;
    let mut confirmed = Instant::now();
    loop {
        tokio::time::sleep(period).await;
        let claim = {
            let replica = replica.clone();
            tokio::task::spawn_blocking(move || {
                replica
                    .store
                    .renew_lease(session, &replica.id, epoch, replica.ttl)
            })
            .await
        };
        let why = match claim {
            Ok(Ok(Some(lease))) if lease.owner == replica.id && lease.epoch == epoch => {
                confirmed = Instant::now();
                continue;
            }
            Ok(Ok(Some(lease))) if lease.owner == replica.id => {
                "this replica claimed the session again elsewhere".to_owned()
            }
            Ok(Ok(Some(lease))) => format!("replica {} took the session over", lease.owner),
            Ok(Ok(None)) => "the lease was given up".to_owned(),
            Ok(Err(error)) if confirmed.elapsed() < replica.ttl => {
                tracing::warn!(session, "lease renewal failed: {error}");
                continue;
            }
            Ok(Err(error)) => format!("the lease could not be renewed in time ({error})"),
            Err(join) => format!("the lease renewal stopped ({join})"),
        };
        replica.counters.lost.fetch_add(1, Ordering::Relaxed);
        let _ = lost.send(Some(why));
        return;
    }
}

/// A claimed lease, renewed until released.
#[derive(Debug)]
pub struct LeaseHold {
    replica: Arc<Replica>,
    session: i64,
    /// The lease's epoch: commands are taken under it.
    pub epoch: i64,
    /// Whether the commands earlier holders took and did not finish were looked for (once per
    /// hold: `task/forward.rs`).
    pub commands_recovered: bool,
    lost: watch::Receiver<Option<String>>,
    renewer: Option<tokio::task::JoinHandle<()>>,
}

impl LeaseHold {
    /// Completes when the lease is lost, with the reason.
    pub async fn lost(&mut self) -> String {
        let why = match self.lost.wait_for(Option::is_some).await {
            Ok(why) => why.clone(),
            Err(_) => None,
        };
        match why {
            Some(why) => why,
            // The renewer ended without a word: it was aborted, which only release does.
            None => std::future::pending().await,
        }
    }

    /// Gives the lease up (once the agent has stopped and its last lines are logged).
    pub async fn release(mut self) {
        self.stop_renewing();
        let replica = self.replica.clone();
        let session = self.session;
        let released =
            tokio::task::spawn_blocking(move || replica.store.release_lease(session, &replica.id))
                .await;
        match released {
            Ok(Ok(true)) => {
                self.replica
                    .counters
                    .released
                    .fetch_add(1, Ordering::Relaxed);
            }
            Ok(Ok(false)) => {}
            Ok(Err(error)) => {
                tracing::warn!(session, "lease release failed (it expires): {error}")
            }
            Err(error) => tracing::warn!(session, "lease release failed: {error}"),
        }
    }

    fn stop_renewing(&mut self) {
        if let Some(renewer) = self.renewer.take() {
            renewer.abort();
        }
    }
}

impl Drop for LeaseHold {
    fn drop(&mut self) {
        // Not released explicitly (the task ended abruptly): the lease simply expires.
        self.stop_renewing();
    }
}

/// Waits for the loss of `hold`, forever when there is none.
pub async fn lease_lost(hold: &mut Option<LeaseHold>) -> String {
    match hold {
        Some(hold) => hold.lost().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use spindle_store::test_server;

    use super::*;

    async fn two_replicas_share_one_lease(store: Store) {
        let session = store.create_session("s", None).unwrap();
        let ttl = Duration::from_secs(5);
        let a = Arc::new(Replica::new("a:1".into(), ttl, store.clone()));
        let b = Arc::new(Replica::new("b:2".into(), ttl, store.clone()));

        let mut held = a.hold(session).unwrap();
        assert!(matches!(b.hold(session).unwrap_err(), Refused::Owned(l) if l.owner == "a:1"));
        // A renews it (a third of the lease time later) and B is still refused.
        let first = store.leases().unwrap()[0].expires_at;
        for _ in 0..300 {
            if store.leases().unwrap()[0].expires_at > first {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            store.leases().unwrap()[0].expires_at > first,
            "never renewed"
        );
        assert!(matches!(b.hold(session).unwrap_err(), Refused::Owned(l) if l.owner == "a:1"));

        // Someone else gets the row (as if A's lease had expired and B took it): A's next
        // renewal finds out and reports it.
        assert!(store.release_lease(session, "a:1").unwrap());
        let taken = b.hold(session).unwrap();
        let why = held.lost().await;
        assert!(why.contains("b:2"), "{why}");
        assert_eq!(a.counters.lost.load(Ordering::Relaxed), 1);

        // A graceful release hands it over at once.
        taken.release().await;
        assert_eq!(b.counters.released.load(Ordering::Relaxed), 1);
        let again = a.hold(session).unwrap();
        assert_eq!(store.leases().unwrap()[0].owner, "a:1");
        again.release().await;
        assert!(store.leases().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_lease_is_renewed_refused_to_others_lost_and_released_on_sqlite() {
        let dir = std::env::temp_dir().join(format!(
            "spindle-replica-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let store = Store::open(&dir.join("store.db")).unwrap();
        two_replicas_share_one_lease(store).await;
    }

    #[tokio::test]
    async fn a_lease_is_renewed_refused_to_others_lost_and_released_on_postgres() {
        let Some(server) = test_server::server() else {
            return;
        };
        let database = server.create_database("web_replica_lease");
        let store = Store::open(Path::new(&server.url(&database))).unwrap();
        two_replicas_share_one_lease(store).await;
    }

    #[test]
    fn the_default_id_is_the_host_and_port() {
        let id = default_id(8337);
        assert!(id.ends_with(":8337") && id.len() > 5, "{id}");
    }
}
