//! Shared test support: the recording provider and a harness around one Runtime.

pub mod agent;
pub mod blocker;
#[path = "../../../../../tests/support/pick.rs"]
pub mod pick;
pub mod recorder;

pub use agent::*;
pub use blocker::*;
pub use recorder::*;
