//! A transcript's replay JSON saved in pieces (migration 11; both stores share what is here): a
//! shell, the text with each list empty, in `transcripts.replay_json`; each list's items in
//! `transcript_items`, a row per item by list and position; and in `transcripts.lists` where
//! each list's items go in the shell and how many it has (`[[at, count], ...]`, `at` a byte
//! offset). The text is the shell with each list's items, joined by commas, put in at its
//! offset ([`assemble`]). A save writes the shell and only the items that changed; a row whose
//! `lists` is `NULL` holds the whole text (saved before version 11, or saved whole).

use crate::types::StoreError;

/// One save of a session's replay JSON ([`crate::Store::save_materialized`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReplaySave {
    /// The text with every list empty; the whole text when there are no lists.
    pub shell: String,
    /// The lists, each at its offset in `shell` (ascending).
    pub lists: Vec<ListSave>,
}

/// One list of a [`ReplaySave`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListSave {
    /// The byte offset in the shell where the items go (inside the list's brackets).
    pub at: usize,
    /// How many items the list has: stored items from this position on are dropped.
    pub count: usize,
    /// The items that changed since the last save that succeeded (all of them when the store
    /// may hold none), by position; the others are kept as stored.
    pub changed: Vec<(usize, String)>,
}

impl ReplaySave {
    /// A save of the whole text, without lists.
    pub fn whole(text: impl Into<String>) -> ReplaySave {
        ReplaySave {
            shell: text.into(),
            lists: Vec::new(),
        }
    }
}

/// The `lists` column of a save: `None` for a whole text.
pub(crate) fn lists_column(save: &ReplaySave) -> Option<String> {
    if save.lists.is_empty() {
        return None;
    }
    let pairs: Vec<[usize; 2]> = save.lists.iter().map(|l| [l.at, l.count]).collect();
    Some(serde_json::to_string(&pairs).expect("numbers serialize"))
}

/// Reads a `lists` column.
pub(crate) fn parse_lists(column: &str) -> Result<Vec<(usize, usize)>, StoreError> {
    let pairs: Vec<[usize; 2]> = serde_json::from_str(column)
        .map_err(|e| StoreError::Read(format!("transcripts.lists {column:?}: {e}")))?;
    Ok(pairs.into_iter().map(|[at, count]| (at, count)).collect())
}

/// The text of a shell and its lists' stored items (`rows`: list, position, JSON, in list and
/// position order): the items joined by commas at each list's offset. An item of a list the
/// shell lacks, a missing item, or an offset that is not in the shell is an error (the rows do
/// not make the text that was saved).
pub(crate) fn assemble(
    shell: &str,
    lists: &[(usize, usize)],
    rows: impl IntoIterator<Item = (i64, i64, String)>,
) -> Result<String, StoreError> {
    let broken = |what: String| StoreError::Read(format!("transcript pieces: {what}"));
    let mut items: Vec<Vec<(usize, String)>> = vec![Vec::new(); lists.len()];
    for (list, position, json) in rows {
        let slot = usize::try_from(list).ok().and_then(|l| items.get_mut(l));
        let (Some(slot), Ok(position)) = (slot, usize::try_from(position)) else {
            return Err(broken(format!(
                "an item of list {list} at {position}, which the shell lacks"
            )));
        };
        slot.push((position, json));
    }
    let size: usize = shell.len()
        + items
            .iter()
            .flatten()
            .map(|(_, j)| j.len() + 1)
            .sum::<usize>();
    let mut text = String::with_capacity(size);
    let mut from = 0;
    for ((list, &(at, count)), stored) in lists.iter().enumerate().zip(&items) {
        if at < from || !shell.is_char_boundary(at) || at > shell.len() {
            return Err(broken(format!("list {list} at {at} is not in the shell")));
        }
        text.push_str(&shell[from..at]);
        if stored.len() != count || stored.iter().enumerate().any(|(n, (p, _))| *p != n) {
            return Err(broken(format!(
                "list {list} has {} of its {count} items",
                stored.len().min(count)
            )));
        }
        for (n, (_, json)) in stored.iter().enumerate() {
            if n > 0 {
                text.push(',');
            }
            text.push_str(json);
        }
        from = at;
    }
    text.push_str(&shell[from..]);
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows of the lists given, in order.
    fn rows(lists: &[&[&str]]) -> Vec<(i64, i64, String)> {
        let mut rows = Vec::new();
        for (list, items) in (0i64..).zip(lists) {
            for (position, json) in (0i64..).zip(items.iter()) {
                rows.push((list, position, json.to_string()));
            }
        }
        rows
    }

    #[test]
    fn the_items_go_in_at_their_offsets_joined_by_commas() {
        let shell = r#"{"entries":[],"state":1,"turns":[]}"#;
        let lists = [(12, 2), (33, 1)];
        let text = assemble(shell, &lists, rows(&[&["{}", "[1]"], &["2"]])).unwrap();
        assert_eq!(text, r#"{"entries":[{},[1]],"state":1,"turns":[2]}"#);
        let empty = assemble(shell, &[(12, 0), (33, 0)], []).unwrap();
        assert_eq!(empty, shell);
        assert_eq!(assemble("{}", &[], []).unwrap(), "{}");
    }

    #[test]
    fn missing_items_and_offsets_outside_the_shell_are_errors() {
        let shell = r#"{"entries":[]}"#;
        assert!(assemble(shell, &[(12, 2)], rows(&[&["1"]])).is_err());
        let gap = vec![(0, 0, "1".to_string()), (0, 2, "3".to_string())];
        assert!(assemble(shell, &[(12, 2)], gap).is_err());
        // An item of a list the shell does not have.
        assert!(assemble(shell, &[(12, 1)], rows(&[&["1"], &["2"]])).is_err());
        assert!(assemble(shell, &[(99, 0)], []).is_err());
        assert!(assemble(shell, &[(12, 0), (5, 0)], []).is_err());
    }

    #[test]
    fn the_lists_column_round_trips() {
        let save = ReplaySave {
            shell: "{}".into(),
            lists: vec![
                ListSave {
                    at: 1,
                    count: 3,
                    changed: vec![],
                },
                ListSave {
                    at: 1,
                    count: 0,
                    changed: vec![],
                },
            ],
        };
        let column = lists_column(&save).unwrap();
        assert_eq!(column, "[[1,3],[1,0]]");
        assert_eq!(parse_lists(&column).unwrap(), vec![(1, 3), (1, 0)]);
        assert_eq!(lists_column(&ReplaySave::whole("{}")), None);
        assert!(parse_lists("nonsense").is_err());
    }
}
