//! Hosts decided by parsing: an IP address literal (IPv4, IPv6, bracketed, with a zone, IPv4
//! mapped into IPv6) or a DNS name. Loopback is an address in 127.0.0.0/8 or `::1` (mapped
//! forms included) or the name `localhost`; `127.bao.corp.example.net` is a DNS name like any
//! other, whatever its first label.

use std::net::IpAddr;

/// The IP address a host literal names, if it is one: `10.0.0.1`, `::1`, `[::1]`,
/// `[fe80::1%eth0]`, `::ffff:127.0.0.1` (canonicalised to its IPv4 address). Only the literal
/// forms Go's `net.ParseIP` and Rust accept: `127.1` and `0x7f.0.0.1` are not addresses but names
/// (glibc's resolver would read them as addresses, so a name that only looks numeric is never
/// treated as loopback: the safe side).
pub fn ip(host: &str) -> Option<IpAddr> {
    let h = host.trim();
    let h = h.strip_prefix('[').and_then(|r| r.strip_suffix(']')).unwrap_or(h);
    let h = match h.split_once('%') {
        Some((addr, zone)) if addr.contains(':') && !zone.is_empty() => addr,
        _ => h,
    };
    h.parse::<IpAddr>().ok().map(|ip| ip.to_canonical())
}

/// A loopback host: an address in 127.0.0.0/8 or `::1` (any literal form), or `localhost` (with
/// or without the root dot, any case).
pub fn is_loopback(host: &str) -> bool {
    match ip(host) {
        Some(ip) => ip.is_loopback(),
        None => {
            let h = host.trim();
            let h = h.strip_suffix('.').unwrap_or(h);
            h.eq_ignore_ascii_case("localhost")
        }
    }
}

/// The unspecified address (`0.0.0.0`, `::`): bound, every interface; dialled, this host.
pub fn is_unspecified(host: &str) -> bool {
    ip(host).is_some_and(|ip| ip.is_unspecified())
}

/// Host and port of an authority (`user@host:port`, `[v6]:port`, `host`, a bare IPv6 address):
/// the host without brackets, the port text as written.
pub fn split_authority(authority: &str) -> (&str, Option<&str>) {
    let a = authority.trim();
    let a = a.rsplit_once('@').map(|(_, h)| h).unwrap_or(a);
    if let Some(rest) = a.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((h, after)) => (h, after.strip_prefix(':')),
            None => (a, None),
        };
    }
    match a.rsplit_once(':') {
        // Two colons or more without brackets: a bare IPv6 address, no port.
        Some((h, _)) if h.contains(':') => (a, None),
        Some((h, p)) => (h, Some(p)),
        None => (a, None),
    }
}

/// The host of a URL (`scheme://user@host:port/path?q#f`) or of a bare `host:port/path`.
pub fn url_host(url: &str) -> &str {
    let rest = url.trim().split_once("://").map(|(_, r)| r).unwrap_or(url.trim());
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    split_authority(authority).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_decided_by_parsing() {
        for lo in [
            "127.0.0.1",
            "127.8.9.10",
            "127.255.255.254",
            "::1",
            "[::1]",
            "0:0:0:0:0:0:0:1",
            "::ffff:127.0.0.1",
            "[::ffff:7f00:1]",
            "localhost",
            "LocalHost.",
            " localhost ",
        ] {
            assert!(is_loopback(lo), "{lo}");
        }
        for not in [
            "127.bao.corp.example.net",
            "127.0.0.1.nip.io",
            "127.example",
            "localhost.example.net",
            "mylocalhost",
            "128.0.0.1",
            "::2",
            "::ffff:10.0.0.1",
            "0.0.0.0",
            "::",
            "127.1",
            "0x7f.0.0.1",
            "2130706433",
            "",
            "[127.0.0.1",
        ] {
            assert!(!is_loopback(not), "{not}");
        }
        assert!(is_unspecified("0.0.0.0") && is_unspecified("[::]") && !is_unspecified("0.0.0.0.example"));
        assert_eq!(ip("[fe80::1%eth0]"), "fe80::1".parse().ok());
    }

    #[test]
    fn authorities_and_urls() {
        assert_eq!(split_authority("[::1]:8200"), ("::1", Some("8200")));
        assert_eq!(split_authority("fd00::1"), ("fd00::1", None));
        assert_eq!(split_authority("u:p@host:1"), ("host", Some("1")));
        assert_eq!(split_authority("127.0.0.1:8100"), ("127.0.0.1", Some("8100")));
        assert_eq!(
            url_host("http://127.bao.corp.example.net:8200/v1"),
            "127.bao.corp.example.net"
        );
        assert_eq!(url_host("http://[::ffff:127.0.0.1]:80"), "::ffff:127.0.0.1");
        assert_eq!(url_host("https://a@b.example/x?y#z"), "b.example");
        assert_eq!(url_host("localhost:8200"), "localhost");
    }
}
