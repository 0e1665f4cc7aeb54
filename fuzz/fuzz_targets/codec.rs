//! Fuzzes the JSONL codec: arbitrary bytes fed in arbitrary chunk sizes with a small
//! line limit. Besides not panicking, every line it yields must hold no `\n` and fit
//! the limit, and the codec must never buffer more than one line's worth past the limit.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use shard_protocol::{JsonlCodec, LineError};
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    // The first two bytes choose the line limit and the chunk pattern.
    let [limit, pattern, input @ ..] = data else {
        return;
    };
    let max = usize::from(*limit);
    let mut codec = JsonlCodec::new(max);
    let mut buf = BytesMut::new();
    let mut pos = 0;
    let mut step = 0usize;
    let check = |item: Result<BytesMut, LineError>| match item {
        Ok(line) => {
            assert!(!line.contains(&b'\n'));
            assert!(line.len() <= max);
            assert!(!line.iter().all(u8::is_ascii_whitespace));
        }
        Err(LineError::TooLong { limit }) => assert_eq!(limit, max),
    };
    while pos < input.len() {
        let n = (usize::from(pattern.rotate_left(step as u32 % 8) % 31) + 1).min(input.len() - pos);
        step += 1;
        buf.extend_from_slice(&input[pos..pos + n]);
        pos += n;
        while let Some(item) = codec
            .decode(&mut buf)
            .expect("decode never fails the stream")
        {
            check(item);
        }
        assert!(buf.len() <= max + 1);
    }
    while let Some(item) = codec
        .decode_eof(&mut buf)
        .expect("decode_eof never fails the stream")
    {
        check(item);
    }
});
