//! Name matching, two ways:
//!
//! * X.509 as workers verify it (rustls-webpki): only subjectAltName counts, the CN never; a
//!   presented `*` must be the whole left-most label, matches exactly one non-empty label, and
//!   needs at least two labels after it; ASCII case-insensitive; an IP reference matches iPAddress
//!   SANs only. `san_covers` reimplements webpki's `presented_id_matches_reference_id` for names
//!   that exist only on paper (a cert-manager `spec.dnsNames` at render time); the tests below
//!   cross-check it against webpki itself on real certificates with the same names.
//!   `cert_covers` asks webpki directly when a real certificate exists.
//! * Gateway API hostnames: a listener or route hostname `*.example.com` matches one *or more*
//!   labels (`a.example.com`, `a.b.example.com`), never `example.com`.

use rustls_pki_types::{CertificateDer, ServerName};
use std::net::IpAddr;

/// Whether a certificate whose DNS SANs are `cert_dns_sans` is valid for `name` (a DNS name
/// a worker sends as SNI) under rustls-webpki's rules. IP references never match DNS SANs.
pub fn san_covers(cert_dns_sans: &[String], name: &str) -> bool {
    if name.parse::<IpAddr>().is_ok() {
        return false;
    }
    cert_dns_sans.iter().any(|p| presented_matches(p, name))
}

/// DNS and IP SANs together, as a worker matches them (IP reference → iPAddress SANs only).
pub fn covers(dns_sans: &[String], ip_sans: &[IpAddr], name: &str) -> bool {
    match name.parse::<IpAddr>() {
        Ok(ip) => ip_sans.contains(&ip),
        Err(_) => san_covers(dns_sans, name),
    }
}

/// Ask rustls/webpki whether a real end-entity certificate is valid for `name`.
/// `false` also when the certificate does not parse or `name` is not a valid server name.
pub fn cert_covers(cert: &CertificateDer<'_>, name: &str) -> bool {
    let Ok(server_name) = ServerName::try_from(name.to_string()) else {
        return false;
    };
    let Ok(parsed) = rustls::server::ParsedCertificate::try_from(cert) else {
        return false;
    };
    rustls::client::verify_server_name(&parsed, &server_name).is_ok()
}

/// webpki's `presented_id_matches_reference_id` for `IdRole::Reference`.
pub fn presented_matches(presented: &str, reference: &str) -> bool {
    let (p, r) = (presented.as_bytes(), reference.as_bytes());
    if !is_valid_dns_id(p, Role::Presented) || !is_valid_dns_id(r, Role::Reference) {
        return false;
    }
    let (mut pi, mut ri) = (0usize, 0usize);
    if p.first() == Some(&b'*') {
        pi = 1;
        // The wildcard consumes at least one byte of the reference, up to the next dot.
        loop {
            if ri >= r.len() {
                return false;
            }
            ri += 1;
            if r.get(ri) == Some(&b'.') {
                break;
            }
        }
    }
    loop {
        match (p.get(pi), r.get(ri)) {
            (Some(a), Some(b)) if a.eq_ignore_ascii_case(b) => {
                pi += 1;
                ri += 1;
                if pi == p.len() {
                    if *a == b'.' {
                        return false; // absolute presented IDs are not supported
                    }
                    break;
                }
            }
            _ => return false,
        }
    }
    // A relative presented ID matches an absolute reference ID (one trailing dot).
    matches!(&r[ri..], [] | [b'.'])
}

#[derive(Clone, Copy, PartialEq)]
enum Role {
    Reference,
    Presented,
}

/// webpki's `is_valid_dns_id` (wildcards allowed only for presented IDs).
fn is_valid_dns_id(name: &[u8], role: Role) -> bool {
    if name.len() > 253 || name.is_empty() {
        return false;
    }
    let mut i = 0usize;
    let mut dots = 0usize;
    let wildcard = role == Role::Presented && name[0] == b'*';
    if wildcard {
        if name.get(1) != Some(&b'.') {
            return false;
        }
        i = 2;
        dots = 1;
        if i >= name.len() {
            return false;
        }
    }
    let (mut label_len, mut all_numeric, mut ends_hyphen) = (0usize, false, false);
    while i < name.len() {
        match name[i] {
            b'-' => {
                if label_len == 0 {
                    return false;
                }
                all_numeric = false;
                ends_hyphen = true;
                label_len += 1;
            }
            b'0'..=b'9' => {
                if label_len == 0 {
                    all_numeric = true;
                }
                ends_hyphen = false;
                label_len += 1;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                all_numeric = false;
                ends_hyphen = false;
                label_len += 1;
            }
            b'.' => {
                dots += 1;
                if label_len == 0 || ends_hyphen {
                    return false;
                }
                label_len = 0;
            }
            _ => return false,
        }
        if label_len > 63 {
            return false;
        }
        i += 1;
    }
    if (label_len == 0 && role != Role::Reference) || ends_hyphen || all_numeric {
        return false;
    }
    if wildcard {
        let labels = if label_len == 0 { dots } else { dots + 1 };
        if labels < 3 {
            return false;
        }
    }
    true
}

/// Whether `name` is a DNS name a worker could send as SNI (webpki's reference-ID syntax).
pub fn is_valid_reference(name: &str) -> bool {
    name.parse::<IpAddr>().is_ok() || is_valid_dns_id(name.as_bytes(), Role::Reference)
}

/// The one-label wildcard that would cover `name` (`a.b.c` → `*.b.c`), if X.509 allows one
/// (at least two labels must follow the `*`).
pub fn one_label_wildcard(name: &str) -> Option<String> {
    let name = name.trim_end_matches('.');
    let (_, rest) = name.split_once('.')?;
    (rest.split('.').count() >= 2 && is_valid_dns_id(format!("*.{rest}").as_bytes(), Role::Presented))
        .then(|| format!("*.{rest}"))
}

/// Gateway API hostname matching: `pattern` (listener or route hostname, possibly `*.suffix`)
/// against a concrete `host`. A wildcard matches one or more labels.
pub fn gateway_matches(pattern: &str, host: &str) -> bool {
    let (pattern, host) = (
        pattern.to_ascii_lowercase(),
        host.trim_end_matches('.').to_ascii_lowercase(),
    );
    match pattern.strip_prefix("*.") {
        Some(suffix) => host.len() > suffix.len() + 1 && host.ends_with(&format!(".{suffix}")),
        None => pattern == host,
    }
}

/// Gateway API hostname intersection of a listener hostname and a route hostname: the more
/// specific of the two when they intersect (`*.example.com` ∩ `a.example.com` = `a.example.com`;
/// `*.example.com` ∩ `*.b.example.com` = `*.b.example.com`), `None` when they do not.
pub fn gateway_intersection(listener: &str, route: &str) -> Option<String> {
    let (l, r) = (listener.to_ascii_lowercase(), route.to_ascii_lowercase());
    if l == r {
        return Some(r);
    }
    let covers = |wild: &str, other: &str| match wild.strip_prefix("*.") {
        Some(suffix) => other.ends_with(&format!(".{suffix}")) && other.len() > suffix.len() + 1,
        None => false,
    };
    if covers(&l, &r) {
        Some(r)
    } else if covers(&r, &l) {
        Some(l)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::testcerts;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// (presented SANs, reference, expected) — webpki's own table plus the cases this stack
    /// depends on (per-pod names, one-label vs two-label wildcards, bare domains, IPs, case).
    const CASES: &[(&[&str], &str, bool)] = &[
        (
            &["*.request-router-headless.nvcf.svc.cluster.local"],
            "request-router-0.request-router-headless.nvcf.svc.cluster.local",
            true,
        ),
        (
            &["*.request-router-headless.nvcf.svc.cluster.local"],
            "request-router-headless.nvcf.svc.cluster.local",
            false,
        ),
        (
            &["*.nvcf.svc.cluster.local"],
            "request-router-0.request-router-headless.nvcf.svc.cluster.local",
            false,
        ),
        (&["*.example.com"], "a.example.com", true),
        (&["*.example.com"], "a.b.example.com", false),
        (&["*.example.com"], "example.com", false),
        (&["*.example.com"], "A.EXAMPLE.com", true),
        (&["*.example.com"], "a.example.com.", true),
        (&["example.com"], "example.com.", true),
        (&["example.com"], "www.example.com", false),
        (&["www.test.org"], "test.org", false),
        (&["*.com"], "example.com", false),
        (&["a*.example.com"], "ab.example.com", false),
        (&["*a.example.com"], "ba.example.com", false),
        (&["grpc.workers.example.com"], "grpc.workers.example.com", true),
        (&["grpc.workers.example.com"], "GRPC.Workers.Example.COM", true),
        (&["x_y.example.com"], "x_y.example.com", true),
        (
            &["router-0.example.com", "router-1.example.com"],
            "router-2.example.com",
            false,
        ),
        (
            &["router-0.example.com", "router-1.example.com"],
            "router-1.example.com",
            true,
        ),
        (&["10.0.0.1.example.com"], "10.0.0.1", false),
        (&["example.com"], "*.example.com", false),
    ];

    #[test]
    fn matches_webpki_rules() {
        for (sans, name, want) in CASES {
            assert_eq!(san_covers(&s(sans), name), *want, "{sans:?} vs {name}");
        }
    }

    /// The paper matcher and webpki agree on real certificates with the same names.
    #[test]
    fn agrees_with_webpki_on_real_certificates() {
        let ca = testcerts::root("cross-check CA");
        for (sans, name, want) in CASES {
            let pem = testcerts::leaf(sans, &ca, None);
            let der = crate::pki::parse_bundle(pem.as_bytes()).unwrap().remove(0);
            assert_eq!(cert_covers(&der, name), *want, "webpki: {sans:?} vs {name}");
            assert_eq!(
                san_covers(&s(sans), name),
                cert_covers(&der, name),
                "disagree: {sans:?} vs {name}"
            );
        }
    }

    #[test]
    fn ip_references_match_ip_sans_only() {
        let ca = testcerts::root("ip CA");
        let pem = testcerts::leaf(&["10.0.0.7", "router.example.com"], &ca, None);
        let der = crate::pki::parse_bundle(pem.as_bytes()).unwrap().remove(0);
        assert!(cert_covers(&der, "10.0.0.7"));
        assert!(!cert_covers(&der, "10.0.0.8"));
        let info = crate::pki::describe(der.as_ref()).unwrap();
        assert!(covers(&info.dns_sans, &info.ip_sans, "10.0.0.7"));
        assert!(!covers(&info.dns_sans, &info.ip_sans, "10.0.0.8"));
        assert!(!san_covers(&s(&["10.0.0.7"]), "10.0.0.7"));
    }

    #[test]
    fn wildcard_suggestion_and_gateway_semantics() {
        assert_eq!(one_label_wildcard("r-2.h.nvcf.svc").as_deref(), Some("*.h.nvcf.svc"));
        assert_eq!(one_label_wildcard("a.example.com").as_deref(), Some("*.example.com"));
        assert_eq!(one_label_wildcard("example.com"), None);
        assert!(gateway_matches("*.example.com", "a.b.example.com"));
        assert!(gateway_matches("*.example.com", "a.example.com"));
        assert!(!gateway_matches("*.example.com", "example.com"));
        assert!(gateway_matches("grpc.example.com", "GRPC.example.com"));
        assert_eq!(
            gateway_intersection("*.example.com", "a.b.example.com").as_deref(),
            Some("a.b.example.com")
        );
        assert_eq!(
            gateway_intersection("*.b.example.com", "*.example.com").as_deref(),
            Some("*.b.example.com")
        );
        assert_eq!(gateway_intersection("a.example.com", "b.example.com"), None);
        assert!(is_valid_reference("a.example.com") && is_valid_reference("10.1.2.3"));
        assert!(!is_valid_reference("{pod_name}.example.com"));
    }

    #[test]
    fn dns_name_validity_limits() {
        let label = |n: usize| "a".repeat(n);
        // 253 characters in all, 63 per label.
        let name253 = format!("{}.{}.{}.{}", label(63), label(63), label(63), label(61));
        assert_eq!(name253.len(), 253);
        assert!(is_valid_reference(&name253));
        assert!(!is_valid_reference(&format!("{name253}a")));
        assert!(is_valid_reference(&format!("{}.example.com", label(63))));
        assert!(!is_valid_reference(&format!("{}.example.com", label(64))));
        // Empty labels.
        assert!(!is_valid_reference(""));
        assert!(!is_valid_reference("a..example.com"));
        assert!(!is_valid_reference(".example.com"));
        assert!(
            is_valid_reference("example.com."),
            "a trailing dot is a reference's root"
        );
        // Hyphens.
        assert!(!is_valid_reference("router-.example.com"));
        assert!(!is_valid_reference("example.co-"));
        assert!(!is_valid_reference("-router.example.com"));
        assert!(is_valid_reference("request-router.example.com"));
        // An all-numeric last label is not a DNS name (it would read as an IP address).
        assert!(!is_valid_reference("example.123"));
        assert!(is_valid_reference("123.example.com"));
        assert!(is_valid_reference("10.0.0.1"), "an IP address is a valid reference");
        // Wildcards are for presented names only, and need two labels below them.
        assert!(!is_valid_reference("*.example.com"));
        assert!(is_valid_dns_id(b"*.example.com", Role::Presented));
        assert!(!is_valid_dns_id(b"*.com", Role::Presented));
        assert!(!is_valid_dns_id(b"*example.com", Role::Presented));
    }

    #[test]
    fn gateway_wildcards_need_a_non_empty_label_and_the_whole_suffix() {
        // An empty first label is no host ("*.example.com" never covers ".example.com").
        assert!(!gateway_matches("*.example.com", ".example.com"));
        assert!(
            gateway_matches("*.example.com", "a.example.com."),
            "a trailing dot is the root"
        );
        // Long enough is not enough: the suffix must match.
        assert!(!gateway_matches("*.example.com", "a.example.org"));
        assert!(!gateway_matches("*.example.com", "aexample.com"));
        assert!(!gateway_matches("a.example.com", "b.example.com"));
        assert_eq!(gateway_intersection("*.example.com", ".example.com"), None);
        assert_eq!(gateway_intersection(".example.com", "*.example.com"), None);
        assert_eq!(gateway_intersection("*.example.com", "a.example.org"), None);
        assert_eq!(gateway_intersection("a.example.org", "*.example.com"), None);
        assert_eq!(
            gateway_intersection("A.example.com", "a.EXAMPLE.com").as_deref(),
            Some("a.example.com")
        );
        assert_eq!(
            gateway_intersection("*.example.com", "*.example.com").as_deref(),
            Some("*.example.com")
        );
        assert_eq!(
            gateway_intersection("a.example.com", "*.example.com").as_deref(),
            Some("a.example.com")
        );
    }

    #[test]
    fn wildcard_suggestion_needs_a_valid_wildcard() {
        assert_eq!(
            one_label_wildcard("a.-b.example"),
            None,
            "`*.-b.example` is not a valid name"
        );
        assert_eq!(one_label_wildcard("a.b.c.").as_deref(), Some("*.b.c"));
        assert_eq!(one_label_wildcard("nodots"), None);
    }

    #[test]
    fn hyphens_digits_and_label_lengths_as_webpki_counts_them() {
        // Consecutive hyphens inside a label are fine (IDNA `xn--`).
        assert!(is_valid_reference("a--b.example.com"));
        assert!(is_valid_reference("xn--bcher-kva.example.com"));
        // Hyphens count toward the 63-character label limit.
        let hyphenated = |n: usize| format!("{}-{}.example.com", "a".repeat(n / 2), "b".repeat(n - n / 2 - 1));
        assert!(is_valid_reference(&hyphenated(63)));
        assert!(!is_valid_reference(&hyphenated(64)));
        // A last label that starts with a letter is not all-numeric, whatever follows.
        assert!(is_valid_reference("example.a1"));
        assert!(is_valid_reference("example.1a"));
        assert!(!is_valid_reference("example.0"));
        // Presented names are relative: a trailing dot is refused there (accepted in references).
        assert!(!is_valid_dns_id(b"example.com.", Role::Presented));
        assert!(!is_valid_dns_id(b"*.example.com.", Role::Presented));
        assert!(is_valid_dns_id(b"example.com", Role::Presented));
        assert!(is_valid_dns_id(b"example.com.", Role::Reference));
        assert!(!is_valid_dns_id(b"*.", Role::Presented));
        assert!(!is_valid_dns_id(b"*", Role::Presented));
        assert!(is_valid_dns_id(b"*.a.b", Role::Presented));
        assert!(!is_valid_dns_id(b"*.a", Role::Presented));
        assert!(
            !is_valid_dns_id(b"a.*.b", Role::Presented),
            "a wildcard only as the whole first label"
        );
    }
}
