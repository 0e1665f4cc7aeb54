//! A test that needs what this machine lacks (a program, a kernel feature) says why and
//! passes, unless `SHARD_TEST_REQUIRE_ALL=1` (which `.ci/run` sets): there a skip fails,
//! so a green CI run proves that every test ran. Every crate's test binaries include this
//! one file (`#[path]`), so the rule is written once.

/// Records that the calling test (or the part of it the caller names) cannot run here
/// because of `reason`: prints the reason and returns, and the caller skips; under
/// `SHARD_TEST_REQUIRE_ALL=1` it panics instead, failing the test.
#[track_caller]
pub fn skip(reason: &str) {
    if std::env::var("SHARD_TEST_REQUIRE_ALL").is_ok_and(|v| v == "1") {
        panic!("SHARD_TEST_REQUIRE_ALL=1, and this test cannot run here: {reason}");
    }
    eprintln!("skipped: {reason}");
}
