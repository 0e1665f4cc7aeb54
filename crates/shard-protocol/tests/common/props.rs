//! Property tests: generated messages survive encode → frame → decode unchanged; the
//! codec agrees with a reference model of docs/protocol.md §2.1 on arbitrary bytes split into
//! arbitrary chunks, and never panics; the decoders never panic on arbitrary bytes.

use bytes::BytesMut;
use proptest::collection::vec;
use proptest::prelude::*;
use shard_protocol::{
    JsonlCodec, LineError, decode_command, decode_event, decode_event_lenient, to_line,
};
use tokio_util::codec::Decoder;

use super::strategies;

/// What the codec should produce: split on `\n`, strip one `\r`, length check, skip
/// blank lines. A final segment without `\n` is a line too.
fn reference(input: &[u8], max: usize) -> Vec<Result<Vec<u8>, ()>> {
    let mut out = Vec::new();
    let mut segments: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    // `split` yields an empty tail after a final `\n`; an unterminated tail is a line.
    if segments.last().is_some_and(|s| s.is_empty()) {
        segments.pop();
    }
    for seg in segments {
        let seg = seg.strip_suffix(b"\r").unwrap_or(seg);
        if seg.len() > max {
            out.push(Err(()));
        } else if !seg.iter().all(u8::is_ascii_whitespace) {
            out.push(Ok(seg.to_vec()));
        }
    }
    out
}

/// Runs the codec over `input` fed in the given chunk sizes (cycled), then EOF.
fn run_codec(input: &[u8], chunks: &[usize], max: usize) -> Vec<Result<Vec<u8>, ()>> {
    let mut codec = JsonlCodec::new(max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    let mut pos = 0;
    let mut sizes = chunks.iter().cycle();
    let push = |item: Result<BytesMut, LineError>, out: &mut Vec<_>| match item {
        Ok(line) => out.push(Ok(line.to_vec())),
        Err(LineError::TooLong { limit, .. }) => {
            assert_eq!(limit, max);
            out.push(Err(()));
        }
    };
    while pos < input.len() {
        let n = (*sizes.next().unwrap()).clamp(1, input.len() - pos);
        buf.extend_from_slice(&input[pos..pos + n]);
        pos += n;
        while let Some(item) = codec.decode(&mut buf).unwrap() {
            push(item, &mut out);
        }
        // The codec must not hoard a line it has already found too long.
        assert!(
            buf.len() <= max + 1,
            "buffered {} bytes with limit {max}",
            buf.len()
        );
    }
    while let Some(item) = codec.decode_eof(&mut buf).unwrap() {
        push(item, &mut out);
    }
    out
}

fn framing_bytes() -> impl Strategy<Value = Vec<u8>> {
    vec(
        prop_oneof![
            4 => Just(b'a'),
            3 => Just(b'\n'),
            2 => Just(b'\r'),
            1 => Just(b' '),
            1 => Just(0xE2u8),
            1 => any::<u8>(),
        ],
        0..200,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn commands_round_trip_through_line_and_codec(
        msgs in vec(strategies::client_message(), 1..4),
        chunks in vec(1usize..64, 1..8),
    ) {
        let mut wire = Vec::new();
        for m in &msgs {
            let line = to_line(m);
            prop_assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
            wire.extend(line);
        }
        let lines = run_codec(&wire, &chunks, shard_protocol::codec::DEFAULT_MAX_LINE);
        prop_assert_eq!(lines.len(), msgs.len());
        for (line, m) in lines.iter().zip(&msgs) {
            let line = line.as_ref().map_err(|_| TestCaseError::fail("too long"))?;
            let back = decode_command(line).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            prop_assert_eq!(&back, m);
        }
    }

    #[test]
    fn events_round_trip_through_line_and_codec(
        events in vec(strategies::event(), 1..4),
        chunks in vec(1usize..64, 1..8),
    ) {
        let wire: Vec<u8> = events.iter().flat_map(to_line).collect();
        let lines = run_codec(&wire, &chunks, shard_protocol::codec::DEFAULT_MAX_LINE);
        prop_assert_eq!(lines.len(), events.len());
        for (line, e) in lines.iter().zip(&events) {
            let line = line.as_ref().map_err(|_| TestCaseError::fail("too long"))?;
            let back = decode_event(line).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            prop_assert_eq!(&back, e);
        }
    }

    #[test]
    fn codec_matches_the_reference_on_arbitrary_bytes(
        input in framing_bytes(),
        chunks in vec(1usize..32, 1..6),
        max in 0usize..12,
    ) {
        prop_assert_eq!(run_codec(&input, &chunks, max), reference(&input, max));
    }

    #[test]
    fn codec_never_panics_on_any_bytes(
        input in vec(any::<u8>(), 0..512),
        chunks in vec(1usize..128, 1..6),
        max in 0usize..300,
    ) {
        let out = run_codec(&input, &chunks, max);
        for line in out.iter().flatten() {
            prop_assert!(!line.contains(&b'\n'));
            prop_assert!(line.len() <= max);
        }
    }

    #[test]
    fn decoders_never_panic_on_arbitrary_bytes(input in vec(any::<u8>(), 0..256)) {
        let _ = decode_command(&input);
        let _ = decode_event(&input);
        let _ = decode_event_lenient(&input);
    }

    #[test]
    fn decoders_never_panic_on_mutated_vectors(
        pick in any::<prop::sample::Index>(),
        cut in any::<prop::sample::Index>(),
        flip in any::<u8>(),
    ) {
        // Near-valid input reaches much deeper into the decoders than random bytes.
        let all: Vec<Vec<u8>> = super::commands().iter().chain(super::events().iter()).map(|v| v.line()).collect();
        let mut line = all[pick.index(all.len())].clone();
        let at = cut.index(line.len());
        line[at] ^= flip;
        let _ = decode_command(&line);
        let _ = decode_event_lenient(&line);
        line.truncate(at);
        let _ = decode_command(&line);
        let _ = decode_event(&line);
    }
}
