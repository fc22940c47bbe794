//! What the PostgreSQL driver gives, as the store's: error messages (noting
//! when a call failed for want of a connection), server descriptions without
//! passwords, and stored lines' text. Used by the store and its leases.

use std::str::FromStr;

use deadpool_postgres::PoolError;
use tokio_postgres::config::Host;

use crate::types::StoreError;

tokio::task_local! {
    /// Set by the error mappers of a call when it failed for want of a connection.
    pub(super) static CONNECTION_LOST: std::cell::Cell<bool>;
}

pub(super) fn note_connection_lost() {
    let _ = CONNECTION_LOST.try_with(|lost| lost.set(true));
}

/// `postgres://user@host:port/database` without the password (for messages), or a note that
/// the URL cannot be read.
pub(crate) fn describe_url(url: &str) -> String {
    match tokio_postgres::Config::from_str(url) {
        Ok(config) => describe_config(&config),
        Err(_) => "an unreadable PostgreSQL URL".into(),
    }
}

pub(super) fn describe_config(config: &tokio_postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let database = config.get_dbname().unwrap_or("");
    format!("postgres://{user}{host}:{port}/{database}")
}

/// The driver's message: the server's own (with its SQLSTATE) when it sent one, else the
/// client-side cause chain (connection refused, timed out, ...).
pub(super) fn describe_pg(error: &tokio_postgres::Error) -> String {
    if error.as_db_error().is_none() {
        note_connection_lost();
    }
    if let Some(db) = error.as_db_error() {
        let mut text = format!("{} (SQLSTATE {})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            text.push_str(": ");
            text.push_str(detail);
        }
        return text;
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn describe_pool(error: &PoolError) -> String {
    match error {
        PoolError::Backend(error) => describe_pg(error),
        other => {
            note_connection_lost();
            other.to_string()
        }
    }
}

/// Builds the error of one kind from a message.
pub(super) type ErrorKind = fn(String) -> StoreError;

pub(super) fn pg(kind: ErrorKind) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |e| kind(describe_pg(&e))
}

pub(super) fn pool(kind: ErrorKind) -> impl Fn(PoolError) -> StoreError {
    move |e| kind(describe_pool(&e))
}

/// A stored line's bytes as text (lossy: the store writes only UTF-8).
pub(super) fn text_of(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `pg_notify` on the store's channel: `session` changed at `seq` (see `listen::payload`). Inside
/// a transaction it is delivered at commit, and only then.
pub(super) async fn notify<C: deadpool_postgres::GenericClient>(
    client: &C,
    session: i64,
    seq: i64,
) -> Result<u64, tokio_postgres::Error> {
    client
        .execute(
            "SELECT pg_notify($1, $2)",
            &[
                &crate::listen::CHANNEL,
                &crate::listen::payload(session, seq),
            ],
        )
        .await
}
