//! Retry policy: which failures are retried, and how long to wait before the next try.
//!
//! Decided by the failure's [`ErrorKind`]: rate limits, overload, network and server
//! failures are retried (the official SDKs' 408, 409, 429 and 5xx), authentication,
//! invalid requests and context overflow never are (the same request cannot succeed).
//! Backoff is exponential with jitter; a server's `retry-after-ms` or `retry-after`
//! (seconds or an HTTP date) wins when it is reasonable, and an `x-should-retry` header
//! overrides the kind-based decision.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;

use crate::provider::ErrorKind;

/// How often and how patiently a call is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so `max_retries + 1` attempts in total).
    pub max_retries: u32,
    /// Delay before the first retry; doubled for each later one.
    pub base_delay: Duration,
    /// Upper bound of a computed delay.
    pub max_delay: Duration,
    /// A server-requested delay longer than this is ignored in favour of the computed
    /// one, so a hostile or confused header cannot park a turn for an hour.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `attempt` (1-based), honouring the wait the server
    /// asked for (a rate limit's retry-after, or the response headers) when it is sensible.
    pub fn delay(&self, attempt: u32, server: Option<Duration>) -> Duration {
        if let Some(d) = server
            && d <= self.max_retry_after
        {
            return d;
        }
        self.backoff(attempt)
    }

    /// Exponential backoff with up to 25% negative jitter, capped at `max_delay`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = attempt.saturating_sub(1).min(20);
        let raw = self
            .base_delay
            .saturating_mul(1u32 << exp)
            .min(self.max_delay);
        let jitter = 1.0 - 0.25 * random_unit();
        raw.mul_f64(jitter)
    }
}

/// Whether a failure of this kind is worth another attempt, before headers are consulted.
pub fn is_retryable(kind: ErrorKind) -> bool {
    match kind {
        ErrorKind::RateLimited { .. }
        | ErrorKind::Overloaded
        | ErrorKind::Network
        | ErrorKind::Server => true,
        ErrorKind::Auth | ErrorKind::ContextWindowExceeded | ErrorKind::InvalidRequest => false,
    }
}

/// The `x-should-retry` override, when the server sent one.
pub fn should_retry_header(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The delay a server asked for with `retry-after-ms` or `retry-after`.
pub fn server_delay(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = header_str(headers, "retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header_str(headers, "retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = parse_http_date(value)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name)?.to_str().ok().map(str::trim)
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) into Unix seconds. The
/// obsolete RFC 850 and asctime forms are not accepted; servers send the fixed form.
pub fn parse_http_date(s: &str) -> Option<u64> {
    let rest = s.split_once(", ")?.1;
    let mut parts = rest.split(' ');
    let day: u64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':');
    let h: u64 = hms.next()?.parse().ok()?;
    let m: u64 = hms.next()?.parse().ok()?;
    let sec: u64 = hms.next()?.parse().ok()?;
    if parts.next()? != "GMT" || day == 0 || day > 31 || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day as i64);
    let days = u64::try_from(days).ok()?;
    Some(days * 86_400 + h * 3600 + m * 60 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A uniform number in [0, 1) from the process's randomly keyed SipHash, which avoids a
/// dependency just for jitter.
fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn http_date_parses() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse_http_date("garbage"), None);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 PST"), None);
    }

    #[test]
    fn retry_after_headers() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(server_delay(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("10"));
        assert_eq!(server_delay(&h), Some(Duration::from_millis(10)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"),
        );
        assert_eq!(server_delay(&h), Some(Duration::ZERO));
    }

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let p = RetryPolicy::default();
        let d1 = p.backoff(1);
        assert!(d1 <= Duration::from_millis(500) && d1 >= Duration::from_millis(375));
        let d3 = p.backoff(3);
        assert!(d3 <= Duration::from_secs(2) && d3 >= Duration::from_millis(1500));
        assert!(p.backoff(30) <= Duration::from_secs(30));
    }

    #[test]
    fn long_server_delay_is_ignored() {
        let p = RetryPolicy::default();
        assert!(p.delay(1, Some(Duration::from_secs(3600))) <= Duration::from_millis(500));
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
    }

    #[test]
    fn retryable_statuses_follow_their_kinds() {
        use crate::errors::classify_http;
        for s in [408, 409, 429, 500, 502, 503, 529] {
            assert!(is_retryable(classify_http(s, "", None)), "{s}");
        }
        for s in [400, 401, 402, 403, 404, 413, 422] {
            assert!(!is_retryable(classify_http(s, "", None)), "{s}");
        }
        let overflow = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#;
        assert_eq!(
            classify_http(400, overflow, None),
            ErrorKind::ContextWindowExceeded
        );
        assert!(!is_retryable(ErrorKind::ContextWindowExceeded));
    }
}
