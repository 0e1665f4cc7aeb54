//! Test modules of the in-process Runtime suite.

pub mod support;

mod compaction;
mod fork;
mod history;
mod hook;
mod invariants;
mod long_session;
mod modes;
mod one_shot;
mod permissions;
mod resume;
mod strict_steer;
mod tools;
mod turns;
