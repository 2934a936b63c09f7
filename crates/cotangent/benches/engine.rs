//! Engine benchmarks (placeholder until the criterion suite lands).
fn main() {}
