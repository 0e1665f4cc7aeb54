//! A sans-IO JSONL splitter for event streams.

use shard_protocol::Event;

/// Feeds JSONL bytes in whatever pieces they arrive and yields whole events: the sans-IO
/// half of a connection, so the view can be driven from any transport (and tested by
/// splitting a stream at every byte).
#[derive(Debug, Default)]
pub struct LineDecoder {
    buf: Vec<u8>,
}

impl LineDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        LineDecoder::default()
    }

    /// Appends bytes; returns the events of every line now complete. Lines that do not
    /// decode as a known event are skipped (unknown types are additive by contract).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(nl) = self.buf[start..].iter().position(|b| *b == b'\n') {
            let line = &self.buf[start..start + nl];
            start += nl + 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Ok(shard_protocol::IncomingEvent::Known(ev)) =
                shard_protocol::decode_event_lenient(line)
            {
                events.push(ev);
            }
        }
        self.buf.drain(..start);
        events
    }
}
