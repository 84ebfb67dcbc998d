//! Dial addresses as `plaintext-endpoint` reads them: `http://host[:port]/…` and scheme-less
//! `host:port` values of flags, environment variables and ConfigMap keys, and the Service port
//! (in the same graph) such an address reaches.

use super::*;

/// An address a client dials without TLS.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Dial {
    /// Host as written (DNS name or IP, brackets removed).
    pub host: String,
    pub port: Option<u16>,
    /// `http://` written explicitly (otherwise scheme-less `host:port`).
    pub http: bool,
}

/// `http://host[:port][/…]` or scheme-less `host:port` (a DNS name or IP followed by a numeric
/// port, nothing else). Anything else (https://, other schemes, paths, words, a URL without a
/// host) is `None`.
pub(super) fn parse_dial(v: &str) -> Option<Dial> {
    let t = v.trim();
    let (rest, http) = if is_http(t) {
        (&t[7..], true)
    } else if t.contains("://") || t.contains(char::is_whitespace) {
        return None;
    } else {
        (t, false)
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map(|(_, a)| a).unwrap_or(authority);
    let (host, port) = if let Some(b) = authority.strip_prefix('[') {
        let (h, after) = b.split_once(']')?;
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            // An IPv6 address without brackets: after http://, Go's net/url takes the last group
            // for the port (`http://fd00::5:8200` dials [fd00::5]:8200) and the rest for the host;
            // without a scheme no client dials it (`too many colons in address`).
            Some((h, p)) if http && h.parse::<std::net::IpAddr>().is_ok() => (h, Some(p)),
            Some(_) => return None,
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    // A name, an address, or a variable reference still to be expanded (`$(HOST)`, `${HOST}`).
    let host_char = |c: char| c.is_ascii_alphanumeric() || ".-_:$(){}".contains(c);
    if host.is_empty() || !host.chars().all(host_char) {
        return None;
    }
    if !http && (port.is_none() || rest.len() != authority.len()) {
        return None;
    }
    if !http && !host.contains(|c: char| c.is_ascii_alphabetic()) && host.parse::<std::net::IpAddr>().is_err() {
        return None;
    }
    Some(Dial {
        host: host.to_string(),
        port,
        http,
    })
}

impl Dial {
    /// Dialled, this host: loopback or the unspecified address, decided by parsing.
    pub fn is_loopback(&self) -> bool {
        crate::meaning::host::is_loopback(&self.host) || crate::meaning::host::is_unspecified(&self.host)
    }
}

/// A Service port's `name` and `appProtocol`, lower-cased (empty when unset).
pub(super) fn port_name_and_protocol(p: &Value) -> (String, String) {
    let field = |k: &str| {
        p.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_ascii_lowercase()
    };
    (field("name"), field("appProtocol"))
}

/// A Service port that serves TLS or gRPC: TCP, and named `grpc*`/`https*`/`h2*`/`tls*` or with
/// an `appProtocol` of gRPC, HTTPS, TLS or HTTP/2.
pub(super) fn serves_tls_or_grpc(p: &Value) -> bool {
    let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
    if !proto.eq_ignore_ascii_case("TCP") {
        return false;
    }
    let (name, app) = port_name_and_protocol(p);
    let app = app.rsplit('/').next().unwrap_or_default();
    ["grpc", "https", "h2", "tls"].iter().any(|k| name.starts_with(k))
        || app.contains("grpc")
        || matches!(app, "https" | "tls" | "h2" | "h2c" | "http2")
}

/// The Service (and its port) a host reaches from `ns`: `svc`, `svc.ns`, `svc.ns.svc`,
/// `svc.ns.svc.<cluster domain>`, and per-pod names `pod.svc.ns.svc…` of headless Services.
pub(super) fn service_port<'g>(g: &'g Graph, ns: Option<&str>, d: &Dial) -> Option<(&'g Object, &'g Value)> {
    let host = d.host.to_ascii_lowercase();
    let labels: Vec<&str> = host.split('.').collect();
    let svc_at = labels.iter().position(|l| *l == "svc");
    let candidates: Vec<(&str, Option<&str>)> = match (labels.len(), svc_at) {
        (1, _) => vec![(labels[0], ns)],
        (_, Some(i)) if i >= 2 => vec![(labels[i - 2], Some(labels[i - 1]))],
        (2, None) => vec![(labels[0], Some(labels[1]))],
        _ => return None,
    };
    let port = match (d.port, d.http) {
        (Some(p), _) => p,
        (None, true) => 80,
        (None, false) => return None,
    };
    for (name, ns) in candidates {
        let Some(svc) = g.get("", "Service", ns, name) else {
            continue;
        };
        let ports = svc.at("/spec/ports").and_then(Value::as_array).into_iter().flatten();
        if let Some(p) = ports
            .into_iter()
            .find(|p| p.get("port").and_then(Value::as_u64) == Some(port as u64))
        {
            return Some((svc, p));
        }
    }
    None
}

/// Flag or variable names that hold an address to listen on, not one to dial.
pub(super) fn is_listen_name(n: &str) -> bool {
    let n = norm(n);
    n.contains("listen") || n.contains("bind")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dial_addresses() {
        let d = |s: &str| parse_dial(s).map(|d| (d.host, d.port, d.http));
        assert_eq!(
            d("http://openbao.openbao.svc:8200"),
            Some(("openbao.openbao.svc".into(), Some(8200), true))
        );
        assert_eq!(
            d("HTTP://auth.example.com/v1"),
            Some(("auth.example.com".into(), None, true))
        );
        assert_eq!(
            d("request-router.nvcf.svc:50071"),
            Some(("request-router.nvcf.svc".into(), Some(50071), false))
        );
        assert_eq!(d("http://[::1]:8200"), Some(("::1".into(), Some(8200), true)));
        assert_eq!(d("10.0.0.5:443"), Some(("10.0.0.5".into(), Some(443), false)));
        for no in [
            "https://a.example.com",
            "grpc.example.com",
            "a b:1",
            "12:30",
            "x:y",
            "/path:1",
            "s3://b:1",
            "a:1/x",
        ] {
            assert_eq!(d(no), None, "{no}");
        }
        assert!(parse_dial("http://localhost:8080").unwrap().is_loopback());
        let port = |v: Value| serves_tls_or_grpc(&v);
        assert!(port(serde_json::json!({"name": "grpc", "port": 50071})));
        assert!(port(
            serde_json::json!({"name": "api", "port": 8200, "appProtocol": "https"})
        ));
        assert!(port(
            serde_json::json!({"name": "x", "port": 1, "appProtocol": "kubernetes.io/h2c"})
        ));
        assert!(!port(serde_json::json!({"name": "http", "port": 8000})));
        assert!(!port(
            serde_json::json!({"name": "quic", "port": 50072, "protocol": "UDP"})
        ));
    }
}
