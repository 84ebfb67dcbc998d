//! A mutation fuzzer for every parser of outside input, on the stable toolchain and without extra
//! crates: seeds from the repository (fixtures, the YAML corpus, the policy, the lock, PEM), byte
//! and token mutations from a seeded xorshift generator, each input run under `catch_unwind`.
//! Shared by the bounded CI test (`tests/fuzz_budget.rs`) and the long runs of `ci/fuzz`
//! (`fuzz/main.rs`).
#![allow(dead_code)]

use nvcf_validate::policy::Policy;
use nvcf_validate::rules::{self, Ctx, Scope};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Tokens that reach the corners of YAML, Kubernetes objects, PEM and helmfile states.
const DICT: &[&str] = &[
    "---",
    "--- ",
    "...",
    "\r",
    "\r\n",
    "\u{85}",
    "\u{2028}",
    "\u{2029}",
    "\t",
    "<<: ",
    "<<: *a",
    "&a ",
    "*a",
    "!!binary ",
    "!!str ",
    "!!int ",
    "!!float ",
    "!custom ",
    "? ",
    ": ",
    "- ",
    "[",
    "]",
    "{",
    "}",
    ",",
    "'",
    "\"",
    "|",
    ">",
    "#",
    "yes",
    "no",
    "on",
    "off",
    "~",
    "null",
    ".inf",
    ".nan",
    "0x",
    "0o",
    "0755",
    "1e400",
    "-0",
    "1_000",
    "9223372036854775807",
    "18446744073709551615",
    "2147483647",
    "replicas: 2147483647",
    "{pod_name}",
    "{namespace}",
    "kind: List\nitems:\n",
    "apiVersion: v1\n",
    "kind: Pod\n",
    "metadata:\n  name: x\n",
    "--quic-insecure",
    "-----BEGIN CERTIFICATE-----\n",
    "-----END CERTIFICATE-----\n",
    "-----BEGIN PRIVATE KEY-----\n",
    "MIIB",
    "====",
    "# Source: x/helmfile.yaml\n",
    "releases:\n",
    "needs: [",
    "environments:\n",
    "https://",
    "http://u:p@h/",
    "*.",
    "\u{feff}",
    "\0",
    "\u{ffff}",
    "é",
    "%",
    "@",
    "`",
];

pub fn mutate(rng: &mut Rng, seeds: &[Vec<u8>], input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(8) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                v.drain(at.min(end)..end);
            }
            2 if !v.is_empty() => {
                let start = rng.below(v.len());
                let end = (start + 1 + rng.below(64)).min(v.len());
                let chunk = v[start..end].to_vec();
                v.splice(at..at, chunk);
            }
            3 if !seeds.is_empty() => {
                let other = &seeds[rng.below(seeds.len())];
                if !other.is_empty() {
                    let start = rng.below(other.len());
                    let end = (start + 1 + rng.below(256)).min(other.len());
                    v.splice(at..at, other[start..end].iter().copied());
                }
            }
            4 => {
                let i = rng.below(v.len() + 1);
                v.insert(i.min(v.len()), b'\n');
            }
            _ => {
                let tok = DICT[rng.below(DICT.len())].as_bytes();
                v.splice(at..at, tok.iter().copied());
            }
        }
    }
    v.truncate(64 * 1024);
    v
}

/// One parser of outside input.
pub struct Target {
    pub name: &'static str,
    pub seeds: Vec<Vec<u8>>,
    pub run: fn(&[u8], &Path),
}

fn files_under(dir: &Path, exts: &[&str], out: &mut Vec<Vec<u8>>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, exts, out);
        } else if exts.iter().any(|e| p.to_string_lossy().ends_with(e)) {
            if let Ok(b) = std::fs::read(&p) {
                if b.len() <= 64 * 1024 {
                    out.push(b);
                }
            }
        }
    }
}

pub fn targets(repo: &Path) -> Vec<Target> {
    let t = repo.join("validator/tests");
    let mut manifests = Vec::new();
    files_under(&t.join("fixtures"), &[".yaml"], &mut manifests);
    files_under(&t.join("yaml_corpus"), &[".yaml"], &mut manifests);
    let mut policies = Vec::new();
    files_under(repo, &["validator-policy.yaml"], &mut policies);
    files_under(&t.join("fixtures"), &["policy.yaml"], &mut policies);
    policies.push(b"settings:\n  neverWaive: [insecure-flag]\nwaivers:\n  - rule: image-pinned\n    reason: r\n    expires: 2030-01-01\n".to_vec());
    let mut locks = vec![std::fs::read(repo.join("charts.lock.yaml")).unwrap_or_default()];
    locks.push(b"charts:\n  - {release: a, chart: b, repository: oci://r, version: 1.0.0, sha256: \"0000000000000000000000000000000000000000000000000000000000000000\"}\n".to_vec());
    let mut pems = Vec::new();
    files_under(&t.join("fixtures"), &[".pem", ".crt"], &mut pems);
    files_under(&repo.join("values"), &[".pem", ".crt"], &mut pems);
    if pems.is_empty() {
        pems.push(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".to_vec());
    }
    let builds = vec![
        b"---\n# Source: /s/helmfile.yaml\nenvironments:\n  default: {}\nreleases:\n- name: a\n  namespace: n\n  chart: ./charts/a\n  needs: [n/b]\n  values:\n  - {x: 1}\n- name: b\n  namespace: n\n  chart: oci://r.example.com/c\n  version: 1.0.0\n".to_vec(),
        b"# Source: /s/helmfile.d/a.yaml\nrepositories:\n- name: r\n  url: https://charts.example.com\nreleases:\n- {name: c, chart: r/c, version: '>1', installed: false}\n---\n# Source: /s/helmfile.yaml\nhelmfiles: [helmfile.d/a.yaml]\n".to_vec(),
    ];
    vec![
        Target {
            name: "manifests",
            seeds: manifests,
            run: run_manifests,
        },
        Target {
            name: "helmfile-build",
            seeds: builds,
            run: run_build,
        },
        Target {
            name: "policy",
            seeds: policies,
            run: run_policy,
        },
        Target {
            name: "lock",
            seeds: locks,
            run: run_lock,
        },
        Target {
            name: "pem",
            seeds: pems,
            run: run_pem,
        },
        Target {
            name: "config-files",
            seeds: config_seeds(),
            run: run_config_files,
        },
        Target {
            name: "chart-template",
            seeds: template_seeds(),
            run: run_chart_template,
        },
        Target {
            name: "chart-archive",
            seeds: archive_seeds(),
            run: run_chart_archive,
        },
    ]
}

/// Chart templates as the gate scans them for reads of the release revision (and `lookup`).
fn template_seeds() -> Vec<Vec<u8>> {
    [
        "kind: ConfigMap\ndata:\n  r: {{ .Release.Revision | quote }}\n",
        "{{- /* .Release.Revision */ -}}\n{{ $r := .Release }}{{ with .Release }}{{ .Name }}{{ end }}\n",
        "{{ index .Release \"Revision\" }} {{ template \"x\" .Release }} {{ .Values.a.Revision }} `{{ \"}}\" }}`\n",
        "{{ (lookup \"v1\" \"Secret\" \"ns\" \"n\").data | toJson }}\n{{ if gt (int $.Release.Revision) 1 }}x{{ end }}",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// A chart template read as the gate reads one (`stack::load::reads_revision`).
pub fn run_chart_template(input: &[u8], _: &Path) {
    let _ = nvcf_validate::stack::load::reads_revision(&String::from_utf8_lossy(input));
}

/// Chart archives as helm packs them: a chart, and one vendoring a subchart archive.
fn archive_seeds() -> Vec<Vec<u8>> {
    use flate2::{write::GzEncoder, Compression};
    let tgz = |files: &[(&str, &[u8])]| {
        let mut b = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
        for (name, data) in files {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    };
    let sub = tgz(&[
        ("sub/Chart.yaml", b"apiVersion: v2\nname: sub\nversion: 1.0.0\n"),
        (
            "sub/templates/cm.yaml",
            b"r: {{ .Release.Revision }}\n{{ lookup \"v1\" \"Secret\" \"\" \"\" }}\n",
        ),
    ]);
    vec![
        tgz(&[
            ("c/Chart.yaml", b"apiVersion: v2\nname: c\nversion: 0.1.0\n"),
            (
                "c/templates/a.yaml",
                b"kind: ConfigMap\ndata: {r: \"{{ .Release.Name }}\"}\n",
            ),
        ]),
        tgz(&[
            ("c/Chart.yaml", b"apiVersion: v2\nname: c\nversion: 0.1.0\n"),
            ("c/charts/sub-1.0.0.tgz", &sub),
        ]),
    ]
}

/// A chart archive read as the gate reads a remote chart's tarball: every file, vendored subchart
/// archives included, for `lookup` and reads of the release revision (`stack::chart_files`'
/// bounded reader under `stack::load::lookup_calls` and `revision_calls`).
pub fn run_chart_archive(input: &[u8], scratch: &Path) {
    let p = scratch.join("chart.tgz");
    if std::fs::write(&p, input).is_ok() {
        let _ = nvcf_validate::stack::load::lookup_calls(&p);
        let _ = nvcf_validate::stack::load::revision_calls(&p);
    }
}

/// Files a ConfigMap or Secret may carry, one per format the config reader parses (and markup,
/// scripts, text no parser reads), for `run_config_files`.
fn config_seeds() -> Vec<Vec<u8>> {
    [
        "apiVersion: v1\nkind: Config\nclusters:\n- name: hub\n  cluster: {server: 'https://h:6443', insecure-skip-tls-verify: true}\n",
        "{\"upstream\": {\"url\": \"http://api.example.net\", \"skipTLSVerify\": true, \"peers\": [1, 2.5, null]}}",
        "[serversTransport]\ninsecureSkipVerify = true\n[[servers]]\nurl = \"http://a:1\"\nwhen = 1979-05-27T07:32:00Z\n",
        "; comment\ntop=1\n[client]\nssl_verify = 0\nhost: db.example.net\n",
        "vault {\n  address = \"https://openbao:8200\"\n  tls_skip_verify = true\n}\nlistener \"tcp\" { tls_disable = 1 }\n",
        "#!/bin/sh\ncurl -fsSk http://a/x\n",
        "<html><a href=\"http://example.org\">x</a></html>",
        "server { listen 80; proxy_pass http://b:8080; }",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// A ConfigMap/Secret file read as the insecure rules read it: every name shape (extensions and
/// content sniffing), every parser, the leaves of what parses.
pub fn run_config_files(input: &[u8], _: &Path) {
    let Ok(text) = std::str::from_utf8(input) else { return };
    let _ = nvcf_validate::config_files::fuzz_read(text);
}

/// Rendered manifests exactly as `check --manifests` reads and judges them: the production
/// reader (`parse_manifests`: `yaml::manifest_documents`, lists expanded, identities required),
/// the production graph (`engine::manifests_graph`: `--namespace default`, scopes from the
/// built-in table and the input's CRDs), then every object rule.
pub fn run_manifests(input: &[u8], _: &Path) {
    let Ok(text) = std::str::from_utf8(input) else { return };
    let Ok(docs) = nvcf_validate::render::manifests::parse_manifests("fuzz.yaml", text, "") else {
        return;
    };
    let policy = Policy::default();
    let g = nvcf_validate::engine::manifests_graph(docs, "default", &policy);
    let ctx = Ctx {
        environment: "",
        stack: None,
        state: None,
        graph: &g,
        policy: &policy,
        status: &[],
        now: time::OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000),
        // Schema validation is its own parser of trusted schemas, not of outside input.
        schemas: None,
        routers_found: Default::default(),
    };
    let _ = rules::run(&ctx, Scope::Objects);
}

pub fn run_build(input: &[u8], _: &Path) {
    let Ok(text) = std::str::from_utf8(input) else { return };
    let Ok(docs) = nvcf_validate::tools::build::parse_build(text) else {
        return;
    };
    let entry = Path::new("/s/helmfile.yaml");
    for env in nvcf_validate::stack::load::environment_names(&docs, entry) {
        let _ = nvcf_validate::stack::load::env_state(&env, &docs, Path::new("/s"), entry);
    }
}

pub fn run_policy(input: &[u8], _: &Path) {
    let Ok(text) = std::str::from_utf8(input) else { return };
    let _ = Policy::parse(text, "fuzz-policy.yaml", nvcf_validate::rules::family_of);
}

pub fn run_lock(input: &[u8], _: &Path) {
    let Ok(text) = std::str::from_utf8(input) else { return };
    let _ = nvcf_validate::stack::lock::ChartLock::parse(text, "charts.lock.yaml");
}

pub fn run_pem(input: &[u8], _: &Path) {
    let _ = nvcf_validate::pki::blocks(input);
    if let Ok(ders) = nvcf_validate::pki::parse_bundle(input) {
        for d in &ders {
            let _ = nvcf_validate::pki::describe(d);
        }
    }
    let _ = nvcf_validate::pki::fingerprint::bundle_fingerprint(input);
}

#[derive(Default, Debug)]
pub struct Stats {
    pub execs: u64,
    pub panics: u64,
    /// Inputs that ran longer than the watchdog's limit (counted as timeouts, never waited for).
    pub slow: u64,
    pub slowest: Duration,
    pub first_panic: Option<Vec<u8>>,
    /// Where each panicking or timing-out input was saved, with its execution number.
    pub saved: Vec<String>,
}

/// An input for the worker, and where its verdict goes.
type Job = (Vec<u8>, mpsc::Sender<bool>);

/// A thread that runs inputs of one target, each under `catch_unwind` (true: it panicked).
fn worker(run: fn(&[u8], &Path), scratch: PathBuf) -> mpsc::Sender<Job> {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("fuzz-worker".into())
        .stack_size(64 << 20)
        .spawn(move || {
            for (input, done) in rx {
                let r = catch_unwind(AssertUnwindSafe(|| run(&input, &scratch)));
                let _ = done.send(r.is_err());
            }
        })
        .expect("spawn the fuzz worker");
    tx
}

/// Run `target` for `execs` executions or until `deadline`, whichever comes first. Each input
/// runs on a worker thread under a watchdog: one that takes longer than `slow` is counted as a
/// timeout, saved (with the run's seed and its execution number) under `save_dir`, and left
/// behind on its own thread while a fresh worker takes the next input, so a hanging input can
/// never hang the run. After `MAX_HUNG` such inputs the target stops.
pub fn fuzz(target: &Target, seed: u64, execs: u64, deadline: Instant, slow: Duration, scratch: &Path) -> Stats {
    fuzz_saving(target, seed, execs, deadline, slow, scratch, None)
}

const MAX_HUNG: u64 = 8;

pub fn fuzz_saving(
    target: &Target,
    seed: u64,
    execs: u64,
    deadline: Instant,
    slow: Duration,
    scratch: &Path,
    save_dir: Option<&Path>,
) -> Stats {
    let mut rng = Rng::new(seed ^ (target.name.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut st = Stats::default();
    let mut pool: Vec<Vec<u8>> = target.seeds.clone();
    if pool.is_empty() {
        pool.push(Vec::new());
    }
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut jobs = worker(target.run, scratch.to_path_buf());
    let save = |st: &mut Stats, what: &str, input: &[u8]| {
        if st.saved.len() >= 20 {
            return;
        }
        let name = format!("{}-{what}-seed{seed:#x}-exec{}.bin", target.name, st.execs);
        let shown = match save_dir {
            Some(d) if std::fs::create_dir_all(d).is_ok() && std::fs::write(d.join(&name), input).is_ok() => {
                d.join(&name).display().to_string()
            }
            _ => format!("{name} (not saved)"),
        };
        st.saved.push(shown);
    };
    while st.execs < execs && Instant::now() < deadline && st.slow < MAX_HUNG {
        let base = if rng.below(8) == 0 {
            target
                .seeds
                .get(rng.below(target.seeds.len()))
                .cloned()
                .unwrap_or_default()
        } else {
            pool[rng.below(pool.len())].clone()
        };
        let input = mutate(&mut rng, &target.seeds, &base);
        let start = Instant::now();
        let (done_tx, done_rx) = mpsc::channel();
        if jobs.send((input.clone(), done_tx)).is_err() {
            jobs = worker(target.run, scratch.to_path_buf());
            continue;
        }
        st.execs += 1;
        match done_rx.recv_timeout(slow) {
            Ok(panicked) => {
                st.slowest = st.slowest.max(start.elapsed());
                if panicked {
                    st.panics += 1;
                    st.first_panic.get_or_insert_with(|| input.clone());
                    save(&mut st, "panic", &input);
                }
            }
            Err(_) => {
                // Over the limit: a timeout. The worker keeps it; a new one takes over.
                st.slow += 1;
                st.slowest = st.slowest.max(start.elapsed());
                save(&mut st, "timeout", &input);
                jobs = worker(target.run, scratch.to_path_buf());
            }
        }
        // Keep a bounded pool of recent inputs so mutations stack up.
        if pool.len() < 256 {
            pool.push(input);
        } else {
            let i = rng.below(pool.len());
            pool[i] = input;
        }
    }
    drop(jobs);
    std::panic::set_hook(prev);
    st
}

/// `n` mutated manifests (one round of `mutate`, so most stay YAML; valid UTF-8, as helm reads
/// chart files as text), named for the oracle.
pub fn mutated_manifests(t: &Target, seed: u64, n: usize) -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng::new(seed ^ 0xd1ff);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let base = &t.seeds[rng.below(t.seeds.len())];
        let m = if rng.below(3) == 0 {
            mutate(&mut rng, &t.seeds, base)
        } else {
            boundary_mutate(&mut rng, base)
        };
        let m = match String::from_utf8(m) {
            Ok(s) => s.into_bytes(),
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned().into_bytes(),
        };
        out.push((format!("{:06}.yaml", out.len()), m));
    }
    out
}

/// Document-boundary shapes at line starts (where they change how documents are cut).
const BOUNDARIES: &[&str] = &[
    "---\n",
    "--- \n",
    "---\t\n",
    "---  # c\n",
    "...\n",
    "...\n---\n",
    "# only a comment\n---\n",
    "---\n---\n",
    "---\r",
    "\r---\r",
    "--- |\n  x\n---\n",
    "%YAML 1.1\n---\n",
    "\u{feff}",
    "\u{a0}",
    "---\n  ",
    "\r\n---\r\n",
    "\u{2028}---\u{2028}",
    "--- {a: 1}\n",
    "---x: 1\n",
    "\t",
];

/// One to three boundary shapes inserted at line starts of `input`.
fn boundary_mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(3) {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(v.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1))
            .collect();
        let at = starts[rng.below(starts.len())];
        let tok = BOUNDARIES[rng.below(BOUNDARIES.len())].as_bytes();
        v.splice(at..at, tok.iter().copied());
    }
    v
}
