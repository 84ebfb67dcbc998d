//! The CA lifecycle of docs/pki-lifecycle.md, one test per runbook, against the real OpenBao the
//! stack ships (`bao`, on loopback) provisioned with the rendered `provision.sh`:
//! leaf renewal, intermediate rotation with an overlap, root rotation through a two-root bundle,
//! and OpenBao's listener certificate renewed and served after SIGHUP without an unseal. What
//! existing workers do when the bundle changes is asserted in the root rotation (their old
//! bundle refuses the new chain; the overlap bundle accepts both).
//!
//! Needs `bao`, `helm` and `helmfile`: `<repo>/.tools/bin` (installed by ./ci/setup) or PATH.

mod support;
use support::openbao::*;
use support::probe::{assert_pass, probe, tls_server, write, Identity};
use support::run::command;
use support::tool;

use nvcf_validate::pki;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

// ------------------------------------------------------------------ a dev server and its CLI

/// The dev server, driven as root (the runbooks' operator).
struct Bao(DevServer);

impl std::ops::Deref for Bao {
    type Target = DevServer;
    fn deref(&self) -> &DevServer {
        &self.0
    }
}

impl Bao {
    fn start() -> Bao {
        Bao(DevServer::start("lifecycle-root"))
    }

    fn ok(&self, args: &[&str]) -> String {
        self.cli_ok(&self.root_token, args)
    }

    fn json(&self, args: &[&str]) -> Value {
        self.0.json(&self.root_token, args)
    }

    /// The rendered provision.sh as `token` (bootstrap with the root token, or steady state).
    fn provision(&self, r: &Rendered, token: &str, steady: bool) -> Output {
        let script = self.home.path().join("provision.sh");
        std::fs::write(&script, &r.script).unwrap();
        let mut c = self.command(Path::new("bash"), token);
        c.arg(&script).env("WAIT_SECONDS", "30");
        r.provision_env(&mut c, self.home.path());
        if steady {
            c.env("PROVISION_STEADY_STATE", "1");
        }
        c.output().expect("run provision.sh")
    }

    /// Sign a CSR for `dns` through the rendered sign path; (chain PEM leaf+issuing CA, serial, key).
    fn sign(&self, r: &Rendered, dns: &[String]) -> (String, String, Vec<u8>) {
        let req = csr(
            dns,
            &rcgen::PKCS_ECDSA_P256_SHA256,
            vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth],
            &[],
        );
        let f = self.home.path().join(format!("{}.csr", free_port()));
        std::fs::write(&f, &req.pem).unwrap();
        let v = self.json(&[
            "write",
            &r.sign_path,
            &format!("csr=@{}", f.display()),
            "common_name=",
            &format!("alt_names={}", dns.join(",")),
            "ttl=24h",
            "exclude_cn_from_sans=true",
        ]);
        let d = &v["data"];
        let chain = format!(
            "{}\n{}\n",
            d["certificate"].as_str().unwrap(),
            d["issuing_ca"].as_str().unwrap()
        );
        (
            chain,
            d["serial_number"].as_str().unwrap().to_string(),
            req.key.serialize_der(),
        )
    }
}

fn router_names(r: &Rendered) -> Vec<String> {
    r.certificates[0]["spec"]["dnsNames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn verifies(bundle: &str, chain: &str, name: &str) -> Result<(), String> {
    pki::verify::verify_server(
        bundle.as_bytes(),
        chain.as_bytes(),
        name,
        time::OffsetDateTime::now_utc(),
    )
    .map(|_| ())
    .map_err(|e| e.reason.to_string())
}

fn provisioned() -> (Bao, Rendered) {
    let r = render_default();
    let bao = Bao::start();
    let o = bao.provision(&r, &bao.root_token, false);
    assert!(o.status.success(), "bootstrap provisioning:\n{}", out_text(&o));
    (bao, r)
}

// ------------------------------------------------------------------ the runbooks

/// Runbook 1, leaf renewal: a new serial and key under the same chain; workers need nothing new
/// (the same bundle and fingerprint verify it, served by a live TLS server).
#[test]
fn leaf_renewal_keeps_the_chain_and_the_bundle() {
    let (bao, r) = provisioned();
    let dns = router_names(&r);
    let name = concrete(&dns[0]);
    let (old, old_serial, _) = bao.sign(&r, &dns);
    let (new, new_serial, key) = bao.sign(&r, &dns);
    assert_ne!(old_serial, new_serial, "a renewal is a new certificate");
    let issuer = |c: &str| pki::parse_bundle(c.as_bytes()).unwrap()[1].clone();
    assert_eq!(issuer(&old), issuer(&new), "same intermediate");
    assert_eq!(verifies(&r.trust_bundle, &old, &name), Ok(()));
    assert_eq!(verifies(&r.trust_bundle, &new, &name), Ok(()));
    let bundle = write(bao.home.path(), "bundle.pem", &r.trust_bundle);
    let server = tls_server(&Identity::from_pem(&new, key), &["h2"]);
    let o = probe("tls", &server.addr.to_string(), &name, &bundle, &["--timeout", "10s"]);
    assert_pass(&o);
    assert!(String::from_utf8_lossy(&o.stdout).contains(&r.trust_bundle_fingerprint));
}

/// Runbook 2, intermediate rotation: a new intermediate from the same offline root is imported
/// and made the default issuer; leaves of the old and the new intermediate both verify during
/// the overlap, the bundle does not change, and steady-state provisioning still anchors.
#[test]
fn intermediate_rotation_overlaps_under_the_same_bundle() {
    let (bao, r) = provisioned();
    let dns = router_names(&r);
    let name = concrete(&dns[0]);
    let (old, _, _) = bao.sign(&r, &dns);
    let next = bao.home.path().join("next");
    let o = command(bao.home.path())
        .args(["ca", "intermediate", "--root-cert"])
        .arg(&r.ca.root)
        .arg("--root-key")
        .arg(&r.ca.root_key)
        .arg("--out")
        .arg(&next)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let int_mount = script_var(&r.script, "INT_MOUNT");
    let imported = bao.json(&[
        "write",
        &format!("{int_mount}/issuers/import/bundle"),
        &format!("pem_bundle=@{}", next.join("intermediate.pem").display()),
    ]);
    let id = imported["data"]["imported_issuers"][0].as_str().unwrap().to_string();
    bao.ok(&[
        "write",
        &format!("{int_mount}/config/issuers"),
        &format!("default={id}"),
    ]);
    let (new, _, _) = bao.sign(&r, &dns);
    let issuer = |c: &str| pki::describe(pki::parse_bundle(c.as_bytes()).unwrap()[1].as_ref()).unwrap();
    assert_ne!(
        issuer(&old).sha256,
        issuer(&new).sha256,
        "signed by the new intermediate"
    );
    assert_eq!(
        verifies(&r.trust_bundle, &old, &name),
        Ok(()),
        "old leaf during the overlap"
    );
    assert_eq!(verifies(&r.trust_bundle, &new, &name), Ok(()), "new leaf");
    let prov: Value = serde_json::from_str(&bao.ok(&[
        "token",
        "create",
        "-format=json",
        "-policy",
        &script_var(&r.script, "PROV_POLICY_NAME"),
        "-ttl",
        "10m",
    ]))
    .unwrap();
    let o = bao.provision(&r, prov["auth"]["client_token"].as_str().unwrap(), true);
    assert!(o.status.success(), "steady state after the rotation:\n{}", out_text(&o));
}

/// Runbook 3, root rotation: a new root and intermediate; the bundle holds both roots (a new
/// fingerprint) while leaves of both exist; workers still holding the old bundle refuse the new
/// chain (UnknownIssuer) until they take the new profile; then the old root is removed and old
/// leaves are refused.
#[test]
fn root_rotation_goes_through_a_two_root_bundle() {
    let (bao, r1) = provisioned();
    let dns = router_names(&r1);
    let name = concrete(&dns[0]);
    let (old, _, _) = bao.sign(&r1, &dns);
    let work = TempDir::new().unwrap();
    // A new root under a new name: with the old name, a worker holding only the old root would
    // try it as the issuer and report BadSignature instead of UnknownIssuer.
    let dir2 = work.path().join("ca2");
    let o = command(work.path())
        .args([
            "ca",
            "init",
            "--root-cn",
            "NVCF Root CA 2",
            "--intermediate-cn",
            "NVCF OpenBao Intermediate CA 2",
            "--out",
        ])
        .arg(&dir2)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let ca2 = TestCa {
        dir: dir2.clone(),
        root: dir2.join("root.pem"),
        root_key: dir2.join("root.key"),
        intermediate: dir2.join("intermediate.pem"),
    };
    let root1 = std::fs::read_to_string(&r1.ca.root).unwrap();
    let root2 = std::fs::read_to_string(&ca2.root).unwrap();
    // Step 1: publish both roots (render with a two-root pki.trustBundleFile) and apply.
    let both = TestCa {
        root: write(work.path(), "both.pem", &format!("{root1}{root2}")),
        ..ca2.clone()
    };
    let r2 = render_pki_with("default", &both);
    assert_ne!(
        r2.trust_bundle_fingerprint, r1.trust_bundle_fingerprint,
        "the fingerprint changes"
    );
    assert_eq!(r2.profile_fingerprint, r2.trust_bundle_fingerprint);
    // Step 2: once workers hold the two-root bundle, import the new root (certificate only) and
    // the new intermediate, and make it the default issuer.
    let int_mount = script_var(&r2.script, "INT_MOUNT");
    bao.ok(&[
        "write",
        &format!("{int_mount}/issuers/import/cert"),
        &format!("pem_bundle=@{}", ca2.root.display()),
    ]);
    let imported = bao.json(&[
        "write",
        &format!("{int_mount}/issuers/import/bundle"),
        &format!("pem_bundle=@{}", ca2.intermediate.display()),
    ]);
    let id = imported["data"]["imported_issuers"][0].as_str().unwrap().to_string();
    bao.ok(&[
        "write",
        &format!("{int_mount}/config/issuers"),
        &format!("default={id}"),
    ]);
    let o = bao.provision(&r2, &bao.root_token, true);
    assert!(
        o.status.success(),
        "the new chain anchors in the two-root bundle:\n{}",
        out_text(&o)
    );
    let (new, _, _) = bao.sign(&r2, &dns);
    assert_eq!(
        verifies(&r2.trust_bundle, &old, &name),
        Ok(()),
        "old leaf, two-root bundle"
    );
    assert_eq!(
        verifies(&r2.trust_bundle, &new, &name),
        Ok(()),
        "new leaf, two-root bundle"
    );
    // A worker that never took the two-root profile refuses the new chain.
    assert_eq!(verifies(&r1.trust_bundle, &new, &name), Err("UnknownIssuer".into()));
    // Step 3: once every leaf is re-issued, publish the new root alone.
    let r3 = render_pki_with("default", &ca2);
    assert_ne!(r3.trust_bundle_fingerprint, r2.trust_bundle_fingerprint);
    assert_eq!(verifies(&r3.trust_bundle, &new, &name), Ok(()));
    assert_eq!(verifies(&r3.trust_bundle, &old, &name), Err("UnknownIssuer".into()));
    let o = bao.provision(&r3, &bao.root_token, true);
    assert!(
        o.status.success(),
        "the new chain anchors in the new bundle:\n{}",
        out_text(&o)
    );
    // Provisioning with the old bundle now fails loudly: OpenBao's chain ends in the new root.
    let o = bao.provision(&r1, &bao.root_token, true);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("CA MISMATCH"),
        "{}",
        out_text(&o)
    );
}

// ------------------------------------------------------------------ OpenBao's own listener

/// Runbook 4, OpenBao's listener certificate: a real server (not -dev) on file storage with a
/// TLS listener, initialised and unsealed; the certificate files are replaced by a renewed one
/// and the server gets SIGHUP: the same process serves the renewed certificate, still unsealed,
/// no unseal key used again.
#[test]
fn listener_certificate_renewal_is_served_after_sighup_without_unseal() {
    use support::probe::{leaf, root, LeafSpec};
    let dir = TempDir::new().unwrap();
    let ca = root("Bootstrap CA (test)");
    let names = ["localhost", "127.0.0.1"];
    let first = leaf(LeafSpec::server(&names), &ca, &[]);
    let pem = |id: &Identity| {
        id.chain
            .iter()
            .map(|c| {
                let b64 = base64_lines(c.as_ref());
                format!("-----BEGIN CERTIFICATE-----\n{b64}-----END CERTIFICATE-----\n")
            })
            .collect::<String>()
    };
    let key_pem = |id: &Identity| {
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}-----END PRIVATE KEY-----\n",
            base64_lines(&id.key_pkcs8_der)
        )
    };
    let cert_file = write(dir.path(), "tls.crt", &pem(&first));
    let key_file = write(dir.path(), "tls.key", &key_pem(&first));
    let ca_file = write(dir.path(), "ca.crt", &ca.pem);
    let port = free_port();
    let config = format!(
        "storage \"file\" {{ path = \"{}\" }}\nlistener \"tcp\" {{\n  address = \"127.0.0.1:{port}\"\n  tls_cert_file = \"{}\"\n  tls_key_file = \"{}\"\n}}\ndisable_mlock = true\napi_addr = \"https://127.0.0.1:{port}\"\n",
        dir.path().join("data").display(),
        cert_file.display(),
        key_file.display()
    );
    let cfg = write(dir.path(), "server.hcl", &config);
    let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
    let mut child = Command::new(tool("bao"))
        .args(["server", "-config"])
        .arg(&cfg)
        .env_clear()
        .env("HOME", dir.path())
        .env("PATH", bao_path())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let cli = |args: &[&str]| {
        Command::new(tool("bao"))
            .args(args)
            .env_clear()
            .env("HOME", dir.path())
            .env("BAO_ADDR", format!("https://127.0.0.1:{port}"))
            .env("BAO_CACERT", &ca_file)
            .output()
            .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while cli(&["status"]).status.code() != Some(2) {
        // 2: sealed (reachable); anything else: not up yet
        assert!(
            Instant::now() < deadline,
            "bao server did not come up:\n{}",
            std::fs::read_to_string(dir.path().join("server.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let init: Value =
        serde_json::from_slice(&cli(&["operator", "init", "-key-shares=1", "-key-threshold=1", "-format=json"]).stdout)
            .unwrap();
    let key = init["unseal_keys_b64"][0].as_str().unwrap().to_string();
    assert!(cli(&["operator", "unseal", &key]).status.success());
    assert_eq!(cli(&["status"]).status.code(), Some(0), "unsealed");
    let served = |want: &Identity| {
        let o = probe(
            "tls",
            &format!("127.0.0.1:{port}"),
            "localhost",
            &ca_file,
            &["--timeout", "10s"],
        );
        assert_pass(&o);
        let sha = pki::describe(want.chain[0].as_ref()).unwrap().sha256;
        String::from_utf8_lossy(&o.stdout).contains(&sha)
    };
    assert!(served(&first), "the first certificate is served");
    // Renew: a new certificate and key for the same names from the same CA, written in place
    // (what cert-manager does to the mounted Secret), then SIGHUP.
    let renewed = leaf(LeafSpec::server(&names), &ca, &[]);
    std::fs::write(&cert_file, pem(&renewed)).unwrap();
    std::fs::write(&key_file, key_pem(&renewed)).unwrap();
    assert!(served(&first), "without a reload the old certificate is still served");
    // SAFETY: a plain kill(2) of our own child process.
    let rc = unsafe { libc::kill(pid as i32, libc::SIGHUP) };
    assert_eq!(rc, 0, "SIGHUP");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !served(&renewed) {
        assert!(
            Instant::now() < deadline,
            "the renewed certificate is not served after SIGHUP"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(child.try_wait().unwrap().is_none(), "the same server process");
    assert_eq!(
        cli(&["status"]).status.code(),
        Some(0),
        "still unsealed: no unseal needed"
    );
    let _ = child.kill();
    let _ = child.wait();
}

fn base64_lines(der: &[u8]) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in der.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            s.push(if i <= c.len() {
                T[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    let mut out = String::new();
    for line in s.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap());
        out.push('\n');
    }
    out
}
