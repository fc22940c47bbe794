//! A terminal's output: the retained tail ([`OutputBuffer`], cut from the
//! start at a character boundary) and the live text decoded across reads
//! ([`Utf8Stream`]).

/// The last `limit` bytes of a byte stream, cut from the start at a UTF-8
/// character boundary (so the kept text may be a few bytes under the limit).
#[derive(Debug, Clone)]
pub struct OutputBuffer {
    limit: usize,
    bytes: Vec<u8>,
    /// Bytes before this offset are dropped (compacted lazily, so a stream
    /// of small reads does not move the whole buffer on each).
    start: usize,
    truncated: bool,
}

impl OutputBuffer {
    /// An empty buffer keeping at most `limit` bytes.
    pub fn new(limit: usize) -> OutputBuffer {
        OutputBuffer {
            limit,
            bytes: Vec::new(),
            start: 0,
            truncated: false,
        }
    }

    /// Appends bytes, dropping from the start what is over the limit.
    pub fn push(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        if data.len() > self.limit {
            // Only the tail of `data` can stay.
            self.truncated = true;
            self.bytes.clear();
            self.start = 0;
            let tail = &data[data.len() - self.limit..];
            let skip = continuation_prefix(tail);
            self.bytes.extend_from_slice(&tail[skip..]);
            return;
        }
        self.bytes.extend_from_slice(data);
        let kept = self.bytes.len() - self.start;
        if kept > self.limit {
            self.truncated = true;
            let mut cut = self.bytes.len() - self.limit;
            cut += continuation_prefix(&self.bytes[cut..]);
            self.start = cut;
        }
        if self.start > self.limit.max(64 * 1024) {
            self.bytes.drain(..self.start);
            self.start = 0;
        }
    }

    /// Bytes were dropped from the start.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// The kept bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[self.start..]
    }

    /// The kept output as text: invalid bytes become U+FFFD; an incomplete
    /// character at the very end (the rest of it not read yet) is left out.
    pub fn text(&self) -> String {
        let bytes = self.bytes();
        let end = bytes.len() - incomplete_suffix(bytes);
        String::from_utf8_lossy(&bytes[..end]).into_owned()
    }
}

/// How many UTF-8 continuation bytes (`10xxxxxx`) `bytes` starts with (at
/// most 3: past that they are invalid anyway and kept for the lossy decode).
fn continuation_prefix(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|&&b| b & 0xC0 == 0x80)
        .count()
}

/// The length of a character started at the end of `bytes` but not finished.
fn incomplete_suffix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => 0,
        Err(e) if e.error_len().is_none() => bytes.len() - e.valid_up_to(),
        Err(_) => {
            // Invalid bytes somewhere; look only at the last three.
            let from = bytes.len().saturating_sub(3);
            for i in from..bytes.len() {
                if let Err(e) = std::str::from_utf8(&bytes[i..])
                    && e.error_len().is_none()
                    && e.valid_up_to() == 0
                {
                    return bytes.len() - i;
                }
            }
            0
        }
    }
}

/// Decodes a byte stream as UTF-8 text across reads: a character split
/// between two reads comes out whole with the second; invalid bytes become
/// U+FFFD.
#[derive(Debug, Clone, Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// The text `data` completes (possibly empty).
    pub fn push(&mut self, data: &[u8]) -> String {
        self.pending.extend_from_slice(data);
        let keep = incomplete_suffix(&self.pending);
        let end = self.pending.len() - keep;
        let text = String::from_utf8_lossy(&self.pending[..end]).into_owned();
        self.pending.drain(..end);
        text
    }

    /// The end of the stream: an unfinished character becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_the_tail_at_a_character_boundary() {
        // "é" is two bytes, "€" three.
        let cases: &[(usize, &[&str], &str, bool)] = &[
            (10, &["abc"], "abc", false),
            (4, &["abcdef"], "cdef", true),
            (4, &["ab", "cd", "ef"], "cdef", true),
            (3, &["aé€"], "€", true),
            (4, &["aé€"], "€", true),
            (5, &["aé€"], "é€", true),
            (2, &["€"], "", true),
            (0, &["x"], "", true),
            (6, &["€€", "€"], "€€", true),
        ];
        for (limit, pushes, want, truncated) in cases {
            let mut b = OutputBuffer::new(*limit);
            for p in *pushes {
                b.push(p.as_bytes());
            }
            assert_eq!(b.text(), *want, "limit {limit}, {pushes:?}");
            assert_eq!(b.truncated(), *truncated, "limit {limit}, {pushes:?}");
            assert!(b.bytes().len() <= *limit);
        }
    }

    #[test]
    fn many_small_pushes_stay_within_the_limit() {
        let mut b = OutputBuffer::new(100);
        for i in 0..100_000 {
            b.push(format!("{i}é\n").as_bytes());
        }
        assert!(b.bytes().len() <= 100);
        assert!(b.text().ends_with("99999é\n"));
        assert!(std::str::from_utf8(b.bytes()).is_ok());
    }

    #[test]
    fn a_character_split_across_reads_is_decoded_whole() {
        let bytes = "a€b😀".as_bytes();
        for split in 0..=bytes.len() {
            let mut s = Utf8Stream::default();
            let mut text = s.push(&bytes[..split]);
            text += &s.push(&bytes[split..]);
            text += &s.finish();
            assert_eq!(text, "a€b😀", "split at {split}");
        }
        let mut s = Utf8Stream::default();
        assert_eq!(s.push(b"\xff\xe2\x82"), "\u{fffd}");
        assert_eq!(s.finish(), "\u{fffd}");
    }

    #[test]
    fn an_unfinished_character_at_the_end_is_left_out_of_the_text() {
        let mut b = OutputBuffer::new(100);
        b.push(b"ok \xe2\x82");
        assert_eq!(b.text(), "ok ");
        b.push(b"\xac");
        assert_eq!(b.text(), "ok €");
    }
}
