//! Automatic takeover: when the replica that ran a session dies, another one runs it on.
//!
//! Every replica looks at the leases twice per lease time ([`spindle_store::Store::lease_survey`],
//! on the database's clock). A session is taken over when nobody holds a live lease on it and it
//! has work left:
//! - its log ends inside a turn (the owner died, or was stopped, during a turn), or
//! - commands other replicas forwarded wait for it (prompts, cancels, permission answers).
//!
//! An idle session whose owner died is not started: its lease simply expired, and the next
//! prompt, on any replica, starts its agent at once. So a dead replica's hundred idle sessions
//! do not become a hundred agents elsewhere. A clean hand-over (the agent stopped, or a drain)
//! deletes the lease row; such a session is taken only if it left a turn open or commands.
//!
//! Every replica that finds a session worth taking waits a random part of a quarter lease time
//! before it claims, so the replicas do not all claim at once; the claim is one conditional write
//! ([`spindle_store::Store::claim_lease`]), so exactly one of them wins and the others leave it.
//! The winner's session task catches up with the log, ends the interrupted turn with a logged
//! note, starts the agent (which continues the agent session with `session/resume` or
//! `session/load` where offered) and takes the waiting commands.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use spindle_store::{Lease, LeaseSurvey};

use crate::registry::SessionManager;

/// A session worth taking over, with the lease its last owner let expire (none after a clean
/// hand-over that left work behind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Orphan {
    pub(crate) session: i64,
    pub(crate) expired: Option<Lease>,
}

/// The sessions of `survey` worth taking: no live lease, and either a turn open in the log
/// (`open_turns`, as this replica's follower sees it) or commands waiting.
pub(crate) fn orphans(survey: &LeaseSurvey, open_turns: &[i64]) -> Vec<Orphan> {
    let mut wanted: BTreeMap<i64, Option<Lease>> = BTreeMap::new();
    for session in open_turns.iter().chain(&survey.commands_waiting) {
        if survey.live.iter().all(|l| l.session != *session) {
            let expired = survey.expired.iter().find(|l| l.session == *session);
            wanted.insert(*session, expired.cloned());
        }
    }
    wanted
        .into_iter()
        .map(|(session, expired)| Orphan { session, expired })
        .collect()
}

/// A random duration below `bound`.
fn jitter(bound: Duration) -> Duration {
    use std::hash::BuildHasher;
    let random = std::collections::hash_map::RandomState::new().hash_one(std::time::Instant::now());
    let millis = u64::try_from(bound.as_millis()).unwrap_or(u64::MAX).max(1);
    Duration::from_millis(random % millis)
}

/// Watches the leases until the replica drains.
pub(crate) fn spawn(manager: Arc<SessionManager>) {
    tokio::spawn(async move {
        let ttl = manager.replica.ttl();
        loop {
            tokio::time::sleep(ttl / 2).await;
            if manager.replica.is_draining() {
                return;
            }
            let open_turns: Vec<i64> = manager
                .live_sessions()
                .into_iter()
                .filter(|(_, live)| live.turn_open())
                .map(|(id, _)| id)
                .collect();
            let store = manager.store().clone();
            let survey = match tokio::task::spawn_blocking(move || store.lease_survey()).await {
                Ok(Ok(survey)) => survey,
                Ok(Err(error)) => {
                    tracing::warn!("lease survey failed: {error}");
                    continue;
                }
                Err(error) => {
                    tracing::error!("lease survey stopped: {error}");
                    continue;
                }
            };
            let orphans = orphans(&survey, &open_turns);
            if orphans.is_empty() {
                continue;
            }
            tokio::time::sleep(jitter(ttl / 4)).await;
            for orphan in orphans {
                if manager.replica.is_draining() {
                    return;
                }
                if let Some(live) = manager.get_now(orphan.session) {
                    live.take_over(orphan.expired).await;
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(session: i64, owner: &str) -> Lease {
        Lease {
            session,
            owner: owner.into(),
            expires_at: 1,
            epoch: 1,
        }
    }

    #[test]
    fn only_sessions_without_a_live_lease_and_with_work_left_are_taken() {
        let survey = LeaseSurvey {
            live: vec![lease(1, "a")],
            expired: vec![lease(2, "b"), lease(3, "b"), lease(4, "b")],
            commands_waiting: vec![1, 4, 5],
        };
        // 1: live owner; 2: turn open after its owner died; 3: idle, owner died (left alone);
        // 4: commands wait; 5: commands wait, no lease row (a clean hand-over); 6: turn open,
        // no lease row (stopped mid-turn).
        let open_turns = [1, 2, 6];
        assert_eq!(
            orphans(&survey, &open_turns),
            vec![
                Orphan {
                    session: 2,
                    expired: Some(lease(2, "b"))
                },
                Orphan {
                    session: 4,
                    expired: Some(lease(4, "b"))
                },
                Orphan {
                    session: 5,
                    expired: None
                },
                Orphan {
                    session: 6,
                    expired: None
                },
            ]
        );
        assert!(orphans(&LeaseSurvey::default(), &[]).is_empty());
    }

    #[test]
    fn the_jitter_stays_below_its_bound() {
        for _ in 0..100 {
            assert!(jitter(Duration::from_millis(250)) < Duration::from_millis(250));
        }
        assert_eq!(jitter(Duration::ZERO), Duration::ZERO);
    }
}
