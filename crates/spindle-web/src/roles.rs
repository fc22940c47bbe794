//! What each role may do: one rule per route and method, checked after routing for every route
//! of the page and `/acp`.
//!
//! Decision: sessions are the team's, not their creator's. Everyone with a token sees every
//! session (an observer's whole job is reading them), controllers work in any session (a team
//! hands sessions over and pairs), and what cannot be undone or touches what everyone shares is
//! the admins': deleting a session, signing the agent in or out. Private sessions shared by
//! invitation would need a sharing model and screens for little gain on a server a team runs
//! for itself; who did what is recorded instead (the author of each prompt and answer).
//!
//! Invariants:
//! - A route without a rule is refused (500 naming it), never let through: forgetting a rule
//!   fails closed, and the tests probe every route with every method to catch it.
//! - `/acp` needs only a token here; what an observer may do on it is the gateway's check
//!   (`spindle_runtime::gateway::dispatch`: no `session/new`, attach as observer only).

use axum::extract::{MatchedPath, Request};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::access::Principal;
use crate::users::Role;

use Role::{Admin, Controller, Observer};

/// `(method, route, the least role)`. Page assets and reads are the observer's.
pub const RULES: &[(&str, &str, Role)] = &[
    ("GET", "/", Observer),
    ("GET", "/favicon.svg", Observer),
    ("GET", "/favicon.ico", Observer),
    ("GET", "/theme.js", Observer),
    ("GET", "/shortcuts.js", Observer),
    ("GET", "/app.js", Observer),
    ("GET", "/markdown.js", Observer),
    ("GET", "/composer.js", Observer),
    ("GET", "/panels.js", Observer),
    ("GET", "/newsession.js", Observer),
    ("GET", "/lifecycle.js", Observer),
    ("GET", "/checkpoints.js", Observer),
    ("GET", "/people.js", Observer),
    ("GET", "/queue.js", Observer),
    ("GET", "/cards.js", Observer),
    ("GET", "/entries.js", Observer),
    ("GET", "/window.js", Observer),
    ("GET", "/range.js", Observer),
    ("GET", "/model.js", Observer),
    ("GET", "/search.js", Observer),
    ("GET", "/feed.js", Observer),
    ("GET", "/worker.js", Observer),
    ("GET", "/dom.js", Observer),
    ("GET", "/ops.js", Observer),
    ("GET", "/trees.js", Observer),
    ("GET", "/inspector.js", Observer),
    ("GET", "/inspector.css", Observer),
    ("GET", "/app.css", Observer),
    ("GET", "/transcript.css", Observer),
    ("GET", "/api/me", Observer),
    ("GET", "/api/sessions", Observer),
    ("POST", "/api/sessions", Controller),
    ("GET", "/api/agents", Observer),
    ("GET", "/api/mcp-servers", Observer),
    // Starts the agent to ask it for its sessions.
    ("GET", "/api/agent-sessions", Controller),
    ("PATCH", "/api/sessions/{id}", Controller),
    ("DELETE", "/api/sessions/{id}", Admin),
    ("GET", "/api/sessions/{id}/events", Observer),
    ("POST", "/api/sessions/{id}/fork", Controller),
    // The agent's sign-in is everyone's.
    ("POST", "/api/sessions/{id}/logout", Admin),
    ("POST", "/api/sessions/{id}/prompt", Controller),
    ("GET", "/api/sessions/{id}/queue", Observer),
    ("PATCH", "/api/sessions/{id}/queue/{item}", Controller),
    ("DELETE", "/api/sessions/{id}/queue/{item}", Controller),
    (
        "POST",
        "/api/sessions/{id}/queue/{item}/send-now",
        Controller,
    ),
    ("POST", "/api/sessions/{id}/cancel", Controller),
    ("POST", "/api/sessions/{id}/permission", Controller),
    ("POST", "/api/sessions/{id}/elicitation", Controller),
    ("POST", "/api/sessions/{id}/permission/forget", Controller),
    ("GET", "/api/sessions/{id}/checkpoints", Observer),
    (
        "GET",
        "/api/sessions/{id}/checkpoints/{checkpoint}/diff",
        Observer,
    ),
    (
        "POST",
        "/api/sessions/{id}/checkpoints/{checkpoint}/restore",
        Controller,
    ),
    ("GET", "/api/sessions/{id}/agent", Observer),
    ("POST", "/api/sessions/{id}/authenticate", Admin),
    ("POST", "/api/sessions/{id}/mode", Controller),
    ("POST", "/api/sessions/{id}/config", Controller),
    ("GET", "/api/sessions/{id}/files", Observer),
    ("POST", "/api/sessions/{id}/review", Controller),
    ("GET", "/api/sessions/{id}/replies", Observer),
    ("GET", "/api/sessions/{id}/transcript", Observer),
    ("GET", "/api/sessions/{id}/entries", Observer),
    ("GET", "/api/sessions/{id}/snapshot", Observer),
    ("GET", "/api/sessions/{id}/stats", Observer),
    // Masked before they leave (wire_mask.rs): an observer sees what the page shows.
    ("GET", "/api/sessions/{id}/wire", Observer),
    ("GET", "/api/sessions/{id}/wire/events", Observer),
    ("GET", "/api/sessions/{id}/wire/{seq}", Observer),
    // A read that posts its batch of entry ids.
    ("POST", "/api/sessions/{id}/rendered", Observer),
    (
        "GET",
        "/api/sessions/{id}/entries/{entry}/rendered",
        Observer,
    ),
    ("GET", "/acp", Observer),
    ("POST", "/acp", Observer),
    ("DELETE", "/acp", Observer),
];

/// The least role for `method` on `route`, if a rule names it. `HEAD` follows `GET`.
pub fn needed(method: &Method, route: &str) -> Option<Role> {
    let method = if method == Method::HEAD {
        "GET"
    } else {
        method.as_str()
    };
    RULES
        .iter()
        .find(|(m, r, _)| *m == method && *r == route)
        .map(|(_, _, role)| *role)
}

/// The check, as a route layer (after routing, so the matched route is known).
pub(crate) async fn require(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|path| path.as_str().to_string());
    let role = request
        .extensions()
        .get::<Principal>()
        .map(|Principal(user)| user.role);
    let Some(route) = route else {
        return next.run(request).await;
    };
    match (needed(request.method(), &route), role) {
        // The route exists for other methods: the router would answer 405 too.
        (None, _) if RULES.iter().any(|(_, r, _)| *r == route) => {
            StatusCode::METHOD_NOT_ALLOWED.into_response()
        }
        (None, _) => {
            tracing::error!(method = %request.method(), route, "no access rule for this route");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "no access rule for this route (a server bug: see roles.rs)",
            )
                .into_response()
        }
        // Outside the access check (unit tests of a bare router): nothing to compare.
        (Some(_), None) => next.run(request).await,
        (Some(needed), Some(role)) if role.allows(needed) => next.run(request).await,
        (Some(needed), Some(role)) => (
            StatusCode::FORBIDDEN,
            format!("this needs the {needed} role; your role is {role}"),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_unique_and_head_follows_get() {
        for (i, (method, route, _)) in RULES.iter().enumerate() {
            assert!(
                !RULES[i + 1..]
                    .iter()
                    .any(|(m, r, _)| m == method && r == route),
                "{method} {route} has two rules"
            );
        }
        assert_eq!(needed(&Method::HEAD, "/api/sessions"), Some(Observer));
        assert_eq!(needed(&Method::POST, "/api/sessions"), Some(Controller));
        assert_eq!(needed(&Method::PUT, "/api/sessions"), None);
        assert_eq!(needed(&Method::GET, "/nowhere"), None);
    }
}
