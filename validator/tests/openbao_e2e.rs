//! Real PKI end to end (issues #7 and #25): the operator's CA made by `nvcf-validate ca init`
//! (docs/pki.md step 1), the default environment rendered with its root as `pki.trustBundleFile`
//! (nothing else copied by hand), a fresh OpenBao dev server on loopback provisioned with the
//! script `charts/openbao-issuer` renders (extracted from the rendered ConfigMap
//! openbao-pki-provision, never a copy) and the bundle the Job mounts, a CSR for the names the
//! rendered nvcf-pki Certificate asks for, signed through `<mount>/sign/<role>` with cert-manager's
//! sign-only policy and request parameters, the issued chain verified with the workers' verifier
//! against the bundle the stack renders (trust-bundle ConfigMap and worker profile), the role's
//! refusals, the live probes (TLS and QUIC) with the OpenBao-issued identity, and the loud
//! refusal when OpenBao's CA does not anchor in the published bundle.
//!
//! Needs `bao`, `helm` and `helmfile`: `<repo>/.tools/bin` (installed by ./ci/setup) or PATH.

mod support;
use support::openbao::*;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use nvcf_validate::pki;
use rcgen::ExtendedKeyUsagePurpose;
use serde_json::Value;
use support::probe::*;
use tempfile::TempDir;

// ------------------------------------------------------------------ the OpenBao dev server

/// The dev server, with what these tests do to it (tokens of one policy, provisioning).
struct Bao(DevServer);

impl std::ops::Deref for Bao {
    type Target = DevServer;
    fn deref(&self) -> &DevServer {
        &self.0
    }
}

/// Minimal HTTP/1.0 GET (no token: only public endpoints), returns (status, body).
fn http_get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    let status = resp.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = resp
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

impl Bao {
    fn start() -> Bao {
        Bao(DevServer::start("e2e-root"))
    }

    fn token_with_policy(&self, policy: &str) -> String {
        self.cli_ok(
            &self.root_token,
            &["token", "create", "-policy", policy, "-ttl", "10m", "-field", "token"],
        )
        .trim()
        .to_string()
    }

    /// Run the rendered provision.sh with bash, with the Job's mounted files (the published
    /// bundle, the operator's intermediate); returns its output.
    fn provision(&self, r: &Rendered, script: &Path, token: &str, steady_state: bool) -> Output {
        let mut c = self.command(Path::new("bash"), token);
        c.arg(script).env("WAIT_SECONDS", "60");
        r.provision_env(&mut c, self.home.path());
        if steady_state {
            c.env("PROVISION_STEADY_STATE", "1");
        }
        c.output().expect("run bash provision.sh")
    }
}

fn sign(bao: &Bao, token: &str, sign_path: &str, csr: &Csr, dns: &[String], ttl: &str, dir: &Path) -> Output {
    let file = dir.join(format!(
        "req-{}.csr",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::write(&file, &csr.pem).unwrap();
    bao.cli(
        token,
        &[
            "write",
            "-format=json",
            sign_path,
            &format!("csr=@{}", file.display()),
            "common_name=",
            &format!("alt_names={}", dns.join(",")),
            "ip_sans=",
            "uri_sans=",
            &format!("ttl={ttl}"),
            "exclude_cn_from_sans=true",
        ],
    )
}

fn assert_refused_by_role(o: &Output, needle: &str, what: &str) {
    assert!(!o.status.success(), "the role issued {what}:\n{}", out_text(o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(needle),
        "{what}: expected {needle:?} in the refusal:\n{}",
        out_text(o)
    );
}

/// A concrete name for a SAN pattern (a per-pod name for a one-label wildcard).
// ------------------------------------------------------------------ the test

#[test]
fn openbao_pki_end_to_end() {
    let r = render_default();
    let work = TempDir::new().unwrap();
    let script = work.path().join("provision.sh");
    std::fs::write(&script, &r.script).unwrap();
    let int_mount = script_var(&r.script, "INT_MOUNT");
    let role_name = script_var(&r.script, "ROLE_NAME");
    let sign_policy = script_var(&r.script, "SIGN_POLICY_NAME");
    let prov_policy = script_var(&r.script, "PROV_POLICY_NAME");
    assert_eq!(
        r.sign_path,
        format!("{int_mount}/sign/{role_name}"),
        "openbao-pki-role path vs provision.sh"
    );

    let bao = Bao::start();
    let version = bao.cli_ok("", &["version"]);
    eprintln!("OpenBao: {}", version.trim());

    // 1. Provision (bootstrap run), then again: idempotent (same CAs, same role).
    let first = bao.provision(&r, &script, &bao.root_token, false);
    assert!(
        first.status.success(),
        "provision.sh (bootstrap) failed against {}:\n{}",
        version.trim(),
        out_text(&first)
    );
    let role_path = format!("{int_mount}/roles/{role_name}");
    let role_after_first = bao.json(&bao.root_token, &["read", &role_path])["data"].clone();
    let int_ca_first = bao.cli_ok(
        &bao.root_token,
        &["read", "-field=certificate", &format!("{int_mount}/cert/ca")],
    );
    let second = bao.provision(&r, &script, &bao.root_token, false);
    assert!(
        second.status.success(),
        "provision.sh second run failed:\n{}",
        out_text(&second)
    );
    assert_eq!(
        first.stdout, second.stdout,
        "the second run must publish the same root CA"
    );
    assert_eq!(
        bao.cli_ok(
            &bao.root_token,
            &["read", "-field=certificate", &format!("{int_mount}/cert/ca")]
        ),
        int_ca_first,
        "the second run must keep the intermediate CA"
    );
    assert_eq!(
        bao.json(&bao.root_token, &["read", &role_path])["data"],
        role_after_first,
        "the second run changed the role"
    );

    // Steady state without the root token: the provisioner's own narrow policy suffices...
    let prov_token = bao.token_with_policy(&prov_policy);
    let steady = bao.provision(&r, &script, &prov_token, true);
    assert!(
        steady.status.success(),
        "steady-state run with policy {prov_policy} failed:\n{}",
        out_text(&steady)
    );
    assert_eq!(steady.stdout, first.stdout);
    // ...and cannot create mounts.
    let o = bao.cli(&prov_token, &["secrets", "enable", "-path=rogue", "pki"]);
    assert_refused_by_role(&o, "permission denied", "a mount created with the provisioner's policy");
    // ...and cannot widen the signing role it re-applies (every parameter is pinned).
    let o = bao.cli(&prov_token, &["write", &role_path, "allow_any_name=true"]);
    assert_refused_by_role(
        &o,
        "permission denied",
        "the role widened with the provisioner's policy",
    );
    let o = bao.cli(&prov_token, &["write", &role_path, "client_flag=true"]);
    assert_refused_by_role(
        &o,
        "permission denied",
        "client certificates enabled with the provisioner's policy",
    );

    // 2. The role in OpenBao is the role the chart renders (role.json in openbao-pki-role).
    let role = bao.json(&bao.root_token, &["read", &role_path])["data"].clone();
    for (k, want) in r.role_json.as_object().expect("role.json is an object") {
        let got = &role[k.as_str()];
        let same = match (want, got) {
            (Value::String(w), Value::Number(g)) => Some(duration_secs(w)) == g.as_u64(),
            (Value::Array(w), Value::Array(g)) => {
                w.iter().map(Value::to_string).collect::<BTreeSet<_>>() == g.iter().map(Value::to_string).collect()
            }
            (w, g) => w == g,
        };
        assert!(
            same,
            "role {role_path}: {k} is {got} in OpenBao but the chart renders {want}"
        );
    }
    assert_eq!(role["server_flag"], true);
    assert_eq!(role["client_flag"], false);

    // 3. The published trust bundle is the one the stack rendered from the operator's root on the
    //    first render (no copy from OpenBao): the trust-bundle ConfigMap, the worker profile and
    //    the bundle the Job anchors to are the same, with one fingerprint, and OpenBao's public
    //    chain endpoint and the root the script prints end in it.
    let root_pem = r.trust_bundle.clone();
    let published = pki::fingerprint::bundle_fingerprint(root_pem.as_bytes()).expect("the rendered bundle parses");
    let operator_root = std::fs::read(&r.ca.root).unwrap();
    assert_eq!(
        published,
        pki::fingerprint::bundle_fingerprint(&operator_root).unwrap(),
        "the rendered bundle is the operator's root"
    );
    assert_eq!(r.trust_bundle_fingerprint, published, "nvcf-trust-bundle annotation");
    assert_eq!(
        r.profile_fingerprint, published,
        "worker profile trustBundleFingerprint"
    );
    assert_eq!(
        pki::fingerprint::bundle_fingerprint(r.profile_bundle.as_bytes()).unwrap(),
        published,
        "worker profile trustBundle"
    );
    assert_eq!(
        pki::fingerprint::bundle_fingerprint(r.anchor.as_bytes()).unwrap(),
        published,
        "openbao-pki-trust-bundle"
    );
    let printed = pki::fingerprint::bundle_fingerprint(&first.stdout).expect("provision.sh prints the root");
    assert_eq!(
        published, printed,
        "provision.sh prints a root the bundle does not hold"
    );
    assert!(
        String::from_utf8_lossy(&first.stderr).contains(&format!("anchors in the published trust bundle {published}")),
        "{}",
        out_text(&first)
    );
    let (status, chain) = http_get(&bao.addr, &format!("/v1/{int_mount}/ca_chain")).unwrap();
    assert_eq!(status, 200, "GET /v1/{int_mount}/ca_chain");
    let chain = pki::parse_bundle(chain.as_bytes()).expect("OpenBao serves its chain as PEM");
    assert_eq!(chain.len(), 2, "intermediate + the operator's root");
    assert_eq!(
        pki::fingerprint::fingerprint_of_ders([chain[1].as_ref()]),
        published,
        "OpenBao's chain ends in the operator's root"
    );
    let bundle_file = write(work.path(), "trust-bundle.pem", &root_pem);

    // 4. Sign each router Certificate as cert-manager would, with cert-manager's policy only.
    let sign_token = bao.token_with_policy(&sign_policy);
    let now = time::OffsetDateTime::now_utc();
    let mut identity = None;
    for cert in &r.certificates {
        let name = cert["metadata"]["name"].as_str().unwrap_or("?");
        let dns: Vec<String> = cert["spec"]["dnsNames"]
            .as_array()
            .unwrap_or_else(|| panic!("Certificate {name} has no dnsNames"))
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        let duration = duration_secs(cert["spec"]["duration"].as_str().unwrap_or("2160h"));
        let alg = key_algorithm(cert);
        // The CSR also asks for clientAuth: the role, not the CSR, decides (must not grant it).
        let req = csr(
            &dns,
            alg,
            vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth],
            &[],
        );
        let o = sign(
            &bao,
            &sign_token,
            &r.sign_path,
            &req,
            &dns,
            &go_duration(duration),
            work.path(),
        );
        assert!(
            o.status.success(),
            "signing Certificate {name} through {} failed:\n{}",
            r.sign_path,
            out_text(&o)
        );
        let resp: Value = serde_json::from_slice(&o.stdout).expect("sign answers JSON");
        let leaf_pem = resp["data"]["certificate"].as_str().unwrap();
        let issuing = resp["data"]["issuing_ca"].as_str().unwrap();
        let chain_pem = format!("{leaf_pem}\n{issuing}\n"); // tls.crt: leaf + intermediate
        let chain = pki::parse_bundle(chain_pem.as_bytes()).expect("issued chain parses");
        assert_eq!(chain.len(), 2, "leaf + intermediate");

        // Verifies to the published root for every requested name, as a worker would.
        for n in &dns {
            let v = pki::verify::verify_server(root_pem.as_bytes(), chain_pem.as_bytes(), &concrete(n), now)
                .unwrap_or_else(|e| panic!("Certificate {name}: {} does not verify: {e}", concrete(n)));
            assert_eq!(v.intermediates, 1);
        }
        let wrong = pki::verify::verify_server(root_pem.as_bytes(), chain_pem.as_bytes(), "router.example.com", now)
            .unwrap_err();
        assert_eq!(wrong.reason, "NotValidForName");
        let leaf = pki::describe(chain[0].as_ref()).unwrap();
        assert_eq!(
            leaf.dns_sans.iter().collect::<BTreeSet<_>>(),
            dns.iter().collect::<BTreeSet<_>>(),
            "Certificate {name}: SANs differ from the requested dnsNames"
        );
        assert!(
            leaf.ip_sans.is_empty(),
            "Certificate {name}: unexpected IP SANs {:?}",
            leaf.ip_sans
        );
        assert!(!leaf.is_ca);
        assert_eq!(
            eku(chain[0].as_ref()),
            (true, false),
            "Certificate {name}: serverAuth and no clientAuth"
        );
        let life = (leaf.not_after - leaf.not_before) as u64;
        assert!(
            life + 120 >= duration,
            "Certificate {name}: issued for {life}s, asked {duration}s (a mount or role max TTL caps it)"
        );
        let inter = pki::describe(chain[1].as_ref()).unwrap();
        assert!(inter.is_ca, "the second certificate is the intermediate CA");

        identity.get_or_insert((Identity::from_pem(&chain_pem, req.key.serialize_der()), dns.clone()));
    }

    // 5. What the role refuses.
    let (_, dns) = identity.as_ref().unwrap();
    let ttl = "24h0m0s";
    let outside = vec!["request-router.attacker.example".to_string()];
    let req = csr(
        &outside,
        &rcgen::PKCS_ECDSA_P256_SHA256,
        vec![ExtendedKeyUsagePurpose::ServerAuth],
        &[],
    );
    let o = sign(&bao, &sign_token, &r.sign_path, &req, &outside, ttl, work.path());
    assert_refused_by_role(&o, "not allowed by this role", "a name outside the allowed domains");
    let mixed = vec![dns[0].clone(), "evil.example.com".to_string()];
    let req = csr(&mixed, &rcgen::PKCS_ECDSA_P256_SHA256, vec![], &[]);
    let o = sign(&bao, &sign_token, &r.sign_path, &req, &mixed, ttl, work.path());
    assert_refused_by_role(&o, "not allowed by this role", "an allowed name next to a foreign one");
    let req = csr(&dns[..1], &rcgen::PKCS_ECDSA_P256_SHA256, vec![], &["127.0.0.1"]);
    let o = sign(&bao, &sign_token, &r.sign_path, &req, &dns[..1], ttl, work.path());
    assert!(!o.status.success(), "the role issued an IP SAN:\n{}", out_text(&o));
    let req = csr(&dns[..1], &rcgen::PKCS_ED25519, vec![], &[]);
    let o = sign(&bao, &sign_token, &r.sign_path, &req, &dns[..1], ttl, work.path());
    assert_refused_by_role(
        &o,
        "role requires keys of type",
        "a key type the Certificate does not use",
    );
    // A client-auth certificate: sign ignores the CSR's EKUs (checked above: no clientAuth);
    // the endpoints that take EKUs from the request are closed to cert-manager's policy.
    let req = csr(
        &dns[..1],
        &rcgen::PKCS_ECDSA_P256_SHA256,
        vec![ExtendedKeyUsagePurpose::ClientAuth],
        &[],
    );
    let f = write(work.path(), "client.csr", &req.pem);
    let o = bao.cli(
        &sign_token,
        &[
            "write",
            &format!("{int_mount}/sign-verbatim/{role_name}"),
            &format!("csr=@{}", f.display()),
            "ext_key_usage=ClientAuth",
        ],
    );
    assert_refused_by_role(&o, "permission denied", "a client-auth certificate via sign-verbatim");
    let o = bao.cli(
        &sign_token,
        &[
            "write",
            &format!("{int_mount}/issue/{role_name}"),
            &format!("common_name={}", dns[0]),
        ],
    );
    assert_refused_by_role(
        &o,
        "permission denied",
        "a certificate via issue (OpenBao-generated key)",
    );
    let o = bao.cli(&sign_token, &["write", &role_path, "client_flag=true"]);
    assert_refused_by_role(&o, "permission denied", "a role change by cert-manager");

    // 6. Live probes with the OpenBao-issued identity and the published bundle.
    let (id, dns) = identity.unwrap();
    let name = concrete(&dns[0]);
    let per_pod = dns
        .iter()
        .find(|n| n.starts_with("*."))
        .map(|n| concrete(n))
        .unwrap_or_else(|| name.clone());
    let tls = tls_server(&id, &["h2"]);
    let quic = quic_server(&id, &[]);
    for (proto, server) in [("tls", &tls), ("quic", &quic)] {
        let addr = server.addr.to_string();
        for n in [&name, &per_pod] {
            let o = probe(proto, &addr, n, &bundle_file, &["--timeout", "10s"]);
            assert_pass(&o);
            assert!(String::from_utf8_lossy(&o.stdout).contains(&published), "{}", text(&o));
        }
        let empty = write(work.path(), "empty.pem", "");
        assert_refused(&probe(proto, &addr, &name, &empty, &[]), "EmptyBundle");
        let other = write(
            work.path(),
            "other-root.pem",
            &support::probe::root("unrelated root").pem,
        );
        assert_refused(
            &probe(proto, &addr, &name, &other, &["--timeout", "10s"]),
            "UnknownIssuer",
        );
        assert_refused(
            &probe(proto, &addr, "router.example.com", &bundle_file, &["--timeout", "10s"]),
            "NotValidForName",
        );
    }
    let nothing = format!("127.0.0.1:{}", closed_port());
    assert_refused(&probe("tls", &nothing, &name, &bundle_file, &[]), "ConnectionRefused");
    assert_refused(
        &probe("quic", &nothing, &name, &bundle_file, &["--timeout", "2s"]),
        "Timeout",
    );
    let plain = plain_tcp_server(Plain::Http);
    assert_refused(
        &probe("tls", &plain.addr.to_string(), &name, &bundle_file, &[]),
        "NotTls",
    );
}

/// Provisioning fails loudly when OpenBao's CA and the published bundle disagree: an intermediate
/// from another root (the operator imported the wrong file, or published the wrong root) is
/// refused with both fingerprints, and a bootstrap run with nothing to import never mints a root.
#[test]
fn provisioning_refuses_a_ca_the_published_bundle_does_not_hold() {
    let r = render_default();
    let work = TempDir::new().unwrap();
    let script = work.path().join("provision.sh");
    std::fs::write(&script, &r.script).unwrap();
    let int_mount = script_var(&r.script, "INT_MOUNT");
    let published = pki::fingerprint::bundle_fingerprint(r.anchor.as_bytes()).unwrap();

    // Nothing to import: refused, naming the Secret key, and no CA appears in OpenBao.
    let bao = Bao::start();
    let mut c = bao.command(Path::new("bash"), &bao.root_token);
    c.arg(&script).env("WAIT_SECONDS", "60");
    r.provision_env(&mut c, bao.home.path());
    c.env("CA_BUNDLE_FILE", work.path().join("absent.pem"));
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("nvcf-validate ca init") && err.contains("intermediate.pem"),
        "{err}"
    );
    let ca = bao.cli(
        &bao.root_token,
        &["read", "-field=certificate", &format!("{int_mount}/cert/ca")],
    );
    assert!(
        !String::from_utf8_lossy(&ca.stdout).contains("BEGIN CERTIFICATE"),
        "a CA appeared without an import"
    );

    // Another operator CA's intermediate: imported, then refused with both fingerprints.
    let other = support::openbao::ca_init(&work.path().join("other"));
    let other_root = pki::fingerprint::bundle_fingerprint(&std::fs::read(&other.root).unwrap()).unwrap();
    assert_ne!(other_root, published);
    let mut c = bao.command(Path::new("bash"), &bao.root_token);
    c.arg(&script).env("WAIT_SECONDS", "60");
    r.provision_env(&mut c, bao.home.path());
    c.env("CA_BUNDLE_FILE", &other.intermediate);
    // OpenBao links the intermediate to its own root only when it has that root: give it, as
    // an operator who imported the other CA's whole chain would.
    let chain_file = work.path().join("other-chain.pem");
    std::fs::write(
        &chain_file,
        format!(
            "{}{}",
            std::fs::read_to_string(&other.intermediate).unwrap(),
            std::fs::read_to_string(&other.root).unwrap()
        ),
    )
    .unwrap();
    c.env("CA_BUNDLE_FILE", &chain_file);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("CA MISMATCH"), "{err}");
    assert!(err.contains(&published), "the published bundle's fingerprint:\n{err}");
    assert!(err.contains(&other_root), "OpenBao's root fingerprint:\n{err}");
    assert!(o.stdout.is_empty(), "no root printed as if all were well");

    // The intermediate alone (its root unknown to OpenBao): the chain ends in the intermediate,
    // which the bundle does not hold either.
    let bao2 = Bao::start();
    let mut c = bao2.command(Path::new("bash"), &bao2.root_token);
    c.arg(&script).env("WAIT_SECONDS", "60");
    r.provision_env(&mut c, bao2.home.path());
    c.env("CA_BUNDLE_FILE", &other.intermediate);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("CA MISMATCH") && err.contains(&published), "{err}");
}
