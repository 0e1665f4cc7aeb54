//! The direct stdio transport: JSONL commands on stdin, events on stdout (docs/protocol.md §2.1).
//! Logs never go to stdout.

use futures::StreamExt;
use shard_protocol::decode::DecodeError;
use shard_protocol::{Event, JsonlCodec, decode_command};
use shard_session::streaming::StreamJournal;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

use crate::runtime::Input;

/// Reads commands from `reader` into the actor until end of input.
pub async fn read_commands<R: AsyncRead + Unpin>(reader: R, inputs: mpsc::Sender<Input>) {
    let mut lines = FramedRead::with_capacity(reader, JsonlCodec::default(), 64 * 1024);
    while let Some(item) = lines.next().await {
        let input = match item {
            Ok(Ok(line)) => match decode_command(&line) {
                Ok(msg) => Input::Command(msg),
                Err(e) => Input::Invalid(e),
            },
            Ok(Err(line_error)) => Input::Invalid(DecodeError {
                // The answer carries the command's id when the line's start shows one.
                id: match &line_error {
                    shard_protocol::LineError::TooLong { id, .. } => id.clone(),
                },
                type_name: None,
                message: line_error.to_string(),
            }),
            Err(e) => {
                tracing::warn!(error = %e, "reading commands failed");
                break;
            }
        };
        if inputs.send(input).await.is_err() {
            return;
        }
    }
    let _ = inputs.send(Input::Eof).await;
}

/// Writes events to `writer` as JSONL, flushing whenever the queue runs dry so output
/// is both prompt and batched. With a `journal`, every `message_delta` line is also kept
/// in the session's streaming journal, written before the same bytes can leave the
/// buffer for the client (so a `kill -9` loses nothing a client saw); `message_complete`
/// empties it (the message is in the transcript by then).
pub async fn write_events<W: AsyncWrite + Unpin>(
    writer: W,
    mut events: mpsc::Receiver<Event>,
    mut journal: Option<StreamJournal>,
) {
    const CAPACITY: usize = 64 * 1024;
    let mut out = BufWriter::with_capacity(CAPACITY, writer);
    let mut buf = Vec::with_capacity(4096);
    while let Some(ev) = events.recv().await {
        let mut next = Some(ev);
        while let Some(ev) = next {
            buf.clear();
            if serde_json::to_writer(&mut buf, &ev).is_err() {
                tracing::error!("could not encode an event");
            } else {
                buf.push(b'\n');
                if let Some(j) = journal.as_mut() {
                    match &ev {
                        Event::MessageDelta(d) => j.record(&d.message_id, &buf),
                        Event::MessageComplete(_) => j.complete(),
                        _ => {}
                    }
                    // The buffer is about to reach the client: the journal goes first.
                    if j.dirty() && out.buffer().len() + buf.len() > CAPACITY {
                        j.flush();
                    }
                }
                if out.write_all(&buf).await.is_err() {
                    return;
                }
            }
            next = events.try_recv().ok();
        }
        if let Some(j) = journal.as_mut() {
            j.flush();
        }
        if out.flush().await.is_err() {
            return;
        }
    }
    let _ = out.flush().await;
}
