//! The interactive chat's questions and side requests: permission requests
//! (with standing "always" answers), writes to review under `--fs ask`, the
//! agent's file and terminal requests (run by the client services), and
//! Spindle's own commands (`/mode`, `/model`, `/config`, `/auth`).

use serde_json::value::RawValue;
use serde_json::{Value, json};
use spindle_host::PendingWrite;
use spindle_protocol::{RequestId, ResponseError};
use spindle_wire::client_methods::SESSION_REQUEST_PERMISSION;

use super::ask::Ask;
use super::completion::{OWN_COMMANDS, split_command};
use super::controls::ControlAction;
use super::interactive::{Chat, TaskDone};
use super::outcome::AgentErrorText;
use super::permission::{self, PermissionAsk};
use super::services::{self, ServiceDone, ServiceEvent};
use super::session_open::auth_method_lines;
use super::view::Footer;

impl Chat<'_> {
    /// Sends the answer and tells the engine, which records it on the
    /// tool call (as a replay of the recording would).
    async fn answer_permission(&mut self, request_id: &RequestId, outcome: &Value) {
        let _ = self
            .conn
            .client
            .respond_permission(request_id, outcome)
            .await;
        self.engine_permission_answer(request_id, outcome);
    }

    fn engine_permission_answer(&mut self, request_id: &RequestId, outcome: &Value) {
        let line = json!({"jsonrpc": "2.0", "id": request_id, "result": {"outcome": outcome}});
        let applied = self.engine.apply_client_line(&line.to_string());
        self.apply_ops(applied.ops);
    }

    /// A permission request: answered from a standing "always" answer, by
    /// `--yes`, refused when nobody can be asked, else asked.
    pub(super) async fn permission_asked(
        &mut self,
        request_id: RequestId,
        params: &str,
    ) -> anyhow::Result<()> {
        // The engine sees the request as the agent sent it: the tool call
        // shows that it waits for an answer.
        let request = json!({
            "jsonrpc": "2.0",
            "id": &request_id,
            "method": SESSION_REQUEST_PERMISSION,
            "params": serde_json::from_str::<Value>(params).unwrap_or(Value::Null),
        });
        let applied = self.engine.apply_agent_line(&request.to_string());
        self.apply_ops(applied.ops);
        let ask = PermissionAsk::parse(params);
        if let Some((option, line)) = self.standing.answer_for(&ask) {
            let outcome = permission::selected(option);
            self.front
                .note(&format!("{line} (answered without asking)"));
            self.answer_permission(&request_id, &outcome).await;
            return Ok(());
        }
        let answer = if self.args.yes
            && let Some(option) = ask.allow_for_yes()
        {
            self.front.warn(&format!(
                "--yes: approving {:?} with {:?}",
                ask.subject, option.name
            ))?;
            Some(permission::selected(option))
        } else if !self.stdin_tty || self.input_closed {
            let (outcome, what) = match ask.reject_unasked() {
                Some(option) => (permission::selected(option), "rejected"),
                None => (permission::cancelled(), "cancelled"),
            };
            self.front.warn(&format!(
                "permission for {:?} {what}: no terminal to ask and no --yes",
                ask.subject
            ))?;
            Some(outcome)
        } else {
            None
        };
        match answer {
            Some(outcome) => self.answer_permission(&request_id, &outcome).await,
            None => self.push_ask(Ask::Permission(request_id, ask, false))?,
        }
        Ok(())
    }

    /// Queues a question; the first one waits at the bottom for an answer.
    pub(super) fn push_ask(&mut self, ask: Ask) -> anyhow::Result<()> {
        if self.asks.is_empty() {
            // The entries so far become scrollback; the question waits at
            // the bottom.
            self.front.set_footer(Footer::None);
            self.front.commit(None)?;
        }
        self.asks.push_back(ask);
        self.show_input_prompt();
        Ok(())
    }

    /// `RequestCancelled`: answered `cancelled` by the runtime
    /// (session/cancel) or withdrawn by the agent.
    pub(super) fn request_withdrawn(&mut self, request_id: &RequestId) {
        self.engine_permission_answer(request_id, &permission::cancelled());
        let before = self.asks.len();
        self.asks.retain(|a| a.request_id() != request_id);
        if self.asks.len() != before {
            self.front.note("the agent withdrew its question");
            self.show_input_prompt();
        }
    }

    /// A typed answer to the first question.
    pub(super) async fn answer_typed(&mut self, line: &str) {
        let Some(ask) = self.asks.pop_front() else {
            return;
        };
        match ask {
            Ask::Permission(request_id, ask, _) => match ask.option_for_answer(line) {
                Some(option) => {
                    let outcome = permission::selected(option);
                    if let Some(standing) = self.standing.remember(&ask, &option.id.clone()) {
                        self.front.note(&standing);
                    }
                    self.answer_permission(&request_id, &outcome).await;
                }
                None => self.asks.push_front(Ask::Permission(request_id, ask, true)),
            },
            Ask::Write(request_id, write) => {
                let yes = matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes");
                self.finish_review(request_id, write, yes).await;
            }
            Ask::Elicitation(request_id, ask) => {
                self.elicitation_typed(request_id, ask, line).await;
            }
        }
    }

    async fn finish_review(&mut self, request_id: RequestId, write: PendingWrite, apply: bool) {
        let shown = write.display_path.clone();
        let result = if apply {
            self.conn.services.host().approve(write)
        } else {
            Err(self.conn.services.host().reject(&write))
        };
        match &result {
            Ok(_) => self.front.note(&format!("wrote {shown}")),
            Err(error) => self
                .front
                .note(&format!("not written: {shown}: {}", error.message)),
        }
        self.send_response(&request_id, result).await;
    }

    /// Answers the agent and shows the engine the response line.
    pub(super) async fn send_response(
        &mut self,
        request_id: &RequestId,
        result: Result<Value, ResponseError>,
    ) {
        let line = services::respond(&self.conn.client, request_id, result).await;
        let applied = self.engine.apply_client_line(&line);
        self.apply_ops(applied.ops);
    }

    /// Stdin closed: questions nobody can answer any more are refused.
    pub(super) async fn input_ended(&mut self) {
        while let Some(ask) = self.asks.pop_front() {
            match ask {
                Ask::Permission(request_id, _, _) => {
                    self.answer_permission(&request_id, &permission::cancelled())
                        .await;
                }
                Ask::Write(request_id, write) => {
                    self.finish_review(request_id, write, false).await;
                }
                Ask::Elicitation(request_id, _) => {
                    self.send_elicitation_answer(
                        &request_id,
                        &spindle_host::ElicitationAnswer::Cancel,
                    )
                    .await;
                }
            }
        }
        self.show_input_prompt();
    }

    /// Refuses every write waiting for review and answers every open
    /// elicitation `cancel` (Ctrl-C: the turn that asked is being cancelled).
    pub(super) async fn reject_reviews(&mut self, why: &str) {
        let mut kept = std::collections::VecDeque::new();
        while let Some(ask) = self.asks.pop_front() {
            match ask {
                Ask::Write(request_id, write) => {
                    self.front
                        .note(&format!("{why}: not writing {}", write.display_path));
                    self.finish_review(request_id, write, false).await;
                }
                Ask::Elicitation(request_id, _) => {
                    self.front
                        .note(&format!("{why}: the question is withdrawn"));
                    self.send_elicitation_answer(
                        &request_id,
                        &spindle_host::ElicitationAnswer::Cancel,
                    )
                    .await;
                }
                other => kept.push_back(other),
            }
        }
        self.asks = kept;
    }

    /// `fs/*` and `terminal/*` from the agent: shown to the engine, run by
    /// the services on a task of their own.
    pub(super) async fn agent_request(
        &mut self,
        request_id: RequestId,
        method: &str,
        params: Option<Box<RawValue>>,
    ) {
        let line = services::request_line(&request_id, method, params.as_deref());
        let applied = self.engine.apply_agent_line(&line);
        self.apply_ops(applied.ops);
        if !self
            .conn
            .services
            .dispatch(request_id.clone(), method, params)
        {
            let error = ResponseError::method_not_found(
                method,
                &format!("{method}: this client does not offer it"),
            );
            self.send_response(&request_id, Err(error)).await;
        }
    }

    /// A service result (answered, or a write to review) or terminal output.
    pub(super) async fn service_event(&mut self, event: ServiceEvent) -> super::interactive::Step {
        match event {
            ServiceEvent::Done(ServiceDone { request_id, reply }) => match reply {
                spindle_host::HostReply::Done(result) => {
                    self.send_response(&request_id, result).await;
                }
                spindle_host::HostReply::NeedsApproval(write) => {
                    if !self.stdin_tty || self.input_closed {
                        self.front.warn(&format!(
                            "write to {} refused: --fs ask and no terminal to ask (use --yes or --fs allow)",
                            write.display_path
                        ))?;
                        self.finish_review(request_id, write, false).await;
                    } else {
                        self.push_ask(Ask::Write(request_id, write))?;
                    }
                }
            },
            ServiceEvent::Host(event) => {
                let line = event.to_local_line();
                let applied = self.engine.apply_local_line(&line);
                self.apply_ops(applied.ops);
                self.conn.record_local(&line)?;
            }
        }
        Ok(None)
    }

    /// Handles `line` when it is one of Spindle's own commands.
    pub(super) fn own_command(&mut self, line: &str) -> bool {
        let Some((name, rest)) = split_command(line.trim()) else {
            return false;
        };
        if !OWN_COMMANDS.iter().any(|(own, _, _)| *own == name) {
            return false;
        }
        // The full screen picks a mode or model from a menu.
        if rest.is_empty() && matches!(name, "mode" | "model") && self.open_picker(name) {
            return true;
        }
        if !self.stdin_tty {
            // Piped input is not on the screen: say what is being answered
            // (a terminal shows the typed line already).
            self.front.note(&format!("you> {}", line.trim()));
        }
        let action = match name {
            "mode" => self.conn.controls.mode_command(rest),
            "model" => self.conn.controls.model_command(rest),
            "config" => self.conn.controls.config_command(rest),
            "permissions" => ControlAction::Show(self.standing.command(rest)),
            _ => return self.auth_command(rest),
        };
        let client = self.conn.client.clone();
        let session = self.conn.session_id.clone();
        let tasks = self.tasks.clone();
        if !matches!(action, ControlAction::Show(_)) {
            self.controls_pending += 1;
        }
        match action {
            ControlAction::Show(lines) => {
                for l in lines {
                    self.front.note(&l);
                }
            }
            ControlAction::SetMode(mode) => {
                tokio::spawn(async move {
                    let result = client.set_mode(&session, &mode).await;
                    let _ = tasks.send(TaskDone {
                        what: format!("mode {mode}"),
                        mode: Some(mode),
                        result,
                    });
                });
            }
            ControlAction::SetOption { config_id, value } => {
                tokio::spawn(async move {
                    let shown = match &value {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let result = client.set_config_option(&session, &config_id, value).await;
                    let _ = tasks.send(TaskDone {
                        what: format!("{config_id} {shown}"),
                        mode: None,
                        result,
                    });
                });
            }
        }
        true
    }

    fn auth_command(&mut self, rest: &str) -> bool {
        let Some(init) = self.conn.init.clone() else {
            return true;
        };
        if rest.is_empty() {
            for line in auth_method_lines(&init) {
                self.front.note(&line);
            }
            return true;
        }
        let client = self.conn.client.clone();
        let tasks = self.tasks.clone();
        let method = rest.to_owned();
        self.controls_pending += 1;
        tokio::spawn(async move {
            let result = client.authenticate(&method).await;
            let _ = tasks.send(TaskDone {
                what: format!("sign-in with {method}"),
                mode: None,
                result,
            });
        });
        true
    }

    /// The agent answered an own command.
    pub(super) fn own_command_done(&mut self, done: TaskDone) {
        match done.result {
            Ok(raw) => {
                if let Ok(result) = serde_json::from_str::<Value>(raw.get()) {
                    self.conn.controls.update_from_result(&result);
                }
                if let Some(mode) = done.mode {
                    self.conn.controls.current_mode = Some(mode);
                }
                self.front.note(&format!("done: {}", done.what));
            }
            Err(error) => {
                // `what` may start with an agent's config id: any character.
                let mut chars = done.what.chars();
                let first = chars.next().map(|c| c.to_uppercase().to_string());
                let context = format!("{}{} failed", first.unwrap_or_default(), chars.as_str());
                let text = AgentErrorText::from_client_error(&context, &error);
                self.front.error(&text);
            }
        }
    }
}
