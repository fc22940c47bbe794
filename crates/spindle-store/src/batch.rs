//! The wire log as batches, as both stores keep it: each appended batch is one row holding its
//! lines back to back (`lines`), their byte lengths (`lengths`) and one letter per line for its
//! direction (`directions`), keyed by the session and the `seq` of its first line. PostgreSQL
//! writes new lines this way since migration 9, SQLite since migration 10; lines written before
//! stay in `wire_log`, a row each, and are read with the batches.
//!
//! What the stores share lives here: the letters, the encoding, reading a row's lines back, and
//! the check of a batch that met `seq`s already taken (a retry of a commit whose answer was
//! lost). The SQL of each store is in `postgres/wire_batches.rs` and `sqlite/wire_batches.rs`.

use std::ops::Range;

use crate::types::{Direction, LoggedLine, PageRow, StoreError, WireWindow};

/// The letter a direction is stored as in `directions`.
pub(crate) fn letter(direction: Direction) -> u8 {
    match direction {
        Direction::Agent => b'a',
        Direction::Client => b'c',
        Direction::AgentReplay => b'r',
        Direction::Server => b's',
        Direction::Local => b'l',
    }
}

/// The direction of a stored letter; `None` for one a newer version wrote.
pub(crate) fn direction_of(letter: u8) -> Option<Direction> {
    [
        Direction::Agent,
        Direction::Client,
        Direction::AgentReplay,
        Direction::Server,
        Direction::Local,
    ]
    .into_iter()
    .find(|d| self::letter(*d) == letter)
}

/// A batch as its row keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EncodedBatch {
    pub(crate) directions: String,
    pub(crate) lengths: Vec<i32>,
    pub(crate) lines: Vec<u8>,
}

impl EncodedBatch {
    /// Encodes `lines`; fails for a line longer than a row can say (2 GiB).
    pub(crate) fn encode(lines: &[(Direction, &str)]) -> Result<EncodedBatch, StoreError> {
        let total = lines.iter().map(|(_, l)| l.len()).sum();
        let mut batch = EncodedBatch {
            directions: String::with_capacity(lines.len()),
            lengths: Vec::with_capacity(lines.len()),
            lines: Vec::with_capacity(total),
        };
        for (direction, line) in lines {
            let length = i32::try_from(line.len()).map_err(|_| {
                StoreError::Write(format!("a line of {} bytes is too long to log", line.len()))
            })?;
            batch.directions.push(char::from(letter(*direction)));
            batch.lengths.push(length);
            batch.lines.extend_from_slice(line.as_bytes());
        }
        Ok(batch)
    }

    /// The number of lines.
    pub(crate) fn len(&self) -> usize {
        self.lengths.len()
    }

    /// The `seq` of the last line of the batch when its first is `first_seq`.
    pub(crate) fn last_seq(&self, first_seq: i64) -> i64 {
        first_seq.saturating_add(i64::try_from(self.len()).unwrap_or(i64::MAX) - 1)
    }

    /// The lengths as SQLite keeps them: 4 bytes each, little-endian.
    pub(crate) fn lengths_le(&self) -> Vec<u8> {
        self.lengths.iter().flat_map(|l| l.to_le_bytes()).collect()
    }

    /// The lines of `range` (indexes into the batch) as their own batch.
    pub(crate) fn slice(&self, range: Range<usize>) -> EncodedBatch {
        let start: usize = self.lengths[..range.start]
            .iter()
            .map(|&l| l as usize)
            .sum();
        let end = start
            + self.lengths[range.clone()]
                .iter()
                .map(|&l| l as usize)
                .sum::<usize>();
        EncodedBatch {
            directions: self.directions[range.clone()].to_owned(),
            lengths: self.lengths[range].to_vec(),
            lines: self.lines[start..end].to_vec(),
        }
    }

    /// Each line's letter and bytes, in order.
    pub(crate) fn lines(&self) -> impl Iterator<Item = (u8, &[u8])> {
        let mut offset = 0;
        self.directions
            .bytes()
            .zip(&self.lengths)
            .map(move |(letter, &length)| {
                let line = &self.lines[offset..offset + length as usize];
                offset += length as usize;
                (letter, line)
            })
    }
}

/// The lengths of a SQLite row (see [`EncodedBatch::lengths_le`]); a trailing partial length is
/// left out.
pub(crate) fn lengths_from_le(bytes: &[u8]) -> impl Iterator<Item = i32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// One line of a stored batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchLine<'a> {
    pub(crate) seq: i64,
    /// The stored letter (see [`direction_of`]).
    pub(crate) letter: u8,
    pub(crate) at: i64,
    pub(crate) line: &'a [u8],
}

/// The lines of a stored batch: its first line's `seq`, its time and its three columns. A row
/// whose lengths run past its bytes (the tables' checks rule out every other mismatch) yields
/// the lines that fit.
pub(crate) fn stored_lines<'a>(
    first_seq: i64,
    at: i64,
    directions: &'a [u8],
    lengths: impl IntoIterator<Item = i32> + 'a,
    bytes: &'a [u8],
) -> impl Iterator<Item = BatchLine<'a>> + 'a {
    let mut offset = 0usize;
    directions
        .iter()
        .zip(lengths)
        .enumerate()
        .map_while(move |(index, (&letter, length))| {
            let end = offset.checked_add(usize::try_from(length).ok()?)?;
            let line = bytes.get(offset..end)?;
            offset = end;
            Some(BatchLine {
                seq: first_seq.saturating_add(i64::try_from(index).ok()?),
                letter,
                at,
                line,
            })
        })
}

/// The check of a batch that met `seq`s already taken: every line already there must be the
/// batch's own (a retry whose first answer was lost); the lines not there yet are then added.
/// Feed it every stored line in the batch's range ([`RetryCheck::stored`]), then ask what to add
/// ([`RetryCheck::missing_runs`]).
#[derive(Debug)]
pub(crate) struct RetryCheck<'a> {
    first_seq: i64,
    ours: Vec<(u8, &'a [u8])>,
    taken: Vec<bool>,
    differs: bool,
}

impl<'a> RetryCheck<'a> {
    /// The check of `batch` appended at `first_seq`.
    pub(crate) fn new(batch: &'a EncodedBatch, first_seq: i64) -> RetryCheck<'a> {
        RetryCheck {
            first_seq,
            ours: batch.lines().collect(),
            taken: vec![false; batch.len()],
            differs: false,
        }
    }

    /// A stored line: its `seq`, its letter (`None`: a direction no letter stands for) and its
    /// bytes. Lines outside the batch's range are ignored.
    pub(crate) fn stored(&mut self, seq: i64, letter: Option<u8>, line: &[u8]) {
        let Some(index) = seq
            .checked_sub(self.first_seq)
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < self.ours.len())
        else {
            return;
        };
        self.taken[index] = true;
        self.differs |= letter != Some(self.ours[index].0) || line != self.ours[index].1;
    }

    /// The runs of the batch's lines not stored yet (indexes into the batch), or the error for a
    /// `seq` that holds another line (the whole batch then fails).
    pub(crate) fn missing_runs(self, session: i64) -> Result<Vec<Range<usize>>, StoreError> {
        if self.differs {
            let last = self
                .first_seq
                .saturating_add(i64::try_from(self.ours.len()).unwrap_or(i64::MAX));
            return Err(StoreError::Write(format!(
                "session {session} already holds a different line at a seq in {}..{last}",
                self.first_seq
            )));
        }
        let mut runs = Vec::new();
        let mut index = 0;
        while index < self.taken.len() {
            if self.taken[index] {
                index += 1;
                continue;
            }
            let start = index;
            while index < self.taken.len() && !self.taken[index] {
                index += 1;
            }
            runs.push(start..index);
        }
        Ok(runs)
    }
}

/// A stored line's bytes as text (lossy: the stores write only UTF-8).
pub(crate) fn text_from(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The lines of a stored batch with `seq > after`, added to `out`; a letter no direction stands
/// for is counted in `skipped` instead (`Store::lines_after`).
pub(crate) fn lines_after_into<'a>(
    lines: impl Iterator<Item = BatchLine<'a>>,
    after: i64,
    out: &mut Vec<LoggedLine>,
    skipped: &mut usize,
) {
    for line in lines.filter(|l| l.seq > after) {
        match direction_of(line.letter) {
            Some(direction) => out.push(LoggedLine {
                seq: line.seq,
                direction,
                at: line.at,
                line: text_from(line.line),
            }),
            None => *skipped += 1,
        }
    }
}

/// The server's notes with `seq > after` among a stored batch's lines (`Store::server_notes_after`).
pub(crate) fn server_notes_after<'a>(
    lines: impl Iterator<Item = BatchLine<'a>>,
    after: i64,
) -> impl Iterator<Item = LoggedLine> {
    let server = letter(Direction::Server);
    lines
        .filter(move |l| l.seq > after && l.letter == server)
        .map(|l| LoggedLine {
            seq: l.seq,
            direction: Direction::Server,
            at: l.at,
            line: text_from(l.line),
        })
}

/// A stored batch's lines inside `window` as page rows, in the window's order (newest first for
/// `Before`), added to `rows`. A letter no direction stands for becomes the direction `letter X`,
/// which the page leaves out and counts (`WirePage::from_rows`).
pub(crate) fn window_rows_into<'a>(
    lines: impl Iterator<Item = BatchLine<'a>>,
    window: WireWindow,
    rows: &mut Vec<PageRow>,
) {
    let lines = lines.map(|line| {
        let direction = match direction_of(line.letter) {
            Some(direction) => direction.as_str().to_owned(),
            None => format!("letter {}", char::from(line.letter)),
        };
        (line.seq, direction, line.at, text_from(line.line))
    });
    match window {
        WireWindow::After(seq) => rows.extend(lines.filter(|l| l.0 > seq)),
        WireWindow::Before(seq) => {
            let start = rows.len();
            rows.extend(lines.filter(|l| l.0 < seq));
            rows[start..].reverse();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_direction_has_its_own_letter_and_reads_back() {
        let all = [
            Direction::Agent,
            Direction::Client,
            Direction::AgentReplay,
            Direction::Server,
            Direction::Local,
        ];
        let mut letters: Vec<u8> = all.iter().map(|d| letter(*d)).collect();
        for direction in all {
            assert_eq!(direction_of(letter(direction)), Some(direction));
        }
        letters.sort_unstable();
        letters.dedup();
        assert_eq!(letters.len(), all.len());
        assert_eq!(direction_of(b'?'), None);
    }

    #[test]
    fn a_batch_encodes_its_lines_back_to_back_and_slices_any_run() {
        let lines = [
            (Direction::Client, "{\"p\":1}"),
            (Direction::Agent, ""),
            (Direction::Server, "caf\u{e9}\n"),
            (Direction::Local, "x"),
        ];
        let batch = EncodedBatch::encode(&lines).unwrap();
        assert_eq!(batch.directions, "casl");
        assert_eq!(batch.lengths, vec![7, 0, 6, 1]);
        assert_eq!(batch.last_seq(10), 13);
        let decoded: Vec<(u8, &[u8])> = batch.lines().collect();
        let expected: Vec<(u8, &[u8])> = lines
            .iter()
            .map(|(d, l)| (letter(*d), l.as_bytes()))
            .collect();
        assert_eq!(decoded, expected);
        for start in 0..=lines.len() {
            for end in start..=lines.len() {
                let run = batch.slice(start..end);
                assert_eq!(run, EncodedBatch::encode(&lines[start..end]).unwrap());
            }
        }
        let le = batch.lengths_le();
        assert_eq!(le.len(), 16);
        assert_eq!(lengths_from_le(&le).collect::<Vec<_>>(), batch.lengths);
        let stored: Vec<(i64, u8, &[u8])> = stored_lines(
            10,
            5,
            batch.directions.as_bytes(),
            lengths_from_le(&le),
            &batch.lines,
        )
        .map(|l| (l.seq, l.letter, l.line))
        .collect();
        let expected: Vec<(i64, u8, &[u8])> = (10..)
            .zip(batch.lines())
            .map(|(seq, (letter, line))| (seq, letter, line))
            .collect();
        assert_eq!(stored, expected);
    }

    #[test]
    fn a_row_whose_lengths_run_past_its_bytes_yields_the_lines_that_fit() {
        let lines: Vec<&[u8]> = stored_lines(1, 0, b"aaa", [2, 3, 4], b"xxyyyz")
            .map(|l| l.line)
            .collect();
        assert_eq!(lines, vec![&b"xx"[..], b"yyy"]);
        assert_eq!(stored_lines(1, 0, b"a", [-1], b"x").count(), 0);
    }

    #[test]
    fn a_retry_adds_the_runs_not_stored_and_fails_on_a_different_line() {
        let lines = [
            (Direction::Agent, "1"),
            (Direction::Agent, "2"),
            (Direction::Client, "3"),
            (Direction::Agent, "4"),
            (Direction::Agent, "5"),
        ];
        let batch = EncodedBatch::encode(&lines).unwrap();
        let mut check = RetryCheck::new(&batch, 7);
        check.stored(6, Some(b'a'), b"other"); // before the batch: ignored
        check.stored(8, Some(b'a'), b"2");
        check.stored(9, Some(b'c'), b"3");
        check.stored(12, Some(b'a'), b"other"); // after it
        assert_eq!(check.missing_runs(1).unwrap(), vec![0..1, 3..5]);

        let mut all = RetryCheck::new(&batch, 7);
        for (seq, (direction, line)) in (7..).zip(lines) {
            all.stored(seq, Some(letter(direction)), line.as_bytes());
        }
        assert_eq!(all.missing_runs(1).unwrap(), Vec::<Range<usize>>::new());

        for (letter, line) in [(Some(b'a'), &b"x"[..]), (Some(b'c'), b"2"), (None, b"2")] {
            let mut check = RetryCheck::new(&batch, 7);
            check.stored(8, letter, line);
            let error = check.missing_runs(1).unwrap_err();
            assert!(error.to_string().contains("different line"), "{error}");
        }
    }
}
