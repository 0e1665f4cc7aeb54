//! `read`: numbered lines of a text file, bounded per call, streaming so that a huge file
//! is never loaded whole; images as image content; binary files refused.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use base64::Engine;
use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use shard_protocol::types::{RenderDescriptor, ToolResultContent};
use tokio_util::sync::CancellationToken;

use crate::paths;
use crate::tool::{ToolContext, ToolOutput};
use crate::typed::TypedTool;
use crate::util::{blocking, lang_for, sniff_binary};

/// A displayed line longer than this (in characters) is cut with a marker.
pub const MAX_LINE_CHARS: usize = 2000;
/// Images larger than this are described instead of sent.
pub const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;
/// Skipping the rest of one cut line stops after this many bytes, so a file that is one
/// enormous line cannot make a call slow.
const LONG_LINE_SCAN_MAX: u64 = 64 * 1024 * 1024;
/// Files up to this size are counted to the end to tell the model the total line count.
const COUNT_TOTAL_MAX: u64 = 16 * 1024 * 1024;

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// File to read: relative to the working directory, absolute, or starting with `~/`.
    #[schemars(description = "")]
    pub path: String,
    /// First line to show, 1-based (default 1).
    #[schemars(description = "First line, from 1.")]
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most lines to show (default and maximum 2000).
    #[schemars(description = "")]
    #[serde(default)]
    pub limit: Option<u64>,
}

/// The `read` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadTool;

impl TypedTool for ReadTool {
    type Args = ReadArgs;
    const NAME: &'static str = "read";
    const DESCRIPTION: &'static str = "Read a file with line numbers, at most 2000 lines or 50 KB per call (the \
        result says where to continue); lines over 2000 chars are cut. PNG, JPEG, GIF, WebP come back as \
        images.";
    const READ_ONLY: bool = true;

    fn run<'a>(&'a self, args: ReadArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            if args.offset == Some(0) {
                return ToolOutput::error(
                    "invalid arguments for `read`: field `offset`: lines are numbered from 1",
                );
            }
            if args.limit == Some(0) {
                return ToolOutput::error(
                    "invalid arguments for `read`: field `limit`: must be at least 1",
                );
            }
            let path = paths::resolve(&ctx.cwd, &args.path);
            let shown = paths::display(&ctx.cwd, &path);
            let req = ReadRequest {
                path,
                shown,
                offset: args.offset.unwrap_or(1),
                limit: args
                    .limit
                    .unwrap_or(u64::MAX)
                    .min(ctx.limits.max_output_lines as u64),
                max_bytes: ctx.limits.max_output_bytes,
                accepts_images: ctx.accepts_images,
                cancel: ctx.cancel.clone(),
            };
            if let Some(editor) = &ctx.editor {
                let p = req.path.clone();
                let may = tokio::task::spawn_blocking(move || crate::editor::editor_may_read(&p));
                if may.await.unwrap_or(false)
                    && let Some(r) = editor.read(&req.path).await
                {
                    return match r {
                        Ok(text) => blocking(move || read_text(&req, text)).await,
                        Err(e) => ToolOutput::error(format!(
                            "Cannot read {} in the editor: {e}",
                            req.shown
                        )),
                    };
                }
            }
            blocking(move || read_file(&req)).await
        }
        .boxed()
    }
}

struct ReadRequest {
    path: PathBuf,
    shown: String,
    offset: u64,
    limit: u64,
    max_bytes: usize,
    accepts_images: bool,
    cancel: CancellationToken,
}

fn read_file(req: &ReadRequest) -> ToolOutput {
    let shown = &req.shown;
    let meta = match std::fs::metadata(&req.path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return ToolOutput::error(format!(
                "File not found: {shown}. Check the path (ls and find list files)."
            ));
        }
        Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!("{shown} is a directory; use ls to list it."));
    }
    if !meta.is_file() {
        // A FIFO or device could block the read forever or never end.
        return ToolOutput::error(format!(
            "{shown} is not a regular file (a device, FIFO or socket); read only reads files."
        ));
    }
    let mut file = match File::open(&req.path) {
        Ok(f) => f,
        Err(e) => return ToolOutput::error(format!("Cannot open {shown}: {e}")),
    };
    // Checked on the open file: what was opened is what is read.
    match file.metadata() {
        Ok(m) => {
            if let Some(why) = crate::util::hard_linked(&m, shown) {
                return ToolOutput::error(why);
            }
        }
        Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
    }
    let mut sniff = vec![0u8; 8192];
    let n = match read_up_to(&mut file, &mut sniff) {
        Ok(n) => n,
        Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
    };
    sniff.truncate(n);
    if let Some(mime) = image_mime(&sniff) {
        return read_image(req, file, &sniff, mime, meta.len());
    }
    if sniff_binary(&sniff) {
        return ToolOutput::error(format!(
            "{shown} is a binary file ({} bytes); read shows text only. Inspect it with bash, e.g. `file {shown}` or `xxd {shown} | head`.",
            meta.len()
        ));
    }
    let reader = BufReader::with_capacity(64 * 1024, io::Cursor::new(sniff).chain(file));
    match read_lines(req, reader, meta.len()) {
        Ok(out) => out,
        Err(ReadError::Cancelled) => ToolOutput::error("read was cancelled"),
        Err(ReadError::Io(e)) => ToolOutput::error(format!("Cannot read {shown}: {e}")),
    }
}

/// `read` of text an editor sent (its buffer, saved or not).
fn read_text(req: &ReadRequest, text: String) -> ToolOutput {
    let len = text.len() as u64;
    let reader = BufReader::new(io::Cursor::new(text.into_bytes()));
    match read_lines(req, reader, len) {
        Ok(out) => out,
        Err(ReadError::Cancelled) => ToolOutput::error("read was cancelled"),
        Err(ReadError::Io(e)) => ToolOutput::error(format!("Cannot read {}: {e}", req.shown)),
    }
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// The MIME type of a PNG, JPEG, GIF or WebP file, from its magic bytes.
pub fn image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

fn read_image(req: &ReadRequest, mut file: File, head: &[u8], mime: &str, size: u64) -> ToolOutput {
    let shown = &req.shown;
    if !req.accepts_images {
        return ToolOutput::text(format!(
            "{shown} is an image ({mime}, {size} bytes). The current model cannot view images."
        ));
    }
    if size > MAX_IMAGE_BYTES {
        return ToolOutput::error(format!(
            "{shown} is an image ({mime}) of {size} bytes, over the {MAX_IMAGE_BYTES}-byte limit; shrink it first (e.g. with bash and ImageMagick)."
        ));
    }
    let mut data = head.to_vec();
    if let Err(e) = file.read_to_end(&mut data) {
        return ToolOutput::error(format!("Cannot read {shown}: {e}"));
    }
    ToolOutput {
        content: ToolResultContent::Image {
            data: base64::engine::general_purpose::STANDARD.encode(&data),
            mime_type: mime.to_string(),
        },
        is_error: false,
        exit_code: None,
        duration_ms: None,
        render: None,
        images: Vec::new(),
    }
}

enum ReadError {
    Cancelled,
    Io(io::Error),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// How one line ended when read with a cap.
struct LineRead {
    /// Bytes of the whole line (without its newline).
    len: u64,
    /// The line went on past the scan budget; the reader stopped inside it.
    unfinished: bool,
}

/// Reads one line, keeping at most `keep` bytes of it in `out`; None at end of file.
fn read_line_capped<R: BufRead>(
    reader: &mut R,
    out: &mut Vec<u8>,
    keep: usize,
    scan_max: u64,
    cancel: &CancellationToken,
) -> Result<Option<LineRead>, ReadError> {
    out.clear();
    let mut len: u64 = 0;
    let mut since_check: u64 = 0;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((len > 0).then_some(LineRead {
                len,
                unfinished: false,
            }));
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = keep.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        len += chunk.len() as u64;
        let consumed = done.unwrap_or(chunk.len());
        reader.consume(consumed);
        if done.is_some() {
            return Ok(Some(LineRead {
                len,
                unfinished: false,
            }));
        }
        since_check += consumed as u64;
        if since_check >= 1 << 20 {
            since_check = 0;
            if cancel.is_cancelled() {
                return Err(ReadError::Cancelled);
            }
        }
        if len >= scan_max {
            return Ok(Some(LineRead {
                len,
                unfinished: true,
            }));
        }
    }
}

fn read_lines<R: BufRead>(
    req: &ReadRequest,
    mut reader: R,
    size: u64,
) -> Result<ToolOutput, ReadError> {
    let mut line = Vec::with_capacity(1024);
    let mut line_no: u64 = 0;
    // Skip to the requested offset without keeping anything.
    while line_no + 1 < req.offset {
        match read_line_capped(&mut reader, &mut line, 0, u64::MAX, &req.cancel)? {
            Some(_) => line_no += 1,
            None => {
                return Ok(ToolOutput::error(format!(
                    "offset {} is past the end of {} ({line_no} lines).",
                    req.offset, req.shown
                )));
            }
        }
    }
    let mut numbered = String::new();
    let mut body = String::new();
    let mut shown_lines: u64 = 0;
    let mut stop_note: Option<String> = None;
    let mut cut_lines = 0u64;
    let mut reached_eof = false;
    // A line read but not shown (the byte limit) still follows the shown ones.
    let mut pending: u64 = 0;
    let mut unfinished = false;
    loop {
        if shown_lines >= req.limit {
            break;
        }
        let Some(info) = read_line_capped(
            &mut reader,
            &mut line,
            MAX_LINE_CHARS * 4,
            LONG_LINE_SCAN_MAX,
            &req.cancel,
        )?
        else {
            reached_eof = true;
            break;
        };
        line_no += 1;
        let mut text = String::from_utf8_lossy(&line).into_owned();
        if line_no == 1 && text.starts_with('\u{feff}') {
            text.remove(0);
        }
        if text.ends_with('\r') && info.len == line.len() as u64 {
            text.pop();
        }
        let cut = info.len > line.len() as u64 || text.chars().count() > MAX_LINE_CHARS;
        if cut {
            cut_lines += 1;
            text = text.chars().take(MAX_LINE_CHARS).collect();
            if info.unfinished {
                text.push_str(&format!(
                    " … [line cut; it goes on for more than {} bytes]",
                    info.len
                ));
            } else {
                text.push_str(&format!(" … [line cut; {} bytes in total]", info.len));
            }
        }
        let entry = format!("{line_no:>6}\t{text}\n");
        if numbered.len() + entry.len() > req.max_bytes && shown_lines > 0 {
            line_no -= 1;
            pending = 1;
            stop_note = Some(format!(
                "the {}-byte output limit was reached",
                req.max_bytes
            ));
            // The line was consumed; the continuation hint still names it.
            break;
        }
        numbered.push_str(&entry);
        body.push_str(&text);
        body.push('\n');
        shown_lines += 1;
        if info.unfinished {
            unfinished = true;
            stop_note = Some(format!("line {line_no} is too long to scan further"));
            break;
        }
    }
    let first = req.offset;
    let last = line_no;
    let more = pending > 0 || (!reached_eof && !reader.fill_buf()?.is_empty());
    if shown_lines == 0 && !more {
        let text = if first == 1 {
            format!("{} is empty.", req.shown)
        } else {
            format!("{} has no lines from offset {first}.", req.shown)
        };
        return Ok(ToolOutput::text(text));
    }
    if more {
        let total = if size <= COUNT_TOTAL_MAX && !unfinished {
            count_remaining(&mut reader, &req.cancel)?
                .map(|rest| format!("{} lines", last + pending + rest))
        } else {
            None
        }
        .unwrap_or_else(|| format!("{size} bytes"));
        let why =
            stop_note.unwrap_or_else(|| format!("the {}-line limit was reached", shown_lines));
        numbered.push_str(&format!(
            "\n[Showing lines {first}-{last} of {} ({total}); {why}. Continue with offset={}.]\n",
            req.shown,
            last + 1
        ));
    }
    if cut_lines > 0 {
        numbered.push_str(&format!(
            "[{cut_lines} line(s) longer than {MAX_LINE_CHARS} characters were cut; use bash (e.g. cut or sed) to see them whole.]\n"
        ));
    }
    Ok(
        ToolOutput::text(numbered).with_render(RenderDescriptor::Code {
            path: Some(req.shown.clone()),
            lang: lang_for(Path::new(&req.shown)),
            text: body,
        }),
    )
}

/// Lines after the current position (counting an unterminated last line).
fn count_remaining<R: BufRead>(
    reader: &mut R,
    cancel: &CancellationToken,
) -> Result<Option<u64>, ReadError> {
    let mut count = 0u64;
    let mut last = b'\n';
    loop {
        if cancel.is_cancelled() {
            return Err(ReadError::Cancelled);
        }
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        count += buf.iter().filter(|&&b| b == b'\n').count() as u64;
        last = buf[buf.len() - 1];
        let n = buf.len();
        reader.consume(n);
    }
    if last != b'\n' {
        count += 1;
    }
    Ok(Some(count))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn req(path: &Path, offset: u64, limit: u64) -> ReadRequest {
        ReadRequest {
            path: path.to_path_buf(),
            shown: "f.txt".into(),
            offset,
            limit,
            max_bytes: 50 * 1024,
            accepts_images: true,
            cancel: CancellationToken::new(),
        }
    }

    fn text_of(out: &ToolOutput) -> String {
        match &out.content {
            ToolResultContent::Text { text } => text.clone(),
            ToolResultContent::Error { message } => message.clone(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn numbers_lines_and_hints_offset() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        let content: String = (1..=10).map(|i| format!("line {i}\r\n")).collect();
        std::fs::write(&p, format!("\u{feff}{content}")).unwrap();
        let out = read_file(&req(&p, 3, 2));
        let t = text_of(&out);
        assert!(t.starts_with("     3\tline 3\n     4\tline 4\n"), "{t}");
        assert!(t.contains("offset=5"), "{t}");
        assert!(t.contains("of f.txt (10 lines)"), "{t}");
        assert!(!t.contains('\r'));
        let t = text_of(&read_file(&req(&p, 1, 1)));
        assert!(t.starts_with("     1\tline 1\n"), "{t:?}");
        let out = read_file(&req(&p, 20, 5));
        assert!(out.is_error);
        assert!(text_of(&out).contains("past the end"));
    }

    #[test]
    fn long_lines_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.txt");
        std::fs::write(&p, format!("{}\nshort\n", "x".repeat(5000))).unwrap();
        let t = text_of(&read_file(&req(&p, 1, 100)));
        assert!(t.contains("line cut; 5000 bytes"), "{t}");
        assert!(t.contains("     2\tshort"), "{t}");
        assert!(!t.contains(&"x".repeat(2001)));
    }

    #[test]
    fn detects_images() {
        assert_eq!(image_mime(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(image_mime(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_mime(b"hello"), None);
    }
}
