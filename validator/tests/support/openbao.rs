//! What the OpenBao tests share: the PKI part of a rendered environment (provisioning script,
//! role, sign path, router Certificates), the values helmfile hands a release, cert-manager's CSRs
//! and durations (openbao_e2e.rs, openbao_raft.rs, openbao_versions.rs, operator_grade.rs).

use super::{repo, tool};
use rcgen::{CertificateParams, DistinguishedName, ExtendedKeyUsagePurpose, KeyPair, SanType};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tempfile::TempDir;

// ------------------------------------------------------------------ tools and the repository

pub fn out_text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

// ------------------------------------------------------------------ the rendered stack

/// What the default environment renders for the PKI: the provisioning script, the role
/// parameters, the sign path, and the router Certificate(s) signed through that issuer.
pub struct Rendered {
    pub script: String,
    pub role_json: Value,
    /// `<mount>/sign/<role>`
    pub sign_path: String,
    pub certificates: Vec<Value>,
    /// Every object the selected releases render.
    pub objects: Vec<Value>,
    /// `ca.crt` of `nvcf/nvcf-trust-bundle`: the bundle workers receive.
    pub trust_bundle: String,
    /// Its `nvcf.io/trust-bundle-fingerprint` annotation.
    pub trust_bundle_fingerprint: String,
    /// `trustBundle` and `trustBundleFingerprint` of the worker profile (`nvcf-worker-profile`).
    pub profile_bundle: String,
    pub profile_fingerprint: String,
    /// `ca.crt` of `openbao/openbao-pki-trust-bundle`: what provisioning anchors OpenBao's CA to.
    pub anchor: String,
    /// The operator's CA the environment was rendered with (its root is `pki.trustBundleFile`).
    pub ca: TestCa,
}

/// The operator's CA of docs/pki.md step 1, made by the real `nvcf-validate ca init`.
#[derive(Clone, Debug)]
pub struct TestCa {
    pub dir: PathBuf,
    /// Public root (the environment's `pki.trustBundleFile`).
    pub root: PathBuf,
    pub root_key: PathBuf,
    /// Intermediate certificate and key: the one-time import into OpenBao.
    pub intermediate: PathBuf,
}

pub fn ca_init(dir: &Path) -> TestCa {
    // `ca init` runs no tool and reads no clock variable: the caller's environment as it is.
    let o = Command::new(super::run::BIN)
        .args(["ca", "init", "--out"])
        .arg(dir)
        .output()
        .expect("run nvcf-validate ca init");
    assert!(o.status.success(), "nvcf-validate ca init failed:\n{}", out_text(&o));
    TestCa {
        dir: dir.to_path_buf(),
        root: dir.join("root.pem"),
        root_key: dir.join("root.key"),
        intermediate: dir.join("intermediate.pem"),
    }
}

/// One operator CA per test process (its directory lives as long as the process).
pub fn process_ca() -> &'static TestCa {
    static CA: OnceLock<TestCa> = OnceLock::new();
    CA.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("nvcf-test-ca-")
            .tempdir()
            .expect("temp dir")
            .keep();
        ca_init(&dir.join("ca"))
    })
}

impl Rendered {
    /// Write the anchor bundle the Job mounts to `dir` and point the rendered script at it and at
    /// the CA's intermediate (the Job's TRUST_BUNDLE_FILE and CA_BUNDLE_FILE).
    pub fn provision_env(&self, c: &mut Command, dir: &Path) {
        let anchor = dir.join("openbao-pki-trust-bundle.pem");
        std::fs::write(&anchor, &self.anchor).unwrap();
        c.env("TRUST_BUNDLE_FILE", &anchor)
            .env("CA_BUNDLE_FILE", &self.ca.intermediate);
    }
}

pub fn render_default() -> Rendered {
    render_pki("default")
}

/// The openbao-issuer and nvcf-pki releases of environment `env`, rendered with the pinned tools
/// and the process's operator CA as the published root.
pub fn render_pki(env: &str) -> Rendered {
    render_pki_with(env, process_ca())
}

/// As `render_pki`, with `ca`'s root as `pki.trustBundleFile` (and no example material).
pub fn render_pki_with(env: &str, ca: &TestCa) -> Rendered {
    let out = Command::new(tool("helmfile"))
        .current_dir(repo())
        .args(["--file", "helmfile.yaml", "--environment", env, "--helm-binary"])
        .arg(tool("helm"))
        .arg("--state-values-set")
        .arg(format!("pki.trustBundleFile={}", ca.root.display()))
        .args(["--state-values-set", "pki.allowExampleMaterial=false"])
        .args([
            "--no-color",
            "--selector",
            "name=openbao-issuer",
            "--selector",
            "name=nvcf-pki",
        ])
        .args(["template", "--skip-deps"])
        .output()
        .expect("run helmfile");
    assert!(
        out.status.success(),
        "helmfile -e {env} template failed:\n{}",
        out_text(&out)
    );
    let text = String::from_utf8(out.stdout).expect("rendered YAML is UTF-8");
    let docs = nvcf_validate::yaml::documents(&text).expect("rendered YAML parses");
    let find_cm = |name: &str| {
        docs.iter()
            .map(|d| &d.value)
            .find(|v| v["kind"] == "ConfigMap" && v["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("environment {env} renders no ConfigMap {name}"))
            .clone()
    };
    let provision = find_cm("openbao-pki-provision");
    let role = find_cm("openbao-pki-role");
    let script = provision["data"]["provision.sh"]
        .as_str()
        .expect("provision.sh is a string")
        .to_string();
    let role_json: Value = serde_json::from_str(role["data"]["role.json"].as_str().expect("role.json is a string"))
        .expect("role.json is JSON");
    let sign_path = role["data"]["path"]
        .as_str()
        .expect("openbao-pki-role has key path")
        .to_string();
    let issuer = role["data"]["issuer"]
        .as_str()
        .expect("openbao-pki-role has key issuer")
        .to_string();
    let certificates: Vec<Value> = docs
        .iter()
        .map(|d| d.value.clone())
        .filter(|v| {
            v["kind"] == "Certificate"
                && v["spec"]["issuerRef"]["kind"] == "ClusterIssuer"
                && v["spec"]["issuerRef"]["name"] == issuer.as_str()
        })
        .collect();
    assert!(
        !certificates.is_empty(),
        "no rendered Certificate is issued by ClusterIssuer {issuer}"
    );
    let bundle_cm = find_cm("nvcf-trust-bundle");
    let profile_cm = find_cm("nvcf-worker-profile");
    let anchor_cm = find_cm("openbao-pki-trust-bundle");
    let profile: Value =
        nvcf_validate::yaml::value(profile_cm["data"]["profile.yaml"].as_str().unwrap()).expect("profile.yaml parses");
    Rendered {
        script,
        role_json,
        sign_path,
        certificates,
        objects: docs.into_iter().map(|d| d.value).collect(),
        trust_bundle: bundle_cm["data"]["ca.crt"].as_str().unwrap().to_string(),
        trust_bundle_fingerprint: bundle_cm["metadata"]["annotations"]["nvcf.io/trust-bundle-fingerprint"]
            .as_str()
            .unwrap()
            .to_string(),
        profile_bundle: profile["trustBundle"].as_str().unwrap().to_string(),
        profile_fingerprint: profile["trustBundleFingerprint"].as_str().unwrap().to_string(),
        anchor: anchor_cm["data"]["ca.crt"].as_str().unwrap().to_string(),
        ca: ca.clone(),
    }
}

/// A shell assignment `NAME='value'` of the rendered script (the chart single-quotes values).
pub fn script_var(script: &str, name: &str) -> String {
    let prefix = format!("{name}=");
    let line = script
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("provision.sh assigns no {name}"));
    let v = &line[prefix.len()..];
    let v = v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')).unwrap_or(v);
    v.replace("'\\''", "'")
}

/// `2160h`, `90m`, `30s`, `1h30m` (Go/cert-manager durations) in seconds.
pub fn duration_secs(s: &str) -> u64 {
    let (mut total, mut num) = (0u64, String::new());
    for c in s.chars() {
        if c.is_ascii_digit() {
            num.push(c);
            continue;
        }
        let n: u64 = num.parse().unwrap_or_else(|_| panic!("duration {s:?}"));
        num.clear();
        total += n * match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => panic!("duration {s:?}: unit {c:?}"),
        };
    }
    assert!(num.is_empty(), "duration {s:?} has no unit");
    total
}

/// How cert-manager prints a duration (Go's time.Duration.String()).
pub fn go_duration(secs: u64) -> String {
    format!("{}h{}m{}s", secs / 3600, secs % 3600 / 60, secs % 60)
}

pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

// ------------------------------------------------------------------ a dev server and its CLI

/// The real OpenBao dev server (`bao server -dev`: in memory, unsealed) on a free loopback port,
/// with a known root token and a HOME of its own; killed when dropped.
pub struct DevServer {
    child: Child,
    pub addr: String,
    pub root_token: String,
    pub home: TempDir,
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `PATH` with the pinned `bao` first.
pub fn bao_path() -> std::ffi::OsString {
    let mut path = vec![tool("bao").parent().unwrap().to_path_buf()];
    if let Some(p) = std::env::var_os("PATH") {
        path.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(path).unwrap()
}

impl DevServer {
    /// Start one and wait until `bao status` answers; a port taken between choosing and binding
    /// (the server exits) is retried with another, three times.
    pub fn start(root_token: &str) -> DevServer {
        let mut last = String::new();
        for _ in 0..3 {
            let home = TempDir::new().unwrap();
            let addr = format!("127.0.0.1:{}", free_port());
            let log = std::fs::File::create(home.path().join("bao.log")).unwrap();
            let child = Command::new(tool("bao"))
                .args(["server", "-dev", "-dev-no-store-token"])
                .arg(format!("-dev-listen-address={addr}"))
                .arg(format!("-dev-root-token-id={root_token}"))
                .env_clear()
                .env("HOME", home.path())
                .env("PATH", bao_path())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .stdin(Stdio::null())
                .spawn()
                .expect("start bao server -dev");
            let mut b = DevServer {
                child,
                addr,
                root_token: root_token.to_string(),
                home,
            };
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = b.child.try_wait() {
                    break; // exited: port taken or bad flags; retry with another port
                }
                if b.cli(root_token, &["status"]).status.success() {
                    return b;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            last = std::fs::read_to_string(b.home.path().join("bao.log")).unwrap_or_default();
        }
        panic!("OpenBao dev server did not become healthy; last log:\n{last}");
    }

    /// A hermetic command environment: only what a script and the CLI need, acting as `token`.
    pub fn command(&self, program: &Path, token: &str) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .env("HOME", self.home.path())
            .env("PATH", bao_path())
            .env("BAO_ADDR", format!("http://{}", self.addr))
            .env("BAO_TOKEN", token)
            .stdin(Stdio::null());
        c
    }

    pub fn cli(&self, token: &str, args: &[&str]) -> Output {
        self.command(&tool("bao"), token).args(args).output().expect("run bao")
    }

    pub fn cli_ok(&self, token: &str, args: &[&str]) -> String {
        let o = self.cli(token, args);
        assert!(o.status.success(), "bao {args:?} failed:\n{}", out_text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// `bao <command> -format=json <rest>`, parsed.
    pub fn json(&self, token: &str, args: &[&str]) -> Value {
        let mut a = vec![args[0], "-format=json"];
        a.extend_from_slice(&args[1..]);
        serde_json::from_str(&self.cli_ok(token, &a)).expect("bao -format=json prints JSON")
    }
}

// ------------------------------------------------------------------ CSRs as cert-manager makes them

pub struct Csr {
    pub pem: String,
    pub key: KeyPair,
}

/// A CSR with `dns` SANs and no subject (the Certificates carry dnsNames only).
pub fn csr(
    dns: &[String],
    alg: &'static rcgen::SignatureAlgorithm,
    ekus: Vec<ExtendedKeyUsagePurpose>,
    ips: &[&str],
) -> Csr {
    let key = KeyPair::generate_for(alg).expect("generate key");
    let mut p = CertificateParams::new(dns.to_vec()).expect("CSR names");
    p.distinguished_name = DistinguishedName::new();
    p.extended_key_usages = ekus;
    for ip in ips {
        p.subject_alt_names.push(SanType::IpAddress(ip.parse().unwrap()));
    }
    let pem = p
        .serialize_request(&key)
        .expect("serialize CSR")
        .pem()
        .expect("CSR PEM");
    Csr { pem, key }
}

pub fn key_algorithm(cert: &Value) -> &'static rcgen::SignatureAlgorithm {
    let pk = &cert["spec"]["privateKey"];
    match (
        pk["algorithm"].as_str().unwrap_or("RSA"),
        pk["size"].as_u64().unwrap_or(0),
    ) {
        ("ECDSA", 256) => &rcgen::PKCS_ECDSA_P256_SHA256,
        ("ECDSA", 384) => &rcgen::PKCS_ECDSA_P384_SHA384,
        other => {
            panic!("this test signs ECDSA P-256/P-384 CSRs; the Certificate asks for {other:?}")
        }
    }
}

/// POST <sign_path> with the parameters cert-manager's Vault issuer sends.
pub fn concrete(name: &str) -> String {
    match name.strip_prefix("*.") {
        Some(rest) => format!("request-router-0.{rest}"),
        None => name.to_string(),
    }
}

pub fn eku(der: &[u8]) -> (bool, bool) {
    let (_, c) = x509_parser::parse_x509_certificate(der).expect("leaf parses");
    match c.extended_key_usage().expect("EKU extension parses") {
        Some(e) => (e.value.server_auth, e.value.client_auth || e.value.any),
        None => (false, true), // absent = any purpose, including clientAuth
    }
}

/// Release `release` of environment `env` as `helmfile build --embed-values` prints it: chart,
/// version, and the values helmfile passes (values files templated with the environment values),
/// rendered offline (no chart is fetched).
pub fn release_spec(env: &str, release: &str) -> Value {
    release_spec_with(env, release, &[])
}

/// `release_spec` with more helmfile flags (e.g. `--state-values-set openbao.mode=standalone`).
pub fn release_spec_with(env: &str, release: &str, extra: &[&str]) -> Value {
    let out = Command::new(tool("helmfile"))
        .current_dir(repo())
        .args(["--file", "helmfile.yaml", "--environment", env, "--no-color"])
        .args(extra)
        .args(["--selector", &format!("name={release}")])
        .args(["build", "--embed-values"])
        .output()
        .expect("run helmfile build");
    assert!(
        out.status.success(),
        "helmfile -e {env} build --embed-values failed:\n{}",
        out_text(&out)
    );
    let text = String::from_utf8(out.stdout).expect("helmfile build prints UTF-8");
    let docs = nvcf_validate::yaml::documents(&text).expect("helmfile build prints YAML");
    docs.iter()
        .filter_map(|d| d.value["releases"].as_array())
        .flatten()
        .find(|r| r["name"] == release)
        .unwrap_or_else(|| panic!("helmfile -e {env} build lists no release {release}"))
        .clone()
}

/// The chart values helmfile passes to `release` in `env`: its values entries merged shallowly
/// in order (the tests only read keys our single values file sets).
pub fn release_values(env: &str, release: &str) -> Value {
    let rel = release_spec(env, release);
    let mut merged = serde_json::Map::new();
    for v in rel["values"].as_array().expect("embedded values are a list") {
        let m = v
            .as_object()
            .unwrap_or_else(|| panic!("release {release}: embedded values entry is not a map: {v}"));
        merged.extend(m.clone());
    }
    Value::Object(merged)
}

/// The rendered object of `kind` named `name` (any namespace).
pub fn object<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|v| v["kind"] == kind && v["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no rendered {kind} {name}"))
}
