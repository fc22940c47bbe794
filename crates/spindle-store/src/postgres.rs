//! The PostgreSQL store: `tokio-postgres` behind a `deadpool-postgres` pool.
//!
//! The driver is async; this store runs it on a small tokio runtime of its own (two threads) and
//! each call waits for its answer, so the store is called like the SQLite one, from any thread,
//! inside a tokio runtime or not, and never ties up the caller's runtime with the driver's tasks.
//!
//! Durability: a call returns once PostgreSQL answered the `COMMIT` (with the server's default
//! `synchronous_commit=on`, once the commit is flushed to the server's WAL). Every call is bounded
//! ([`CALL_TIMEOUT`]); a batch of lines whose commit answer was lost may be sent again safely (see
//! [`Store::append_lines`]). After a call failed for want of a connection, calls fail at once for
//! [`UNREACHABLE_PERIOD`], so an unreachable server never stalls a session for long: it falls back
//! to its in-memory backlog. Lines are `bytea`, so every line is kept byte for byte. TLS is not
//! offered: reach the server over loopback, a Unix socket (`?host=/run/postgresql`) or a tunnel.
//! Leases and commands are in `leases.rs`.

use std::future::Future;
use std::str::FromStr;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

mod convert;
mod leases;
mod transcripts;
mod wire_batches;
mod wire_pages;

pub(crate) use convert::describe_url;
use convert::{
    CONNECTION_LOST, ErrorKind, describe_config, describe_pg, note_connection_lost, notify, pg,
    pool,
};

use crate::listen::{self, LogChange};
use crate::migrations;
use crate::replay_save::ReplaySave;
use crate::store::Store;
use crate::types::{
    Direction, Lease, LeaseSurvey, LoggedLine, SessionAgent, SessionSetup, StoreError, StoredReply,
    StoredSession, TakenCommand, TitleSource, WirePage, WireWindow,
};
use crate::types::{display_text, now_ms};

/// How long one call may take, pool wait included, before it fails (the database is then treated
/// as failing: the web server keeps the lines in memory and retries).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long opening a connection may take when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// After a call failed for want of a connection (refused, cut, timed out), the calls of this
/// long fail at once with the same message instead of waiting for the network again: a session
/// then falls back to its in-memory backlog without stalling its observers, and its retries (twice
/// a second) reach the server about once per period.
pub const UNREACHABLE_PERIOD: Duration = Duration::from_secs(1);

/// The connections the pool keeps at most.
const POOL_SIZE: usize = 8;

/// Serializes migrations of servers starting together (`pg_advisory_xact_lock` key).
const MIGRATION_LOCK: i64 = 0x5350_494e_444c_4501;

/// A PostgreSQL database.
#[derive(Debug)]
pub struct PostgresStore {
    described: String,
    pool: Pool,
    /// Until when calls fail at once, and with what message (see [`UNREACHABLE_PERIOD`]).
    unreachable: std::sync::Mutex<Option<(std::time::Instant, String)>>,
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    /// How [`Store::changes`] connects (a connection of its own, outside the pool).
    listen_config: tokio_postgres::Config,
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which tokio refuses inside an async context (the store may
        // be dropped on a session task): let its threads end on their own.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl PostgresStore {
    /// Connects to the database `url` names (it must exist), applies the migrations it lacks
    /// and checks that it is writable.
    pub fn open(url: &str) -> Result<PostgresStore, StoreError> {
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|e| StoreError::Open(format!("not a usable PostgreSQL URL: {e}")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("spindle");
        }
        let described = describe_config(&config);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("spindle-store-pg")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Open(format!("{described}: no driver runtime: {e}")))?;
        let listen_config = config.clone();
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(CALL_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT + Duration::from_secs(1)))
            .build()
            .map_err(|e| StoreError::Open(format!("{described}: {e}")))?;
        let store = PostgresStore {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
            pool,
            unreachable: std::sync::Mutex::new(None),
            described,
            listen_config,
        };
        store
            .run(StoreError::Open, |pool| async move {
                let mut client = pool.get().await.map_err(self::pool(StoreError::Open))?;
                migrate(&mut client).await?;
                // A write probe: a read-only database or role fails here, at start.
                client
                    .execute(
                        "INSERT INTO meta(key, value) VALUES('opened_at', $1)
                         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                        &[&now_ms().to_string()],
                    )
                    .await
                    .map_err(pg(StoreError::Open))?;
                Ok(())
            })
            .map_err(|e| match e {
                StoreError::Open(message) => {
                    StoreError::Open(format!("{}: {message}", store.described))
                }
                other => other,
            })?;
        Ok(store)
    }

    /// Runs `work` on the driver's runtime with a connection pool and waits for its result,
    /// bounded by [`CALL_TIMEOUT`]; `kind` makes the error of a timeout or a lost task.
    fn run<T, F, Fut>(&self, kind: ErrorKind, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(Pool) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let now = std::time::Instant::now();
        if let Some((until, message)) = self.unreachable_guard().as_ref()
            && now < *until
        {
            return Err(kind(format!(
                "{message} (PostgreSQL unreachable: tried again at most once every {} ms)",
                UNREACHABLE_PERIOD.as_millis()
            )));
        }
        let (send, receive) = std::sync::mpsc::sync_channel(1);
        let pool = self.pool.clone();
        self.handle.spawn(
            CONNECTION_LOST.scope(std::cell::Cell::new(false), async move {
                let result = match tokio::time::timeout(CALL_TIMEOUT, work(pool)).await {
                    Ok(result) => result,
                    Err(_) => {
                        note_connection_lost();
                        Err(kind(format!(
                            "no answer from PostgreSQL within {} s",
                            CALL_TIMEOUT.as_secs()
                        )))
                    }
                };
                let lost = CONNECTION_LOST.with(std::cell::Cell::get);
                let _ = send.send((result, lost));
            }),
        );
        let (result, lost) = receive
            .recv()
            .unwrap_or_else(|_| (Err(kind("the database driver stopped".into())), true));
        let mut unreachable = self.unreachable_guard();
        match &result {
            Err(error) if lost => {
                let message = match error {
                    StoreError::Open(m) | StoreError::Write(m) | StoreError::Read(m) => m.clone(),
                };
                *unreachable = Some((std::time::Instant::now() + UNREACHABLE_PERIOD, message));
            }
            _ => *unreachable = None,
        }
        result
    }

    fn unreachable_guard(&self) -> std::sync::MutexGuard<'_, Option<(std::time::Instant, String)>> {
        self.unreachable
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

async fn migrate(client: &mut deadpool_postgres::Client) -> Result<(), StoreError> {
    let open = pg(StoreError::Open);
    let tx = client.transaction().await.map_err(&open)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(&open)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_version(
             version BIGINT PRIMARY KEY,
             applied_at BIGINT NOT NULL
         )",
    )
    .await
    .map_err(&open)?;
    let current: i64 = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0)::BIGINT FROM schema_version",
            &[],
        )
        .await
        .map_err(&open)?
        .get(0);
    for migration in migrations::pending(migrations::POSTGRES, current)? {
        tx.batch_execute(migration.sql).await.map_err(|e| {
            StoreError::Open(format!(
                "migration {} ({}): {}",
                migration.version,
                migration.summary,
                describe_pg(&e)
            ))
        })?;
        tx.execute(
            "INSERT INTO schema_version(version, applied_at) VALUES($1, $2)",
            &[&migration.version, &now_ms()],
        )
        .await
        .map_err(&open)?;
    }
    tx.commit().await.map_err(&open)
}

impl Store for PostgresStore {
    fn describe(&self) -> String {
        format!("PostgreSQL at {}", self.described)
    }

    fn waits_on_server(&self) -> bool {
        true
    }

    fn schema_version(&self) -> Result<i64, StoreError> {
        self.run(StoreError::Read, |pool| async move {
            let client = pool.get().await.map_err(self::pool(StoreError::Read))?;
            let row = client
                .query_one(
                    "SELECT COALESCE(MAX(version), 0)::BIGINT FROM schema_version",
                    &[],
                )
                .await
                .map_err(pg(StoreError::Read))?;
            Ok(row.get(0))
        })
    }

    fn next_generation(&self) -> Result<u64, StoreError> {
        self.run(StoreError::Write, |pool| async move {
            let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
            let row = client
                .query_one(
                    "INSERT INTO meta(key, value) VALUES('generation', '1')
                     ON CONFLICT(key) DO UPDATE SET value = (CASE
                         WHEN meta.value ~ '^[0-9]{1,18}$' THEN meta.value::BIGINT + 1
                         ELSE 1 END)::TEXT
                     RETURNING value",
                    &[],
                )
                .await
                .map_err(pg(StoreError::Write))?;
            let value: String = row.get(0);
            value
                .parse()
                .map_err(|_| StoreError::Write(format!("generation {value:?} is not a number")))
        })
    }

    fn create_session_with(
        &self,
        title: &str,
        agent: Option<&SessionAgent>,
        setup: &SessionSetup,
    ) -> Result<i64, StoreError> {
        let title = display_text(title).into_owned();
        let agent_id = agent.map(|a| display_text(&a.id).into_owned());
        let agent_version = agent.map(|a| display_text(&a.version).into_owned());
        let mcp_servers = setup
            .mcp_servers_column()
            .map(|c| display_text(&c).into_owned());
        let directories = setup
            .directories_column()
            .map(|c| display_text(&c).into_owned());
        let parent = setup.parent;
        self.run(StoreError::Write, move |pool| async move {
            let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
            let now = now_ms();
            let row = client
                .query_one(
                    "INSERT INTO sessions(title, created_at, updated_at, agent_id, agent_version,
                                          mcp_servers, additional_directories, parent_id)
                     VALUES($1, $2, $2, $3, $4, $5, $6, $7) RETURNING id",
                    &[
                        &title,
                        &now,
                        &agent_id,
                        &agent_version,
                        &mcp_servers,
                        &directories,
                        &parent,
                    ],
                )
                .await
                .map_err(pg(StoreError::Write))?;
            let id: i64 = row.get(0);
            // Other servers learn of the session (a lost notice is made up by their resync).
            let _ = notify(&client, id, 0).await;
            Ok(id)
        })
    }

    fn set_agent_session_id(&self, session: i64, agent_session_id: &str) -> Result<(), StoreError> {
        let id = display_text(agent_session_id).into_owned();
        self.run(StoreError::Write, move |pool| async move {
            let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
            client
                .execute(
                    "UPDATE sessions SET agent_session_id = $2 WHERE id = $1",
                    &[&session, &id],
                )
                .await
                .map_err(pg(StoreError::Write))?;
            Ok(())
        })
    }

    fn set_session_agent(&self, session: i64, agent: &SessionAgent) -> Result<(), StoreError> {
        let id = display_text(&agent.id).into_owned();
        let version = display_text(&agent.version).into_owned();
        self.run(StoreError::Write, move |pool| async move {
            let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
            client
                .execute(
                    "UPDATE sessions SET agent_id = $2, agent_version = $3 WHERE id = $1",
                    &[&session, &id, &version],
                )
                .await
                .map_err(pg(StoreError::Write))?;
            Ok(())
        })
    }

    fn set_title(&self, session: i64, title: &str) -> Result<bool, StoreError> {
        let title = display_text(title).into_owned();
        self.run(StoreError::Write, move |pool| async move {
            let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
            let changed = client
                .execute(
                    "UPDATE sessions SET title = $2, title_source = 'user' WHERE id = $1",
                    &[&session, &title],
                )
                .await
                .map_err(pg(StoreError::Write))?;
            if changed > 0 {
                // Other servers list the new title (a lost notice is made up by their resync).
                let renamed = LogChange::renamed(session);
                let _ = notify(&client, renamed.session, renamed.seq).await;
            }
            Ok(changed > 0)
        })
    }

    fn set_derived_title(
        &self,
        session: i64,
        title: &str,
        source: TitleSource,
    ) -> Result<bool, StoreError> {
        let title = display_text(title).into_owned();
        let replaceable = crate::types::replaceable_sources(source);
        self.run(StoreError::Write, move |pool| async move {
            let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
            let changed = client
                .execute(
                    "UPDATE sessions SET title = $2, title_source = $3
                     WHERE id = $1
                       AND title_source IN (SELECT jsonb_array_elements_text($4::TEXT::JSONB))",
                    &[&session, &title, &source.as_str(), &replaceable],
                )
                .await
                .map_err(pg(StoreError::Write))?;
            if changed > 0 {
                let renamed = LogChange::renamed(session);
                let _ = notify(&client, renamed.session, renamed.seq).await;
            }
            Ok(changed > 0)
        })
    }

    fn delete_session(&self, session: i64) -> Result<bool, StoreError> {
        self.run(StoreError::Write, move |pool| async move {
            let write = pg(StoreError::Write);
            let mut client = pool.get().await.map_err(self::pool(StoreError::Write))?;
            let tx = client.transaction().await.map_err(&write)?;
            // The session's row first: an append in flight either committed before (its lines
            // are deleted below) or waits and finds no session (it rolls back). The wire log
            // has no foreign key (migration 8) to order this for us.
            tx.execute(
                "SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE",
                &[&session],
            )
            .await
            .map_err(&write)?;
            for table in crate::store::SESSION_TABLES {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE session_id = $1"),
                    &[&session],
                )
                .await
                .map_err(&write)?;
            }
            let deleted = tx
                .execute("DELETE FROM sessions WHERE id = $1", &[&session])
                .await
                .map_err(&write)?;
            if deleted > 0 {
                // Sent at commit: other servers stop the session's task and drop it.
                let gone = LogChange::deleted(session);
                notify(&tx, gone.session, gone.seq).await.map_err(&write)?;
            }
            tx.commit().await.map_err(&write)?;
            Ok(deleted > 0)
        })
    }

    fn sessions(&self) -> Result<Vec<StoredSession>, StoreError> {
        self.run(StoreError::Read, |pool| async move {
            let client = pool.get().await.map_err(self::pool(StoreError::Read))?;
            let rows = client
                .query(
                    "SELECT id, title, agent_session_id, created_at, updated_at, agent_id,
                        agent_version, title_source, mcp_servers, additional_directories,
                        parent_id
                     FROM sessions ORDER BY id",
                    &[],
                )
                .await
                .map_err(pg(StoreError::Read))?;
            Ok(rows
                .iter()
                .map(|row| StoredSession {
                    id: row.get(0),
                    title: row.get(1),
                    agent_session_id: row.get(2),
                    created_at: row.get(3),
                    updated_at: row.get(4),
                    agent: row.get::<_, Option<String>>(5).map(|id| SessionAgent {
                        id,
                        version: row.get::<_, Option<String>>(6).unwrap_or_default(),
                    }),
                    title_source: TitleSource::parse(row.get(7)),
                    setup: SessionSetup::from_columns(row.get(8), row.get(9), row.get(10)),
                })
                .collect())
        })
    }

    fn last_seq(&self, session: i64) -> Result<i64, StoreError> {
        self.run(StoreError::Read, move |pool| async move {
            let client = pool.get().await.map_err(self::pool(StoreError::Read))?;
            let row = client
                .query_one(&format!("SELECT {}", wire_batches::LAST_SEQ), &[&session])
                .await
                .map_err(pg(StoreError::Read))?;
            Ok(row.get(0))
        })
    }

    fn append_lines(
        &self,
        session: i64,
        first_seq: i64,
        lines: &[(Direction, &str)],
    ) -> Result<(), StoreError> {
        if lines.is_empty() {
            return Ok(());
        }
        let batch = crate::batch::EncodedBatch::encode(lines)?;
        let last_seq = batch.last_seq(first_seq);
        let notice = listen::payload(session, last_seq);
        self.run(StoreError::Write, move |pool| async move {
            let client = pool.get().await.map_err(self::pool(StoreError::Write))?;
            let call = wire_batches::Append {
                session,
                first_seq,
                batch: &batch,
                at: now_ms(),
                notice: &notice,
            };
            wire_batches::append(&client, &call).await
        })
    }

    fn lines_after(
        &self,
        session: i64,
        after: i64,
    ) -> Result<(Vec<LoggedLine>, usize), StoreError> {
        self.run(StoreError::Read, move |pool| {
            wire_pages::lines_after(pool, session, after)
        })
    }

    fn wire_page(
        &self,
        session: i64,
        window: WireWindow,
        limit: usize,
    ) -> Result<WirePage, StoreError> {
        self.run(StoreError::Read, move |pool| {
            wire_pages::page(pool, session, window, limit)
        })
    }

    fn save_materialized(
        &self,
        session: i64,
        upto_seq: i64,
        replay: &ReplaySave,
        replies: &[StoredReply],
        turn_count: i64,
    ) -> Result<(), StoreError> {
        let replay = replay.clone();
        let turns: Vec<i64> = replies.iter().map(|r| r.turn).collect();
        let texts: Vec<String> = replies
            .iter()
            .map(|r| display_text(&r.text).into_owned())
            .collect();
        let finished: Vec<bool> = replies.iter().map(|r| r.finished).collect();
        let reasons: Vec<Option<String>> = replies
            .iter()
            .map(|r| {
                r.stop_reason
                    .as_deref()
                    .map(|s| display_text(s).into_owned())
            })
            .collect();
        self.run(StoreError::Write, move |pool| async move {
            let write = pg(StoreError::Write);
            let mut client = pool.get().await.map_err(self::pool(StoreError::Write))?;
            let tx = client.transaction().await.map_err(&write)?;
            transcripts::save(&tx, session, upto_seq, &replay, now_ms()).await?;
            // Only the turns given are written, and of them only those that changed (an
            // unchanged reply gets no new row version); the turns that are gone are deleted.
            tx.execute(
                "DELETE FROM replies WHERE session_id = $1 AND turn > $2",
                &[&session, &turn_count],
            )
            .await
            .map_err(&write)?;
            tx.execute(
                "INSERT INTO replies(session_id, turn, text, finished, stop_reason)
                 SELECT $1, turn, text, finished, stop_reason
                 FROM UNNEST($2::BIGINT[], $3::TEXT[], $4::BOOLEAN[], $5::TEXT[])
                     AS t(turn, text, finished, stop_reason)
                 ON CONFLICT(session_id, turn) DO UPDATE SET text = excluded.text,
                     finished = excluded.finished, stop_reason = excluded.stop_reason
                 WHERE (replies.finished, replies.stop_reason, replies.text)
                     IS DISTINCT FROM (excluded.finished, excluded.stop_reason, excluded.text)",
                &[&session, &turns, &texts, &finished, &reasons],
            )
            .await
            .map_err(&write)?;
            tx.commit().await.map_err(&write)
        })
    }

    fn replies(&self, session: i64) -> Result<Vec<StoredReply>, StoreError> {
        self.run(StoreError::Read, move |pool| async move {
            let client = pool.get().await.map_err(self::pool(StoreError::Read))?;
            let rows = client
                .query(
                    "SELECT turn, text, finished, stop_reason FROM replies
                     WHERE session_id = $1 ORDER BY turn",
                    &[&session],
                )
                .await
                .map_err(pg(StoreError::Read))?;
            Ok(rows
                .iter()
                .map(|row| StoredReply {
                    turn: row.get(0),
                    text: row.get(1),
                    finished: row.get(2),
                    stop_reason: row.get(3),
                })
                .collect())
        })
    }

    fn transcript(&self, session: i64) -> Result<Option<String>, StoreError> {
        self.run(StoreError::Read, move |pool| async move {
            let client = pool.get().await.map_err(self::pool(StoreError::Read))?;
            transcripts::read(&client, session).await
        })
    }

    fn claim_lease(
        &self,
        session: i64,
        owner: &str,
        ttl: std::time::Duration,
    ) -> Result<Lease, StoreError> {
        let owner = leases::owner_text(owner);
        let ttl = millis(ttl);
        self.run(StoreError::Write, move |pool| {
            leases::claim(pool, session, owner, ttl)
        })
    }

    fn renew_lease(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
        ttl: std::time::Duration,
    ) -> Result<Option<Lease>, StoreError> {
        let owner = leases::owner_text(owner);
        let ttl = millis(ttl);
        self.run(StoreError::Write, move |pool| {
            leases::renew(pool, session, owner, epoch, ttl)
        })
    }

    fn release_lease(&self, session: i64, owner: &str) -> Result<bool, StoreError> {
        let owner = leases::owner_text(owner);
        self.run(StoreError::Write, move |pool| {
            leases::release(pool, session, owner)
        })
    }

    fn changes(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<LogChange>> {
        let (send, receive) = tokio::sync::mpsc::unbounded_channel();
        self.handle
            .spawn(listen::listen(self.listen_config.clone(), send));
        Some(receive)
    }

    fn submit_command(&self, id: &str, session: i64, body: &str) -> Result<(), StoreError> {
        let (id, body) = (id.to_owned(), body.to_owned());
        self.run(StoreError::Write, move |pool| {
            leases::submit(pool, id, session, body)
        })
    }

    fn take_commands(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
    ) -> Result<Vec<TakenCommand>, StoreError> {
        let owner = leases::owner_text(owner);
        self.run(StoreError::Write, move |pool| {
            leases::take(pool, session, owner, epoch)
        })
    }

    fn unfinished_commands(&self, session: i64) -> Result<Vec<TakenCommand>, StoreError> {
        self.run(StoreError::Read, move |pool| {
            leases::unfinished(pool, session)
        })
    }

    fn retake_commands(
        &self,
        session: i64,
        owner: &str,
        epoch: i64,
        ids: &[String],
    ) -> Result<Vec<TakenCommand>, StoreError> {
        let owner = leases::owner_text(owner);
        let ids = ids.to_vec();
        self.run(StoreError::Write, move |pool| {
            leases::retake(pool, session, owner, epoch, ids)
        })
    }

    fn finish_commands(&self, session: i64, ids: &[String]) -> Result<(), StoreError> {
        let ids = ids.to_vec();
        self.run(StoreError::Write, move |pool| {
            leases::finish(pool, session, ids)
        })
    }

    fn server_notes_after(&self, session: i64, after: i64) -> Result<Vec<LoggedLine>, StoreError> {
        self.run(StoreError::Read, move |pool| {
            wire_pages::server_notes(pool, session, after)
        })
    }

    fn lease_survey(&self) -> Result<LeaseSurvey, StoreError> {
        self.run(StoreError::Read, leases::survey)
    }

    fn leases(&self) -> Result<Vec<Lease>, StoreError> {
        self.run(StoreError::Read, leases::leases)
    }
}

/// Milliseconds of a lease time, as the tables keep them.
fn millis(ttl: std::time::Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}
