//! The HTTP side shared by every provider: one POST with a JSON body, retries before the
//! first content delta, SSE decoding, idle timeout, cancellation.
//!
//! A call runs in its own task that owns the HTTP response. The task stops (and so drops
//! the connection) the moment the cancellation token fires or the consumer drops the
//! stream, even if nobody is polling at that instant.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::HeaderMap;
use tokio_util::sync::CancellationToken;

use crate::errors::{ErrorFields, classify_http};
use crate::provider::{ApiError, ErrorKind, EventStream, ProviderError, StreamEvent};
use crate::retry::{self, RetryPolicy};
use crate::secret::ApiKey;
use crate::sse::{SseEvent, SseParser};

/// Why a decoder gave up.
#[derive(Debug)]
pub(crate) enum DecodeError {
    /// A transient provider condition (overloaded); retried when no content was yielded.
    Retryable(ApiError),
    /// Final.
    Fatal(ProviderError),
}

impl DecodeError {
    /// An error event inside the stream: retried when its kind is.
    pub(crate) fn event(kind: ErrorKind, message: String) -> DecodeError {
        let err = ApiError {
            kind,
            status: None,
            message,
        };
        if retry::is_retryable(kind) {
            DecodeError::Retryable(err)
        } else {
            DecodeError::Fatal(ProviderError::Api(err))
        }
    }

    /// The body ended before the response was complete: a broken connection, retried
    /// while nothing was yielded.
    pub(crate) fn truncated(message: &str) -> DecodeError {
        DecodeError::Retryable(network(message.to_string()))
    }

    /// A stream that cannot be understood (invalid JSON, missing events): final.
    pub(crate) fn malformed(message: String) -> DecodeError {
        DecodeError::Fatal(ProviderError::api(ErrorKind::Server, None, message))
    }
}

/// Turns one provider's SSE events into normalized events.
pub(crate) trait Decoder: Send {
    /// Handles one event; returns `Ok(true)` when the response is complete.
    fn event(&mut self, ev: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<bool, DecodeError>;
    /// The body ended before the decoder reported completion; either finish (`Ok`) or
    /// explain what is missing.
    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), DecodeError>;
}

/// Makes a fresh decoder for every attempt.
pub(crate) type DecoderFactory = Box<dyn Fn() -> Box<dyn Decoder> + Send + Sync>;

/// Connection-level settings shared by all calls of one provider.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub client: ClientSlot,
    pub policy: RetryPolicy,
    pub idle_timeout: Duration,
}

pub(crate) use crate::http_client::{ClientSlot, Tls};

impl Transport {
    /// The transport a provider's settings describe: a plain `http://` base URL gets a
    /// client without root certificates ([`Tls::None`]).
    pub fn for_settings(
        settings: &crate::settings::ProviderSettings,
    ) -> Result<Self, ProviderError> {
        Ok(Transport {
            client: ClientSlot::build(
                settings.connect_timeout,
                Tls::for_base_url(&settings.base_url),
            ),
            policy: settings.retry,
            idle_timeout: settings.idle_timeout,
        })
    }
}

/// One prepared provider call.
pub(crate) struct Call {
    /// Provider name, for messages.
    pub provider: String,
    /// Full endpoint URL.
    pub url: String,
    /// Headers, authentication included (marked sensitive).
    pub headers: HeaderMap,
    /// The serialized JSON body, reused verbatim by every attempt.
    pub body: Bytes,
    /// The key, only to scrub it from error text.
    pub key: ApiKey,
    /// The variable the key came from, for the 401 message.
    pub key_source: String,
}

/// Starts `call` and returns its normalized stream.
pub(crate) fn run(
    transport: Transport,
    call: Call,
    factory: std::sync::Arc<DecoderFactory>,
    cancel: CancellationToken,
) -> EventStream {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return futures::stream::once(async {
            Err(ProviderError::Config(
                "provider streams need a Tokio runtime".to_string(),
            ))
        })
        .boxed();
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    handle.spawn(async move {
        let mut driver = Driver::new(transport, call, factory);
        loop {
            let item = tokio::select! {
                biased;
                _ = cancel.cancelled() => None,
                _ = tx.closed() => return,
                item = driver.next() => Some(item),
            };
            let Some(item) = item else {
                // Drop the response before telling anyone, so the connection is gone
                // by the time the consumer sees the cancellation.
                drop(driver);
                let _ = tx.send(Err(ProviderError::Cancelled)).await;
                return;
            };
            let Some(item) = item else { return };
            let stop = item.is_err();
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    drop(driver);
                    let _ = tx.try_send(Err(ProviderError::Cancelled));
                    return;
                }
                sent = tx.send(item) => if sent.is_err() { return },
            }
            if stop {
                return;
            }
        }
    });
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

fn is_content(ev: &StreamEvent) -> bool {
    !matches!(
        ev,
        StreamEvent::Usage(_) | StreamEvent::Retrying { .. } | StreamEvent::Done { .. }
    )
}

struct Driver {
    transport: Transport,
    call: Call,
    factory: std::sync::Arc<DecoderFactory>,
    /// Attempts started so far.
    attempt: u32,
    response: Option<reqwest::Response>,
    parser: SseParser,
    decoder: Box<dyn Decoder>,
    queue: VecDeque<Result<StreamEvent, ProviderError>>,
    pending_delay: Option<Duration>,
    /// Content of this call already left the driver: no retry from here on.
    committed: bool,
    finished: bool,
    sse: Vec<SseEvent>,
    out: Vec<StreamEvent>,
}

impl Driver {
    fn new(transport: Transport, call: Call, factory: std::sync::Arc<DecoderFactory>) -> Self {
        let decoder = factory();
        Driver {
            transport,
            call,
            factory,
            attempt: 0,
            response: None,
            parser: SseParser::new(),
            decoder,
            queue: VecDeque::new(),
            pending_delay: None,
            committed: false,
            finished: false,
            sse: Vec::new(),
            out: Vec::new(),
        }
    }

    async fn next(&mut self) -> Option<Result<StreamEvent, ProviderError>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                match &item {
                    Ok(ev) if is_content(ev) => self.committed = true,
                    Ok(_) => {}
                    Err(_) => {
                        self.finished = true;
                        self.queue.clear();
                    }
                }
                return Some(item);
            }
            if self.finished {
                self.response = None;
                return None;
            }
            if let Some(delay) = self.pending_delay.take() {
                tokio::time::sleep(delay).await;
            }
            if self.response.is_none() {
                self.connect().await;
            } else {
                self.read().await;
            }
        }
    }

    fn fail(&mut self, err: ProviderError) {
        self.response = None;
        self.queue.push_back(Err(err));
        self.finished = true;
    }

    /// Schedules another attempt, or fails with `err` when the budget is spent.
    fn retry_or_fail(&mut self, mut err: ApiError, headers: Option<&HeaderMap>) {
        self.response = None;
        let policy = self.transport.policy;
        if self.attempt > policy.max_retries {
            let attempts = self.attempt;
            err.message = format!("{} (gave up after {attempts} attempts)", err.message);
            tracing::warn!(provider = %self.call.provider, kind = err.kind.as_str(), "{}", err.message);
            self.fail(ProviderError::Api(err));
            return;
        }
        let server = match err.kind {
            ErrorKind::RateLimited { retry_after } => retry_after,
            _ => None,
        }
        .or_else(|| headers.and_then(retry::server_delay));
        let delay = policy.delay(self.attempt, server);
        let reason = err.message;
        tracing::info!(provider = %self.call.provider, attempt = self.attempt, ?delay, "retrying: {reason}");
        self.queue.push_back(Ok(StreamEvent::Retrying {
            attempt: self.attempt,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            reason,
        }));
        self.pending_delay = Some(delay);
    }

    async fn connect(&mut self) {
        self.attempt += 1;
        let client = match self.transport.client.get().await {
            Ok(client) => client,
            Err(e) => {
                self.fail(e);
                return;
            }
        };
        let request = client
            .post(&self.call.url)
            .headers(self.call.headers.clone())
            .body(self.call.body.clone());
        let idle = self.transport.idle_timeout;
        let result = tokio::time::timeout(idle, request.send()).await;
        let response = match result {
            Err(_) => {
                let reason = format!(
                    "no response from {} within {}s",
                    self.call.provider,
                    idle.as_secs_f64()
                );
                self.retry_or_fail(network(reason), None);
                return;
            }
            Ok(Err(e)) => {
                let msg = self.call.key.scrub(&describe_reqwest_error(&e));
                let reason = format!("cannot reach {}: {msg}", self.call.provider);
                if e.is_builder() {
                    self.fail(ProviderError::Config(reason));
                } else {
                    self.retry_or_fail(network(reason), None);
                }
                return;
            }
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        if response.status().is_success() {
            self.parser = SseParser::new();
            self.decoder = (self.factory)();
            self.response = Some(response);
            return;
        }
        let headers = response.headers().clone();
        let body = read_error_body(response, idle).await;
        let detail = self.call.key.scrub(&error_detail(&body));
        let kind = classify_http(status, &body, retry::server_delay(&headers));
        if status == 401 || status == 403 {
            // Only the error type: auth messages may quote a masked form of the key.
            let named = error_kind(&body)
                .map(|k| format!(" {k}"))
                .unwrap_or_default();
            let msg = format!(
                "authentication failed: {} rejected the credentials (HTTP {status}{}); check {}",
                self.call.provider,
                self.call.key.scrub(&named),
                self.call.key_source
            );
            tracing::warn!(provider = %self.call.provider, status, "authentication failed");
            self.fail(ProviderError::api(kind, Some(status), msg));
            return;
        }
        let reason = format!(
            "HTTP {status} from {}{}",
            self.call.provider,
            if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            }
        );
        let err = ApiError {
            kind,
            status: Some(status),
            message: reason,
        };
        let retryable =
            retry::should_retry_header(&headers).unwrap_or_else(|| retry::is_retryable(kind));
        if retryable {
            self.retry_or_fail(err, Some(&headers));
        } else {
            tracing::warn!(provider = %self.call.provider, status, kind = kind.as_str(), "request failed");
            self.fail(ProviderError::Api(err));
        }
    }

    async fn read(&mut self) {
        let idle = self.transport.idle_timeout;
        let Some(response) = self.response.as_mut() else {
            return;
        };
        let chunk = tokio::time::timeout(idle, response.chunk()).await;
        let mut eof = false;
        match chunk {
            Err(_) => {
                let reason = format!(
                    "no data from {} for {}s",
                    self.call.provider,
                    idle.as_secs_f64()
                );
                self.stream_failure(network(reason), true);
                return;
            }
            Ok(Err(e)) => {
                let msg = self.call.key.scrub(&describe_reqwest_error(&e));
                self.stream_failure(
                    network(format!("connection to {} broke: {msg}", self.call.provider)),
                    true,
                );
                return;
            }
            Ok(Ok(Some(bytes))) => self.parser.push(&bytes, &mut self.sse),
            Ok(Ok(None)) => {
                self.parser.finish(&mut self.sse);
                eof = true;
            }
        }
        let mut done = false;
        let mut failure = None;
        for ev in self.sse.drain(..) {
            match self.decoder.event(&ev, &mut self.out) {
                Ok(false) => {}
                Ok(true) => {
                    done = true;
                    break;
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        self.sse.clear();
        if eof && !done && failure.is_none() {
            match self.decoder.end(&mut self.out) {
                Ok(()) => done = true,
                Err(e) => failure = Some(e),
            }
        }
        match failure {
            Some(DecodeError::Retryable(err)) => self.stream_failure(err, true),
            Some(DecodeError::Fatal(err)) => {
                self.flush_out();
                self.fail(err);
            }
            None => {
                self.flush_out();
                if done {
                    self.finished = true;
                    self.response = None;
                }
            }
        }
    }

    fn flush_out(&mut self) {
        self.queue.extend(self.out.drain(..).map(Ok));
    }

    /// A failure after HTTP 200: retried only while nothing of this call reached the
    /// consumer (events still waiting in `out` are discarded with the attempt).
    fn stream_failure(&mut self, err: ApiError, retryable: bool) {
        let content_pending = self.out.iter().any(is_content)
            || self
                .queue
                .iter()
                .any(|i| matches!(i, Ok(e) if is_content(e)));
        if retryable && !self.committed && !content_pending {
            self.out.clear();
            self.queue
                .retain(|i| matches!(i, Ok(StreamEvent::Retrying { .. })));
            self.retry_or_fail(err, None);
        } else {
            tracing::warn!(provider = %self.call.provider, kind = err.kind.as_str(), "stream failed: {}", err.message);
            self.flush_out();
            self.fail(ProviderError::Api(err));
        }
    }
}

/// A failure to reach the provider or to keep the connection.
fn network(message: String) -> ApiError {
    ApiError {
        kind: ErrorKind::Network,
        status: None,
        message,
    }
}

/// A reqwest error with its causes, without the URL (which is noise, not a secret).
fn describe_reqwest_error(e: &reqwest::Error) -> String {
    use std::error::Error;
    let mut parts = Vec::new();
    if e.is_timeout() {
        parts.push("timed out".to_string());
    } else if e.is_connect() {
        parts.push("connection failed".to_string());
    } else if e.is_body() || e.is_decode() {
        parts.push("response body error".to_string());
    } else {
        parts.push("request error".to_string());
    }
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// Reads at most 64 KiB of an error body, giving up after the idle timeout.
async fn read_error_body(mut response: reqwest::Response, idle: Duration) -> String {
    const LIMIT: usize = 64 * 1024;
    let mut body = Vec::new();
    while body.len() < LIMIT {
        match tokio::time::timeout(idle, response.chunk()).await {
            Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(LIMIT);
    String::from_utf8_lossy(&body).into_owned()
}

/// The `error.type` (or `error.code`) of a JSON error body.
fn error_kind(body: &str) -> Option<String> {
    let f = ErrorFields::parse(body)?;
    Some(short(&f.kind.or(f.code)?, 60))
}

/// The useful part of an error body: `error.type: error.message` when it is the JSON
/// both APIs use, else the first line of the text.
fn error_detail(body: &str) -> String {
    if let Some(f) = ErrorFields::parse(body) {
        return match (f.kind.or(f.code), f.message) {
            (Some(k), Some(m)) => format!("{k}: {m}"),
            (None, Some(m)) => m,
            (Some(k), None) => k,
            (None, None) => short(body.trim(), 300),
        };
    }
    short(body.trim(), 300)
}

fn short(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() <= max {
        return line.to_string();
    }
    let mut out: String = line.chars().take(max).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_detail_forms() {
        let a = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
        assert_eq!(error_detail(a), "rate_limit_error: slow down");
        let o = r#"{"error":{"message":"bad","type":"invalid_request_error","code":null}}"#;
        assert_eq!(error_detail(o), "invalid_request_error: bad");
        assert_eq!(error_detail("upstream down\nmore"), "upstream down");
    }
}
