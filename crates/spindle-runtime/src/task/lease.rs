//! The session task's side of replica ownership (see [`crate::replica`]): the lease is claimed
//! before the agent starts, after which the task catches up with what other replicas logged,
//! and continues the agent session they had; a lost lease stops the agent without another write.

use super::state::SessionTask;
use crate::replica::Refused;
use crate::sync::lock;

impl SessionTask {
    /// Claims the session's lease (a no-op while held), then reads what other replicas logged
    /// since this replica's last line and the agent session they opened, so that the agent
    /// started next continues from the log's end (`session/resume` or `session/load` where
    /// offered, a visible note otherwise, as after a restart).
    pub(super) fn take_lease(&mut self) -> Result<(), Refused> {
        if self.lease.is_some() {
            return Ok(());
        }
        self.lease = Some(self.replica.hold(self.id)?);
        // Whose session this was: the replica whose lease expired (a prompt waited for it, or
        // the takeover watcher found it), `Some(None)` when it is not known.
        let previous = match self.lease_wait.take() {
            Some((lease, _)) => Some(Some(lease.owner)),
            None => self.taking_over.take(),
        };
        // The log's end first: the note below goes after every line the other replica logged.
        let caught_up = lock(&self.core).follow();
        match caught_up {
            Ok(0) => {}
            Ok(lines) => tracing::info!(
                session = self.id,
                lines,
                replica = self.replica.id(),
                "took the session over after lines logged elsewhere"
            ),
            Err(error) => {
                // Without the log's end this replica would write over lines it never saw.
                let lease = self.lease.take();
                drop(lease);
                return Err(Refused::Store(error.to_string()));
            }
        }
        if let Some(previous) = previous {
            // Every takeover counts, whatever found it: the watcher, or a prompt that waited for
            // the dead replica's lease to expire.
            self.replica
                .counters
                .takeovers
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let who = match &previous {
                Some(owner) => format!("Replica {owner}"),
                None => "The replica that ran this session".to_owned(),
            };
            // A turn the other replica left open ends here, in the log, as when an agent exits.
            let mut core = lock(&self.core);
            // Questions of the agent that is gone, shown here from the log: nobody answers them.
            for key in core.open_permission_keys() {
                core.close_permission(&key, "agent exited");
            }
            if core.engine.transcript().state.turn_open {
                let note = crate::feed::agent_exited_note(&format!(
                    "{who} stopped running this session before this turn finished."
                ));
                core.record(vec![(crate::store::Direction::Server, note)]);
            }
            drop(core);
            let from = match &previous {
                Some(owner) => format!(" from replica {owner} (its lease expired)"),
                None => String::new(),
            };
            self.banner(
                "warning",
                format!(
                    "Replica {} took this session over{from}.",
                    self.replica.id()
                ),
            );
        }
        if let Ok(sessions) = self.store.sessions()
            && let Some(stored) = sessions.iter().find(|s| s.id == self.id)
            && stored.agent_session_id.is_some()
            && stored.agent_session_id != self.startup.previous_agent_session
        {
            self.startup.previous_agent_session = stored.agent_session_id.clone();
        }
        Ok(())
    }

    /// Takes the session over because nobody runs it and it has work left (see
    /// [`crate::replica::takeover`]): claims the lease and starts the agent. Another replica
    /// that claimed first keeps it; this one leaves the session as it is.
    pub(super) fn take_over(&mut self, expired: Option<spindle_store::Lease>) {
        if self.agent.is_some() || self.lease.is_some() || self.replica.is_draining() {
            return;
        }
        self.taking_over = Some(expired.map(|lease| lease.owner));
        match self.take_lease() {
            Ok(()) => {
                tracing::info!(
                    session = self.id,
                    replica = self.replica.id(),
                    "took the session over"
                );
                self.start_agent();
            }
            Err(Refused::Owned(lease)) => tracing::debug!(
                session = self.id,
                owner = lease.owner,
                "another replica took the session over first"
            ),
            Err(Refused::Store(error)) => {
                tracing::warn!(session = self.id, "takeover not possible: {error}")
            }
        }
        self.taking_over = None;
    }

    /// Another replica holds the lease: keeps the queued prompts and claims again when that
    /// lease expires, unless its holder renewed it meanwhile (it is alive and runs the session).
    /// Returns whether the task waits.
    pub(super) fn wait_for_lease(&mut self, refused: &Refused) -> bool {
        let Refused::Owned(lease) = refused else {
            self.lease_wait = None;
            return false;
        };
        let renewed = self.lease_wait.take().is_some_and(|(seen, _)| {
            seen.owner != lease.owner || lease.expires_at > seen.expires_at
        });
        if renewed {
            return false;
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        // Clocks of replicas may differ a little: bounded by two lease times of this one.
        let ttl = i64::try_from(self.replica.ttl().as_millis()).unwrap_or(i64::MAX);
        let wait = (lease.expires_at - now).clamp(0, ttl.saturating_mul(2)) + 50;
        let at = tokio::time::Instant::now()
            + std::time::Duration::from_millis(u64::try_from(wait).unwrap_or(0));
        self.lease_wait = Some((lease.clone(), at));
        self.status(
            "starting",
            Some(format!(
                "The session ran on replica {}; waiting for its lease to expire.",
                lease.owner
            )),
        );
        true
    }

    /// Gives the lease up: the agent has stopped and its last lines are logged (the commands
    /// whose notes are committed are marked finished first; commands taken and not run stay
    /// unfinished, for the next holder).
    pub(super) async fn release_lease(&mut self) {
        if self.lease.is_some() {
            self.finish_noted();
            self.command_notes.clear();
            self.command_outcomes.clear();
        }
        if let Some(lease) = self.lease.take() {
            lease.release().await;
        }
    }

    /// The lease is gone: another replica may run the session now, so the agent stops and this
    /// task writes nothing more for it (its lines after this point would collide with the new
    /// owner's).
    pub(super) async fn lease_lost(&mut self, why: &str) {
        self.lease = None;
        // Forwarded commands taken under the lost lease stay unfinished in the database: the
        // new holder finds whether their notes reached the log, and runs the others.
        self.command_notes.clear();
        self.command_outcomes.clear();
        self.noted_commands.clear();
        if let Some(mut agent) = self.agent.take() {
            agent.host.shutdown().await;
            agent.link.kill().await;
        }
        self.startup.reset();
        self.startup_deadline = None;
        self.v1_turn_running = false;
        self.agent_requests.clear();
        self.reviews.clear();
        let text = format!("This replica stopped running the session: {why}.");
        {
            let mut core = lock(&self.core);
            for (_, target) in self.remote_prompts.drain() {
                let error = serde_json::json!({ "code": -32603, "message": text });
                core.acp.respond(&target.connection, &target.id, Err(error));
            }
        }
        self.fail_waiting(&text);
        self.fail_queued(&text);
        self.banner("warning", text.clone());
        self.status("no_agent", Some(text));
    }
}
