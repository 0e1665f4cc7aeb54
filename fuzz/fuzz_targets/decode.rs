//! Fuzzes the decoders with one line of arbitrary bytes. Besides not panicking: whatever
//! decodes must re-encode to one line that decodes to the same message (the round trip
//! the protocol relies on when the daemon forwards messages).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shard_protocol::{decode_command, decode_event, decode_event_lenient, to_line};

fuzz_target!(|line: &[u8]| {
    if let Ok(msg) = decode_command(line) {
        let again = to_line(&msg);
        assert_eq!(again.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(decode_command(&again[..again.len() - 1]).as_ref(), Ok(&msg));
    }
    if let Ok(event) = decode_event(line) {
        let again = to_line(&event);
        assert_eq!(decode_event(&again).as_ref(), Ok(&event));
    }
    let _ = decode_event_lenient(line);
});
