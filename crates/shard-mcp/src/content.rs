//! A `tools/call` result as Shard's tool output: text (bounded like `read`, the rest
//! saved to the session's tool-output folder), an image block for a result that is an
//! image (when the model takes images), resource links as lines, and structured content
//! as a `kv` or `code` render.

use serde_json::Value;
use shard_protocol::types::{KvPair, RenderDescriptor, ToolResultContent};
use shard_tools::output::OutputCollector;
use shard_tools::{ToolContext, ToolOutput};

/// Converts a `CallToolResult` (as JSON, the wire form).
pub async fn convert(raw: &Value, ctx: &ToolContext) -> ToolOutput {
    let is_error = raw.get("isError").and_then(Value::as_bool).unwrap_or(false);
    // Read in place: a result can carry megabytes of base64 images.
    let blocks = raw
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let structured = raw.get("structuredContent").filter(|v| !v.is_null());
    let mut parts: Vec<String> = Vec::new();
    let mut images: Vec<(String, String)> = Vec::new();
    for b in blocks {
        let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        match b.get("type").and_then(Value::as_str).unwrap_or("") {
            "text" => parts.push(s("text")),
            "image" => images.push((s("data"), s("mimeType"))),
            "audio" => parts.push(format!("[audio: {}, not shown]", s("mimeType"))),
            "resource_link" => parts.push(format!(
                "[resource: {} <{}>{}]",
                s("name"),
                s("uri"),
                b.get("mimeType")
                    .and_then(Value::as_str)
                    .map(|m| format!(" {m}"))
                    .unwrap_or_default()
            )),
            "resource" => {
                let r = b.get("resource");
                let uri = r
                    .and_then(|r| r.get("uri"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                match r.and_then(|r| r.get("text")).and_then(Value::as_str) {
                    Some(t) => parts.push(format!("[resource <{uri}>]\n{t}")),
                    None => parts.push(format!("[resource <{uri}>: binary, not shown]")),
                }
            }
            other => parts.push(format!("[content of type `{other}`, not shown]")),
        }
    }
    let render = structured.map(render_structured);
    // An image-only result is an image block for a model that takes images.
    if parts.is_empty() && !is_error && images.len() == 1 && ctx.accepts_images {
        let (data, mime_type) = images.remove(0);
        return ToolOutput {
            content: ToolResultContent::Image { data, mime_type },
            is_error: false,
            exit_code: None,
            duration_ms: None,
            render,
        };
    }
    for (data, mime) in &images {
        parts.push(format!(
            "[image: {mime}, {} bytes of base64, not shown]",
            data.len()
        ));
    }
    if parts.is_empty()
        && let Some(v) = structured
    {
        parts.push(serde_json::to_string_pretty(v).unwrap_or_default());
    }
    let text = bounded(parts.join("\n"), ctx).await;
    let mut out = if is_error {
        ToolOutput::error(text)
    } else {
        ToolOutput::text(text)
    };
    out.render = render;
    out
}

/// Keeps the text within the `read` limits; the whole of it is saved when cut.
async fn bounded(text: String, ctx: &ToolContext) -> String {
    let limits = &ctx.limits;
    if text.len() <= limits.max_output_bytes && text.lines().count() <= limits.max_output_lines {
        return text;
    }
    let mut c = OutputCollector::new(
        limits.max_output_bytes,
        limits.max_output_lines,
        &ctx.output_dir,
        "mcp",
    );
    c.push(text.as_bytes()).await;
    c.finish(|p| p.display().to_string()).await.text
}

/// A flat object of scalars is a `kv` render; anything else pretty JSON in a `code` one.
fn render_structured(v: &Value) -> RenderDescriptor {
    if let Value::Object(map) = v
        && map.len() <= 32
        && map.values().all(|x| !x.is_object() && !x.is_array())
    {
        return RenderDescriptor::Kv {
            pairs: map
                .iter()
                .map(|(k, x)| KvPair {
                    k: k.clone(),
                    v: match x {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    },
                })
                .collect(),
        };
    }
    RenderDescriptor::Code {
        path: None,
        lang: Some("json".into()),
        text: serde_json::to_string_pretty(v).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn ctx(dir: &std::path::Path) -> ToolContext {
        ToolContext::new(dir, dir.join("out"))
    }

    #[tokio::test]
    async fn text_links_and_structured_content() {
        let d = tempfile::tempdir().unwrap();
        let raw = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain"}
        ], "structuredContent": {"n": 3, "ok": true}});
        let out = convert(&raw, &ctx(d.path())).await;
        assert_eq!(
            out.content,
            ToolResultContent::Text {
                text: "hello\n[resource: a <file:///a> text/plain]".into()
            }
        );
        match out.render.unwrap() {
            RenderDescriptor::Kv { pairs } => assert_eq!(pairs[0].v, "3"),
            other => panic!("{other:?}"),
        }
        let nested = convert(
            &json!({"content": [], "structuredContent": {"a": [1]}}),
            &ctx(d.path()),
        )
        .await;
        assert!(matches!(nested.render, Some(RenderDescriptor::Code { .. })));
        assert!(
            matches!(nested.content, ToolResultContent::Text { ref text } if text.contains("\"a\""))
        );
    }

    #[tokio::test]
    async fn images_errors_and_bounds() {
        let d = tempfile::tempdir().unwrap();
        let img = json!({"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]});
        let out = convert(&img, &ctx(d.path())).await;
        assert!(matches!(out.content, ToolResultContent::Image { .. }));
        let mut no_images = ctx(d.path());
        no_images.accepts_images = false;
        let out = convert(&img, &no_images).await;
        assert!(
            matches!(out.content, ToolResultContent::Text { ref text } if text.contains("image/png"))
        );
        let err = convert(
            &json!({"isError": true, "content": [{"type": "text", "text": "bad"}]}),
            &ctx(d.path()),
        )
        .await;
        assert!(err.is_error);
        let big = "line\n".repeat(10_000);
        let out = convert(
            &json!({"content": [{"type": "text", "text": big}]}),
            &ctx(d.path()),
        )
        .await;
        match out.content {
            ToolResultContent::Text { text } => {
                assert!(text.len() < 60_000);
                assert!(text.contains("full output saved to"), "{text}");
            }
            other => panic!("{other:?}"),
        }
    }
}
