//! Bounded fuzzing in CI: every parser of outside input gets a fixed number of mutated inputs
//! (`NVCF_FUZZ_EXECS`, default 3,000 per target, a few seconds in all); any panic fails the test
//! and prints the input. Long runs: `ci/fuzz`.

#[path = "fuzz/harness.rs"]
mod harness;
mod support;

use std::time::{Duration, Instant};

#[test]
fn no_parser_of_outside_input_panics() {
    let execs: u64 = std::env::var("NVCF_FUZZ_EXECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_000);
    let scratch = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for t in harness::targets(&support::repo()) {
        assert!(!t.seeds.is_empty(), "{} has no seeds", t.name);
        let st = harness::fuzz(
            &t,
            0x5eed,
            execs,
            Instant::now() + Duration::from_secs(120),
            Duration::from_secs(2),
            scratch.path(),
        );
        eprintln!(
            "{:16} {:8} execs {:3} panics slowest {:?}",
            t.name, st.execs, st.panics, st.slowest
        );
        if let Some(p) = st.first_panic {
            failures.push(format!(
                "{}: {} panics, first input: {:?}",
                t.name,
                st.panics,
                String::from_utf8_lossy(&p)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
