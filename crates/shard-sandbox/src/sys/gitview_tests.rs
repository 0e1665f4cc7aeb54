#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::super::mounts::move_mount;
use super::*;

#[path = "../../../../tests/support/skip.rs"]
mod skip;

fn c(p: &std::path::Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

/// Writes `data` to `path` with system calls only (in a forked child).
///
/// # Safety
/// Async-signal-safe.
unsafe fn put(path: &CStr, data: &[u8]) -> bool {
    // SAFETY: system calls on live buffers.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        n == data.len() as isize
    }
}

/// Where the kernel refuses a git dir's overlay (here: its file system is already an
/// overlay of an overlay, deeper than the kernel stacks), the git dir is mounted
/// read-only as a whole, `objects/` included: fail closed, never writable.
#[test]
fn a_git_dir_whose_overlay_the_kernel_refuses_is_read_only_as_a_whole() {
    let d = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(d.path()).unwrap();
    for p in ["l1/g/objects", "u1", "w1", "m1", "u2", "w2", "m2"] {
        std::fs::create_dir_all(d.join(p)).unwrap();
    }
    let opts = |lower: &str, n: u8| {
        CString::new(format!(
            "userxattr,lowerdir={},upperdir={},workdir={}",
            d.join(lower).display(),
            d.join(format!("u{n}")).display(),
            d.join(format!("w{n}")).display()
        ))
        .unwrap()
    };
    let (opts1, opts2) = (opts("l1", 1), opts("m1", 2));
    let (m1, m2) = (c(&d.join("m1")), c(&d.join("m2")));
    let g = d.join("m2/g");
    let views = vec![GitView {
        dir: c(&g),
        through: vec![c(&g.join("objects"))],
        read_only: Vec::new(),
    }];
    let (lock, object) = (c(&g.join("index.lock")), c(&g.join("objects/x")));
    let uid = format!("{0} {0} 1", nix::unistd::getuid().as_raw());
    let gid = format!("{0} {0} 1", nix::unistd::getgid().as_raw());
    // SAFETY: the child only makes system calls on data prepared before the fork, and
    // `mount_views`, which allocates nothing.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: in the forked child; see above.
        unsafe {
            let code = (|| {
                if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                    return 77;
                }
                put(c"/proc/self/setgroups", b"deny");
                if !put(c"/proc/self/uid_map", uid.as_bytes())
                    || !put(c"/proc/self/gid_map", gid.as_bytes())
                {
                    return 77;
                }
                let null = std::ptr::null();
                if libc::mount(
                    null,
                    c"/".as_ptr(),
                    null,
                    libc::MS_REC | libc::MS_PRIVATE,
                    null.cast(),
                ) != 0
                {
                    return 77;
                }
                for (target, opts) in [(&m1, &opts1), (&m2, &opts2)] {
                    let ov = c"overlay".as_ptr();
                    if libc::mount(ov, target.as_ptr(), ov, 0, opts.as_ptr().cast()) != 0 {
                        return 77;
                    }
                }
                let Ok(open) = mount_views(&views) else {
                    return 4;
                };
                let flags = libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC;
                for (path, code) in [(&lock, 10), (&object, 20)] {
                    let fd = libc::open(path.as_ptr(), flags, 0o644);
                    if fd >= 0 {
                        return code;
                    }
                    if errno() != libc::EROFS {
                        return code + 1;
                    }
                }
                open.close();
                0
            })();
            libc::_exit(code);
        }
    }
    let mut status = 0;
    // SAFETY: waiting for our own child into a stack variable.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    match libc::WEXITSTATUS(status) {
        0 => {}
        77 => skip::skip("no user namespace or unprivileged overlayfs here"),
        10 => panic!("index.lock could be created: the git dir was left writable"),
        20 => panic!("objects/ stayed writable"),
        other => panic!("the child failed: {other}"),
    }
    assert!(!d.join("l1/g/index.lock").exists());
}

#[test]
fn fd_paths_are_written_without_allocating() {
    let p = fd_path(7).unwrap();
    assert_eq!(CStr::from_bytes_until_nul(&p).unwrap(), c"/proc/self/fd/7");
    let p = fd_path(1234567).unwrap();
    assert_eq!(
        CStr::from_bytes_until_nul(&p).unwrap(),
        c"/proc/self/fd/1234567"
    );
    assert!(fd_path(-1).is_none());
}

/// The overlay by `/proc/self/fd` paths (for kernels before 6.13, where `fsconfig` takes
/// no layer descriptors) works as the one by descriptors: writes land in the upper layer.
#[test]
fn the_overlay_by_paths_writes_to_its_upper_layer() {
    let d = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(d.path()).unwrap();
    std::fs::create_dir_all(d.join("g")).unwrap();
    let g = c(&d.join("g"));
    let uid = format!("{0} {0} 1", nix::unistd::getuid().as_raw());
    let gid = format!("{0} {0} 1", nix::unistd::getgid().as_raw());
    // SAFETY: the child only makes system calls on data prepared before the fork.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        // SAFETY: in the forked child; see above.
        unsafe {
            let code = (|| {
                if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0 {
                    return 77;
                }
                put(c"/proc/self/setgroups", b"deny");
                if !put(c"/proc/self/uid_map", uid.as_bytes())
                    || !put(c"/proc/self/gid_map", gid.as_bytes())
                {
                    return 77;
                }
                let dir = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
                let real = libc::open(g.as_ptr(), dir);
                let Some(tmpfs) = fs_open(c"tmpfs") else {
                    return 77;
                };
                let Some(tm) = create_and_mount(tmpfs) else {
                    return 77;
                };
                libc::mkdirat(tm, c"u".as_ptr(), 0o755);
                libc::mkdirat(tm, c"w".as_ptr(), 0o700);
                let upper = libc::openat(tm, c"u".as_ptr(), dir);
                let work = libc::openat(tm, c"w".as_ptr(), dir);
                let Some(om) = overlay_by_paths(real, upper, work) else {
                    return 77;
                };
                if move_mount(om, &g) < 0 {
                    return 3;
                }
                let mut path = [0u8; 4096];
                let gb = g.as_bytes();
                path[..gb.len()].copy_from_slice(gb);
                path[gb.len()..gb.len() + 2].copy_from_slice(b"/x");
                let fd = libc::open(
                    path.as_ptr().cast(),
                    libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                    0o644,
                );
                if fd < 0 {
                    return 4;
                }
                let mut st: libc::stat = std::mem::zeroed();
                if libc::fstatat(upper, c"x".as_ptr(), &mut st, 0) != 0 {
                    return 5;
                }
                0
            })();
            libc::_exit(code);
        }
    }
    let mut status = 0;
    // SAFETY: waiting for our own child into a stack variable.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    match libc::WEXITSTATUS(status) {
        0 => {}
        77 => skip::skip("no user namespace or unprivileged overlayfs here"),
        other => panic!("the child failed: {other}"),
    }
    // The write went to the upper layer, not the real directory.
    assert!(!d.join("g/x").exists());
}
