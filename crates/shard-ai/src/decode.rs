//! Offline decoding of a captured provider stream: the same SSE parser and decoders the
//! live providers use, without HTTP. For benchmarks, fixture checks and debugging.

use crate::anthropic_stream::AnthropicDecoder;
use crate::config::ProviderKind;
use crate::http::{DecodeError, Decoder};
use crate::openai_chat::ChatDecoder;
use crate::openai_responses::ResponsesDecoder;
use crate::provider::{ProviderError, StreamEvent};
use crate::sse::SseParser;

/// Decodes a whole captured stream, fed in `chunks` as the network would deliver it,
/// into normalized events ending with `Done`.
pub fn decode<'a>(
    kind: ProviderKind,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Vec<StreamEvent>, ProviderError> {
    let mut decoder: Box<dyn Decoder> = match kind {
        ProviderKind::Anthropic => Box::new(AnthropicDecoder::default()),
        ProviderKind::OpenAi => Box::new(ChatDecoder::default()),
        ProviderKind::OpenAiResponses => Box::new(ResponsesDecoder::default()),
    };
    let mut parser = SseParser::new();
    let mut sse = Vec::new();
    let mut out = Vec::new();
    let convert = |e: DecodeError| match e {
        DecodeError::Retryable(err) => ProviderError::Api(err),
        DecodeError::Fatal(e) => e,
    };
    for chunk in chunks {
        parser.push(chunk, &mut sse);
        for ev in sse.drain(..) {
            if decoder.event(&ev, &mut out).map_err(convert)? {
                return Ok(out);
            }
        }
    }
    parser.finish(&mut sse);
    for ev in sse.drain(..) {
        if decoder.event(&ev, &mut out).map_err(convert)? {
            return Ok(out);
        }
    }
    decoder.end(&mut out).map_err(convert)?;
    Ok(out)
}
