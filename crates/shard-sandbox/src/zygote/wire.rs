//! The messages between a Runtime and its zygote: byte strings with a u32 length in front,
//! in one `SOCK_SEQPACKET` message each, descriptors attached.

use std::ffi::CString;
use std::os::fd::OwnedFd;

use crate::sys::{Cover, GitView, Plan, Reattach};

/// Builds a message.
#[derive(Debug, Default)]
pub(crate) struct Writer(pub(crate) Vec<u8>);

impl Writer {
    pub(crate) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
    }
}

/// Reads a message; every getter is None past the end.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        let b = self.buf.get(self.pos..self.pos + 4)?;
        self.pos += 4;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        let b = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(b)
    }
    pub(crate) fn cstring(&mut self) -> Option<CString> {
        CString::new(self.bytes()?).ok()
    }
    pub(crate) fn strings(&mut self) -> Option<Vec<CString>> {
        let n = self.u32()?;
        (0..n).map(|_| self.cstring()).collect()
    }
}

/// The setup message: the Runtime's pid (the zygote's parent, checked against its
/// parent-death race) and the plan (its ruleset travels as a descriptor).
pub(crate) fn encode_plan(runtime: u32, plan: &Plan) -> Vec<u8> {
    let mut w = Writer::default();
    w.u32(runtime);
    w.u32(plan.ns_flags as u32);
    w.u32(u32::from(plan.proc_mount));
    w.u32(plan.last_cap as u32);
    w.u32(u32::from(plan.landlock.is_some()));
    w.bytes(&plan.uid_map);
    w.bytes(&plan.gid_map);
    w.u32(plan.covers.len() as u32);
    for c in &plan.covers {
        match c {
            Cover::Tmpfs { target } => {
                w.u32(0);
                w.bytes(target.as_bytes());
                w.bytes(b"");
            }
            Cover::Bind { source, target } => {
                w.u32(1);
                w.bytes(target.as_bytes());
                w.bytes(source.as_bytes());
            }
        }
    }
    w.u32(plan.reattach.len() as u32);
    for r in &plan.reattach {
        w.bytes(r.path.as_bytes());
        w.u32(u32::from(r.optional) | (u32::from(r.read_only) << 1));
        w.u32(r.mkdirs.len() as u32);
        for d in &r.mkdirs {
            w.bytes(d.as_bytes());
        }
    }
    w.u32(plan.git.len() as u32);
    for g in &plan.git {
        w.bytes(g.dir.as_bytes());
        for list in [&g.through, &g.read_only] {
            w.u32(list.len() as u32);
            for p in list {
                w.bytes(p.as_bytes());
            }
        }
    }
    w.0
}

/// Reads a setup message back; `fds` holds the ruleset when the plan has one.
pub(crate) fn decode_plan(buf: &[u8], mut fds: Vec<OwnedFd>) -> Option<(u32, Plan)> {
    let mut r = Reader::new(buf);
    let runtime = r.u32()?;
    let ns_flags = r.u32()? as i32;
    let proc_mount = r.u32()? != 0;
    let last_cap = r.u32()? as i32;
    let has_landlock = r.u32()? != 0;
    let uid_map = r.bytes()?.to_vec();
    let gid_map = r.bytes()?.to_vec();
    let mut covers = Vec::new();
    for _ in 0..r.u32()? {
        let kind = r.u32()?;
        let target = r.cstring()?;
        let source = r.cstring()?;
        covers.push(match kind {
            0 => Cover::Tmpfs { target },
            _ => Cover::Bind { source, target },
        });
    }
    let mut reattach = Vec::new();
    for _ in 0..r.u32()? {
        let path = r.cstring()?;
        let flags = r.u32()?;
        let mkdirs = r.strings()?;
        reattach.push(Reattach {
            path,
            optional: flags & 1 != 0,
            read_only: flags & 2 != 0,
            mkdirs,
        });
    }
    let mut git = Vec::new();
    for _ in 0..r.u32()? {
        git.push(GitView {
            dir: r.cstring()?,
            through: r.strings()?,
            read_only: r.strings()?,
        });
    }
    let landlock = if has_landlock { Some(fds.pop()?) } else { None };
    Some((
        runtime,
        Plan {
            ns_flags,
            uid_map,
            gid_map,
            covers,
            reattach,
            git,
            proc_mount,
            landlock,
            last_cap,
        },
    ))
}

/// A call request: working directory, arguments (the program first), environment.
pub(crate) fn encode_call(cwd: &[u8], argv: &[&[u8]], env: &[Vec<u8>]) -> Vec<u8> {
    let mut w = Writer::default();
    w.bytes(cwd);
    w.u32(argv.len() as u32);
    for a in argv {
        w.bytes(a);
    }
    w.u32(env.len() as u32);
    for e in env {
        w.bytes(e);
    }
    w.0
}

/// A decoded call request.
#[derive(Debug)]
pub(crate) struct CallMessage {
    pub(crate) cwd: CString,
    pub(crate) argv: Vec<CString>,
    pub(crate) envp: Vec<CString>,
}

pub(crate) fn decode_call(buf: &[u8]) -> Option<CallMessage> {
    let mut r = Reader::new(buf);
    let cwd = r.cstring()?;
    let argv = r.strings()?;
    let envp = r.strings()?;
    if argv.is_empty() {
        return None;
    }
    Some(CallMessage { cwd, argv, envp })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_plan_and_a_call_survive_the_trip() {
        let plan = Plan {
            ns_flags: libc::CLONE_NEWUSER | libc::CLONE_NEWNS,
            uid_map: b"1 1 1\n".to_vec(),
            gid_map: b"2 2 1\n".to_vec(),
            covers: vec![
                Cover::Tmpfs {
                    target: CString::new("/h").unwrap(),
                },
                Cover::Bind {
                    source: CString::new("/t/x").unwrap(),
                    target: CString::new("/tmp").unwrap(),
                },
            ],
            reattach: vec![Reattach {
                path: CString::new("/h/w").unwrap(),
                optional: true,
                read_only: true,
                mkdirs: vec![CString::new("/h/w").unwrap()],
            }],
            git: vec![GitView {
                dir: CString::new("/w/.git").unwrap(),
                through: vec![CString::new("/w/.git/objects").unwrap()],
                read_only: vec![CString::new("/w/.git/config").unwrap()],
            }],
            proc_mount: true,
            landlock: None,
            last_cap: 40,
        };
        let (pid, back) = decode_plan(&encode_plan(7, &plan), Vec::new()).unwrap();
        assert_eq!(pid, 7);
        assert_eq!(format!("{plan:?}"), format!("{back:?}"));
        let msg = encode_call(b"/w", &[b"bash", b"-c", b"true"], &[b"A=1".to_vec()]);
        let call = decode_call(&msg).unwrap();
        assert_eq!(call.argv.len(), 3);
        assert_eq!(call.envp[0].as_bytes(), b"A=1");
        assert!(decode_call(&msg[..msg.len() - 1]).is_none());
    }
}
