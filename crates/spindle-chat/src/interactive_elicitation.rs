//! The interactive chat's side of `elicitation/create` and `elicitation/complete`: a form or URL
//! becomes a question at the bottom (see `elicitation_ask`), refused (`decline`) when nobody can
//! answer, and a URL question the agent reports complete is closed.

use serde_json::Value;
use serde_json::value::RawValue;
use spindle_host::{Elicitation, ElicitationAnswer};
use spindle_protocol::RequestId;
use spindle_wire::client_methods::elicitation::ELICITATION_ID;

use super::ask::Ask;
use super::elicitation_ask::{ElicitationAsk, Progress};
use super::interactive::Chat;

impl Chat<'_> {
    /// `elicitation/create`: asked, or declined with the message shown when nobody can answer.
    pub(super) async fn elicitation_asked(
        &mut self,
        request_id: RequestId,
        params: Option<Box<RawValue>>,
    ) -> anyhow::Result<()> {
        let params = params
            .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
            .unwrap_or(Value::Null);
        let ask = ElicitationAsk::new(Elicitation::of_params(&params));
        if !self.stdin_tty || self.input_closed {
            for line in ask.summary() {
                self.front.note(&line.text);
            }
            self.front
                .warn("declined: no terminal to answer the agent's question")?;
            self.send_elicitation_answer(&request_id, &ElicitationAnswer::Decline)
                .await;
            return Ok(());
        }
        self.push_ask(Ask::Elicitation(request_id, Box::new(ask)))
    }

    /// A typed line for the elicitation asked first.
    pub(super) async fn elicitation_typed(
        &mut self,
        request_id: RequestId,
        mut ask: Box<ElicitationAsk>,
        line: &str,
    ) {
        match ask.answer(line) {
            Progress::Asking => self.asks.push_front(Ask::Elicitation(request_id, ask)),
            Progress::Answered(answer) => {
                let what = match &answer {
                    ElicitationAnswer::Accept(_) => "answered",
                    ElicitationAnswer::Decline => "declined",
                    ElicitationAnswer::Cancel => "cancelled",
                };
                self.front.note(&format!("the agent's question: {what}"));
                self.send_elicitation_answer(&request_id, &answer).await;
            }
        }
    }

    pub(super) async fn send_elicitation_answer(
        &mut self,
        request_id: &RequestId,
        answer: &ElicitationAnswer,
    ) {
        self.send_response(request_id, Ok(answer.to_result())).await;
    }

    /// `elicitation/complete`: the URL question it names is closed, answered `cancel` when the
    /// user had not answered it (the agent no longer waits for a choice).
    pub(super) async fn elicitation_completed(&mut self, params: Option<Box<RawValue>>) {
        let id = params
            .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
            .and_then(|p| p.get(ELICITATION_ID)?.as_str().map(str::to_owned));
        let Some(id) = id else {
            self.diagnostic("elicitation/complete without an elicitationId");
            return;
        };
        let position = self.asks.iter().position(
            |ask| matches!(ask, Ask::Elicitation(_, e) if e.url_id() == Some(id.as_str())),
        );
        match position.and_then(|i| self.asks.remove(i)) {
            Some(ask) => {
                self.front
                    .note("the agent says the URL step is complete; its question is closed");
                self.send_elicitation_answer(ask.request_id(), &ElicitationAnswer::Cancel)
                    .await;
                self.show_input_prompt();
            }
            None => self.front.note("the agent says the URL step is complete"),
        }
    }
}
