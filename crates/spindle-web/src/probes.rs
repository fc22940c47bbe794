//! Operations routes of a replica: `/healthz` (the process serves), `/readyz` (the database
//! answers and the replica is not draining: a load balancer sends it traffic) and `/metrics`
//! (Prometheus text format). They take no token and show only counts, so that probes and
//! scrapers of a load balancer can reach them.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use spindle_runtime::SessionManager;

/// The routes, on their own state.
pub(crate) fn router(manager: Arc<SessionManager>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics))
        .with_state(manager)
}

async fn ready(State(manager): State<Arc<SessionManager>>) -> Response {
    if manager.replica.is_draining() {
        return (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response();
    }
    let store = manager.store().clone();
    match tokio::task::spawn_blocking(move || store.schema_version()).await {
        Ok(Ok(_)) => "ready\n".into_response(),
        Ok(Err(error)) => (StatusCode::SERVICE_UNAVAILABLE, format!("{error}\n")).into_response(),
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, format!("{error}\n")).into_response(),
    }
}

async fn metrics(State(manager): State<Arc<SessionManager>>) -> Response {
    let text = tokio::task::spawn_blocking(move || render(&manager))
        .await
        .unwrap_or_else(|error| format!("# metrics failed: {error}\n"));
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// The metrics text (blocking: it asks the database for leases and log ends).
fn render(manager: &SessionManager) -> String {
    let replica = &manager.replica;
    let store = manager.store();
    let sessions = manager.live_sessions();
    let (mut observers, mut acp_observers, mut lag) = (0u64, 0u64, 0i64);
    for (id, live) in &sessions {
        let stats = live.stats();
        observers += stats["observers"].as_u64().unwrap_or(0);
        acp_observers += stats["acpObservers"].as_u64().unwrap_or(0);
        let applied = stats["loggedLines"].as_i64().unwrap_or(0);
        if let Ok(logged) = store.last_seq(*id) {
            lag += (logged - applied).max(0);
        }
    }
    let owned = store
        .leases()
        .map(|leases| leases.iter().filter(|l| l.owner == replica.id()).count())
        .ok();
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: String| {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
        );
    };
    metric(
        "spindle_sessions",
        "gauge",
        "Sessions this replica serves (rebuilt from the log or followed).",
        sessions.len().to_string(),
    );
    metric(
        "spindle_sessions_owned",
        "gauge",
        "Sessions whose lease this replica holds (their agent runs here); -1 if the database did not answer.",
        owned.map_or_else(|| "-1".to_string(), |n| n.to_string()),
    );
    metric(
        "spindle_observers",
        "gauge",
        "Event-stream observers of the page on this replica.",
        observers.to_string(),
    );
    metric(
        "spindle_acp_observers",
        "gauge",
        "/acp clients attached to sessions on this replica.",
        acp_observers.to_string(),
    );
    metric(
        "spindle_follow_lag_lines",
        "gauge",
        "Logged lines this replica has not applied yet, over all its sessions.",
        lag.to_string(),
    );
    let counters = &replica.counters;
    for (name, help, counter) in [
        (
            "spindle_lease_taken_total",
            "Leases this replica claimed.",
            &counters.taken,
        ),
        (
            "spindle_lease_lost_total",
            "Leases this replica lost.",
            &counters.lost,
        ),
        (
            "spindle_lease_released_total",
            "Leases this replica gave up.",
            &counters.released,
        ),
        (
            "spindle_change_notices_total",
            "Change notices from the database followed.",
            &counters.notices,
        ),
        (
            "spindle_takeovers_total",
            "Sessions this replica took over after their owner stopped (found by its watcher or by a prompt that waited for the lease).",
            &counters.takeovers,
        ),
    ] {
        metric(
            name,
            "counter",
            help,
            counter.load(Ordering::Relaxed).to_string(),
        );
    }
    metric(
        "spindle_draining",
        "gauge",
        "1 while the replica hands its sessions over before exiting.",
        u8::from(replica.is_draining()).to_string(),
    );
    out
}
