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
use std::process::{Command, Output};
use support::{copy_dir, path_with_tools, repo};

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
    for f in ["base.yaml", "customer-issuer.yaml", "customer-secret.yaml"] {
        let p = dir.join("values").join(f);
        let text = std::fs::read_to_string(&p).unwrap();
        let mut out = String::new();
        for line in text.lines() {
            if line.trim_start().starts_with("trustBundleFile:") {
                let indent = &line[..line.len() - line.trim_start().len()];
                out.push_str(&format!("{indent}trustBundleFile: pki/root.pem\n"));
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        assert_ne!(text, out, "{f} sets trustBundleFile");
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
    Command::new(env!("CARGO_BIN_EXE_nvcf-validate"))
        .current_dir(dir)
        .arg("profile")
        .args(["--file", "helmfile.yaml", "--offline"])
        .args(args)
        .env("PATH", path_with_tools())
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
        ("default", "request-router.nvcf.svc.cluster.local:50072"),
        ("split-cluster", "quic.workers.nvcf.example.com:50072"),
        ("customer-issuer", "quic.workers.nvcf.example.com:50072"),
        ("customer-secret", "quic.workers.nvcf.example.com:50072"),
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
    for env in ["default", "customer-issuer"] {
        let out = dir.path().join("p.yaml");
        let o = profile(dir.path(), &["-e", env, "-o", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{env}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("committed under examples/"),
            "{env}: {}",
            stderr(&o)
        );
        assert!(!out.exists(), "nothing is written");
    }
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
