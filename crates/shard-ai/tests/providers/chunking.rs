//! The decoders give the same events however the network splits the bytes: CRLF pairs,
//! UTF-8 sequences and lines cut anywhere.

use shard_ai::config::ProviderKind;
use shard_ai::decode::decode;

fn all_fixtures() -> Vec<(ProviderKind, String, Vec<u8>)> {
    let root = crate::support::FIXTURES;
    let mut out = Vec::new();
    for (kind, dir) in [
        (ProviderKind::Anthropic, "anthropic/sdk-python"),
        (ProviderKind::Anthropic, "anthropic/sdk-typescript"),
        (ProviderKind::Anthropic, "anthropic/fable-fallback"),
        (ProviderKind::Anthropic, "anthropic/vercel-ai"),
        (ProviderKind::Anthropic, "anthropic/sdk-python-cassettes"),
        (ProviderKind::OpenAi, "openai-chat"),
        (ProviderKind::OpenAiResponses, "openai-responses"),
    ] {
        for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                continue;
            }
            let name = format!("{dir}/{}", path.file_name().unwrap().to_string_lossy());
            out.push((kind, name, std::fs::read(&path).unwrap()));
        }
    }
    out
}

#[test]
fn any_chunking_gives_the_same_events() {
    for (kind, name, bytes) in all_fixtures() {
        let whole = decode(kind, [bytes.as_slice()]);
        for size in [1, 3, 64, 1400] {
            assert_eq!(
                decode(kind, bytes.chunks(size)),
                whole,
                "{name} in {size}-byte chunks"
            );
        }
        if bytes.len() <= 3 * 1024 {
            for cut in 0..=bytes.len() {
                let (a, b) = bytes.split_at(cut);
                assert_eq!(decode(kind, [a, b]), whole, "{name} cut at {cut}");
            }
        }
    }
}

#[test]
fn crlf_and_cr_line_endings_decode_like_lf() {
    for (kind, name, bytes) in all_fixtures() {
        let text = String::from_utf8(bytes).unwrap();
        let whole = decode(kind, [text.as_bytes()]);
        let crlf = text.replace('\n', "\r\n");
        let cr = text.replace('\n', "\r");
        assert_eq!(
            decode(kind, crlf.as_bytes().chunks(5)),
            whole,
            "{name} with CRLF"
        );
        assert_eq!(
            decode(kind, cr.as_bytes().chunks(5)),
            whole,
            "{name} with CR"
        );
    }
}
