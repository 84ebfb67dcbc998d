//! CLI tests of `nvcf-validate fingerprint` and `nvcf-validate cert verify`, running the built
//! binary on certificates generated at test time (rcgen). No key material is committed.

mod support;

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose as Eku, IsCa, Issuer, KeyPair};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::run::{command, finish, Run};
use time::macros::datetime;
use time::OffsetDateTime;

struct Ca {
    params: CertificateParams,
    key: KeyPair,
    pem: String,
}

fn ca(cn: &str, parent: Option<&Ca>) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let cert = match parent {
        None => params.self_signed(&key).unwrap(),
        Some(p) => params.signed_by(&key, &Issuer::from_params(&p.params, &p.key)).unwrap(),
    };
    Ca {
        pem: cert.pem(),
        params,
        key,
    }
}

fn leaf(names: &[&str], issuer: &Ca, eku: Eku, valid: Option<(OffsetDateTime, OffsetDateTime)>) -> String {
    let mut p = CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    p.distinguished_name.push(DnType::CommonName, names[0]);
    p.extended_key_usages = vec![eku];
    if let Some((nb, na)) = valid {
        p.not_before = nb;
        p.not_after = na;
    }
    let key = KeyPair::generate().unwrap();
    p.signed_by(&key, &Issuer::from_params(&issuer.params, &issuer.key))
        .unwrap()
        .pem()
}

/// A root, an intermediate and a leaf for the router's per-pod names.
struct Pki {
    dir: tempfile::TempDir,
    root: Ca,
    int: Ca,
    leaf: String,
}

fn pki() -> Pki {
    let root = ca("NVCF Test Root", None);
    let int = ca("NVCF Test Intermediate", Some(&root));
    let leaf = leaf(
        &[
            "*.request-router-headless.nvcf.svc.cluster.local",
            "grpc.workers.example.com",
        ],
        &int,
        Eku::ServerAuth,
        None,
    );
    Pki {
        dir: tempfile::tempdir().unwrap(),
        root,
        int,
        leaf,
    }
}

impl Pki {
    fn file(&self, name: &str, content: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, content).unwrap();
        p
    }
}

/// `nvcf-validate args`, from the directory cargo runs the tests in, with `stdin` piped in when given.
fn run(args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut c = command(Path::new(env!("CARGO_MANIFEST_DIR")));
    c.args(args);
    finish(&mut c, stdin)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn fingerprint_agrees_with_openssl_and_sha256sum() {
    let k = pki();
    let root = k.file("root.pem", &k.root.pem);
    let int = k.file("int.pem", &k.int.pem);
    // Order and duplicates must not matter.
    let bundle = k.file(
        "bundle.pem",
        &format!("{}{}\n# again\n{}", k.int.pem, k.root.pem, k.int.pem),
    );
    let out = run(&["fingerprint", p(&bundle)], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ours = out.stdout.trim().to_string();

    // Independent computation of nvcf-trust-bundle-v1 with openssl + sha256sum.
    let script = r#"set -eu
        for f in "$1" "$2" "$2"; do openssl x509 -in "$f" -outform DER | sha256sum | cut -d' ' -f1; done \
          | LC_ALL=C sort -u > hashes
        { echo nvcf-trust-bundle-v1; cat hashes; } | sha256sum | cut -d' ' -f1"#;
    let indep = Command::new("sh")
        .current_dir(k.dir.path())
        .args(["-c", script, "sh", p(&root), p(&int)])
        .output()
        .expect("sh with openssl and sha256sum (both are required by this test)");
    assert!(
        indep.status.success(),
        "openssl/sha256sum failed: {}",
        text(&indep.stderr)
    );
    let theirs = format!("sha256:{}", text(&indep.stdout).trim());
    assert_eq!(theirs.len(), 71, "{theirs}");
    assert_eq!(ours, theirs);

    // Standard input gives the same answer; a different bundle a different one.
    let stdin = run(
        &["fingerprint", "-"],
        Some(format!("{}{}", k.root.pem, k.int.pem).as_bytes()),
    );
    assert_eq!(stdin.stdout.trim(), ours);
    let only_root = run(&["fingerprint", p(&root)], None);
    assert_ne!(only_root.stdout.trim(), ours);
}

#[test]
fn fingerprint_refuses_keys_and_junk_without_echoing_them() {
    let k = pki();
    let key = KeyPair::generate().unwrap().serialize_pem();
    let with_key = k.file("with-key.pem", &format!("{}{key}", k.root.pem));
    let out = run(&["fingerprint", p(&with_key)], None);
    assert_eq!(out.code, 2);
    let err = out.stderr;
    assert!(
        err.contains("with-key.pem") && err.contains("block 2") && err.contains("PRIVATE KEY"),
        "{err}"
    );
    for line in key.lines().filter(|l| !l.starts_with("-----")) {
        assert!(!err.contains(line) && !out.stdout.contains(line), "key material echoed");
    }

    let empty = k.file("empty.pem", "\n");
    let out = run(&["fingerprint", p(&empty)], None);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("empty.pem") && out.stderr.contains("no PEM CERTIFICATE"),
        "{}",
        out.stderr
    );

    let crl = k.file("crl.pem", "-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n");
    let out = run(&["fingerprint", p(&crl)], None);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("X509 CRL"), "{}", out.stderr);

    let torn = k.file("torn.pem", &k.root.pem[..k.root.pem.len() / 2]);
    assert_eq!(run(&["fingerprint", p(&torn)], None).code, 2);
    let missing = k.dir.path().join("missing.pem");
    let out = run(&["fingerprint", p(&missing)], None);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("missing.pem"));
    assert!(out.stdout.is_empty());
}

fn verify(k: &Pki, bundle: &Path, chain: &Path, name: &str, at: Option<&str>) -> Run {
    let _ = k;
    let mut args = vec![
        "cert",
        "verify",
        "--bundle",
        p(bundle),
        "--chain",
        p(chain),
        "--name",
        name,
    ];
    if let Some(at) = at {
        args.extend(["--at", at]);
    }
    run(&args, None)
}

#[test]
fn cert_verify_accepts_a_chain_with_an_intermediate() {
    let k = pki();
    let roots = k.file("roots.pem", &k.root.pem);
    let chain = k.file("chain.pem", &format!("{}{}", k.leaf, k.int.pem));
    let out = verify(
        &k,
        &roots,
        &chain,
        "request-router-1.request-router-headless.nvcf.svc.cluster.local",
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = out.stdout;
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.starts_with("verified: ") && line.contains("NVCF Test Root"),
        "{line}"
    );
    let out = verify(&k, &roots, &chain, "grpc.workers.example.com", None);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn cert_verify_refuses_with_the_webpki_reason() {
    let k = pki();
    let roots = k.file("roots.pem", &k.root.pem);
    let chain = k.file("chain.pem", &format!("{}{}", k.leaf, k.int.pem));
    let leaf_only = k.file("leaf.pem", &k.leaf);
    let pod = "request-router-0.request-router-headless.nvcf.svc.cluster.local";

    let refused = |out: Run, reason: &str| {
        assert_eq!(out.code, 1, "{reason}: {}", out.stderr);
        let err = out.stderr;
        assert!(
            err.starts_with("refused: ") && err.contains(reason),
            "expected {reason}: {err}"
        );
        err
    };
    // Intermediate missing from the chain; roots that do not include ours.
    refused(verify(&k, &roots, &leaf_only, pod, None), "UnknownIssuer");
    let other = ca("Some Other Root", None);
    let other_roots = k.file("other.pem", &other.pem);
    refused(verify(&k, &other_roots, &chain, pod, None), "UnknownIssuer");
    // Two labels under a one-label wildcard; the bare domain; a name only in the CN.
    refused(
        verify(
            &k,
            &roots,
            &chain,
            "a.request-router-0.request-router-headless.nvcf.svc.cluster.local",
            None,
        ),
        "NotValidForName",
    );
    refused(
        verify(
            &k,
            &roots,
            &chain,
            "request-router-headless.nvcf.svc.cluster.local",
            None,
        ),
        "NotValidForName",
    );
    // Validity.
    let dated = leaf(
        &["x.example.com"],
        &k.int,
        Eku::ServerAuth,
        Some((datetime!(2025-01-01 0:00 UTC), datetime!(2026-01-01 0:00 UTC))),
    );
    let dated_chain = k.file("dated.pem", &format!("{dated}{}", k.int.pem));
    let err = refused(
        verify(&k, &roots, &dated_chain, "x.example.com", Some("2026-06-01T00:00:00Z")),
        "Expired",
    );
    assert!(err.contains("2026-01-01"), "{err}");
    refused(
        verify(&k, &roots, &dated_chain, "x.example.com", Some("2024-06-01T00:00:00Z")),
        "NotValidYet",
    );
    assert_eq!(
        verify(&k, &roots, &dated_chain, "x.example.com", Some("2025-06-01T00:00:00Z")).code,
        0
    );
    // A client-only certificate: missing serverAuth.
    let client = leaf(&["x.example.com"], &k.int, Eku::ClientAuth, None);
    let client_chain = k.file("client.pem", &format!("{client}{}", k.int.pem));
    refused(
        verify(&k, &roots, &client_chain, "x.example.com", None),
        "InvalidPurpose",
    );
}

#[test]
fn cert_verify_unreadable_input_is_exit_2() {
    let k = pki();
    let roots = k.file("roots.pem", &k.root.pem);
    let chain = k.file("chain.pem", &format!("{}{}", k.leaf, k.int.pem));
    let key = KeyPair::generate().unwrap().serialize_pem();
    let roots_key = k.file("roots-with-key.pem", &format!("{}{key}", k.root.pem));
    let name = "grpc.workers.example.com";

    let out = verify(&k, &roots_key, &chain, name, None);
    assert_eq!(out.code, 2);
    let err = out.stderr;
    assert!(
        err.contains("roots-with-key.pem") && err.contains("PRIVATE KEY"),
        "{err}"
    );
    assert!(
        key.lines()
            .filter(|l| !l.starts_with("-----"))
            .all(|l| !err.contains(l)),
        "key material echoed"
    );

    // Each refusal names its own cause: exit 2 alone would be satisfied by any other refusal.
    let refused_with = |out: Run, want: &[&str]| {
        let err = out.stderr;
        assert_eq!(out.code, 2, "{err}");
        for w in want {
            assert!(err.contains(w), "expected `{w}` in: {err}");
        }
    };
    let empty = k.file("empty.pem", "");
    refused_with(
        verify(&k, &roots, &empty, name, None),
        &["empty.pem", "no PEM CERTIFICATE block found"],
    );
    refused_with(
        verify(&k, &roots, &k.dir.path().join("nope.pem"), name, None),
        &["nope.pem", "cannot read"],
    );
    refused_with(
        verify(&k, &roots, &chain, name, Some("yesterday")),
        &["--at", "yesterday"],
    );
    refused_with(
        verify(&k, &roots, &chain, "bad name!", None),
        &["`bad name!`", "neither a DNS name nor an IP address"],
    );
}
