//! Per-session turn tracking without I/O: which sessions exist, and when a
//! turn ends (v1: the prompt response; v2: the `state_update` idle that ends
//! the work, never repeated for a repeated snapshot).

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use spindle_wire::tags::STATE_UPDATE;

use super::types::ClientEvent;
use crate::update_params::UpdateParams;

#[derive(Debug, Default)]
struct SessionTrack {
    /// Foreground work is under way (v2): a prompt was sent, or a non-idle
    /// state was reported, since the last reported turn end.
    active: bool,
    /// Since the last prompt was sent, the stream showed work under way: a
    /// `running`/`requires_action`/unknown state, or the prompt's acceptance.
    /// A rejected prompt then does not end the activity.
    saw_busy_state: bool,
    /// The stop reason of the last state snapshot if that was `idle`; a
    /// repeat of it is the same snapshot again, never a new turn end.
    last_idle: Option<Option<String>>,
}

/// The sessions a client knows and the state of their turns.
#[derive(Debug, Default)]
pub(super) struct SessionTracks {
    /// Keyed by the id every [`ClientEvent::SessionUpdate`] of the session
    /// shares (one allocation per session, not per update).
    sessions: HashMap<Arc<str>, SessionTrack>,
    /// `session/new` requests not answered yet: updates for a session not
    /// known yet are expected meanwhile.
    pending_new_sessions: usize,
}

impl SessionTracks {
    /// Makes `session_id` known (opened, loaded or resumed).
    pub(super) fn register(&mut self, session_id: &str) {
        self.track(session_id);
    }

    /// The track of `session_id`, made known when it was not.
    fn track(&mut self, session_id: &str) -> &mut SessionTrack {
        if !self.sessions.contains_key(session_id) {
            self.sessions
                .insert(session_id.into(), SessionTrack::default());
        }
        self.sessions
            .get_mut(session_id)
            .expect("the session was just made known")
    }

    /// A `session/new` request was sent.
    pub(super) fn new_session_sent(&mut self) {
        self.pending_new_sessions += 1;
    }

    /// A `session/new` request was answered (or never sent); `result` is its
    /// result. The session is registered before anyone sees the answer, so no
    /// update of it is diagnosed.
    pub(super) fn new_session_answered(&mut self, result: Option<&RawValue>) {
        self.pending_new_sessions = self.pending_new_sessions.saturating_sub(1);
        if let Some(session_id) = result.and_then(|r| session_id_of(r.get())) {
            self.track(&session_id);
        }
    }

    /// A prompt was sent to `session_id`: foreground work starts (v2: or
    /// goes on, when another prompt is still in flight: what was seen of
    /// that work still counts, so the new prompt's refusal cannot end it).
    pub(super) fn prompt_sent(&mut self, session_id: &str) {
        let s = self.track(session_id);
        if !s.active {
            s.saw_busy_state = false;
        }
        s.active = true;
    }

    /// The v1 prompt response ended the turn.
    pub(super) fn v1_turn_ended(&mut self, session_id: &str) {
        if let Some(s) = self.sessions.get_mut(session_id) {
            s.active = false;
        }
    }

    /// The v2 prompt response: an accepted prompt means whatever follows
    /// belongs to this work; a rejected one was never inserted, so no turn
    /// started (unless work was already seen).
    pub(super) fn v2_prompt_answered(&mut self, session_id: &str, accepted: bool) {
        if let Some(s) = self.sessions.get_mut(session_id)
            && s.active
        {
            if accepted {
                s.saw_busy_state = true;
            } else if !s.saw_busy_state {
                s.active = false;
            }
        }
    }

    /// Routes one `session/update`: the update itself, then the end of the
    /// turn when it ends one, and a diagnostic for an unknown session.
    pub(super) fn update(
        &mut self,
        params: Option<Box<RawValue>>,
        v2: bool,
        out: &mut Vec<ClientEvent>,
    ) {
        let Some(params) = params else {
            out.push(ClientEvent::Diagnostic {
                message: "session/update without params".into(),
            });
            return;
        };
        let head: UpdateHead<'_> = match quick_update_head(params.get()) {
            Some(h) => h,
            None => match serde_json::from_str(params.get()) {
                Ok(h) => h,
                Err(e) => {
                    out.push(ClientEvent::Diagnostic {
                        message: format!("session/update without a usable sessionId: {e}"),
                    });
                    return;
                }
            },
        };
        let session_id = self.shared_id(&head.session_id, out);
        let mut finished = None;
        {
            if v2
                && let Some(kind) = &head.update
                && kind.session_update.as_deref() == Some(STATE_UPDATE)
            {
                let track = self.sessions.entry(Arc::clone(&session_id)).or_default();
                let state = kind
                    .state
                    .and_then(|s| serde_json::from_str::<String>(s.get()).ok());
                match state.as_deref() {
                    Some("idle") => {
                        let stop_reason = kind
                            .stop_reason
                            .and_then(|s| serde_json::from_str::<String>(s.get()).ok())
                            .filter(|s| !s.is_empty());
                        // An idle without stopReason "ends nothing" (a
                        // snapshot, possibly older than a prompt just
                        // sent) unless a busy state was seen: then the
                        // agent ended work without saying why.
                        let repeat = track.last_idle.as_ref() == Some(&stop_reason);
                        track.last_idle = Some(stop_reason.clone());
                        if track.active
                            && (track.saw_busy_state || (stop_reason.is_some() && !repeat))
                        {
                            track.active = false;
                            track.saw_busy_state = false;
                            let error = if stop_reason.as_deref() == Some("error") {
                                kind.error.map(|e| e.to_owned())
                            } else {
                                None
                            };
                            finished = Some((stop_reason, error));
                        }
                    }
                    // running, requires_action, and unknown states are
                    // all "busy"; an unknown state is never idle.
                    _ => {
                        track.active = true;
                        track.saw_busy_state = true;
                        track.last_idle = None;
                    }
                }
            }
        }
        out.push(ClientEvent::SessionUpdate {
            session_id: Arc::clone(&session_id),
            params: UpdateParams::from_raw(params),
        });
        if let Some((stop_reason, error)) = finished {
            out.push(ClientEvent::TurnFinished {
                session_id: session_id.as_ref().into(),
                stop_reason,
                error,
            });
        }
    }
}

impl SessionTracks {
    /// Routes an update the framer scanned (a plain text chunk with a
    /// `sessionId`, or another update with a plain leading `sessionId` and
    /// no `"state_update"` in it, so it never ends a turn): as
    /// [`Self::update`] routes the same params decoded.
    pub(super) fn update_scanned(&mut self, params: UpdateParams, out: &mut Vec<ClientEvent>) {
        let session_id = match params.scanned_session_id() {
            Some(id) => self.shared_id(&id, out),
            None => {
                out.push(ClientEvent::Diagnostic {
                    message: "session/update without a usable sessionId".into(),
                });
                return;
            }
        };
        out.push(ClientEvent::SessionUpdate { session_id, params });
    }

    /// `session_id` as the events of a known session share it (a reference
    /// count, no copy); for an unknown session a new copy, after its
    /// diagnostic ([`Self::diagnose_unknown`]).
    fn shared_id(&self, session_id: &str, out: &mut Vec<ClientEvent>) -> Arc<str> {
        match self.known(session_id) {
            Some(known) => Arc::clone(known),
            None => {
                self.diagnose_unknown(session_id, out);
                session_id.into()
            }
        }
    }

    /// The key of `session_id` when it was opened, loaded, resumed or
    /// prompted. A client usually knows one session: that case compares the
    /// one key instead of hashing the id (this runs once per update).
    fn known(&self, session_id: &str) -> Option<&Arc<str>> {
        if self.sessions.len() == 1 {
            return self.sessions.keys().next().filter(|k| &***k == session_id);
        }
        self.sessions.get_key_value(session_id).map(|(k, _)| k)
    }

    /// Whether `session_id` was opened, loaded, resumed or prompted.
    fn is_known(&self, session_id: &str) -> bool {
        self.known(session_id).is_some()
    }

    /// Agents may stream updates (e.g. available commands) before answering
    /// session/new, for a session not known yet; any other unknown session
    /// is diagnosed (the update is still reported, unless the client leaves updates
    /// unreported: [`super::core::ClientCore::leave_updates_unreported`]).
    pub(super) fn diagnose_unknown(&self, session_id: &str, out: &mut Vec<ClientEvent>) {
        if self.pending_new_sessions == 0 && !self.is_known(session_id) {
            out.push(ClientEvent::Diagnostic {
                message: format!("session/update for unknown session {session_id}"),
            });
        }
    }
}

/// The fields of `session/update` params the runtime routes on.
#[derive(Deserialize)]
struct UpdateHead<'a> {
    #[serde(rename = "sessionId", borrow)]
    session_id: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    update: Option<UpdateKind<'a>>,
}

#[derive(Deserialize)]
struct UpdateKind<'a> {
    #[serde(rename = "sessionUpdate", borrow, default)]
    session_update: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    state: Option<&'a RawValue>,
    #[serde(rename = "stopReason", borrow, default)]
    stop_reason: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// The routing fields of the common case without a second full parse:
/// params (already validated JSON) that open with a plain `sessionId`
/// string and never mention `"state_update"`. Anything else returns `None`
/// and goes through the full parse.
fn quick_update_head(params: &str) -> Option<UpdateHead<'_>> {
    const PREFIX: &str = "{\"sessionId\":\"";
    let rest = params.strip_prefix(PREFIX)?;
    let end = memchr::memchr2(b'"', b'\\', rest.as_bytes())?;
    // One searcher for the process: building it costs more than the search.
    static QUOTED_STATE_UPDATE: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| {
            memchr::memmem::Finder::new(format!("\"{STATE_UPDATE}\"").as_bytes()).into_owned()
        });
    if rest.as_bytes()[end] != b'"' || QUOTED_STATE_UPDATE.find(params.as_bytes()).is_some() {
        return None;
    }
    Some(UpdateHead {
        session_id: std::borrow::Cow::Borrowed(&rest[..end]),
        update: None,
    })
}

fn session_id_of(json: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct S {
        #[serde(rename = "sessionId")]
        session_id: String,
    }
    serde_json::from_str::<S>(json).ok().map(|s| s.session_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_update_head_takes_only_the_plain_common_case() {
        let plain = r#"{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk"}}"#;
        assert_eq!(quick_update_head(plain).unwrap().session_id, "s-1");
        for slow in [
            // An escape in the id, another key order, a state update, spaces.
            r#"{"sessionId":"a\"b","update":{}}"#,
            r#"{"update":{},"sessionId":"s"}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle"}}"#,
            r#"{ "sessionId":"s","update":{}}"#,
            r#"{"sessionId":"unterminated"#,
        ] {
            assert!(quick_update_head(slow).is_none(), "{slow}");
        }
        // The slow path reads the escaped id correctly.
        let head: UpdateHead<'_> =
            serde_json::from_str(r#"{"sessionId":"a\"b","update":{}}"#).unwrap();
        assert_eq!(head.session_id, "a\"b");
    }

    /// The one-session shortcut answers as the map does, for every count.
    #[test]
    fn a_session_is_known_exactly_when_it_was_registered() {
        let cases: [(&[&str], &str, bool); 6] = [
            (&[], "s", false),
            (&["s"], "s", true),
            (&["s"], "t", false),
            (&["s"], "", false),
            (&["s", "t"], "t", true),
            (&["s", "t"], "u", false),
        ];
        for (registered, asked, known) in cases {
            let mut tracks = SessionTracks::default();
            for id in registered {
                tracks.register(id);
            }
            assert_eq!(tracks.is_known(asked), known, "{registered:?} {asked}");
        }
    }
}
