//! The probe matrix against real loopback servers (tokio-rustls over TCP, quinn over UDP),
//! running the built binary. Each negative case asserts its specific reason; none may pass.

mod support;
use rcgen::ExtendedKeyUsagePurpose;
use support::probe::*;
use tempfile::TempDir;

const NAME: &str = "request-router.nvcf.svc.cluster.local";
const NAMES: &[&str] = &[NAME, "*.request-router-headless.nvcf.svc.cluster.local"];

/// A root -> intermediate -> leaf PKI like the stack's, plus an unrelated root.
struct Pki {
    dir: TempDir,
    root: Ca,
    inter: Ca,
    good: Identity,
}

impl Pki {
    fn new() -> Pki {
        let root = root("nvcf test root");
        let inter = intermediate("nvcf test intermediate", &root);
        let good = leaf(LeafSpec::server(NAMES), &inter, &[&inter]);
        Pki {
            dir: TempDir::new().unwrap(),
            root,
            inter,
            good,
        }
    }
    fn bundle(&self) -> std::path::PathBuf {
        write(self.dir.path(), "roots.pem", &self.root.pem)
    }
    fn file(&self, name: &str, content: &str) -> std::path::PathBuf {
        write(self.dir.path(), name, content)
    }
}

fn a(s: &Server) -> String {
    s.addr.to_string()
}

// ---------------------------------------------------------------- TLS over TCP

#[test]
fn tls_passes_with_the_right_bundle_and_name() {
    let pki = Pki::new();
    let server = tls_server(&pki.good, &["h2"]);
    let out = probe("tls", &a(&server), NAME, &pki.bundle(), &[]);
    assert_pass(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Says what it used: address, name, bundle fingerprint, the negotiated ALPN.
    assert!(stdout.contains(&format!("address:      {}", server.addr)), "{stdout}");
    assert!(stdout.contains(&format!("server name:  {NAME}")), "{stdout}");
    assert!(stdout.contains("1 certificate(s), sha256:"), "{stdout}");
    assert!(stdout.contains("ALPN h2)"), "{stdout}");
    // A per-pod name is covered by the one-label wildcard.
    let pod = "request-router-0.request-router-headless.nvcf.svc.cluster.local";
    assert_pass(&probe("tls", &a(&server), pod, &pki.bundle(), &[]));
}

#[test]
fn tls_accepts_the_https_dial_address_form() {
    let pki = Pki::new();
    let server = tls_server(&pki.good, &["h2"]);
    let addr = format!("https://{}", server.addr);
    assert_pass(&probe("tls", &addr, NAME, &pki.bundle(), &[]));
}

#[test]
fn tls_refuses_an_empty_bundle_without_connecting() {
    let pki = Pki::new();
    let server = tls_server(&pki.good, &["h2"]);
    let out = probe(
        "tls",
        &a(&server),
        NAME,
        &pki.file("empty.pem", "# no certificates here\n"),
        &[],
    );
    assert_refused(&out, "EmptyBundle");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("address:"),
        "{}",
        text(&out)
    );
}

#[test]
fn tls_refuses_an_unrelated_root() {
    let pki = Pki::new();
    let other = root("some other root");
    let server = tls_server(&pki.good, &["h2"]);
    let out = probe("tls", &a(&server), NAME, &pki.file("other.pem", &other.pem), &[]);
    assert_refused(&out, "UnknownIssuer");
    // The refusal shows what the server presented.
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("presented chain (2 certificate(s))"),
        "{}",
        text(&out)
    );
}

#[test]
fn tls_refuses_a_chain_without_its_intermediate() {
    let pki = Pki::new();
    let no_inter = leaf(LeafSpec::server(NAMES), &pki.inter, &[]);
    let server = tls_server(&no_inter, &["h2"]);
    assert_refused(&probe("tls", &a(&server), NAME, &pki.bundle(), &[]), "UnknownIssuer");
}

#[test]
fn tls_refuses_a_wrong_name() {
    let pki = Pki::new();
    let server = tls_server(&pki.good, &["h2"]);
    let out = probe("tls", &a(&server), "router.example.com", &pki.bundle(), &[]);
    assert_refused(&out, "NotValidForName");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("dns:{NAME}")),
        "the refusal lists the SANs:\n{stdout}"
    );
    // Two labels below the wildcard are not covered (X.509: exactly one label).
    let deep = "a.b.request-router-headless.nvcf.svc.cluster.local";
    assert_refused(&probe("tls", &a(&server), deep, &pki.bundle(), &[]), "NotValidForName");
}

#[test]
fn tls_refuses_an_expired_leaf() {
    let pki = Pki::new();
    let expired = leaf(
        LeafSpec {
            expired: true,
            ..LeafSpec::server(NAMES)
        },
        &pki.inter,
        &[&pki.inter],
    );
    let server = tls_server(&expired, &["h2"]);
    assert_refused(&probe("tls", &a(&server), NAME, &pki.bundle(), &[]), "Expired");
}

#[test]
fn tls_refuses_a_client_auth_only_leaf() {
    let pki = Pki::new();
    let spec = LeafSpec {
        ekus: vec![ExtendedKeyUsagePurpose::ClientAuth],
        ..LeafSpec::server(NAMES)
    };
    let server = tls_server(&leaf(spec, &pki.inter, &[&pki.inter]), &["h2"]);
    let out = probe("tls", &a(&server), NAME, &pki.bundle(), &[]);
    assert_refused(&out, "InvalidPurpose");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("EKU:     present WITHOUT serverAuth"),
        "{}",
        text(&out)
    );
}

#[test]
fn tls_refuses_a_plaintext_server() {
    let pki = Pki::new();
    let http = plain_tcp_server(Plain::Http);
    let out = probe("tls", &a(&http), NAME, &pki.bundle(), &[]);
    assert_refused(&out, "NotTls");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("server did not speak TLS"),
        "{}",
        text(&out)
    );
    let closing = plain_tcp_server(Plain::Close);
    assert_refused(&probe("tls", &a(&closing), NAME, &pki.bundle(), &[]), "NotTls");
    let silent = plain_tcp_server(Plain::Silent);
    assert_refused(
        &probe("tls", &a(&silent), NAME, &pki.bundle(), &["--timeout", "2s"]),
        "Timeout",
    );
}

#[test]
fn tls_refuses_when_nothing_listens() {
    let pki = Pki::new();
    let addr = format!("127.0.0.1:{}", closed_port());
    assert_refused(&probe("tls", &addr, NAME, &pki.bundle(), &[]), "ConnectionRefused");
}

#[test]
fn tls_json_report_carries_the_verdict_and_reason() {
    let pki = Pki::new();
    let server = tls_server(&pki.good, &["h2"]);
    let ok = probe("tls", &a(&server), NAME, &pki.bundle(), &["--format", "json"]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(v["schema"], "nvcf-validate/probe/v1");
    assert_eq!(v["verdict"], "ok");
    assert_eq!(v["session"]["alpn"], "h2");
    assert_eq!(v["chain"].as_array().unwrap().len(), 2);
    assert!(v["bundle"]["fingerprint"].as_str().unwrap().starts_with("sha256:"));

    let bad = probe(
        "tls",
        &a(&server),
        "nope.example.com",
        &pki.bundle(),
        &["--format", "json"],
    );
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad));
    let v: serde_json::Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert_eq!(v["verdict"], "refused");
    assert_eq!(v["reason"], "NotValidForName");
}

#[test]
fn unusable_input_is_exit_2() {
    let pki = Pki::new();
    let missing = pki.dir.path().join("does-not-exist.pem");
    let out = probe("tls", "127.0.0.1:1", NAME, &missing, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does-not-exist.pem"),
        "{}",
        text(&out)
    );

    // A private key in the bundle: refused as input, and never echoed.
    let key = rcgen::KeyPair::generate().unwrap().serialize_pem();
    let with_key = pki.file("with-key.pem", &format!("{}{key}", pki.root.pem));
    let out = probe("tls", "127.0.0.1:1", NAME, &with_key, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let all = text(&out);
    let body = key.lines().nth(1).unwrap();
    assert!(!all.contains(&body[..24]), "private key material echoed:\n{all}");
    assert!(all.contains("PRIVATE KEY"), "{all}");

    for (addr, name) in [("127.0.0.1", NAME), ("127.0.0.1:1", "not a name!")] {
        let out = probe("tls", addr, name, &pki.bundle(), &[]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    }
    let out = probe("tls", "127.0.0.1:1", NAME, &pki.bundle(), &["--timeout", "forever"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

// ---------------------------------------------------------------- QUIC

const QUIC_ALPN: &str = "nvcf-test-tunnel";

#[test]
fn quic_passes_with_the_right_bundle_and_name() {
    let pki = Pki::new();
    let server = quic_server(&pki.good, &[QUIC_ALPN]);
    let out = probe("quic", &a(&server), NAME, &pki.bundle(), &["--alpn", QUIC_ALPN]);
    assert_pass(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("ALPN {QUIC_ALPN})")),
        "{}",
        text(&out)
    );
    // Default (no ALPN offered) against a server that negotiates none.
    let no_alpn = quic_server(&pki.good, &[]);
    assert_pass(&probe("quic", &a(&no_alpn), NAME, &pki.bundle(), &[]));
}

#[test]
fn quic_refuses_an_empty_bundle() {
    let pki = Pki::new();
    let server = quic_server(&pki.good, &[]);
    assert_refused(
        &probe("quic", &a(&server), NAME, &pki.file("empty.pem", ""), &[]),
        "EmptyBundle",
    );
}

#[test]
fn quic_refuses_an_unrelated_root() {
    let pki = Pki::new();
    let other = root("some other root");
    let server = quic_server(&pki.good, &[]);
    assert_refused(
        &probe("quic", &a(&server), NAME, &pki.file("other.pem", &other.pem), &[]),
        "UnknownIssuer",
    );
}

#[test]
fn quic_refuses_a_wrong_name() {
    let pki = Pki::new();
    let server = quic_server(&pki.good, &[]);
    assert_refused(
        &probe("quic", &a(&server), "router.example.com", &pki.bundle(), &[]),
        "NotValidForName",
    );
}

#[test]
fn quic_refuses_expired_and_client_auth_leaves() {
    let pki = Pki::new();
    let expired = leaf(
        LeafSpec {
            expired: true,
            ..LeafSpec::server(NAMES)
        },
        &pki.inter,
        &[&pki.inter],
    );
    let s1 = quic_server(&expired, &[]);
    assert_refused(&probe("quic", &a(&s1), NAME, &pki.bundle(), &[]), "Expired");
    let spec = LeafSpec {
        ekus: vec![ExtendedKeyUsagePurpose::ClientAuth],
        ..LeafSpec::server(NAMES)
    };
    let s2 = quic_server(&leaf(spec, &pki.inter, &[&pki.inter]), &[]);
    assert_refused(&probe("quic", &a(&s2), NAME, &pki.bundle(), &[]), "InvalidPurpose");
}

#[test]
fn quic_alpn_disagreement_is_refused_not_passed() {
    let pki = Pki::new();
    // The server requires an ALPN the probe does not offer.
    let requires = quic_server(&pki.good, &[QUIC_ALPN]);
    assert_refused(&probe("quic", &a(&requires), NAME, &pki.bundle(), &[]), "AlpnMismatch");
    assert_refused(
        &probe("quic", &a(&requires), NAME, &pki.bundle(), &["--alpn", "h3"]),
        "AlpnMismatch",
    );
    // The probe offers one and the server negotiates none.
    let none = quic_server(&pki.good, &[]);
    assert_refused(
        &probe("quic", &a(&none), NAME, &pki.bundle(), &["--alpn", "h3"]),
        "AlpnMismatch",
    );
}

#[test]
fn quic_refuses_no_server_and_a_plaintext_udp_server() {
    let pki = Pki::new();
    let addr = format!("127.0.0.1:{}", closed_port());
    let out = probe("quic", &addr, NAME, &pki.bundle(), &["--timeout", "2s"]);
    assert_refused(&out, "Timeout");
    let plain = plain_udp_server();
    assert_refused(
        &probe("quic", &a(&plain), NAME, &pki.bundle(), &["--timeout", "2s"]),
        "Timeout",
    );
}
