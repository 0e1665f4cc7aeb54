//! Landlock system calls: the ABI probe, building a ruleset, adding a rule.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use libc::{c_int, c_uint, c_void};

/// Landlock access rights (uapi `linux/landlock.h`).
pub mod ll {
    /// Execute a file.
    pub const EXECUTE: u64 = 1 << 0;
    /// Open a file for writing.
    pub const WRITE_FILE: u64 = 1 << 1;
    /// Open a file for reading.
    pub const READ_FILE: u64 = 1 << 2;
    /// Remove an empty directory or rename one.
    pub const REMOVE_DIR: u64 = 1 << 4;
    /// Unlink or rename a file.
    pub const REMOVE_FILE: u64 = 1 << 5;
    /// Create a character device.
    pub const MAKE_CHAR: u64 = 1 << 6;
    /// Create a directory.
    pub const MAKE_DIR: u64 = 1 << 7;
    /// Create a regular file.
    pub const MAKE_REG: u64 = 1 << 8;
    /// Create a unix socket.
    pub const MAKE_SOCK: u64 = 1 << 9;
    /// Create a named pipe.
    pub const MAKE_FIFO: u64 = 1 << 10;
    /// Create a block device.
    pub const MAKE_BLOCK: u64 = 1 << 11;
    /// Create a symbolic link.
    pub const MAKE_SYM: u64 = 1 << 12;
    /// Link or rename a file into another directory (ABI 2).
    pub const REFER: u64 = 1 << 13;
    /// Truncate a file (ABI 3).
    pub const TRUNCATE: u64 = 1 << 14;
    /// Bind a TCP port (ABI 4).
    pub const NET_BIND_TCP: u64 = 1 << 0;
    /// Connect a TCP socket (ABI 4).
    pub const NET_CONNECT_TCP: u64 = 1 << 1;
    /// Connecting to abstract unix sockets made outside the domain (ABI 6).
    pub const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
    /// Signalling processes outside the domain (ABI 6).
    pub const SCOPE_SIGNAL: u64 = 1 << 1;
    /// Rights that apply to a file (not only a directory).
    pub const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE;
}

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

const LANDLOCK_CREATE_RULESET_VERSION: c_uint = 1;
const LANDLOCK_RULE_PATH_BENEATH: c_int = 1;

/// The Landlock ABI version the kernel offers; 0 when Landlock is absent or disabled.
pub fn landlock_abi() -> u32 {
    // SAFETY: with a null attribute and size 0 and the VERSION flag, the call only
    // returns a number; no memory is read or written.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v < 0 { 0 } else { v as u32 }
}

/// Creates a ruleset handling the given rights. `abi` decides the attribute size.
pub fn landlock_ruleset(fs: u64, net: u64, scoped: u64, abi: u32) -> io::Result<OwnedFd> {
    let attr = RulesetAttr {
        handled_access_fs: fs,
        handled_access_net: net,
        scoped,
    };
    let size = match abi {
        0 => return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
        1..=3 => 8,
        4 | 5 => 16,
        _ => std::mem::size_of::<RulesetAttr>(),
    };
    // SAFETY: `attr` is a live, properly laid-out uapi struct of at least `size` bytes.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            size,
            0u32,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Adds "`access` is allowed beneath `dir`" to a ruleset.
pub fn landlock_allow(ruleset: &OwnedFd, dir: &OwnedFd, access: u64) -> io::Result<()> {
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: dir.as_raw_fd(),
    };
    // SAFETY: `attr` is a live packed uapi struct; both descriptors are open.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
