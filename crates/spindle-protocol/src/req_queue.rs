//! Pending-request bookkeeping for both directions. No I/O: the caller sends
//! the messages this module builds.

use std::collections::{HashMap, HashSet};

use serde_json::json;
use spindle_wire::client_methods::CANCEL_REQUEST;

use crate::jsonrpc::{Message, RequestId};

/// Why a response could not be matched to an outgoing request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseMismatch {
    /// The id was never allocated by this queue.
    Unknown(RequestId),
    /// The id was allocated and has already been answered.
    Duplicate(RequestId),
}

impl std::fmt::Display for ResponseMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResponseMismatch::Unknown(id) => write!(f, "response for unknown request id {id}"),
            ResponseMismatch::Duplicate(id) => {
                write!(
                    f,
                    "duplicate response for request id {id} (already answered)"
                )
            }
        }
    }
}

/// One outgoing request still waiting for its response.
#[derive(Debug)]
pub struct Pending<O> {
    /// The method of the request.
    pub method: String,
    /// Whether `$/cancel_request` was sent for it.
    pub cancelled: bool,
    /// Caller data.
    pub data: O,
}

/// Tracks requests we sent (`O` = caller data per request) and requests the
/// peer sent us (`I` = caller data per request).
#[derive(Debug)]
pub struct ReqQueue<O, I> {
    next_id: i64,
    /// When set, ids are the strings `{prefix}{n}` instead of the numbers `n`.
    id_prefix: Option<String>,
    outgoing: HashMap<RequestId, Pending<O>>,
    incoming: HashMap<RequestId, I>,
    /// Incoming ids already answered; used to diagnose repeated ids.
    answered_incoming: HashSet<RequestId>,
}

impl<O, I> Default for ReqQueue<O, I> {
    fn default() -> Self {
        ReqQueue {
            next_id: 0,
            id_prefix: None,
            outgoing: HashMap::new(),
            incoming: HashMap::new(),
            answered_incoming: HashSet::new(),
        }
    }
}

impl<O, I> ReqQueue<O, I> {
    /// A queue whose ids are the strings `{prefix}0`, `{prefix}1`, ...: for a
    /// client whose ids must stay unique across runs (a log replayed later
    /// must not mistake one run's response for another's request).
    pub fn with_id_prefix(prefix: impl Into<String>) -> Self {
        ReqQueue {
            id_prefix: Some(prefix.into()),
            ..ReqQueue::default()
        }
    }

    /// Allocates an id for a new outgoing request and records it.
    pub fn register_outgoing(&mut self, method: &str, data: O) -> RequestId {
        let id = match &self.id_prefix {
            None => RequestId::Number(self.next_id),
            Some(prefix) => RequestId::String(format!("{prefix}{}", self.next_id)),
        };
        self.next_id += 1;
        self.outgoing.insert(
            id.clone(),
            Pending {
                method: method.to_owned(),
                cancelled: false,
                data,
            },
        );
        id
    }

    /// Matches a response to its request and forgets the request.
    pub fn complete_outgoing(&mut self, id: &RequestId) -> Result<Pending<O>, ResponseMismatch> {
        if let Some(p) = self.outgoing.remove(id) {
            return Ok(p);
        }
        let allocated = match (id, &self.id_prefix) {
            (RequestId::Number(n), None) => Some(*n),
            (RequestId::String(s), Some(prefix)) => s
                .strip_prefix(prefix.as_str())
                .and_then(|n| n.parse::<i64>().ok()),
            _ => None,
        };
        match allocated {
            Some(n) if n >= 0 && n < self.next_id => Err(ResponseMismatch::Duplicate(id.clone())),
            _ => Err(ResponseMismatch::Unknown(id.clone())),
        }
    }

    /// Every pending outgoing request, in no particular order.
    pub fn outgoing_iter(&self) -> impl Iterator<Item = (&RequestId, &Pending<O>)> {
        self.outgoing.iter()
    }

    /// Marks an outgoing request cancelled and returns the `$/cancel_request`
    /// notification to send. The request stays pending: the peer still
    /// answers it (usually with error -32800).
    pub fn cancel_outgoing(&mut self, id: &RequestId) -> Option<Message> {
        let p = self.outgoing.get_mut(id)?;
        if p.cancelled {
            return None;
        }
        p.cancelled = true;
        Message::notification(CANCEL_REQUEST, &json!({ "requestId": id })).ok()
    }

    /// The pending outgoing request with this id.
    pub fn outgoing(&self, id: &RequestId) -> Option<&Pending<O>> {
        self.outgoing.get(id)
    }

    /// Removes and returns every pending outgoing request (connection lost).
    pub fn drain_outgoing(&mut self) -> Vec<(RequestId, Pending<O>)> {
        self.outgoing.drain().collect()
    }

    /// Number of outgoing requests waiting for a response.
    pub fn outgoing_len(&self) -> usize {
        self.outgoing.len()
    }

    /// Records a request from the peer. Returns `false` (and records
    /// nothing) when the id is already pending or was already answered.
    pub fn register_incoming(&mut self, id: RequestId, data: I) -> bool {
        if self.incoming.contains_key(&id) || self.answered_incoming.contains(&id) {
            return false;
        }
        self.incoming.insert(id, data);
        true
    }

    /// Forgets an incoming request because we are answering it now. Returns
    /// its data, or `None` when it is not pending (unknown or already
    /// answered).
    pub fn complete_incoming(&mut self, id: &RequestId) -> Option<I> {
        let data = self.incoming.remove(id)?;
        self.answered_incoming.insert(id.clone());
        Some(data)
    }

    /// The pending incoming request with this id.
    pub fn incoming(&self, id: &RequestId) -> Option<&I> {
        self.incoming.get(id)
    }

    /// Ids of pending incoming requests whose data matches `pred`.
    pub fn incoming_matching(&self, mut pred: impl FnMut(&I) -> bool) -> Vec<RequestId> {
        let mut ids: Vec<RequestId> = self
            .incoming
            .iter()
            .filter(|(_, d)| pred(d))
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_allocated_and_matched() {
        let mut q: ReqQueue<&str, ()> = ReqQueue::default();
        let a = q.register_outgoing("initialize", "a");
        let b = q.register_outgoing("session/new", "b");
        assert_ne!(a, b);
        assert_eq!(q.outgoing_len(), 2);
        let p = q.complete_outgoing(&b).unwrap();
        assert_eq!((p.method.as_str(), p.data), ("session/new", "b"));
        assert_eq!(
            q.complete_outgoing(&b).unwrap_err(),
            ResponseMismatch::Duplicate(b.clone())
        );
        assert_eq!(
            q.complete_outgoing(&RequestId::Number(99)).unwrap_err(),
            ResponseMismatch::Unknown(RequestId::Number(99))
        );
        assert_eq!(
            q.complete_outgoing(&RequestId::String("0".into()))
                .unwrap_err(),
            ResponseMismatch::Unknown(RequestId::String("0".into()))
        );
        assert_eq!(q.complete_outgoing(&a).unwrap().data, "a");
        assert_eq!(q.outgoing_len(), 0);
    }

    #[test]
    fn prefixed_ids_are_strings_and_duplicates_are_told_apart() {
        let mut q: ReqQueue<(), ()> = ReqQueue::with_id_prefix("w7-");
        let a = q.register_outgoing("initialize", ());
        assert_eq!(a, RequestId::String("w7-0".into()));
        assert!(q.complete_outgoing(&a).is_ok());
        assert_eq!(
            q.complete_outgoing(&a).unwrap_err(),
            ResponseMismatch::Duplicate(a.clone())
        );
        for unknown in [
            RequestId::String("w7-5".into()),
            RequestId::String("w6-0".into()),
            RequestId::Number(0),
        ] {
            assert_eq!(
                q.complete_outgoing(&unknown).unwrap_err(),
                ResponseMismatch::Unknown(unknown.clone())
            );
        }
    }

    #[test]
    fn cancel_builds_cancel_request_once_and_keeps_pending() {
        let mut q: ReqQueue<(), ()> = ReqQueue::default();
        let id = q.register_outgoing("session/prompt", ());
        let msg = q.cancel_outgoing(&id).expect("first cancel");
        assert_eq!(
            msg.to_json(),
            r#"{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}"#
        );
        assert!(q.cancel_outgoing(&id).is_none());
        assert!(q.outgoing(&id).unwrap().cancelled);
        assert!(q.cancel_outgoing(&RequestId::Number(5)).is_none());
        assert!(q.complete_outgoing(&id).is_ok());
    }

    #[test]
    fn incoming_requests_are_answered_once() {
        let mut q: ReqQueue<(), &str> = ReqQueue::default();
        assert!(q.register_incoming(RequestId::String("p1".into()), "s1"));
        assert!(q.register_incoming(RequestId::Number(1), "s2"));
        assert!(!q.register_incoming(RequestId::Number(1), "again"));
        assert_eq!(
            q.incoming_matching(|s| *s == "s1"),
            vec![RequestId::String("p1".into())]
        );
        assert_eq!(q.complete_incoming(&RequestId::Number(1)), Some("s2"));
        assert_eq!(q.complete_incoming(&RequestId::Number(1)), None);
        assert!(!q.register_incoming(RequestId::Number(1), "reused"));
    }
}
