//! Bounded fuzzing in CI: every parser of outside input gets a fixed number of mutated inputs
//! (`NVCF_FUZZ_EXECS`, default 3,000 per target, a few seconds in all), each under the harness's
//! watchdog; any panic or input over 2 s fails the test and prints the input. Then a sample of
//! mutated manifests (`NVCF_FUZZ_ORACLE`, default 400) goes through the differential oracle in one
//! helm run: the validator must read helm's documents exactly or refuse. Long runs: `ci/fuzz`.

#[path = "fuzz/harness.rs"]
mod harness;
#[path = "fuzz/helm_oracle.rs"]
mod helm_oracle;
mod support;

use std::time::{Duration, Instant};

/// A budget from the environment, or `default`. Zero or a value that is not a number is an
/// error, never a run of nothing that passes.
fn env_or(name: &str, default: u64) -> u64 {
    let Ok(v) = std::env::var(name) else { return default };
    match v.trim().parse::<u64>() {
        Ok(n) if n > 0 => n,
        _ => panic!("{name}={v:?}: expected a positive number of inputs (a run of zero inputs tests nothing)"),
    }
}

#[test]
fn no_parser_of_outside_input_panics_or_hangs() {
    let execs = env_or("NVCF_FUZZ_EXECS", 3_000);
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
            "{:16} {:8} execs {:3} panics {:3} over 2 s, slowest {:?}",
            t.name, st.execs, st.panics, st.slow, st.slowest
        );
        if let Some(p) = st.first_panic {
            failures.push(format!(
                "{}: {} panics, first input: {:?}",
                t.name,
                st.panics,
                String::from_utf8_lossy(&p)
            ));
        }
        if st.execs == 0 {
            failures.push(format!("{}: ran no input at all", t.name));
        }
        if st.slow > 0 {
            failures.push(format!("{}: {} inputs over 2 s: {:?}", t.name, st.slow, st.saved));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The watchdog itself: an input that never ends is a timeout, and the run goes on.
#[test]
fn a_hanging_input_is_a_timeout_not_a_hung_run() {
    fn hangs_on_x(input: &[u8], _: &std::path::Path) {
        if input.contains(&b'x') {
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
    }
    let t = harness::Target {
        name: "hang",
        seeds: vec![b"xxxxxxxx".to_vec()],
        run: hangs_on_x,
    };
    let scratch = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let st = harness::fuzz(
        &t,
        1,
        50,
        Instant::now() + Duration::from_secs(60),
        Duration::from_millis(100),
        scratch.path(),
    );
    assert!(st.slow >= 1, "{st:?}");
    assert!(st.saved[0].contains("seed0x1-exec"), "{:?}", st.saved);
    assert!(start.elapsed() < Duration::from_secs(30), "{:?}", start.elapsed());
}

#[test]
fn mutated_manifests_read_as_helm_reads_them_or_refused() {
    let n = env_or("NVCF_FUZZ_ORACLE", 400) as usize;
    let targets = harness::targets(&support::repo());
    let inputs = harness::mutated_manifests(&targets[0], 0x5eed, n);
    let theirs = helm_oracle::helm_reads(&support::tool("helm"), &inputs).unwrap();
    let (mut alike, mut refused, mut differ) = (0, 0, Vec::new());
    for ((name, text), theirs) in inputs.iter().zip(theirs) {
        let ours = helm_oracle::validator_reads(name, text);
        if ours.refused() {
            refused += 1;
        } else if ours.same(&theirs) {
            alike += 1;
        } else {
            differ.push(format!(
                "{:?}\n  helm:      {theirs}\n  validator: {ours}",
                String::from_utf8_lossy(text)
            ));
        }
    }
    eprintln!(
        "{alike} read alike, {refused} refused by the validator, {} differ",
        differ.len()
    );
    assert!(differ.is_empty(), "{}", differ.join("\n"));
    // The sample is not all refusals: a good share of mutated manifests is read, and read alike.
    assert!(alike * 8 > n, "{alike} of {n} read alike");
}
