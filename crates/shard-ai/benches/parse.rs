//! Placeholder; replaced by the parse benchmark.
fn main() {}
