//! The in-process test suite of the Runtime: one binary, so the suite links once. Each
//! test builds a Runtime with a recording provider injected (`Runtime::open_with`) and
//! drives it through its command channel; every model request is checked against the
//! invariants of `suite::support::recorder`, and a test whose requests broke one fails when
//! its agent is closed or dropped (no test has to ask). Tests that need a real process (stdio,
//! signals, the daemon) live in the CLI crate.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod suite;
