//! The `text/event-stream` format read from bytes as they arrive (sans-I/O): lines end with
//! LF, CR LF or CR; `data:` lines make up an event's data (joined by LF), `id:` sets the last
//! event id (kept for later events, as EventSource does), comments and other fields are
//! ignored, a blank line ends the event. An event without data is not reported.

/// One event: the last event id the stream set (empty when none) and its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseMessage {
    pub id: String,
    pub data: String,
}

/// The reader's state between chunks.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// The start of a line whose end has not arrived.
    partial: Vec<u8>,
    /// The data of the event being read, each line followed by LF.
    data: Vec<u8>,
    has_data: bool,
    last_id: String,
    /// The last chunk ended with CR: a LF starting the next one belongs to it.
    after_cr: bool,
    /// The stream's first bytes were seen (a byte order mark there is skipped).
    started: bool,
}

impl SseParser {
    /// Reads `bytes`, appending the events they complete to `out`. Fails on data or an id
    /// that is not UTF-8.
    pub(crate) fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseMessage>) -> Result<(), String> {
        let mut rest = bytes;
        if !self.started && !rest.is_empty() {
            self.partial.extend_from_slice(rest);
            if self.partial.len() < 3 && b"\xEF\xBB\xBF".starts_with(&self.partial) {
                return Ok(());
            }
            self.started = true;
            let mut pending = std::mem::take(&mut self.partial);
            if pending.starts_with(b"\xEF\xBB\xBF") {
                pending.drain(..3);
            }
            let result = self.feed(&pending, out);
            return result;
        }
        if self.after_cr {
            self.after_cr = false;
            if rest.first() == Some(&b'\n') {
                rest = &rest[1..];
            }
        }
        while let Some(n) = memchr::memchr2(b'\n', b'\r', rest) {
            if self.partial.is_empty() {
                self.line(&rest[..n], out)?;
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..n]);
                self.line(&line, out)?;
                line.clear();
                self.partial = line;
            }
            let cr = rest[n] == b'\r';
            rest = &rest[n + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseMessage>) -> Result<(), String> {
        if line.is_empty() {
            if std::mem::take(&mut self.has_data) {
                let mut data = std::mem::take(&mut self.data);
                data.pop();
                let data = String::from_utf8(data)
                    .map_err(|_| "an event's data is not UTF-8".to_owned())?;
                out.push(SseMessage {
                    id: self.last_id.clone(),
                    data,
                });
            }
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
                self.has_data = true;
            }
            b"id" if !value.contains(&0) => {
                self.last_id = String::from_utf8(value.to_vec())
                    .map_err(|_| "an event id is not UTF-8".to_owned())?;
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str, data: &str) -> SseMessage {
        SseMessage {
            id: id.to_owned(),
            data: data.to_owned(),
        }
    }

    const STREAM: &[u8] = b"\xEF\xBB\xBF: keepalive\n\nid: 1-1\ndata: {\"a\":1}\n\n\
        data: x\r\ndata:y\r\rid: 1-2\n: id\n\nevent: e\nretry: 5\ndata\ndata: z\n\nid: 1-3\0\ndata: w\n\n\
        data: no end";

    #[test]
    fn events_are_read_whole_whatever_the_chunks() {
        let expected = vec![
            message("1-1", "{\"a\":1}"),
            message("1-1", "x\ny"),
            message("1-2", "\nz"),
            message("1-2", "w"),
        ];
        // Every split into two chunks, and byte by byte.
        for split in 0..=STREAM.len() {
            let mut parser = SseParser::default();
            let mut out = Vec::new();
            parser.feed(&STREAM[..split], &mut out).unwrap();
            parser.feed(&STREAM[split..], &mut out).unwrap();
            assert_eq!(out, expected, "split at {split}");
        }
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        for byte in STREAM {
            parser.feed(std::slice::from_ref(byte), &mut out).unwrap();
        }
        assert_eq!(out, expected);
    }

    #[test]
    fn data_that_is_not_utf8_fails() {
        let mut out = Vec::new();
        let result = SseParser::default().feed(b"data: \xff\n\n", &mut out);
        assert!(result.is_err());
        assert!(out.is_empty());
    }
}
