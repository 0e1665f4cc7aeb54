//! A `tools/call` result as Shard's tool output: text (bounded like `read`, the rest
//! saved to the session's tool-output folder), an image block for a result that is an
//! image, the images beside the text of a result that has both (when the model takes
//! images, within its limits), resource links as lines, and structured content as a
//! `tree`, `kv` or `code` render.

use serde_json::Value;
use shard_protocol::types::{Image, KvPair, RenderDescriptor, ToolResultContent, TreeNode};
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
        if let Ok(image) = check_image(data.clone(), mime_type.clone(), ctx) {
            return ToolOutput {
                content: ToolResultContent::Image {
                    data: image.data,
                    mime_type: image.mime_type,
                },
                is_error: false,
                exit_code: None,
                duration_ms: None,
                render,
                images: Vec::new(),
            };
        }
        images.push((data, mime_type));
    }
    // Text and images: the text is the content, the images ride beside it (within the
    // model's limits); one that cannot be sent is described in the text instead.
    let mut passed = Vec::new();
    for (data, mime) in images {
        let len = data.len();
        if !ctx.accepts_images {
            parts.push(format!("[image: {mime}, {len} bytes of base64, not shown]"));
            continue;
        }
        if passed.len() == MAX_IMAGES {
            parts.push(format!(
                "[image: {mime}, not shown: more than {MAX_IMAGES} images in one result]"
            ));
            continue;
        }
        match check_image(data, mime.clone(), ctx) {
            Ok(image) => passed.push(image),
            Err(why) => parts.push(format!("[image: {mime}, not shown: {why}]")),
        }
    }
    if parts.is_empty() && structured.is_none() && !passed.is_empty() {
        parts.push(format!("[{} images]", passed.len()));
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
    out.images = passed;
    out
}

/// Most images of one result passed to the model; the others are described.
const MAX_IMAGES: usize = 8;

/// The image types both model APIs take.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// An image the model can take, or why not: a type it does not accept, data that is not
/// base64, or more bytes than its limit. A bad image in the session would be sent again
/// on every later turn and break them all, so it never gets in.
fn check_image(data: String, mime_type: String, ctx: &ToolContext) -> Result<Image, String> {
    use base64::Engine;
    if !IMAGE_TYPES.contains(&mime_type.as_str()) {
        return Err("the model takes only PNG, JPEG, GIF and WebP".into());
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|_| "not valid base64".to_string())?;
    if decoded.is_empty() {
        return Err("empty".into());
    }
    if decoded.len() > ctx.image_max_bytes {
        return Err(format!(
            "{} bytes, over the model's limit of {}",
            decoded.len(),
            ctx.image_max_bytes
        ));
    }
    Ok(Image {
        kind: Default::default(),
        data: data.trim().to_string(),
        mime_type,
    })
}

/// Whether `v` has exactly the shape of a tree node, so no other structured result loses
/// fields to a tree drawing; the root must be a directory with its children listed.
fn is_tree_node(v: &Value, root: bool) -> bool {
    let Value::Object(map) = v else {
        return false;
    };
    let kind = map.get("kind").and_then(Value::as_str);
    let children = map.get("children");
    map.keys()
        .all(|k| matches!(k.as_str(), "name" | "kind" | "children"))
        && map.get("name").is_some_and(Value::is_string)
        && matches!(kind, Some("dir" | "file"))
        && (!root || (kind == Some("dir") && children.is_some()))
        && match children {
            None | Some(Value::Null) => true,
            Some(Value::Array(kids)) => kids.iter().all(|k| is_tree_node(k, false)),
            Some(_) => false,
        }
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

/// A directory tree (`{name, kind: "dir", children: [...]}`, nodes of only those keys) is a
/// `tree` render; a flat object of scalars a `kv` one; anything else pretty JSON in a `code`
/// one.
fn render_structured(v: &Value) -> RenderDescriptor {
    if is_tree_node(v, true)
        && let Ok(root) = serde_json::from_value::<TreeNode>(v.clone())
    {
        return RenderDescriptor::Tree { root };
    }
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
        // A directory tree is a tree; a node with any other key stays JSON.
        let tree = json!({"name": "src", "kind": "dir", "children": [
            {"name": "main.rs", "kind": "file"}, {"name": "util", "kind": "dir", "children": []}]});
        let out = convert(
            &json!({"content": [], "structuredContent": tree}),
            &ctx(d.path()),
        )
        .await;
        match out.render.unwrap() {
            RenderDescriptor::Tree { root } => {
                assert_eq!(root.name, "src");
                assert_eq!(root.children.unwrap()[1].name, "util");
            }
            other => panic!("{other:?}"),
        }
        let not_tree = json!({"name": "src", "kind": "dir", "children": [
            {"name": "a", "kind": "file", "size": 3}]});
        let out = convert(
            &json!({"content": [], "structuredContent": not_tree}),
            &ctx(d.path()),
        )
        .await;
        assert!(matches!(out.render, Some(RenderDescriptor::Code { .. })));
        assert!(
            matches!(nested.content, ToolResultContent::Text { ref text } if text.contains("\"a\""))
        );
    }

    #[tokio::test]
    async fn text_and_images_keep_both_within_the_models_limits() {
        let d = tempfile::tempdir().unwrap();
        let raw = json!({"content": [
            {"type": "text", "text": "title"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "image", "data": "not base64!", "mimeType": "image/png"},
            {"type": "image", "data": "AAAAAAAAAAAA", "mimeType": "image/jpeg"},
        ]});
        let mut c = ctx(d.path());
        c.image_max_bytes = 8;
        let out = convert(&raw, &c).await;
        assert_eq!(out.images.len(), 1, "{out:?}");
        assert_eq!(out.images[0].data, "iVBORw0KGgo=");
        let ToolResultContent::Text { text } = &out.content else {
            panic!("{out:?}")
        };
        assert!(text.starts_with("title\n"), "{text}");
        assert!(text.contains("not valid base64"), "{text}");
        assert!(text.contains("over the model's limit of 8"), "{text}");
        c.accepts_images = false;
        let out = convert(&raw, &c).await;
        assert!(out.images.is_empty());
        let many: Vec<Value> = (0..10)
            .map(|_| json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}))
            .collect();
        let out = convert(&json!({ "content": many }), &ctx(d.path())).await;
        assert_eq!(out.images.len(), MAX_IMAGES);
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
