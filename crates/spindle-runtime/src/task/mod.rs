//! One task per web session: it owns the session's agent process, speaks ACP to it through a
//! [`spindle_protocol::ClientCore`] fed from the raw-line [`AgentLink`], and records every line
//! both ways through [`SessionCore::record`] (an agent line before the core decodes it). The task
//! reads one closed enum of inputs: commands from HTTP handlers, events from the agent, and the
//! answers and events of the session's [`spindle_host::Host`] (the files and terminals the agent
//! uses, `host.rs`). This file holds the task's loop, its state and the commands of HTTP handlers
//! (starting the agent, queued prompts, cancel); what the agent's lines lead to (client events,
//! completed requests, the startup handshake, the agent's exit) is in `agent.rs`, the page's own
//! requests (authentication, modes, permissions remembered, prompts with mentions and images) in
//! `features.rs`, the session's lease among replicas in `lease.rs`.

mod agent;
mod authors;
mod checkpoint;
mod elicitation;
mod features;
mod forward;
mod host;
mod idle;
mod lease;
mod lifecycle;
mod queue;
mod state;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use spindle_host::{Host, HostEvent};
use tokio::sync::mpsc;

use crate::agent_link::{AgentLink, LinkEvent};
use crate::core::{Banner, SessionCore};
use crate::error::SessionError;
use crate::feed::request_id_prefix;
use crate::handshake::{AgentSettings, Pending, Phase, Startup};
use crate::page_ops::PageOp;
use crate::replica::{Refused, Replica, lease_lost};
use crate::store::{Direction, Store};
use crate::sync::lock;
use spindle_store::TitleSource;

pub(crate) use forward::show_followed_permissions;
pub(crate) use state::QueueChange;
pub use state::{CheckpointRequest, PromptImage, PromptOutcome, RemoteTarget};
pub(crate) use state::{Command, SessionTask, TaskStart, ValueReply};
use state::{HostDone, LINK_QUEUE_READS, MAX_BATCH, QueuedPrompt, RunningAgent, request_key};

/// Everything the session task reacts to.
#[derive(Debug)]
enum Input {
    Command(Command),
    Agent(Vec<LinkEvent>),
    /// The agent did not finish `initialize` + opening the session in time.
    StartupTimeout,
    /// Time to try writing the unsaved backlog again.
    RetryStorage,
    /// The session's log writer answered: the output held for what it committed may go out.
    Committed,
    /// Another replica took the session's lease (or it could not be renewed).
    LeaseLost(String),
    /// The lease another replica held may have expired: try to take the session again.
    RetryLease,
    /// The host finished an agent request.
    HostDone(HostDone),
    /// The host's terminals produced output or exited.
    Host(HostEvent),
    /// A checkpoint job ended (`checkpoint.rs`).
    Checkpoint(state::CheckpointDone),
    /// The agent went without activity for `AgentSettings::idle_stop` (`idle.rs`).
    Idle,
}

/// How often a session with unsaved lines tries to write them again.
const STORAGE_RETRY: std::time::Duration = std::time::Duration::from_millis(500);

async fn startup_timer(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

async fn storage_retry_timer(backlog: bool) {
    if backlog {
        tokio::time::sleep(STORAGE_RETRY).await;
    } else {
        std::future::pending::<()>().await;
    }
}

impl SessionTask {
    pub(crate) fn new(
        start: TaskStart,
        core: Arc<Mutex<SessionCore>>,
        store: Store,
        settings: Arc<AgentSettings>,
        replica: Arc<Replica>,
        awaits_log: Arc<AtomicBool>,
    ) -> SessionTask {
        let mut startup = Startup::new(start.agent_session_id, &start.root, start.open);
        startup.mcp_servers = settings.mcp_servers_for(&start.setup);
        startup
            .additional_directories
            .clone_from(&start.setup.additional_directories);
        SessionTask {
            id: start.id,
            core,
            store,
            settings,
            recorded_agent: start.agent,
            generation: start.generation,
            agent: None,
            processes: 0,
            startup,
            queued: VecDeque::new(),
            opening_waiters: Vec::new(),
            deferred_settings: Vec::new(),
            v1_turn_running: false,
            queued_targets: HashMap::new(),
            send_next: None,
            queue_notes: Vec::new(),
            agent_requests: HashMap::new(),
            elicitations: HashMap::new(),
            reviews: HashMap::new(),
            waiting: HashMap::new(),
            remote_prompts: HashMap::new(),
            root: start.root,
            host_done: mpsc::unbounded_channel(),
            titled: false,
            agent_title: None,
            startup_deadline: None,
            last_agent_activity: tokio::time::Instant::now(),
            replica,
            lease: None,
            lease_wait: None,
            taking_over: None,
            forwarded_acp: HashMap::new(),
            forwarded_turns: HashMap::new(),
            forward_cursor: 0,
            awaits_log,
            command_notes: Vec::new(),
            noted_commands: Vec::new(),
            command_outcomes: Vec::new(),
            acting: None,
            checkpoints: state::CheckpointJobs::new(),
        }
    }

    pub(crate) async fn run(mut self, mut commands: mpsc::Receiver<Command>) {
        self.status("no_agent", None);
        let written = lock(&self.core).writer_wake();
        loop {
            if self.agent.is_none() {
                // The lease is held only while the agent runs here (it exited or failed).
                self.release_lease().await;
            }
            let (backlog, paused) = {
                let core = lock(&self.core);
                (core.has_backlog(), core.backlog_full())
            };
            let idle_deadline = self.idle_deadline();
            let input = match &mut self.agent {
                Some(agent) => tokio::select! {
                    command = commands.recv() => match command {
                        Some(c) => Input::Command(c),
                        None => break,
                    },
                    () = startup_timer(self.startup_deadline) => Input::StartupTimeout,
                    () = startup_timer(idle_deadline) => Input::Idle,
                    () = storage_retry_timer(backlog) => Input::RetryStorage,
                    () = written.answered() => Input::Committed,
                    why = lease_lost(&mut self.lease) => Input::LeaseLost(why),
                    Some(done) = self.host_done.1.recv() => Input::HostDone(done),
                    Some(done) = self.checkpoints.done.1.recv() => Input::Checkpoint(done),
                    Some(event) = agent.host_events.recv(), if !paused => Input::Host(event),
                    // A full backlog pauses the agent's output: its pipe fills and it blocks.
                    event = agent.link.events.recv(), if !paused => match event {
                        None => Input::Agent(vec![LinkEvent::Closed("the agent link closed".into())]),
                        Some(first) => {
                            let mut lines = first.line_count();
                            let mut batch = vec![first];
                            while lines < MAX_BATCH {
                                match agent.link.events.try_recv() {
                                    Ok(event) => {
                                        lines += event.line_count();
                                        batch.push(event);
                                    }
                                    Err(_) => break,
                                }
                            }
                            Input::Agent(batch)
                        }
                    }
                },
                None => tokio::select! {
                    command = commands.recv() => match command {
                        Some(c) => Input::Command(c),
                        None => break,
                    },
                    () = storage_retry_timer(backlog) => Input::RetryStorage,
                    () = written.answered() => Input::Committed,
                    () = startup_timer(self.lease_wait.as_ref().map(|w| w.1)) => Input::RetryLease,
                    Some(done) = self.host_done.1.recv() => Input::HostDone(done),
                    Some(done) = self.checkpoints.done.1.recv() => Input::Checkpoint(done),
                },
            };
            match input {
                Input::Command(Command::Stop(done)) => {
                    self.fail_forwarded("this replica stopped before the turn ended");
                    self.stop_agent().await;
                    let _ = done.send(());
                    break;
                }
                Input::Command(command) => self.command(command),
                Input::Agent(events) => {
                    self.agent_active();
                    self.agent_events(events).await;
                    // A streaming agent's next lines are ready at once: let the tasks this
                    // batch woke (SSE writers queued on this worker) run before the next one.
                    if self.store.waits_on_server() {
                        tokio::task::yield_now().await;
                    }
                }
                Input::Committed => lock(&self.core).take_answers(),
                Input::RetryStorage => {
                    let core = &self.core;
                    self.store.off_worker(|| lock(core).retry_unsaved());
                }
                Input::LeaseLost(why) => self.lease_lost(&why).await,
                Input::RetryLease => self.start_agent(),
                Input::HostDone(done) => self.host_done(done),
                Input::Host(event) => {
                    self.agent_active();
                    self.host_event(event);
                }
                Input::Idle => self.stop_idle_agent().await,
                Input::Checkpoint(done) => self.checkpoint_done(done),
                Input::StartupTimeout => {
                    let timeout = self.settings.startup_timeout;
                    self.startup_failed(&format!(
                        "the agent did not answer initialize and open a session within {timeout:?}",
                    ));
                }
            }
            self.settle_commands();
            // Whatever started or ended a turn (the agent's lines, a prompt sent, a commit
            // answered), its save is made now, after the lines and ops it woke went out.
            self.save_after_yield().await;
        }
        self.stop_agent().await;
    }

    fn protocol(&self) -> u16 {
        self.agent
            .as_ref()
            .and_then(|a| a.client.protocol_version())
            .unwrap_or(1)
    }

    /// Records and writes what the ACP client has to send, then reacts to what it reported.
    /// Notes of forwarded commands waiting go in the same batch, so that a command and what it
    /// led to are logged together or not at all. The lines go to the agent only once the log
    /// writer answered for them and for every agent line before them ([`SessionCore::record`]
    /// settles the pipeline): a line is logged before the agent can act on it, and an answer to
    /// an agent line is never logged without the line it answers. The save a turn's start makes
    /// due is the task loop's, after a yield ([`Self::save_after_yield`]): the lines reach the
    /// agent first, and it works on them meanwhile.
    fn flush_client(&mut self) {
        if self.agent.is_none() {
            return;
        }
        let mut notes = self.take_command_notes();
        notes.extend(self.take_queue_notes());
        let Some(agent) = self.agent.as_mut() else {
            return;
        };
        let outgoing = agent.client.take_outgoing();
        let events = agent.client.take_events();
        let completions = agent.client.take_completions();
        if !outgoing.is_empty() {
            self.last_agent_activity = tokio::time::Instant::now();
        }
        if !outgoing.is_empty() || !notes.is_empty() {
            let lines: Vec<String> = outgoing.iter().map(|m| m.to_json()).collect();
            let mut batch: Vec<(Direction, String)> = lines
                .iter()
                .map(|line| (Direction::Client, line.clone()))
                .collect();
            batch.extend(notes);
            let core = &self.core;
            self.store.off_worker(|| lock(core).record_unsaved(batch));
            for line in lines {
                agent.link.send(line);
            }
        }
        for event in events {
            self.client_event(event);
        }
        for completion in completions {
            self.completed(completion);
        }
    }

    /// Saves the materialized transcript and replies when a turn started or ended in the agent's
    /// lines and they are out ([`SessionCore::record_agent_lines`] leaves it to here: due once
    /// the writer answered for them), after a yield: the SSE writers the released output woke
    /// (queued on this worker, where no other worker steals them) send the turn's end first;
    /// building a long turn's transcript takes a while (its write is the log writer's).
    async fn save_after_yield(&self) {
        // Nothing is written without the lease (after losing it, the next holder saves).
        if self.lease.is_none() || !lock(&self.core).save_due() {
            return;
        }
        tokio::task::yield_now().await;
        let core = &self.core;
        self.store
            .off_worker(|| lock(core).save_replies_if_changed());
    }

    /// Logs `lines` and publishes what they show ([`SessionCore::record`]), off this worker
    /// while the store waits on a database server (see [`Store::off_worker`]).
    fn record(&self, lines: Vec<(Direction, String)>) {
        let core = &self.core;
        self.store.off_worker(|| lock(core).record(lines));
    }

    fn banner(&self, level: &'static str, text: impl Into<String>) {
        lock(&self.core).set_banner(Some(Banner {
            lasting: false,
            level,
            text: text.into(),
        }));
    }

    /// A banner a turn that ends well does not clear (see [`SessionCore::clear_banner`]).
    fn lasting_banner(&self, level: &'static str, text: impl Into<String>) {
        lock(&self.core).set_banner(Some(Banner {
            lasting: true,
            level,
            text: text.into(),
        }));
    }

    /// The refusal of a call made while the agent waits for the user to sign in.
    fn auth_required(&self) -> SessionError {
        let methods = self
            .agent
            .as_ref()
            .and_then(|a| a.client.initialize_outcome())
            .map(|init| init.auth_methods())
            .unwrap_or_default();
        SessionError::AuthRequired { methods }
    }

    /// Publishes where the agent stands (`web_status`).
    fn status(&self, status: &str, message: Option<String>) {
        let auth_methods = self
            .agent
            .as_ref()
            .and_then(|a| a.client.initialize_outcome())
            .map(features::auth_methods_json)
            .unwrap_or_else(|| json!([]));
        lock(&self.core).set_fact(PageOp::WebStatus {
            status: status.to_string(),
            auth_methods,
            message,
        });
    }

    fn start_agent(&mut self) {
        if self.agent.is_some() {
            return;
        }
        if let Err(refused) = self.take_lease() {
            self.forward_queued(&refused);
            if self.wait_for_lease(&refused) {
                return;
            }
            if let Refused::Owned(lease) = &refused
                && self.queued.is_empty()
            {
                let owner = lease.owner.clone();
                self.status(
                    "no_agent",
                    Some(format!(
                        "The session runs on replica {owner}; prompts sent here go to it."
                    )),
                );
                return;
            }
            let text = format!("Cannot start the agent here: {refused}.");
            self.banner("error", text.clone());
            self.status("no_agent", Some(text.clone()));
            self.fail_queued(&text);
            return;
        }
        let settings = self.settings.clone();
        let choice = match settings.for_session(self.recorded_agent.as_ref()) {
            Ok(choice) => choice,
            Err(text) => {
                // Refused here, the session stays readable (its log is all it needs).
                self.banner("error", text.clone());
                self.status("no_agent", Some(text.clone()));
                self.fail_queued(&text);
                return;
            }
        };
        self.note_agent_version(choice);
        let link = match &settings.remote {
            Some(remote) => Ok(AgentLink::connect(remote, LINK_QUEUE_READS)),
            None => AgentLink::spawn(&choice.command, &choice.env_os(), LINK_QUEUE_READS),
        };
        let link = match link {
            Ok(link) => link,
            Err(error) => {
                let text = format!("Cannot start the agent: {error}");
                self.banner("error", text.clone());
                self.status("no_agent", Some(text.clone()));
                self.fail_queued(&text);
                return;
            }
        };
        self.processes += 1;
        let prefix = request_id_prefix(self.generation, self.processes);
        let config = self.host_config();
        let mut options = self.settings.client_options();
        config.advertise(&mut options);
        let (host, host_events) = Host::new(config);
        let client = self.startup.begin(options, prefix);
        self.agent = Some(RunningAgent {
            link,
            client,
            host,
            host_events,
            process: self.processes,
        });
        self.startup_deadline = Some(tokio::time::Instant::now() + self.settings.startup_timeout);
        self.status("starting", None);
        self.flush_client();
        // Prompts other replicas forwarded while nobody ran the session.
        self.take_forwarded();
    }

    /// Records the version of the agent starting now when it is not the one the session ran
    /// before (the agent was updated; a session from before agents were recorded gets its).
    fn note_agent_version(&mut self, choice: &crate::handshake::AgentChoice) {
        let recorded = choice.recorded();
        if self.recorded_agent.as_ref() == Some(&recorded) {
            return;
        }
        let store = &self.store;
        let id = self.id;
        match store.off_worker(|| store.set_session_agent(id, &recorded)) {
            Ok(()) => self.recorded_agent = Some(recorded),
            Err(error) => tracing::warn!(session = id, %error, "cannot record the session's agent"),
        }
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::As { author, command } => {
                let outer = self.acting.replace(author);
                self.command(*command);
                self.acting = outer;
            }
            Command::StartAgent => self.start_agent(),
            Command::RemotePrompt {
                blocks,
                target,
                reply,
            } => self.command(Command::Prompt {
                text: String::new(),
                images: Vec::new(),
                remote: Some((blocks, target)),
                reply,
            }),
            Command::Prompt {
                text,
                images,
                remote,
                reply,
            } => self.enqueue(QueuedPrompt {
                text,
                images,
                remote,
                acp_forwarded: None,
                command: None,
                queue_item: None,
                author: self.acting.clone(),
                reply,
            }),
            Command::Queue { change, reply } => self.queue_change(change, reply),
            Command::TakeForwarded => self.take_forwarded(),
            Command::TakeOver(expired) => self.take_over(expired),
            Command::Followed => self.read_forwarded_answers(),
            Command::Cancel(reply) => {
                // The queue is kept (held): see `queue.rs`.
                self.send_next = None;
                if self.agent.is_none() {
                    let _ = reply.send(self.forward_cancel());
                    return;
                }
                self.note_action("cancel", serde_json::json!({}));
                self.cancel();
                let _ = reply.send(Ok(()));
            }
            Command::Permission {
                key,
                option_id,
                reply,
            } => {
                // Shown here from the log while the agent runs on another replica: for it.
                let result = if self.agent.is_none() {
                    self.forward_permission(&key, option_id)
                } else {
                    self.answer_permission(&key, option_id)
                };
                let _ = reply.send(result);
            }
            Command::Elicitation {
                key,
                action,
                content,
                reply,
            } => {
                let answered = self.answer_elicitation(&key, &action, content);
                if answered.is_ok() {
                    self.note_action(
                        "elicitation",
                        serde_json::json!({ "key": key, "action": action }),
                    );
                }
                let _ = reply.send(answered);
            }
            Command::ForgetPermission { key, reply } => {
                let _ = reply.send(self.forget_permission(&key));
            }
            Command::Review {
                keys,
                accept,
                reply,
            } => {
                let key = keys.iter().find(|k| self.reviews.contains_key(*k));
                let key = key.or(keys.first()).cloned().unwrap_or_default();
                let reviewed = self.review(&key, accept);
                if reviewed.is_ok() {
                    self.note_action(
                        "review",
                        serde_json::json!({ "key": key, "accept": accept }),
                    );
                }
                let _ = reply.send(reviewed);
            }
            Command::Authenticate { method_id, reply } => self.authenticate(&method_id, reply),
            Command::SetMode { mode_id, reply } => self.set_mode(&mode_id, reply),
            Command::SetConfig {
                config_id,
                value,
                reply,
            } => self.set_config(&config_id, &value, reply),
            Command::AgentInfo(reply) => {
                let _ = reply.send(self.agent_info());
            }
            Command::WhenAgentSessionOpen(reply) => self.when_agent_session_open(reply),
            Command::Stop(done) => {
                let _ = done.send(());
            }
            Command::Renamed => self.titled = true,
            Command::ForkAgentSession(reply) => self.fork_agent_session(reply),
            Command::DeleteAgentSession(reply) => self.delete_agent_session(reply),
            Command::Logout(reply) => self.logout(reply),
            Command::Checkpoints { request, reply } => {
                if let CheckpointRequest::Restore(checkpoint) = &request {
                    self.note_action("restore", serde_json::json!({ "checkpoint": checkpoint }));
                }
                self.checkpoint_request(request, reply)
            }
        }
    }

    /// Queues a prompt and starts the agent or sends it, as the agent's state allows.
    fn enqueue(&mut self, queued: QueuedPrompt) {
        let reply = queued.reply;
        if lock(&self.core).backlog_full() {
            let _ = reply.send(Err(SessionError::StorageFull));
            return;
        }
        // The version is known once `initialize` is answered; until then prompts wait
        // in `queued` and `flush_queued` applies the v1 rule to them.
        if self.queues_prompts() {
            self.hold_in_queue(QueuedPrompt { reply, ..queued });
            return;
        }
        if self.startup.phase == Phase::NeedsAuth {
            let _ = reply.send(Err(self.auth_required()));
            return;
        }
        self.queued.push_back(QueuedPrompt { reply, ..queued });
        match self.startup.phase {
            Phase::Ready => self.flush_queued(),
            Phase::NoAgent => self.start_agent(),
            Phase::Initializing | Phase::Opening | Phase::NeedsAuth => {}
        }
    }

    /// Cancels the turn: open permission questions and file reviews are answered as cancelled,
    /// `session/cancel` is sent and the session's terminals are killed.
    fn cancel(&mut self) {
        let open = lock(&self.core).open_permission_keys();
        for key in open {
            self.answer_permission_raw(&key, None);
        }
        self.cancel_reviews("the turn was cancelled");
        self.cancel_elicitations();
        if let (Some(session), Phase::Ready, Some(agent)) = (
            self.startup.agent_session.clone(),
            self.startup.phase,
            self.agent.as_mut(),
        ) {
            // Permission questions were answered above; this sends `session/cancel`.
            let _ = agent.client.cancel(&session);
            let host = agent.host.clone();
            tokio::spawn(async move { host.kill_session_terminals(&session).await });
            self.flush_client();
        }
        self.fail_queued("cancelled before the agent was ready");
    }

    fn flush_queued(&mut self) {
        // The checkpoint before the next turn is taken first (`checkpoint.rs`).
        while self.checkpoint_taken_for_next_prompt()
            && let Some(mut prompt) = self.queued.pop_front()
        {
            if lock(&self.core).backlog_full() {
                let _ = prompt.reply.send(Err(SessionError::StorageFull));
                continue;
            }
            if self.queues_prompts() {
                self.hold_in_queue(prompt);
                continue;
            }
            if self.take_queue_item(&mut prompt).is_none() {
                // Removed from the queue while the agent started.
                continue;
            }
            let QueuedPrompt {
                text,
                images,
                remote,
                acp_forwarded,
                command,
                queue_item,
                author,
                reply,
            } = prompt;
            let (Some(session), Some(agent)) =
                (self.startup.agent_session.clone(), self.agent.as_mut())
            else {
                let _ = reply.send(Err(SessionError::unavailable("no agent session")));
                continue;
            };
            let from_blocks = remote.is_some() || acp_forwarded.is_some();
            let (blocks, target) = match (remote, acp_forwarded) {
                (Some((blocks, target)), _) => (blocks, Some(target)),
                (None, Some(blocks)) => (blocks, None),
                (None, None) => match features::prompt_blocks(agent, &text, &images) {
                    Ok(blocks) => (blocks, None),
                    Err(error) => {
                        if let Some(id) = &queue_item {
                            self.queued_prompt_refused(id, &error);
                        }
                        let _ = reply.send(Err(error));
                        continue;
                    }
                },
            };
            let text = if from_blocks {
                first_text(&blocks)
            } else {
                text
            };
            let banners_before = lock(&self.core).banners_raised();
            let request =
                agent
                    .client
                    .prompt(&session, &blocks, Pending::Prompt { banners_before });
            let sent = request.is_ok() && !agent.link.is_closed();
            let authored = request.as_ref().ok().cloned().filter(|_| author.is_some());
            if let (Ok(request), Some(command)) = (&request, &command) {
                // Logged with the request line: which agent request the command became.
                self.note_command(command, json!({ "request": request_key(request) }));
            }
            if let (Ok(request), Some(target)) = (request, target) {
                // The /acp fan-out: whose prompt this is (its answer, no echo to the sender).
                let key = serde_json::to_string(&request).unwrap_or_default();
                lock(&self.core).acp.remote_prompt_sent(
                    key,
                    target.connection.clone(),
                    target.id.clone(),
                );
                self.remote_prompts.insert(request, target);
            }
            if !self.titled {
                self.titled = true;
                let title: String = text.chars().take(60).collect();
                // Only an untitled session takes its prompt's text (see `TitleSource`).
                let titled = self.store.off_worker(|| {
                    self.store
                        .set_derived_title(self.id, title.trim(), TitleSource::Prompt)
                });
                if titled.unwrap_or(false) {
                    // The page's session list shows the new title.
                    lock(&self.core).publish_note(PageOp::WebSession);
                }
            }
            self.flush_client();
            if let Some(request) = &authored {
                // After the request line: the engine names the prompt it became.
                self.note_prompt_author(author.as_deref(), request);
            }
            self.checkpoint_prompt_sent(sent);
            if self.protocol() < 2 {
                self.v1_turn_running = sent;
            }
            let _ = reply.send(if sent {
                Ok(PromptOutcome::Sent)
            } else {
                Err(SessionError::unavailable("the agent is gone"))
            });
        }
    }

    /// The agent's latest title (`session_info_update`, as the engine keeps it) becomes the
    /// session's, unless the user renamed it (the store's conditional write decides); the pages
    /// list it. Called after each batch of the agent's lines.
    fn follow_agent_title(&mut self) {
        let title = lock(&self.core)
            .engine
            .transcript()
            .session_info
            .title
            .clone();
        if title == self.agent_title {
            return;
        }
        self.agent_title.clone_from(&title);
        let Some(title) = title else { return };
        let title: String = title
            .trim()
            .chars()
            .take(crate::registry::MAX_TITLE_CHARS)
            .collect();
        if title.is_empty() {
            return;
        }
        let set = self.store.off_worker(|| {
            self.store
                .set_derived_title(self.id, &title, TitleSource::Agent)
        });
        match set {
            Ok(true) => lock(&self.core).publish_note(PageOp::WebSession),
            Ok(false) => {}
            Err(error) => tracing::warn!(session = self.id, "agent title not saved: {error}"),
        }
    }

    fn fail_queued(&mut self, why: &str) {
        for queued in self.queued.drain(..) {
            let _ = queued.reply.send(Err(SessionError::unavailable(why)));
        }
    }

    /// Closes the agent session (when offered), stops the agent, saves, releases the lease.
    pub(super) async fn stop_agent(&mut self) {
        self.close_agent_session().await;
        if let Some(mut agent) = self.agent.take() {
            agent.host.shutdown().await;
            agent.link.kill().await;
        }
        lock(&self.core).save_now();
        self.release_lease().await;
    }
}

/// The text of a prompt's first text block (the session's title).
pub(super) fn first_text(blocks: &Value) -> String {
    blocks
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|b| b.get("text").and_then(Value::as_str))
        .unwrap_or_default()
        .to_string()
}
