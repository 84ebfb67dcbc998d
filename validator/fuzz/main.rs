//! Long fuzzing runs for `ci/fuzz`:
//! `cargo run --release --features fuzzing --bin nvcf-fuzz -- [TOTAL_EXECS] [SECONDS]`
//! (a binary behind a feature rather than an example, so a long run does not compile the
//! dev-dependencies in release mode).
//! Prints executions, panics and inputs slower than 2 s per target, then a differential check of
//! a sample of the mutated manifests against the real helm (see `sample_vs_helm`). Exit 1 when
//! anything panicked, ran over 2 s or disagreed with helm.

#[path = "../tests/fuzz/harness.rs"]
mod harness;

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

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let total: u64 = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(1_200_000);
    let secs: u64 = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(1800);
    let seed: u64 = std::env::var("NVCF_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let repo = support::repo();
    let targets = harness::targets(&repo);
    let scratch = tempfile::tempdir().unwrap();
    let per = total / targets.len() as u64;
    let start = Instant::now();
    let mut bad = false;
    let (mut all_execs, mut all_panics, mut all_slow) = (0, 0, 0);
    println!(
        "{:16} {:>10} {:>7} {:>9} {:>10} {:>9}",
        "target", "execs", "panics", "over 2 s", "slowest", "execs/s"
    );
    for (i, t) in targets.iter().enumerate() {
        let left = targets.len() - i;
        let remaining = Duration::from_secs(secs).saturating_sub(start.elapsed());
        let deadline = Instant::now() + remaining / left as u32;
        let t0 = Instant::now();
        let st = harness::fuzz(t, seed, per, deadline, Duration::from_secs(2), scratch.path());
        let rate = st.execs as f64 / t0.elapsed().as_secs_f64();
        println!(
            "{:16} {:>10} {:>7} {:>9} {:>10.1?} {:>9.0}",
            t.name, st.execs, st.panics, st.slow, st.slowest, rate
        );
        if let Some(p) = &st.first_panic {
            println!("  first panicking input: {:?}", String::from_utf8_lossy(p));
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
    let (agree, differ, skipped) = sample_vs_helm(&targets[0], seed, 600);
    println!(
        "differential oracle (helm fromYaml|toJson vs the validator, first document of mutated manifests): \
         {agree} agree, {differ} differ, {skipped} not comparable (the validator refused a later document)"
    );
    bad |= differ > 0;
    std::process::exit(if bad { 1 } else { 0 });
}

/// Mutate `n` manifests, read each with the real helm and with the validator, and compare.
fn sample_vs_helm(t: &harness::Target, seed: u64, n: usize) -> (usize, usize, usize) {
    let mut rng = harness::Rng::new(seed ^ 0xd1ff);
    let d = tempfile::tempdir().unwrap();
    let chart = d.path().join("c");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::create_dir_all(chart.join("corpus")).unwrap();
    std::fs::write(chart.join("Chart.yaml"), "apiVersion: v2\nname: c\nversion: 0.1.0\n").unwrap();
    std::fs::write(
        chart.join("templates/read.yaml"),
        "{{- range $path, $_ := .Files.Glob \"corpus/*\" }}\n# {{ base $path }} {{ $.Files.Get $path | fromYaml | toJson | b64enc }}\n{{- end }}\n",
    )
    .unwrap();
    let mut inputs = BTreeMap::new();
    while inputs.len() < n {
        let base = &t.seeds[rng.below(t.seeds.len())];
        let m = harness::mutate(&mut rng, &t.seeds, base);
        // helm reads chart files as text; keep valid UTF-8 without `{{` (not templated, but tidy).
        if let Ok(s) = String::from_utf8(m) {
            inputs.insert(format!("{:04}.yaml", inputs.len()), s);
        }
    }
    for (name, text) in &inputs {
        std::fs::write(chart.join("corpus").join(name), text).unwrap();
    }
    let out = Command::new(support::tool("helm"))
        .args(["template", "x"])
        .arg(&chart)
        .env("HELM_CACHE_HOME", d.path().join("h"))
        .env("HELM_CONFIG_HOME", d.path().join("h"))
        .env("HELM_DATA_HOME", d.path().join("h"))
        .output()
        .unwrap();
    if !out.status.success() {
        println!("helm failed: {}", String::from_utf8_lossy(&out.stderr));
        return (0, 1, 0);
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (mut agree, mut differ, mut skipped) = (0, 0, 0);
    for line in text
        .lines()
        .filter_map(|l| l.strip_prefix("# "))
        .filter(|l| !l.starts_with("Source:"))
    {
        let Some((name, b64)) = line.split_once(' ') else {
            continue;
        };
        let helm_json = String::from_utf8(b64decode(b64.trim())).unwrap_or_default();
        let helm_v: serde_json::Value = serde_json::from_str(&helm_json).unwrap_or_default();
        let theirs = if helm_v.get("Error").is_some() {
            "ERROR".to_string()
        } else {
            helm_json.clone()
        };
        let ours = match nvcf_validate::yaml::documents(&inputs[name]) {
            Err(_) if theirs != "ERROR" => {
                skipped += 1;
                continue;
            }
            Err(_) => "ERROR".to_string(),
            Ok(docs) => match docs.into_iter().next().filter(|d| d.index == 0).map(|d| d.value) {
                None => "{}".into(),
                Some(v) if v.is_object() => nvcf_validate::yaml::resolve::go_json(&v),
                Some(_) => "ERROR".into(),
            },
        };
        if ours == theirs {
            agree += 1;
        } else {
            differ += 1;
            if differ <= 5 {
                println!(
                    "  differs: {:?}\n    helm:      {theirs}\n    validator: {ours}",
                    inputs[name]
                );
            }
        }
    }
    (agree, differ, skipped)
}

fn b64decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            _ => 63,
        }
    };
    let mut out = Vec::new();
    for chunk in s.as_bytes().chunks(4) {
        let pad = chunk.iter().filter(|&&c| c == b'=').count();
        let mut acc = 0u32;
        for &c in &chunk[..4 - pad] {
            acc = (acc << 6) | val(c);
        }
        acc <<= 6 * pad as u32;
        out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8][..3 - pad.min(3)]);
    }
    out
}
