//! Who is asking: the token (or a trusted proxy's header) of each request mapped to a [`User`],
//! failed attempts limited per address, and the users file re-read on demand (SIGHUP).
//!
//! Three set-ups, chosen at start:
//! - open (loopback, no `--token`, no `--users`): every request is the local admin, as a
//!   single-user tool on one's own machine has always been;
//! - `--token`: the one token is the admin (`Users::single_admin`);
//! - `--users FILE`: each user's own token and role; every route needs one, loopback included
//!   (the probes and `/metrics` are outside, as before).
//!
//! Invariants:
//! - A token is never logged or answered; failures name no token.
//! - An address over its failure budget ([`crate::attempts`]) is refused before its token is
//!   even looked at, so a guess after the limit teaches nothing. Only wrong tokens count; a
//!   request without one (a first visit) does not.
//! - After [`Access::reload`], a user removed (or whose role changed) is refused at once, and
//!   [`Access::revocations`] wakes whatever holds a stream open for them, which then ends it.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use axum::http::{HeaderMap, StatusCode};
use tokio::sync::watch;

use crate::attempts::{AttemptLimits, FailedAttempts};
use crate::proxy::{ProxyUser, TrustedProxy};
use crate::users::{Role, User, Users};

/// Why a request was refused: the status and a plain reason (never echoing the request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// 401, 403 or 429.
    pub status: StatusCode,
    /// Shown to the client.
    pub reason: &'static str,
    /// For 429: seconds until the address may try again.
    pub retry_after: Option<u64>,
}

impl Denied {
    fn unauthorized(reason: &'static str) -> Denied {
        Denied {
            status: StatusCode::UNAUTHORIZED,
            reason,
            retry_after: None,
        }
    }
}

/// The user a request was made by, put in the request's extensions by the access check.
#[derive(Debug, Clone)]
pub struct Principal(pub Arc<User>);

/// How requests are matched to users, for the life of a server.
#[derive(Debug)]
pub struct Access {
    users: Option<RwLock<Arc<Users>>>,
    proxy: Option<TrustedProxy>,
    attempts: Mutex<FailedAttempts>,
    revoked: watch::Sender<u64>,
    local: Arc<User>,
    /// Whether what users do is noted with their name (a users file: several people).
    authors: bool,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Access {
    /// Every request is the local admin (loopback, no token).
    pub fn open() -> Access {
        Access::with(None, None)
    }

    /// Requests need a token of `users` (or, from `proxy`, a user's name).
    pub fn users(users: Users, proxy: Option<TrustedProxy>) -> Access {
        Access {
            authors: true,
            ..Access::with(Some(users), proxy)
        }
    }

    /// The one admin of `--token`: one person, so nothing is noted with a name.
    pub fn single_token(token: &str) -> Access {
        Access::with(Some(Users::single_admin(token)), None)
    }

    /// Whether prompts, answers and actions are noted with their author's name.
    pub fn authors(&self) -> bool {
        self.authors
    }

    fn with(users: Option<Users>, proxy: Option<TrustedProxy>) -> Access {
        Access {
            users: users.map(|users| RwLock::new(Arc::new(users))),
            proxy,
            attempts: Mutex::new(FailedAttempts::new(AttemptLimits::default())),
            revoked: watch::channel(0).0,
            local: Arc::new(User {
                name: "local".into(),
                role: Role::Admin,
            }),
            authors: false,
        }
    }

    /// Whether requests need a token.
    pub fn token_required(&self) -> bool {
        self.users.is_some()
    }

    fn current(&self) -> Option<Arc<Users>> {
        self.users.as_ref().map(|users| {
            users
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone()
        })
    }

    /// The user of a request from `peer` presenting `token` (header, cookie or bootstrap query).
    pub fn identify(
        &self,
        peer: Option<IpAddr>,
        headers: &HeaderMap,
        token: Option<&str>,
        now: Instant,
    ) -> Result<Arc<User>, Denied> {
        let Some(users) = self.current() else {
            return Ok(self.local.clone());
        };
        if let (Some(proxy), Some(peer)) = (&self.proxy, peer) {
            match proxy.user(peer, headers) {
                ProxyUser::NotFromProxy => {}
                ProxyUser::Named(name) => {
                    return users.by_name(&name).ok_or(Denied {
                        status: StatusCode::FORBIDDEN,
                        reason: "the proxy named a user the users file does not list",
                        retry_after: None,
                    });
                }
                ProxyUser::Unnamed => {
                    return Err(Denied::unauthorized(
                        "the trusted proxy sent no user header: sign in through the proxy",
                    ));
                }
            }
        }
        if let (Some(peer), Some(_)) = (peer, token)
            && let Err(wait) = lock(&self.attempts).check(peer, now)
        {
            return Err(Denied {
                status: StatusCode::TOO_MANY_REQUESTS,
                reason: "too many wrong tokens from this address: wait and try again",
                retry_after: Some(wait.as_secs().max(1)),
            });
        }
        match token.and_then(|token| users.authenticate(token)) {
            Some(user) => Ok(user),
            None => {
                // Only a wrong token counts: a first visit without one is no guess.
                if let (Some(peer), Some(_)) = (peer, token) {
                    lock(&self.attempts).failed(peer, now);
                }
                Err(Denied::unauthorized(if token.is_some() {
                    "unknown token"
                } else {
                    "a token is required: open the URL printed by `spindle serve` or send Authorization: Bearer TOKEN"
                }))
            }
        }
    }

    /// Whether `user` still holds the role it was identified with.
    pub fn still_valid(&self, user: &User) -> bool {
        match self.current() {
            None => true,
            Some(users) => users
                .by_name(&user.name)
                .is_some_and(|now| now.role == user.role),
        }
    }

    /// Replaces the users (the file re-read on SIGHUP) and wakes [`Access::revocations`].
    /// Returns the names removed or whose role changed. Without `--users` it refuses.
    pub fn reload(&self, users: Users) -> Result<Vec<String>, &'static str> {
        let Some(slot) = &self.users else {
            return Err("this server runs without --users");
        };
        let mut slot = slot
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let changed = slot
            .list()
            .filter(|old| {
                users
                    .by_name(&old.name)
                    .is_none_or(|new| new.role != old.role)
            })
            .map(|old| old.name.clone())
            .collect();
        *slot = Arc::new(users);
        drop(slot);
        self.revoked.send_modify(|generation| *generation += 1);
        Ok(changed)
    }

    /// Changes on every reload: a stream held for a user checks [`Access::still_valid`] then.
    pub fn revocations(&self) -> watch::Receiver<u64> {
        self.revoked.subscribe()
    }

    /// Resolves once `user` is no longer valid (removed, or another role).
    pub async fn revoked(self: Arc<Self>, user: Arc<User>) {
        let mut changes = self.revocations();
        loop {
            if !self.still_valid(&user) {
                return;
            }
            if changes.changed().await.is_err() {
                // The server is going away; its streams end with it.
                std::future::pending::<()>().await;
            }
        }
    }
}

#[cfg(test)]
mod tests;
