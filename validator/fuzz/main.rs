//! Long fuzzing runs for `ci/fuzz`:
//! `cargo run --release --features fuzzing --bin nvcf-fuzz -- [TOTAL_EXECS] [SECONDS] [ORACLE_INPUTS]`
//! (a binary behind a feature rather than an example, so a long run does not compile the
//! dev-dependencies in release mode).
//!
//! Prints executions, panics and timeouts (inputs over 2 s, stopped waiting for by the watchdog and
//! saved with their seed under `target/fuzz-findings/`) per target, then the differential oracle:
//! a sample of mutated manifests read by the real helm as helm reads rendered manifests and by the
//! validator as `check --manifests` reads them, batched into few helm runs (`tests/fuzz/helm_oracle.rs`).
//! Exit 1 when anything panicked, timed out or read other documents than helm.

#[path = "../tests/fuzz/harness.rs"]
mod harness;
#[path = "../tests/fuzz/helm_oracle.rs"]
mod helm_oracle;

/// The repository and the pinned tools (the test support module needs dev-dependencies).
mod support {
    use std::path::{Path, PathBuf};
    pub fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("validator/ has a parent")
            .to_path_buf()
    }
    pub fn tool(name: &str) -> PathBuf {
        let local = repo().join(".tools/bin").join(name);
        if local.is_file() {
            return local;
        }
        PathBuf::from(name)
    }
}

use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--recheck") {
        std::process::exit(recheck(&args[2..]));
    }
    let total: u64 = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(1_200_000);
    let secs: u64 = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(1800);
    let oracle_n: usize = args.get(3).and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let seed: u64 = std::env::var("NVCF_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let repo = support::repo();
    let save_dir = repo.join("target/fuzz-findings");
    let targets = harness::targets(&repo);
    let scratch = tempfile::tempdir().unwrap();
    let per = total / targets.len() as u64;
    let start = Instant::now();
    let mut bad = false;
    let (mut all_execs, mut all_panics, mut all_slow) = (0, 0, 0);
    println!("seed {seed:#x}; {per} executions per target, at most {secs} s in all");
    println!(
        "{:16} {:>10} {:>7} {:>9} {:>10} {:>9} {:>8}",
        "target", "execs", "panics", "over 2 s", "slowest", "execs/s", "wall s"
    );
    for (i, t) in targets.iter().enumerate() {
        let left = targets.len() - i;
        let remaining = Duration::from_secs(secs).saturating_sub(start.elapsed());
        let deadline = Instant::now() + remaining / left as u32;
        let t0 = Instant::now();
        let st = harness::fuzz_saving(
            t,
            seed,
            per,
            deadline,
            Duration::from_secs(2),
            scratch.path(),
            Some(&save_dir),
        );
        let wall = t0.elapsed().as_secs_f64();
        println!(
            "{:16} {:>10} {:>7} {:>9} {:>10.1?} {:>9.0} {:>8.0}",
            t.name,
            st.execs,
            st.panics,
            st.slow,
            st.slowest,
            st.execs as f64 / wall,
            wall
        );
        if let Some(p) = &st.first_panic {
            println!("  first panicking input: {:?}", String::from_utf8_lossy(p));
        }
        for s in &st.saved {
            println!("  saved: {s}");
        }
        all_execs += st.execs;
        all_panics += st.panics;
        all_slow += st.slow;
        bad |= st.panics > 0 || st.slow > 0;
    }
    println!(
        "{:16} {:>10} {:>7} {:>9}   ({:.0} s)",
        "total",
        all_execs,
        all_panics,
        all_slow,
        start.elapsed().as_secs_f64()
    );
    let t0 = Instant::now();
    match oracle(&targets[0], seed, oracle_n) {
        Ok(o) => {
            println!(
                "differential oracle ({} mutated manifests, {} helm runs, {:.0} s): {} read alike ({} documents), \
                 {} refused by both, {} refused by the validator where helm reads them, {} read differently",
                o.inputs,
                o.helm_runs,
                t0.elapsed().as_secs_f64(),
                o.alike,
                o.docs,
                o.both_refused,
                o.validator_refused,
                o.differ
            );
            bad |= o.differ > 0;
        }
        Err(e) => {
            println!("differential oracle failed: {e}");
            bad = true;
        }
    }
    std::process::exit(if bad { 1 } else { 0 });
}

/// `nvcf-fuzz --recheck FILE...`: the oracle over saved inputs (e.g. `target/fuzz-findings/oracle-*`),
/// to confirm a fix. Exit 1 when any is still read differently.
fn recheck(files: &[String]) -> i32 {
    let inputs: Vec<(String, Vec<u8>)> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (format!("{i:06}.yaml"), std::fs::read(f).expect("readable input")))
        .collect();
    let theirs = helm_oracle::helm_reads(&support::tool("helm"), &inputs).expect("helm runs");
    let mut bad = 0;
    for (((name, text), theirs), file) in inputs.iter().zip(theirs).zip(files) {
        let ours = helm_oracle::validator_reads(name, text);
        let verdict = if ours.refused() || ours.same(&theirs) {
            "ok"
        } else {
            "DIFFERS"
        };
        bad += (verdict != "ok") as i32;
        println!("{verdict:8} {file}\n  helm:      {theirs}\n  validator: {ours}");
    }
    (bad > 0) as i32
}

#[derive(Default)]
struct Oracle {
    inputs: usize,
    helm_runs: usize,
    alike: usize,
    docs: usize,
    both_refused: usize,
    validator_refused: usize,
    differ: usize,
}

/// Mutate `n` manifests, read them with the real helm (1,000 per run) and with the validator.
fn oracle(t: &harness::Target, seed: u64, n: usize) -> Result<Oracle, String> {
    let inputs = harness::mutated_manifests(t, seed, n);
    let helm = support::tool("helm");
    let save_dir = support::repo().join("target/fuzz-findings");
    let mut o = Oracle {
        inputs: inputs.len(),
        ..Oracle::default()
    };
    for batch in inputs.chunks(1000) {
        let theirs = helm_oracle::helm_reads(&helm, batch)?;
        o.helm_runs += 1;
        for ((name, text), theirs) in batch.iter().zip(theirs) {
            let ours = helm_oracle::validator_reads(name, text);
            match (&ours, theirs.refused()) {
                (helm_oracle::Reading::Refused(_), true) => o.both_refused += 1,
                (helm_oracle::Reading::Refused(_), false) => o.validator_refused += 1,
                _ if ours.same(&theirs) => {
                    o.alike += 1;
                    o.docs += ours.len();
                }
                _ => {
                    o.differ += 1;
                    let _ = std::fs::create_dir_all(&save_dir);
                    let path = save_dir.join(format!("oracle-seed{seed:#x}-{name}"));
                    let _ = std::fs::write(&path, text);
                    if o.differ <= 5 {
                        println!(
                            "  differs ({}): {:?}\n    helm:      {theirs}\n    validator: {ours}",
                            path.display(),
                            String::from_utf8_lossy(text)
                        );
                    }
                }
            }
        }
    }
    Ok(o)
}
