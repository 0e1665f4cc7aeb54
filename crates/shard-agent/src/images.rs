//! Checking prompt images before anything is saved: a bad image persisted in the session
//! would be sent again on every later turn and break them all, so it is refused with
//! `INVALID_REQUEST` instead.

use base64::Engine;
use shard_ai::ModelInfo;
use shard_protocol::types::Image;

/// Why the images of a prompt are refused: one line saying what would work, or `None`
/// when they can be sent to `model` (`None` for the model: the limits of the strictest
/// provider apply).
pub fn check_images(images: &[Image], model: Option<&ModelInfo>) -> Option<String> {
    if images.is_empty() {
        return None;
    }
    let limits = match model {
        Some(m) => match shard_ai::image_limits(m) {
            Some(l) => l,
            None => {
                return Some(format!(
                    "the active model `{}` does not accept images: switch to one that does \
                     (set_model) or send the prompt without them",
                    m.id
                ));
            }
        },
        None => shard_ai::ImageLimits {
            mime_types: &["image/png", "image/jpeg", "image/gif", "image/webp"],
            max_bytes: 5 * 1024 * 1024,
        },
    };
    for (n, image) in images.iter().enumerate() {
        let n = n + 1;
        if !limits.mime_types.contains(&image.mime_type.as_str()) {
            return Some(format!(
                "image {n}: type `{}` is not accepted: use one of {}",
                image.mime_type,
                limits.mime_types.join(", ")
            ));
        }
        let decoded = match base64::engine::general_purpose::STANDARD.decode(image.data.trim()) {
            Ok(d) => d,
            Err(e) => {
                return Some(format!(
                    "image {n}: `data` is not valid base64 ({e}): send the bytes base64-encoded \
                     (standard alphabet, padded), without a data: URL prefix"
                ));
            }
        };
        if decoded.is_empty() {
            return Some(format!("image {n}: `data` is empty"));
        }
        if decoded.len() > limits.max_bytes {
            return Some(format!(
                "image {n}: {} bytes is over the model's {} MB limit: scale it down",
                decoded.len(),
                limits.max_bytes / (1024 * 1024)
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn img(mime: &str, data: &str) -> Image {
        Image {
            kind: Default::default(),
            data: data.into(),
            mime_type: mime.into(),
        }
    }

    #[test]
    fn refuses_bad_base64_wrong_type_size_and_imageless_models() {
        let ok = img("image/png", "iVBORw0KGgo=");
        assert_eq!(check_images(std::slice::from_ref(&ok), None), None);
        let bad = check_images(&[img("image/png", "not base64!!")], None).unwrap();
        assert!(bad.contains("not valid base64"), "{bad}");
        let ty = check_images(&[img("image/bmp", "iVBORw0KGgo=")], None).unwrap();
        assert!(ty.contains("image/png"), "{ty}");
        let big = base64::engine::general_purpose::STANDARD.encode(vec![0u8; 5 * 1024 * 1024 + 1]);
        let over = check_images(&[img("image/png", &big)], None).unwrap();
        assert!(over.contains("5 MB"), "{over}");
        let mut openai = ModelInfo::unknown("openai", "gpt-x");
        assert_eq!(check_images(&[img("image/png", &big)], Some(&openai)), None);
        openai.supports_images = false;
        let no = check_images(&[ok], Some(&openai)).unwrap();
        assert!(no.contains("does not accept images"), "{no}");
    }
}
