//! The test agent of `sdk-test-agent` (stdio) and `sdk-http-agent` (the
//! official HTTP/WebSocket server), built on the official Rust SDK: every
//! prompt gets a thought, a plan and a reply in four message chunks; a prompt
//! containing the word `tool` instead runs a tool call guarded by a permission
//! request and replies according to the answer. v1 ends the turn with the
//! `session/prompt` response; v2 answers the prompt on acceptance, echoes the
//! prompt as `user_message`, and ends the turn with `state_update` idle.

use crate::{
    PLAIN_REPLY_CHUNKS, THOUGHT_TEXT, TOOL_ALLOWED_REPLY, TOOL_REJECTED_REPLY, asks_for_tool,
};
use agent_client_protocol::{Agent, Client, ConnectTo, Result};

fn prompt_text<B>(blocks: &[B], text_of: impl Fn(&B) -> Option<&str>) -> String {
    blocks
        .iter()
        .filter_map(text_of)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The agent speaking v1.
pub mod v1_agent {
    use super::*;
    use agent_client_protocol::v1::schema::{
        AgentCapabilities, ContentBlock, ContentChunk, InitializeRequest, InitializeResponse,
        NewSessionRequest, NewSessionResponse, PermissionOption, PermissionOptionKind, Plan,
        PlanEntry, PlanEntryPriority, PlanEntryStatus, PromptRequest, PromptResponse,
        RequestPermissionOutcome, RequestPermissionRequest, SessionId, SessionNotification,
        SessionUpdate, StopReason, ToolCall, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
        ToolKind,
    };
    use agent_client_protocol::v1::{ConnectionTo, Responder};

    /// The v1 agent, to connect to any transport.
    pub fn agent() -> impl ConnectTo<Client> {
        Agent
            .v1()
            .name("sdk-test-agent")
            .on_receive_request(
                async move |request: InitializeRequest, responder, _connection| {
                    responder.respond(
                        InitializeResponse::new(request.protocol_version)
                            .agent_capabilities(AgentCapabilities::new()),
                    )
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |_request: NewSessionRequest, responder, _connection| {
                    responder.respond(NewSessionResponse::new("sdk-session-1"))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: PromptRequest,
                            responder: Responder<PromptResponse>,
                            connection: ConnectionTo<Client>| {
                    // The turn waits on a permission answer, which the dispatch
                    // loop must stay free to deliver: run it as its own task.
                    let turn_connection = connection.clone();
                    connection.spawn(async move {
                        let stop = run_turn(request, &turn_connection).await?;
                        responder.respond(PromptResponse::new(stop))
                    })
                },
                agent_client_protocol::on_receive_request!(),
            )
    }

    fn send(
        connection: &ConnectionTo<Client>,
        session: &SessionId,
        update: SessionUpdate,
    ) -> Result<()> {
        connection.send_notification(SessionNotification::new(session.clone(), update))
    }

    fn text(text: &str) -> ContentBlock {
        ContentBlock::from(text.to_string())
    }

    async fn run_turn(
        request: PromptRequest,
        connection: &ConnectionTo<Client>,
    ) -> Result<StopReason> {
        let session = request.session_id.clone();
        let prompt = prompt_text(&request.prompt, |block| match block {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        });
        send(
            connection,
            &session,
            SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(THOUGHT_TEXT))),
        )?;
        send(
            connection,
            &session,
            SessionUpdate::Plan(Plan::new(vec![
                PlanEntry::new(
                    "Read the prompt",
                    PlanEntryPriority::High,
                    PlanEntryStatus::Completed,
                ),
                PlanEntry::new(
                    "Write the reply",
                    PlanEntryPriority::Medium,
                    PlanEntryStatus::InProgress,
                ),
            ])),
        )?;
        let reply_chunks = if asks_for_tool(&prompt) {
            send(
                connection,
                &session,
                SessionUpdate::ToolCall(
                    ToolCall::new("call_1", "Read notes.txt")
                        .kind(ToolKind::Read)
                        .status(ToolCallStatus::Pending),
                ),
            )?;
            let answer = connection
                .send_request(RequestPermissionRequest::new(
                    session.clone(),
                    ToolCallUpdate::new("call_1", ToolCallUpdateFields::new()),
                    vec![
                        PermissionOption::new(
                            "allow",
                            "Allow once",
                            PermissionOptionKind::AllowOnce,
                        ),
                        PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
                    ],
                ))
                .block_task()
                .await;
            // An error answer (e.g. a client without a permission handler) rejects.
            let allowed = matches!(
                answer.as_ref().map(|a| &a.outcome),
                Ok(RequestPermissionOutcome::Selected(selected)) if &*selected.option_id.0 == "allow"
            );
            let (status, reply) = if allowed {
                (ToolCallStatus::Completed, TOOL_ALLOWED_REPLY)
            } else {
                (ToolCallStatus::Failed, TOOL_REJECTED_REPLY)
            };
            send(
                connection,
                &session,
                SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    "call_1",
                    ToolCallUpdateFields::new().status(status),
                )),
            )?;
            vec![reply]
        } else {
            PLAIN_REPLY_CHUNKS.to_vec()
        };
        for chunk in reply_chunks {
            send(
                connection,
                &session,
                SessionUpdate::AgentMessageChunk(ContentChunk::new(text(chunk))),
            )?;
        }
        Ok(StopReason::EndTurn)
    }
}

/// The agent speaking v2.
pub mod v2_agent {
    use super::*;
    use agent_client_protocol::schema::ProtocolVersion;
    use agent_client_protocol::v2::schema;
    use agent_client_protocol::v2::{ConnectionTo, Responder};

    /// The v2 agent, to connect to any transport.
    pub fn agent() -> impl ConnectTo<Client> {
        Agent
            .v2()
            .name("sdk-test-agent")
            .on_receive_request(
                async move |request: schema::InitializeRequest, responder, _connection| {
                    // Only a client asking for v2 gets it; anything else is
                    // answered with v2 too and the client decides (ACP rule:
                    // the agent answers with the latest version it supports).
                    let _ = request.protocol_version;
                    responder.respond(schema::InitializeResponse::new(
                        ProtocolVersion::V2,
                        schema::Implementation::new("sdk-test-agent", env!("CARGO_PKG_VERSION")),
                    ))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |_request: schema::NewSessionRequest, responder, _connection| {
                    responder.respond(schema::NewSessionResponse::new("sdk-session-1"))
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: schema::PromptRequest,
                            responder: Responder<schema::PromptResponse>,
                            connection: ConnectionTo<Client>| {
                    // v2: answer on acceptance with the user message's id, then
                    // stream the turn; `state_update` idle ends it.
                    responder.respond(schema::PromptResponse::new("user_1"))?;
                    let turn_connection = connection.clone();
                    connection.spawn(async move { run_turn(request, &turn_connection).await })
                },
                agent_client_protocol::on_receive_request!(),
            )
    }

    fn send(
        connection: &ConnectionTo<Client>,
        session: &schema::SessionId,
        update: schema::SessionUpdate,
    ) -> Result<()> {
        connection.send_notification(schema::UpdateSessionNotification::new(
            session.clone(),
            update,
        ))
    }

    fn text(text: &str) -> schema::ContentBlock {
        schema::ContentBlock::from(text.to_string())
    }

    fn state(
        connection: &ConnectionTo<Client>,
        session: &schema::SessionId,
        state: schema::StateUpdate,
    ) -> Result<()> {
        send(
            connection,
            session,
            schema::SessionUpdate::StateUpdate(state),
        )
    }

    async fn run_turn(
        request: schema::PromptRequest,
        connection: &ConnectionTo<Client>,
    ) -> Result<()> {
        let session = request.session_id.clone();
        let prompt = prompt_text(&request.prompt, |block| match block {
            schema::ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        });
        send(
            connection,
            &session,
            schema::SessionUpdate::UserMessage(
                schema::UserMessage::new("user_1").content(request.prompt.clone()),
            ),
        )?;
        state(
            connection,
            &session,
            schema::StateUpdate::Running(schema::RunningStateUpdate::new()),
        )?;
        send(
            connection,
            &session,
            schema::SessionUpdate::AgentThoughtChunk(schema::ContentChunk::new(
                text(THOUGHT_TEXT),
                "thought_1",
            )),
        )?;
        send(
            connection,
            &session,
            schema::SessionUpdate::PlanUpdate(schema::PlanUpdate::new(
                schema::PlanUpdateContent::Items(schema::PlanItems::new(
                    "plan_1",
                    vec![
                        schema::PlanEntry::new(
                            "Read the prompt",
                            schema::PlanEntryPriority::High,
                            schema::PlanEntryStatus::Completed,
                        ),
                        schema::PlanEntry::new(
                            "Write the reply",
                            schema::PlanEntryPriority::Medium,
                            schema::PlanEntryStatus::InProgress,
                        ),
                    ],
                )),
            )),
        )?;
        let reply_chunks = if asks_for_tool(&prompt) {
            send(
                connection,
                &session,
                schema::SessionUpdate::ToolCallUpdate(
                    schema::ToolCallUpdate::new("call_1")
                        .title("Read notes.txt")
                        .kind(schema::ToolKind::Read)
                        .status(schema::ToolCallStatus::Pending),
                ),
            )?;
            state(
                connection,
                &session,
                schema::StateUpdate::RequiresAction(schema::RequiresActionStateUpdate::new()),
            )?;
            let answer = connection
                .send_request(
                    schema::RequestPermissionRequest::new(
                        session.clone(),
                        "Allow reading notes.txt?",
                        vec![
                            schema::PermissionOption::new(
                                "allow",
                                "Allow once",
                                schema::PermissionOptionKind::AllowOnce,
                            ),
                            schema::PermissionOption::new(
                                "reject",
                                "Reject",
                                schema::PermissionOptionKind::RejectOnce,
                            ),
                        ],
                    )
                    .subject(schema::RequestPermissionSubject::ToolCall(
                        Box::new(schema::ToolCallPermissionSubject::new(
                            schema::ToolCallUpdate::new("call_1"),
                        )),
                    )),
                )
                .block_task()
                .await;
            state(
                connection,
                &session,
                schema::StateUpdate::Running(schema::RunningStateUpdate::new()),
            )?;
            // An error answer (e.g. a client without a permission handler) rejects.
            let allowed = matches!(
                answer.as_ref().map(|a| &a.outcome),
                Ok(schema::RequestPermissionOutcome::Selected(selected)) if selected.option_id.to_string() == "allow"
            );
            let (status, reply) = if allowed {
                (schema::ToolCallStatus::Completed, TOOL_ALLOWED_REPLY)
            } else {
                (schema::ToolCallStatus::Failed, TOOL_REJECTED_REPLY)
            };
            send(
                connection,
                &session,
                schema::SessionUpdate::ToolCallUpdate(
                    schema::ToolCallUpdate::new("call_1").status(status),
                ),
            )?;
            vec![reply]
        } else {
            PLAIN_REPLY_CHUNKS.to_vec()
        };
        for chunk in reply_chunks {
            send(
                connection,
                &session,
                schema::SessionUpdate::AgentMessageChunk(schema::ContentChunk::new(
                    text(chunk),
                    "agent_1",
                )),
            )?;
        }
        state(
            connection,
            &session,
            schema::StateUpdate::Idle(
                schema::IdleStateUpdate::new().stop_reason(schema::StopReason::EndTurn),
            ),
        )
    }
}
