//! The one encoding of an event for a client: a JSON line as shared bytes, so one
//! encode serves every queue it is pushed to. Below everything that sends events (the
//! reply path, the core's fan-out, the services' announcements).

use bytes::Bytes;
use shard_protocol::{Event, to_line};

/// Serializes an event as one frame.
pub(crate) fn frame(event: &Event) -> Bytes {
    Bytes::from(to_line(event))
}
