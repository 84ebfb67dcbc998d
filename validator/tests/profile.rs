//! `nvcf-validate profile`: the ControlPlaneProfile of every environment of the real stack,
//! rendered with the pinned helm/helmfile (offline: the hand-off objects come from local charts),
//! with the committed example roots replaced by roots generated here; the output is read back
//! and judged by nvcf-cli's rules (`document::validate`, unit-tested from upstream's code) and
//! its fingerprint recomputed independently. The committed example material is refused.

mod support;

use nvcf_validate::commands::profile::document::{self, Scope};
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Output;
use support::run::command;
use support::{copy_dir, repo};

struct Root {
    params: CertificateParams,
    key: KeyPair,
    pem: String,
}

fn root(cn: &str) -> Root {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let pem = params.self_signed(&key).unwrap().pem();
    Root { params, key, pem }
}

fn leaf(names: &[String], ca: &Root) -> String {
    let mut p = CertificateParams::new(names.to_vec()).unwrap();
    p.distinguished_name.push(DnType::OrganizationName, "profile test");
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().unwrap();
    p.signed_by(&key, &Issuer::from_params(&ca.params, &ca.key))
        .unwrap()
        .pem()
}

/// A copy of the repository's stack in a temporary directory.
fn stack() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for d in ["charts", "values", "examples"] {
        copy_dir(&repo().join(d), &dir.path().join(d));
    }
    for f in ["helmfile.yaml", "charts.lock.yaml", "validator-policy.yaml"] {
        std::fs::copy(repo().join(f), dir.path().join(f)).unwrap();
    }
    dir
}

/// Point every environment's trustBundleFile at `pki/root.pem` holding `ca` (not under
/// examples/), and re-issue the customer Secrets' public chains declared in the policy from it.
fn use_real_root(dir: &Path, ca: &Root) {
    std::fs::create_dir_all(dir.join("pki")).unwrap();
    std::fs::write(dir.join("pki/root.pem"), &ca.pem).unwrap();
    for f in [
        "base.yaml",
        "default.yaml",
        "split-cluster.yaml",
        "customer-issuer.yaml",
        "customer-secret.yaml",
    ] {
        let p = dir.join("values").join(f);
        let text = std::fs::read_to_string(&p).unwrap();
        let mut out = String::new();
        for line in text.lines() {
            if line.trim_start().starts_with("allowExampleMaterial:") {
                // A real root: no longer a demonstration environment (issue 25's marker off).
                let indent = &line[..line.len() - line.trim_start().len()];
                out.push_str(&format!("{indent}allowExampleMaterial: false\n"));
            } else if line.trim_start().starts_with("trustBundleFile:") {
                let indent = &line[..line.len() - line.trim_start().len()];
                out.push_str(&format!("{indent}trustBundleFile: pki/root.pem\n"));
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        assert!(
            text.contains("trustBundleFile:") || text.contains("allowExampleMaterial:"),
            "{f}"
        );
        std::fs::write(p, out).unwrap();
    }
    let policy_path = dir.join("validator-policy.yaml");
    let mut policy = std::fs::read_to_string(&policy_path).unwrap();
    for f in [
        "customer-secret-request-router-tls.pem",
        "customer-secret-worker-grpc-tls.pem",
        "customer-secret-llm-invocation-tls.pem",
    ] {
        let old = std::fs::read_to_string(repo().join("examples/pki").join(f)).unwrap();
        let der = nvcf_validate::pki::parse_bundle(old.as_bytes()).unwrap();
        let names = nvcf_validate::pki::describe(der[0].as_ref()).unwrap().dns_sans;
        let new = leaf(&names, ca);
        let indent = |pem: &str| pem.lines().map(|l| format!("          {l}\n")).collect::<String>();
        let (o, n) = (indent(&old), indent(&new));
        assert!(policy.contains(&o), "the policy embeds {f}");
        policy = policy.replace(&o, &n);
    }
    std::fs::write(policy_path, policy).unwrap();
}

fn profile(dir: &Path, args: &[&str]) -> Output {
    command(dir)
        .arg("profile")
        .args(["--file", "helmfile.yaml", "--offline"])
        .args(args)
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const BASE: &str = "\
# The operator's control plane (comments are not kept: the profile is rewritten as YAML).
apiVersion: nvcf.nvidia.com/v1alpha1
kind: ControlPlaneProfile
controlPlane:
  clusterName: cp-west
  ncaID: nca-123
  region: us-west-2
  endpoints:
    computeReachable:
      icmsURL: https://icms.nvcf.example.com
      revalURL: https://reval.nvcf.example.com
      natsURL: tls://nats.nvcf.example.com:4222
  gateway:
    httpURL: https://api.nvcf.example.com
    grpcURL: grpc.nvcf.example.com:443
  hosts:
    api: api.nvcf.example.com
managementTls:
  trustMode: system
";

fn sha256_hex(der: &[u8]) -> String {
    hex::encode(Sha256::digest(der))
}

/// The nvcf-trust-bundle-v1 text hashed, built here from the facts (not with the crate's code).
fn fingerprint_by_hand(ders: &[Vec<u8>]) -> String {
    let mut hashes: Vec<String> = ders.iter().map(|d| sha256_hex(d)).collect();
    hashes.sort();
    hashes.dedup();
    let mut text = "nvcf-trust-bundle-v1\n".to_string();
    for h in hashes {
        text.push_str(&h);
        text.push('\n');
    }
    format!("sha256:{}", hex::encode(Sha256::digest(text.as_bytes())))
}

#[test]
fn every_environment_gets_a_profile_nvcf_cli_accepts() {
    let dir = stack();
    let ca = root("profile test root");
    use_real_root(dir.path(), &ca);
    let base = dir.path().join("base.yaml");
    std::fs::write(&base, BASE).unwrap();
    let base_value = nvcf_validate::yaml::value(BASE).unwrap();
    let root_der = nvcf_validate::pki::parse_bundle(ca.pem.as_bytes()).unwrap()[0]
        .as_ref()
        .to_vec();
    for (env, address) in [
        // Pod 0's own QUIC dial address (each pod advertises its own; docs/scaling.md).
        (
            "default",
            "request-router-0.request-router-headless.nvcf.svc.cluster.local:50072",
        ),
        (
            "split-cluster",
            "request-router-0.router.workers.nvcf.example.com:50072",
        ),
        (
            "customer-issuer",
            "request-router-0.router.workers.nvcf.example.com:50072",
        ),
        (
            "customer-secret",
            "request-router-0.router.workers.nvcf.example.com:50072",
        ),
    ] {
        let out: PathBuf = dir.path().join(format!("{env}.yaml"));
        let o = profile(
            dir.path(),
            &["-e", env, "--base", "base.yaml", "-o", out.to_str().unwrap()],
        );
        assert_eq!(o.status.code(), Some(0), "{env}: {}", stderr(&o));
        let text = std::fs::read_to_string(&out).unwrap();
        let doc = nvcf_validate::yaml::value(&text).unwrap();
        // nvcf-cli's rules, whole document.
        assert_eq!(
            document::validate(&doc, Scope::Full),
            Vec::<String>::new(),
            "{env}:\n{text}"
        );
        // What the stack owns.
        assert_eq!(doc["transportTls"]["trustMode"], "bundle");
        let pem = doc["transportTls"]["trustBundlePem"].as_str().unwrap();
        let ders: Vec<Vec<u8>> = nvcf_validate::pki::parse_bundle(pem.as_bytes())
            .unwrap()
            .iter()
            .map(|c| c.as_ref().to_vec())
            .collect();
        assert_eq!(ders, vec![root_der.clone()], "{env}: the bundle is exactly the root");
        assert_eq!(
            doc["transportTls"]["trustBundleFingerprint"],
            Value::from(fingerprint_by_hand(&ders))
        );
        assert_eq!(
            doc["controlPlane"]["addons"]["llm"]["requestRouterAddress"], address,
            "{env}"
        );
        // Everything else is the base, in the base's order.
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&doc),
            ["apiVersion", "kind", "controlPlane", "managementTls", "transportTls"]
        );
        assert_eq!(
            keys(&doc["controlPlane"]),
            [
                "clusterName",
                "ncaID",
                "region",
                "endpoints",
                "gateway",
                "hosts",
                "addons"
            ]
        );
        for k in ["clusterName", "ncaID", "region", "endpoints", "gateway", "hosts"] {
            assert_eq!(doc["controlPlane"][k], base_value["controlPlane"][k], "{env}: {k}");
        }
        assert_eq!(doc["managementTls"], base_value["managementTls"]);
        // The gRPC seed workers need is named for the operator (never written as a bare host:port).
        assert!(stderr(&o).contains("worker gRPC seed"), "{env}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("https://grpc.workers.nvcf.example.com:443"),
            "{env}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn the_committed_example_root_is_refused() {
    let dir = stack();
    // As committed: the bundle carries issue 25's nvcf.io/example-material marker.
    for env in ["default", "customer-issuer"] {
        let out = dir.path().join("p.yaml");
        let o = profile(dir.path(), &["-e", env, "-o", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{env}: {}", stderr(&o));
        assert!(stderr(&o).contains("nvcf.io/example-material"), "{env}: {}", stderr(&o));
        assert!(!out.exists(), "nothing is written");
    }
    // The same example root without the marker: the gate refuses the environment (exit 1).
    let vals = dir.path().join("values/default.yaml");
    let text = std::fs::read_to_string(&vals).unwrap();
    std::fs::write(
        &vals,
        text.replace("allowExampleMaterial: true", "allowExampleMaterial: false"),
    )
    .unwrap();
    let o = profile(dir.path(), &["-e", "default"]);
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
}

#[test]
fn a_base_nvcf_cli_would_refuse_is_refused_with_every_problem() {
    let dir = stack();
    let ca = root("profile test root");
    use_real_root(dir.path(), &ca);
    let bad = BASE
        .replace("  region: us-west-2\n", "  regoin: us-west-2\n")
        .replace("https://api.", "ftp://api.");
    std::fs::write(dir.path().join("base.yaml"), bad).unwrap();
    let out = dir.path().join("p.yaml");
    let o = profile(
        dir.path(),
        &[
            "-e",
            "split-cluster",
            "--base",
            "base.yaml",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("schema: controlPlane.regoin: field not found"), "{e}");
    assert!(e.contains("controlPlane.region: required"), "{e}");
    assert!(
        e.contains("controlPlane.gateway.httpURL: scheme must be http or https"),
        "{e}"
    );
    assert!(!out.exists());
    // A base that is not YAML nvcf-cli could read: a key written twice.
    std::fs::write(dir.path().join("base.yaml"), "kind: a\nkind: b\n").unwrap();
    let o = profile(dir.path(), &["-e", "split-cluster", "--base", "base.yaml"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--base base.yaml"), "{}", stderr(&o));
}

#[test]
fn without_a_base_the_fragment_holds_only_what_the_stack_owns() {
    let dir = stack();
    let ca = root("profile test root");
    use_real_root(dir.path(), &ca);
    let o = profile(dir.path(), &["-e", "split-cluster"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = nvcf_validate::yaml::value(&String::from_utf8_lossy(&o.stdout)).unwrap();
    assert_eq!(document::validate(&doc, Scope::Fragment), Vec::<String>::new());
    assert_eq!(
        doc.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["apiVersion", "kind", "controlPlane", "transportTls"]
    );
    assert!(stderr(&o).contains("no --base"), "{}", stderr(&o));
}

#[test]
fn a_bundle_marked_as_example_material_is_refused() {
    let dir = stack();
    let ca = root("profile test root");
    use_real_root(dir.path(), &ca);
    // Mark the trust-bundle ConfigMap as issue 25's marker does.
    let cm = dir.path().join("charts/nvcf-pki/templates/configmap.yaml");
    let text = std::fs::read_to_string(&cm).unwrap();
    let marked = text.replacen(
        "    nvcf.io/trust-bundle-fingerprint-algorithm: nvcf-trust-bundle-v1\n",
        "    nvcf.io/trust-bundle-fingerprint-algorithm: nvcf-trust-bundle-v1\n    nvcf.io/example-material: \"true\"\n",
        1,
    );
    assert_ne!(text, marked);
    std::fs::write(&cm, marked).unwrap();
    let o = profile(dir.path(), &["-e", "split-cluster"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nvcf.io/example-material"), "{}", stderr(&o));
}

// ------------------------------------------------------------------ probe --profile

use support::probe::{self as lo, LeafSpec};

const QUIC_NAME: &str = "request-router-0.router.workers.nvcf.example.com";
const GRPC_HOST: &str = "grpc.workers.nvcf.example.com";

/// A profile as a worker receives it, written here by hand (nvcf-cli's shape).
fn worker_profile(dir: &Path, pem: &str, fingerprint: &str, address: &str) -> PathBuf {
    let indented: String = pem.lines().map(|l| format!("    {l}\n")).collect();
    let text = format!(
        "apiVersion: nvcf.nvidia.com/v1alpha1\nkind: ControlPlaneProfile\ncontrolPlane:\n  addons:\n    llm:\n      \
         requestRouterAddress: {address}\ntransportTls:\n  trustMode: bundle\n  trustBundleFingerprint: {fingerprint}\n  \
         trustBundlePem: |\n{indented}"
    );
    lo::write(dir, "worker-profile.yaml", &text)
}

fn fp(pem: &str) -> String {
    nvcf_validate::pki::fingerprint::bundle_fingerprint(pem.as_bytes()).unwrap()
}

fn probe_profile(dir: &Path, args: &[&str]) -> Output {
    command(dir)
        .args(["probe", "--timeout", "3s"])
        .args(args)
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .output()
        .unwrap()
}

struct Servers {
    quic: lo::Server,
    tls: lo::Server,
}

fn servers(ca: &lo::Ca) -> Servers {
    // One leaf for every pod (the one-label wildcard over the advertised names) and the gRPC host.
    let id = lo::leaf(
        LeafSpec::server(&["*.router.workers.nvcf.example.com", GRPC_HOST]),
        ca,
        &[],
    );
    Servers {
        quic: lo::quic_server(&id, &[]),
        tls: lo::tls_server(&id, &["h2"]),
    }
}

fn legs(s: &Servers) -> Vec<String> {
    vec![
        "--connect".into(),
        s.quic.addr.to_string(),
        "--server-name".into(),
        QUIC_NAME.into(),
        "--grpc".into(),
        format!("https://{GRPC_HOST}:443"),
        "--connect-grpc".into(),
        s.tls.addr.to_string(),
    ]
}

fn run_legs(dir: &Path, profile: &Path, s: &Servers, extra: &[&str]) -> Output {
    let mut args: Vec<String> = vec!["--profile".into(), profile.to_str().unwrap().into()];
    args.extend(legs(s));
    args.extend(extra.iter().map(|x| x.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    probe_profile(dir, &refs)
}

/// What every `probe --profile` case starts from: a work directory, a root, and the QUIC and
/// gRPC loopback servers with one leaf of it.
struct Legs {
    dir: tempfile::TempDir,
    ca: lo::Ca,
    servers: Servers,
}

fn legs_of_one_root() -> Legs {
    let ca = lo::root("probe profile root");
    Legs {
        dir: tempfile::tempdir().unwrap(),
        servers: servers(&ca),
        ca,
    }
}

impl Legs {
    /// A worker profile with `pem` as its bundle, `fingerprint` advertised for it, and `address`
    /// (default: the QUIC address nvcf-cli accepts) as the router address.
    fn profile(&self, pem: &str, fingerprint: &str, address: Option<&str>) -> PathBuf {
        worker_profile(self.dir.path(), pem, fingerprint, address.unwrap_or(QUIC_ADDRESS))
    }

    /// `probe --profile` over both legs, with `extra` arguments.
    fn probe(&self, profile: &Path, extra: &[&str]) -> Output {
        run_legs(self.dir.path(), profile, &self.servers, extra)
    }
}

const QUIC_ADDRESS: &str = "quic.workers.nvcf.example.com:50072";

#[test]
fn probe_profile_passes_both_legs_with_the_profile_bundle() {
    let l = legs_of_one_root();
    let p = l.profile(&l.ca.pem, &fp(&l.ca.pem), None);
    let o = l.probe(&p, &[]);
    let t = lo::text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("2 of 2 probe(s) passed"), "{t}");
    assert!(t.contains(&format!("server name:  {QUIC_NAME}")), "{t}");
    assert!(t.contains(&format!("server name:  {GRPC_HOST}")), "{t}");
    // The expected fingerprint, given explicitly, agrees.
    let o = l.probe(&p, &["--expect-fingerprint", &fp(&l.ca.pem)]);
    assert_eq!(o.status.code(), Some(0), "{}", lo::text(&o));
}

#[test]
fn probe_profile_refuses_a_wrong_root() {
    let l = legs_of_one_root();
    let other = lo::root("another root");
    let p = l.profile(&other.pem, &fp(&other.pem), None);
    let o = l.probe(&p, &[]);
    lo::assert_refused(&o, "UnknownIssuer");
    assert!(lo::text(&o).contains("0 of 2 probe(s) passed"), "{}", lo::text(&o));
}

#[test]
fn probe_profile_refuses_a_wrong_name() {
    let l = legs_of_one_root();
    let p = l.profile(&l.ca.pem, &fp(&l.ca.pem), None);
    let o = l.probe(&p, &["--server-name", "request-router-1.elsewhere.example.com"]);
    // Both names given are probed: the covered one passes, the other is refused.
    assert_eq!(o.status.code(), Some(1), "{}", lo::text(&o));
    assert!(lo::text(&o).contains("REFUSED (NotValidForName): "), "{}", lo::text(&o));
    assert!(lo::text(&o).contains("2 of 3 probe(s) passed"), "{}", lo::text(&o));
}

#[test]
fn probe_profile_refuses_a_fingerprint_mismatch_before_connecting() {
    let l = legs_of_one_root();
    let other = lo::root("another root");
    // The PEM is right, the advertised fingerprint is another bundle's: nvcf-cli refuses it.
    let p = l.profile(&l.ca.pem, &fp(&other.pem), None);
    let o = l.probe(&p, &[]);
    lo::assert_refused(&o, "FingerprintMismatch");
    assert!(lo::text(&o).contains("mismatch: advertised"), "{}", lo::text(&o));
    assert!(!lo::text(&o).contains("address:"), "no probe ran: {}", lo::text(&o));
    // A consistent profile whose bundle is not the one expected.
    let p = l.profile(&l.ca.pem, &fp(&l.ca.pem), None);
    let o = l.probe(&p, &["--expect-fingerprint", &fp(&other.pem)]);
    lo::assert_refused(&o, "FingerprintMismatch");
}

#[test]
fn probe_profile_refuses_unusable_input() {
    let l = legs_of_one_root();
    // requestRouterAddress nvcf-cli refuses (a URL).
    let p = l.profile(
        &l.ca.pem,
        &fp(&l.ca.pem),
        Some("https://quic.workers.nvcf.example.com:50072"),
    );
    let o = l.probe(&p, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", lo::text(&o));
    assert!(
        lo::text(&o).contains("requestRouterAddress: must be host:port"),
        "{}",
        lo::text(&o)
    );
    // A plaintext gRPC dial address is never probed as if it were TLS.
    let p = l.profile(&l.ca.pem, &fp(&l.ca.pem), None);
    let o = probe_profile(
        l.dir.path(),
        &[
            "--profile",
            p.to_str().unwrap(),
            "--grpc",
            "grpc.workers.nvcf.example.com:443",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", lo::text(&o));
}

/// The whole hand-off: `profile` writes it from the rendered environment, `probe --profile -e`
/// probes every name the environment advertises and its gRPC dial address against the servers.
#[test]
fn profile_then_probe_with_the_environment() {
    let dir = stack();
    let ca = lo::root("hand-off root");
    let as_root = Root {
        params: ca.params.clone(),
        key: KeyPair::from_pem(&ca.key.serialize_pem()).unwrap(),
        pem: ca.pem.clone(),
    };
    use_real_root(dir.path(), &as_root);
    let out = dir.path().join("profile.yaml");
    let o = profile(dir.path(), &["-e", "split-cluster", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = servers(&ca);
    let o = probe_profile(
        dir.path(),
        &[
            "--profile",
            out.to_str().unwrap(),
            "-e",
            "split-cluster",
            "--file",
            "helmfile.yaml",
            "--offline",
            "--connect",
            &s.quic.addr.to_string(),
            "--connect-grpc",
            &s.tls.addr.to_string(),
        ],
    );
    let t = lo::text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    // Every per-pod name the environment advertises (two replicas) and the gRPC dial host.
    assert!(t.contains(&format!("server name:  {QUIC_NAME}")), "{t}");
    assert!(
        t.contains("server name:  request-router-1.router.workers.nvcf.example.com"),
        "{t}"
    );
    assert!(t.contains("3 of 3 probe(s) passed"), "{t}");
    assert!(t.contains(&format!("server name:  {GRPC_HOST}")), "{t}");
    // A profile from another root is stale for this environment, whatever the servers say.
    let other = lo::root("another root");
    let stale = worker_profile(dir.path(), &other.pem, &fp(&other.pem), QUIC_ADDRESS);
    let o = probe_profile(
        dir.path(),
        &[
            "--profile",
            stale.to_str().unwrap(),
            "-e",
            "split-cluster",
            "--file",
            "helmfile.yaml",
            "--offline",
        ],
    );
    lo::assert_refused(&o, "FingerprintMismatch");
    assert!(lo::text(&o).contains("publishes roots"), "{}", lo::text(&o));
}
