//! One item of a session's ACP hub: a message every client gets as it is (an update, or a
//! control envelope that each client's stream turns into what that client may see), or
//! messages that differ by protocol version and may skip the connection that sent a prompt.

use std::sync::Arc;

use crate::hub::HubItem;

/// One item of a session's ACP hub (one event id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AcpItem {
    /// One message for every client (see `streams.rs` for the control envelopes).
    Message(Arc<str>),
    /// What clients of each protocol version get of one logged line (maybe nothing).
    Versions(Arc<VersionParts>),
}

/// The messages of one item by protocol version.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct VersionParts {
    /// The connection that sent the prompt this item shows: its v1 client does not get the
    /// v1 part (it shows its prompt already).
    pub(crate) skip: Option<Arc<str>>,
    /// For v1 clients.
    pub(crate) v1: Vec<String>,
    /// For v2 clients.
    pub(crate) v2: Vec<String>,
}

impl VersionParts {
    /// What a client of `version` on `connection` gets.
    pub(crate) fn part_for(&self, version: u16, connection: &str) -> &[String] {
        if version >= 2 {
            &self.v2
        } else if self.skip.as_deref() == Some(connection) {
            &[]
        } else {
            &self.v1
        }
    }
}

impl AcpItem {
    /// The item for clients of both versions: one message when both get the same one and
    /// nobody is skipped; `None` when nobody gets anything.
    pub(crate) fn for_versions(parts: VersionParts) -> Option<AcpItem> {
        if parts.v1.is_empty() && parts.v2.is_empty() {
            return None;
        }
        if parts.skip.is_none() && parts.v1.len() == 1 && parts.v1 == parts.v2 {
            return Some(AcpItem::Message(Arc::from(parts.v1[0].as_str())));
        }
        Some(AcpItem::Versions(Arc::new(parts)))
    }
}

impl HubItem for AcpItem {
    fn size(&self) -> usize {
        match self {
            AcpItem::Message(text) => text.len(),
            AcpItem::Versions(parts) => {
                parts.skip.as_deref().map_or(0, str::len)
                    + parts
                        .v1
                        .iter()
                        .chain(&parts.v2)
                        .map(String::len)
                        .sum::<usize>()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_version_gets_its_part_and_the_sender_is_skipped() {
        let parts = VersionParts {
            skip: Some(Arc::from("c1")),
            v1: vec!["a".into(), "b".into()],
            v2: vec!["x".into()],
        };
        assert_eq!(parts.part_for(1, "c2"), ["a", "b"]);
        assert!(parts.part_for(1, "c1").is_empty());
        assert_eq!(parts.part_for(2, "c1"), ["x"]);
        let item = AcpItem::for_versions(parts).unwrap();
        assert_eq!(item.size(), 2 + 1 + 1 + 1);
        // The same single message for both and nobody skipped: one plain message.
        let same = VersionParts {
            skip: None,
            v1: vec!["m".into()],
            v2: vec!["m".into()],
        };
        assert_eq!(
            AcpItem::for_versions(same),
            Some(AcpItem::Message(Arc::from("m")))
        );
        assert_eq!(AcpItem::for_versions(VersionParts::default()), None);
    }
}
