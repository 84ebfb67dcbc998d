//! `trust-bundle-valid`: the published trust bundle (and a Vault issuer's caBundle) holds only valid CA certificates.

use super::*;

const BUNDLE: &str = "trust-bundle-valid";

pub(super) fn check_bundle(ctx: &Ctx) -> Vec<Finding> {
    let now = ctx.now.unix_timestamp();
    let mut out = Vec::new();
    for b in bundles(ctx.graph) {
        let whose = format!("{} {}", b.obj.display(), b.place);
        let blocks = match pki::blocks(&b.pem) {
            Ok(bl) => bl,
            Err(e) => {
                out.push(Finding::object_at(
                    BUNDLE,
                    b.obj,
                    b.needle,
                    format!("{whose}: {e}; fix the PEM"),
                ));
                continue;
            }
        };
        if blocks.is_empty() {
            out.push(Finding::object_at(BUNDLE, b.obj, b.needle, format!(
                "{whose} holds no certificate: workers would have nothing to trust the router with (or fall back to system \
                 roots); put the PEM of the CA certificate(s) that issue the router's certificates there"
            )));
            continue;
        }
        let mut seen: Vec<String> = Vec::new();
        for bl in &blocks {
            if !bl.is_certificate() {
                let e = pki::PemError::NotCertificate {
                    index: bl.index,
                    label: bl.label.clone(),
                };
                let f = Finding::object_at(BUNDLE, b.obj, b.needle, format!("{whose}: {e}"));
                out.push(if e.is_private_key() {
                    f.with_help("A private key in a published ConfigMap is readable by everyone who can read the namespace: rotate it, do not just delete the block.")
                } else {
                    f
                });
                continue;
            }
            let der = match &bl.der {
                Some(Ok(d)) => d,
                Some(Err(reason)) => {
                    out.push(Finding::object_at(
                        BUNDLE,
                        b.obj,
                        b.needle,
                        format!(
                            "{whose}: {}",
                            pki::PemError::Malformed {
                                index: bl.index,
                                reason
                            }
                        ),
                    ));
                    continue;
                }
                None => continue,
            };
            let info = match pki::describe(der) {
                Ok(i) => i,
                Err(reason) => {
                    out.push(Finding::object_at(
                        BUNDLE,
                        b.obj,
                        b.needle,
                        format!(
                            "{whose}: {}",
                            pki::PemError::BadCertificate {
                                index: bl.index,
                                reason
                            }
                        ),
                    ));
                    continue;
                }
            };
            let cert = format!("{whose}: certificate {} {}", bl.index, info.label());
            if seen.contains(&info.sha256) {
                out.push(
                    Finding::object_at(
                        BUNDLE,
                        b.obj,
                        b.needle,
                        format!("{cert} appears more than once; remove the duplicate"),
                    )
                    .with_severity(Severity::Warning),
                );
                continue;
            }
            seen.push(info.sha256.clone());
            if !info.is_ca {
                out.push(Finding::object_at(BUNDLE, b.obj, b.needle, format!(
                    "{cert} is not a CA (no basicConstraints cA=true) — a leaf or server certificate; workers anchor trust \
                     in CA certificates, and pinning a leaf breaks at its first renewal; publish the issuing root CA instead"
                )));
            }
            if info.not_after < now {
                out.push(Finding::object_at(
                    BUNDLE,
                    b.obj,
                    b.needle,
                    format!(
                        "{cert} expired at {}; remove it and publish the current CA",
                        pki::rfc3339(info.not_after)
                    ),
                ));
            } else if info.not_before > now {
                out.push(
                    Finding::object_at(
                        BUNDLE,
                        b.obj,
                        b.needle,
                        format!(
                    "{cert} is not valid before {}; clients that check anchor validity will not use it until then",
                    pki::rfc3339(info.not_before)
                ),
                    )
                    .with_severity(Severity::Warning),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::super::trust_bundle_fingerprint::FINGERPRINT;
    use super::*;
    use crate::pki::testcerts;

    use time::macros::datetime;

    #[test]
    fn a_bundle_with_a_private_key_is_refused_without_echoing_the_key() {
        let root = testcerts::root("Root");
        let key = testcerts::throwaway_key_pem(); // generated now, never committed
        let yaml = bundle_yaml(&format!("{}{key}", root.pem), None);
        let f = run(BUNDLE, &yaml);
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message.contains("PEM block 2 is a PRIVATE KEY block"),
            "{}",
            f[0].message
        );
        assert!(f[0].help.as_deref().unwrap_or("").contains("rotate"));
        let rendered = serde_json::to_string(&f).unwrap();
        for line in key.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!rendered.contains(line), "key material in a finding");
        }
        // The fingerprint rule does not judge a bundle it cannot parse (no second finding).
        assert!(run(FINGERPRINT, &yaml).is_empty());
    }

    #[test]
    fn validity_is_judged_at_the_validation_time() {
        // testkit::ctx judges at 2026-11-29T12:00Z.
        let expired = testcerts::root_valid("Old", datetime!(2020-01-01 0:00 UTC), datetime!(2026-11-29 11:59 UTC));
        let future = testcerts::root_valid("New", datetime!(2026-11-29 12:01 UTC), datetime!(2036-01-01 0:00 UTC));
        let good = testcerts::root_valid("Good", datetime!(2026-11-29 11:59 UTC), datetime!(2036-01-01 0:00 UTC));
        let f = run(BUNDLE, &bundle_yaml(&expired.pem, None));
        assert_eq!(f.len(), 1);
        assert!(
            f[0].message.contains("expired at 2026-11-29T11:59:00Z"),
            "{}",
            f[0].message
        );
        assert_eq!(f[0].sev(), Severity::Error);
        let f = run(BUNDLE, &bundle_yaml(&future.pem, None));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].severity, Some(Severity::Warning));
        assert!(run(BUNDLE, &bundle_yaml(&good.pem, None)).is_empty());
        // Both ends are inclusive (RFC 5280 4.1.2.5): valid from and until exactly now is valid.
        let from_now = testcerts::root_valid("From", datetime!(2026-11-29 12:00 UTC), datetime!(2036-01-01 0:00 UTC));
        let until_now = testcerts::root_valid("Until", datetime!(2020-01-01 0:00 UTC), datetime!(2026-11-29 12:00 UTC));
        let f = run(
            BUNDLE,
            &bundle_yaml(&format!("{}{}", from_now.pem, until_now.pem), None),
        );
        assert!(f.is_empty(), "{}", messages(&f));
    }

    #[test]
    fn duplicates_are_a_warning_and_leaves_an_error() {
        let f = run(BUNDLE, &fixture("fires-trust-bundle-valid-duplicates"));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert_eq!(f[0].severity, Some(Severity::Warning));
        assert!(
            f[0].message.contains("certificate 3 `CN=Fixture Root A"),
            "{}",
            f[0].message
        );
        let f = run(BUNDLE, &fixture("fires-trust-bundle-valid-leaf"));
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert_eq!(f[0].sev(), Severity::Error);
        assert!(f[0].message.contains("is not a CA"), "{}", f[0].message);
    }

    #[test]
    fn vault_ca_bundle_is_a_bundle_too() {
        let issuer = fixture("silent-vault-issuer-secure-sa");
        assert!(run(BUNDLE, &issuer).is_empty());
        let leaf = std::fs::read_to_string(fixture_dir().join("certs/leaf-wildcard.pem")).unwrap();
        let b64 = |s: &str| {
            const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let mut o = String::new();
            for c in s.as_bytes().chunks(3) {
                let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
                for i in 0..4 {
                    o.push(if i <= c.len() {
                        T[(n >> (18 - 6 * i) & 63) as usize] as char
                    } else {
                        '='
                    });
                }
            }
            o
        };
        let start = issuer.find("caBundle: ").unwrap() + "caBundle: ".len();
        let end = start + issuer[start..].find('\n').unwrap();
        let with_leaf = format!("{}{}{}", &issuer[..start], b64(&leaf), &issuer[end..]);
        let f = run(BUNDLE, &with_leaf);
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(
            f[0].message
                .starts_with("ClusterIssuer openbao spec.vault.caBundle: certificate 1 `CN=leaf-wildcard`"),
            "{}",
            f[0].message
        );
        let garbage = format!("{}not-base64!{}", &issuer[..start], &issuer[end..]);
        let f = run(BUNDLE, &garbage);
        assert_eq!(f.len(), 1, "{}", messages(&f));
        assert!(f[0].message.contains("holds no certificate"), "{}", f[0].message);
    }
}
