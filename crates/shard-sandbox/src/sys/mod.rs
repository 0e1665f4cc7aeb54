//! Every `unsafe` of the project: raw Linux system calls for namespaces, mounts, Landlock
//! and capabilities, the code that runs between `fork` and `exec`, the zygote's process
//! plumbing, and the one-time environment detach at process start.
//!
//! Code that runs in a forked child of a multi-threaded process may only make
//! async-signal-safe calls: everything it touches (paths, maps, file descriptors) is
//! prepared in the parent, and the child allocates nothing, takes no lock and only issues
//! system calls. The zygote is single-threaded, so its children are not bound by that.

mod enter;
mod gitview;
mod landlock;
mod mounts;
mod process;
mod writeback;
pub mod zygote;

pub use enter::{Cover, Failure, MAX_CLONES, Plan, Reattach, Stage};
pub use gitview::{GitView, LOUD, MAX_GIT_VIEWS, THROUGH};
pub use landlock::{landlock_abi, landlock_allow, landlock_ruleset, ll};
pub use process::{default_sigpipe, detach_environment, install, probe};
