//! Reading a transcript by lines without loading it: backwards from any offset (the live
//! window, the last entry) and the first line (the header).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Read size when walking backwards; doubled while a single line is longer.
const BACK_CHUNK: usize = 64 * 1024;
/// A header longer than this is not a header.
pub(crate) const MAX_HEADER: usize = 1024 * 1024;

/// Lines of `file` between `start` and `end`, last first, each with its byte offset and
/// without its `\n`. `start` must be a line start and `end` a line end (just after a `\n`,
/// or the end of the data).
pub(crate) struct RevLines<'a> {
    file: &'a File,
    start: u64,
    /// File offset of `buf[0]`.
    pos: u64,
    /// Bytes `[pos, pos + buf.len())` not yet returned.
    buf: Vec<u8>,
}

impl<'a> RevLines<'a> {
    /// Walks backwards from `end` down to `start`.
    pub(crate) fn new(file: &'a File, start: u64, end: u64) -> Self {
        RevLines {
            file,
            start,
            pos: end.max(start),
            buf: Vec::new(),
        }
    }

    /// The next older line, or `None` at `start`.
    pub(crate) fn next_line(&mut self) -> io::Result<Option<(u64, Vec<u8>)>> {
        loop {
            if self.buf.is_empty() && self.pos <= self.start {
                return Ok(None);
            }
            let body_end = if self.buf.last() == Some(&b'\n') {
                self.buf.len() - 1
            } else {
                self.buf.len()
            };
            if let Some(nl) = memchr::memrchr(b'\n', &self.buf[..body_end]) {
                let line = self.buf[nl + 1..body_end].to_vec();
                let offset = self.pos + nl as u64 + 1;
                self.buf.truncate(nl + 1);
                return Ok(Some((offset, line)));
            }
            if self.pos <= self.start {
                let line = self.buf[..body_end].to_vec();
                self.buf.clear();
                return Ok(Some((self.start, line)));
            }
            self.read_more()?;
        }
    }

    fn read_more(&mut self) -> io::Result<()> {
        let want = BACK_CHUNK.max(self.buf.len());
        let avail = self.pos - self.start;
        let n = usize::try_from(avail).map_or(want, |a| a.min(want));
        let from = self.pos - n as u64;
        let mut chunk = vec![0u8; n + self.buf.len()];
        self.file.read_exact_at(&mut chunk[..n], from)?;
        chunk[n..].copy_from_slice(&self.buf);
        self.buf = chunk;
        self.pos = from;
        Ok(())
    }
}

/// The first line of `file` (without `\n`) and the offset just after it, or `None` when
/// the file has no complete first line within [`MAX_HEADER`] bytes.
pub(crate) fn read_first_line(file: &File) -> io::Result<Option<(Vec<u8>, u64)>> {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 4096];
    loop {
        let n = file.read_at(&mut chunk, buf.len() as u64)?;
        if n == 0 {
            return Ok(None);
        }
        let old = buf.len();
        buf.extend_from_slice(&chunk[..n]);
        if let Some(nl) = memchr::memchr(b'\n', &buf[old..]) {
            let end = old + nl;
            buf.truncate(end);
            return Ok(Some((buf, end as u64 + 1)));
        }
        if buf.len() > MAX_HEADER {
            return Ok(None);
        }
    }
}

/// Offset just after the last `\n` in `file[start..len]`, or `None` when there is none.
pub(crate) fn last_newline_end(file: &File, start: u64, len: u64) -> io::Result<Option<u64>> {
    let mut end = len;
    let mut chunk = vec![0u8; BACK_CHUNK];
    while end > start {
        let n = usize::try_from(end - start).map_or(BACK_CHUNK, |a| a.min(BACK_CHUNK));
        let from = end - n as u64;
        file.read_exact_at(&mut chunk[..n], from)?;
        if let Some(nl) = memchr::memrchr(b'\n', &chunk[..n]) {
            return Ok(Some(from + nl as u64 + 1));
        }
        end = from;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::io::Write;

    fn lines_back(content: &[u8], start: u64) -> Vec<(u64, String)> {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(content).unwrap();
        let mut r = RevLines::new(&f, start, content.len() as u64);
        let mut out = Vec::new();
        while let Some((off, l)) = r.next_line().unwrap() {
            out.push((off, String::from_utf8(l).unwrap()));
        }
        out
    }

    #[test]
    fn walks_lines_backwards_with_offsets() {
        let got = lines_back(b"h\nab\n\ncde\n", 2);
        assert_eq!(
            got,
            vec![(6, "cde".into()), (5, String::new()), (2, "ab".into())]
        );
    }

    #[test]
    fn handles_lines_longer_than_a_chunk() {
        let big = "x".repeat(BACK_CHUNK * 3 + 17);
        let content = format!("h\n{big}\nsmall\n{big}\n");
        let got = lines_back(content.as_bytes(), 2);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].1, big);
        assert_eq!(got[1].1, "small");
        assert_eq!(got[2], (2, big));
    }

    #[test]
    fn finds_last_newline_and_first_line() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"head\nline\ntorn").unwrap();
        assert_eq!(last_newline_end(&f, 0, 14).unwrap(), Some(10));
        assert_eq!(last_newline_end(&f, 10, 14).unwrap(), None);
        let (first, end) = read_first_line(&f).unwrap().unwrap();
        assert_eq!((first.as_slice(), end), (&b"head"[..], 5));
    }
}
