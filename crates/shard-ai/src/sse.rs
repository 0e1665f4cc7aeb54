//! An incremental Server-Sent Events parser (WHATWG "event stream" interpretation).
//!
//! Bytes arrive in arbitrary chunks from the network: a line, a CRLF pair or a UTF-8
//! sequence may be split across two chunks, so the parser buffers raw bytes until a
//! line is complete and only then decodes it. Unlike the letter of the spec, a pending
//! event is dispatched at end of input even without a closing blank line, because real
//! providers (and the official SDKs' fixtures) end streams that way.

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty when the event had none (the spec's "message").
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last `id:` seen, if any.
    pub id: Option<String>,
}

/// Incremental parser: feed chunks with [`SseParser::push`], then call
/// [`SseParser::finish`] at end of input.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The previous chunk ended with CR, so a leading LF belongs to that line break.
    skip_lf: bool,
    /// Nothing decoded yet (a leading BOM must be dropped).
    at_start: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: Option<String>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        SseParser {
            at_start: true,
            ..SseParser::default()
        }
    }

    /// Feeds a chunk of bytes, appending every completed event to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        let mut rest = chunk;
        if self.skip_lf {
            if let Some((&b'\n', tail)) = rest.split_first() {
                rest = tail;
            }
            if !rest.is_empty() {
                self.skip_lf = false;
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (head, tail) = rest.split_at(pos);
            let is_cr = tail.first() == Some(&b'\r');
            let mut tail = &tail[1..];
            if is_cr {
                match tail.first() {
                    Some(&b'\n') => tail = &tail[1..],
                    None => self.skip_lf = true,
                    Some(_) => {}
                }
            }
            if self.line.is_empty() {
                self.process_line(head, out);
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(head);
                self.process_line(&line, out);
                line.clear();
                self.line = line;
            }
            rest = tail;
        }
        self.line.extend_from_slice(rest);
    }

    /// Ends the stream: a final unterminated line is processed and a pending event is
    /// dispatched.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out);
        }
        self.dispatch(out);
        self.skip_lf = false;
    }

    fn process_line(&mut self, raw: &[u8], out: &mut Vec<SseEvent>) {
        let mut bytes = raw;
        if self.at_start {
            self.at_start = false;
            if let Some(stripped) = bytes.strip_prefix(b"\xEF\xBB\xBF".as_slice()) {
                bytes = stripped;
            }
        }
        if bytes.is_empty() {
            self.dispatch(out);
            return;
        }
        if bytes[0] == b':' {
            return;
        }
        let (name, value) = match bytes.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &bytes[i + 1..];
                (&bytes[..i], v.strip_prefix(b" ".as_slice()).unwrap_or(v))
            }
            None => (bytes, &b""[..]),
        };
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                self.data.push_str(&String::from_utf8_lossy(value));
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            b"id" if !value.contains(&0) => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            // `retry` only matters to reconnecting EventSource clients; every other
            // field name (including lines such as `# comment`) is ignored by the spec.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if !self.has_data {
            // The spec drops an event without data; its type buffer is reset too.
            self.event.clear();
            return;
        }
        out.push(SseEvent {
            event: std::mem::take(&mut self.event),
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
        });
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.push(c, &mut out);
        }
        p.finish(&mut out);
        out
    }

    fn parse_bytewise(input: &[u8]) -> Vec<SseEvent> {
        let chunks: Vec<&[u8]> = input.chunks(1).collect();
        parse_chunks(&chunks)
    }

    #[test]
    fn basic_fields_and_optional_space() {
        let ev = parse_chunks(&[b"event: a\ndata:x\ndata: y\n\n"]);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].event, "a");
        assert_eq!(ev[0].data, "x\ny");
    }

    #[test]
    fn only_one_leading_space_is_removed() {
        let ev = parse_chunks(&[b"data:  two\n\n"]);
        assert_eq!(ev[0].data, " two");
    }

    #[test]
    fn comments_and_unknown_fields_are_ignored() {
        let ev = parse_chunks(&[b": hello\n# not a comment\nfoo: bar\ndata: 1\n\n"]);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].data, "1");
        assert_eq!(ev[0].event, "");
    }

    #[test]
    fn crlf_cr_and_lf_line_endings() {
        for input in [
            &b"data: a\r\n\r\ndata: b\r\n\r\n"[..],
            &b"data: a\r\rdata: b\r\r"[..],
            &b"data: a\n\ndata: b\n\n"[..],
        ] {
            let ev = parse_chunks(&[input]);
            assert_eq!(ev.len(), 2, "{input:?}");
            assert_eq!(ev[1].data, "b");
            let ev = parse_bytewise(input);
            assert_eq!(ev.len(), 2, "bytewise {input:?}");
            assert_eq!(ev[0].data, "a");
        }
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_break() {
        let ev = parse_chunks(&[b"data: a\r", b"\n", b"data: b\r", b"\n\r\n"]);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].data, "a\nb");
    }

    #[test]
    fn utf8_split_across_chunks() {
        let text = "data: 25°C — ok\n\n".as_bytes();
        let ev = parse_bytewise(text);
        assert_eq!(ev[0].data, "25°C — ok");
    }

    #[test]
    fn final_event_flushed_at_eof() {
        let ev = parse_chunks(&[b"data: a\n\nevent: stop\ndata: b"]);
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[1].event, "stop");
        assert_eq!(ev[1].data, "b");
        let ev = parse_chunks(&[b"data: a\n"]);
        assert_eq!(ev.len(), 1);
    }

    #[test]
    fn event_without_data_is_dropped_and_resets_type() {
        let ev = parse_chunks(&[b"event: x\n\ndata: y\n\n"]);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].event, "");
    }

    #[test]
    fn empty_data_line_dispatches_empty_string() {
        let ev = parse_chunks(&[b"data\n\n"]);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].data, "");
    }

    #[test]
    fn bom_and_id() {
        let ev = parse_chunks(&[b"\xEF\xBB\xBFid: 7\ndata: z\n\n"]);
        assert_eq!(ev[0].id.as_deref(), Some("7"));
        assert_eq!(ev[0].data, "z");
    }
}
