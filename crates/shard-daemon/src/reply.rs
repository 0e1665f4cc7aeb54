//! Exactly one `response` per command id. The connection layer makes a
//! [`Responder`] for every command it decodes; a handler either returns its outcome
//! (`Result<Reply, ProtocolError>`, answered by the connection layer) or takes the
//! responder out of its [`ReplySlot`] and hands it to whoever will answer later (a
//! Runtime's response, an attach's first `sync`). A responder is consumed by answering,
//! and one dropped unanswered answers `INTERNAL_ERROR` itself, so no path can answer a
//! command twice or leave a client waiting forever.

use std::sync::Arc;

use shard_protocol::event::Response;
use shard_protocol::{CommandSpec, ErrorCode, Event};

use crate::outbox::Outbox;

/// A command that failed: one `response` with `success: false`.
#[derive(Debug, Clone)]
pub(crate) struct ProtocolError {
    pub code: ErrorCode,
    pub message: String,
    pub data: Option<serde_json::Value>,
}

impl ProtocolError {
    /// An error with a code and a message for the person reading it.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ProtocolError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds structured data (e.g. the `agent_id` of an agent created whose start failed).
    pub fn with_data(mut self, data: Option<serde_json::Value>) -> Self {
        self.data = data;
        self
    }
}

/// What a handler produced.
#[derive(Debug)]
pub(crate) enum Reply {
    /// Answer now: `success: true` with this `data`.
    Done(Option<serde_json::Value>),
    /// The responder was taken from the slot; whoever holds it answers.
    Deferred,
}

impl Reply {
    /// A success answering command `K` with `K`'s response type (the command table in
    /// `shard_protocol::table`). A response that cannot be encoded is an
    /// `INTERNAL_ERROR`, never a success that lost its data.
    pub fn data<K: CommandSpec>(data: &K::Response) -> Result<Reply, ProtocolError> {
        K::encode_response(data)
            .map(Reply::Done)
            .map_err(|e| encode_failed(K::TYPE, &e))
    }

    /// A success without data, for command `K` whose response type is `()`: the command
    /// table checks that `K` answers nothing.
    #[allow(clippy::extra_unused_type_parameters)] // `K` is the check: it names the command.
    pub fn empty<K: CommandSpec<Response = ()>>() -> Reply {
        Reply::Done(None)
    }
}

/// The error for a response that could not be encoded.
pub(crate) fn encode_failed(command: &str, e: &serde_json::Error) -> ProtocolError {
    tracing::error!(command, error = %e, "could not encode a response");
    ProtocolError::new(
        ErrorCode::InternalError,
        format!("the daemon could not encode its answer to {command}: {e}"),
    )
}

/// The one answer owed to one command.
pub(crate) struct Responder {
    outbox: Arc<Outbox>,
    id: Option<String>,
    command: &'static str,
    done: bool,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Responder")
            .field("id", &self.id)
            .field("command", &self.command)
            .finish()
    }
}

impl Responder {
    /// The answer to command `id` of type `command`, to be queued on `outbox`.
    pub fn new(outbox: Arc<Outbox>, id: Option<String>, command: &'static str) -> Self {
        Responder {
            outbox,
            id,
            command,
            done: false,
        }
    }

    fn push(&mut self, ev: Event) {
        self.done = true;
        self.outbox.push(crate::wire::frame(&ev));
    }

    /// Answers with success.
    pub fn ok(mut self, data: Option<serde_json::Value>) {
        let ev = Event::ok(self.id.take(), self.command, data);
        self.push(ev);
    }

    /// Answers command `K` with its typed response (the command table); one that cannot
    /// be encoded is answered as an `INTERNAL_ERROR`, never as a success without its data.
    pub fn answer<K: CommandSpec>(self, data: &K::Response) {
        match K::encode_response(data) {
            Ok(data) => self.ok(data),
            Err(e) => self.fail(encode_failed(K::TYPE, &e)),
        }
    }

    /// Answers with success and `data` already encoded as a JSON value: a large answer
    /// (`agent.list` of thousands of agents) is encoded once, not first into a
    /// `serde_json::Value` and then again into the frame.
    pub fn ok_encoded(mut self, data: &[u8]) {
        self.done = true;
        let head = shard_protocol::to_line(&Event::ok(self.id.take(), self.command, None));
        let head = head.strip_suffix(b"\n").unwrap_or(&head);
        let head = head.strip_suffix(b"}").unwrap_or(head);
        let mut line = Vec::with_capacity(head.len() + data.len() + 16);
        line.extend_from_slice(head);
        line.extend_from_slice(b",\"data\":");
        line.extend_from_slice(data);
        line.extend_from_slice(b"}\n");
        self.outbox.push(bytes::Bytes::from(line));
    }

    /// Answers with a failure.
    pub fn fail(mut self, e: ProtocolError) {
        let mut ev = Event::err(self.id.take(), Some(self.command), e.code, e.message);
        if let Event::Response(r) = &mut ev
            && let Some(err) = &mut r.error
        {
            err.data = e.data;
        }
        self.push(ev);
    }

    /// Answers with what a Runtime answered, under the client's own id.
    pub fn forward(mut self, mut r: Response) {
        r.id = self.id.take();
        self.push(Event::Response(r));
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if !self.done {
            tracing::error!(command = self.command, "a command was left unanswered");
            let ev = Event::err(
                self.id.take(),
                Some(self.command),
                ErrorCode::InternalError,
                "the daemon lost track of this command; it may or may not have taken effect",
            );
            self.push(ev);
        }
    }
}

/// The outcome of a handler: now, or after slow work.
pub(crate) enum Handled {
    /// Answered (or deferred) already.
    Now(Result<Reply, ProtocolError>),
    /// Slow work; the connection layer spawns it and answers when it completes.
    Later(futures::future::BoxFuture<'static, Result<Reply, ProtocolError>>),
}

/// Holds a command's responder while its handler runs.
pub(crate) struct ReplySlot(Option<Responder>);

impl ReplySlot {
    /// A slot holding the responder of one command.
    pub fn new(r: Responder) -> Self {
        ReplySlot(Some(r))
    }

    /// Takes the responder to answer later; the handler then returns [`Reply::Deferred`].
    pub fn defer(&mut self) -> Result<Responder, ProtocolError> {
        self.0.take().ok_or_else(|| {
            ProtocolError::new(ErrorCode::InternalError, "the command was deferred twice")
        })
    }

    /// Sends the handler's outcome (when the handler kept the responder).
    pub fn finish(mut self, outcome: Result<Reply, ProtocolError>) {
        match (self.0.take(), outcome) {
            (Some(r), Ok(Reply::Done(d))) => r.ok(d),
            (Some(r), Err(e)) => r.fail(e),
            (Some(r), Ok(Reply::Deferred)) => r.fail(ProtocolError::new(
                ErrorCode::InternalError,
                "the daemon deferred this command without a way to answer it",
            )),
            (None, Ok(Reply::Deferred)) => {}
            (None, outcome) => {
                tracing::error!(?outcome, "a handler answered a command it had deferred");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::QueueCaps;

    fn drain(rx: &mut crate::outbox::OutboxReceiver) -> Vec<serde_json::Value> {
        let mut v = Vec::new();
        while let Some(b) = rx.try_recv() {
            v.push(serde_json::from_slice(&b).unwrap());
        }
        v
    }

    #[test]
    fn a_dropped_responder_answers_once() {
        let (ob, mut rx) = Outbox::new(QueueCaps::default());
        drop(Responder::new(
            Arc::clone(&ob),
            Some("7".into()),
            "agent.list",
        ));
        let got = drain(&mut rx);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["id"], "7");
        assert_eq!(got[0]["success"], false);
        assert_eq!(got[0]["error"]["code"], "INTERNAL_ERROR");
    }

    #[test]
    fn deferred_and_answered_is_one_response() {
        let (ob, mut rx) = Outbox::new(QueueCaps::default());
        let mut slot = ReplySlot::new(Responder::new(Arc::clone(&ob), Some("1".into()), "x"));
        let r = slot.defer().unwrap();
        assert!(slot.defer().is_err());
        slot.finish(Ok(Reply::Deferred));
        r.ok(None);
        let got = drain(&mut rx);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["success"], true);
    }

    /// A command whose response cannot be encoded (a map with non-string keys).
    struct Unencodable;
    impl CommandSpec for Unencodable {
        const TYPE: &'static str = "test.unencodable";
        type Request = ();
        type Response = std::collections::BTreeMap<(u8, u8), u8>;
    }

    #[test]
    fn a_response_that_cannot_be_encoded_is_an_internal_error_not_a_bare_success() {
        let data = std::collections::BTreeMap::from([((1, 2), 3)]);
        let err = Reply::data::<Unencodable>(&data).unwrap_err();
        assert_eq!(err.code, ErrorCode::InternalError);
        assert!(err.message.contains("test.unencodable"), "{}", err.message);
        let none = Reply::data::<shard_protocol::command::kind::AgentDetach>(&()).unwrap();
        assert!(matches!(none, Reply::Done(None)));
    }
}
