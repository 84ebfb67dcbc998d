//! Live, fail-closed handshake probes against a deployed router: TLS over TCP (ALPN h2, the
//! worker gRPC path) and QUIC (the reverse tunnel). A probe passes only when the server's chain
//! verifies for the server name against EXACTLY the given bundle: the root store is built from
//! the bundle alone (no system roots, no fallback), and every other outcome is a refusal with a
//! specific [`Reason`].
//!
//! Input problems (unreadable bundle, malformed address) are errors for the caller (exit 2);
//! everything observed on the network is a [`Report`].

pub mod bundle;
pub mod chain;
mod quic;
pub mod reason;
mod tls;
mod verifier;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

pub use bundle::Bundle;
pub use chain::CertSummary;
pub use reason::{Failure, Reason};

/// ALPN offered by `probe tls` unless told otherwise: worker gRPC is HTTP/2.
pub const DEFAULT_TLS_ALPN: &[&str] = &["h2"];
/// ALPN offered by `probe quic` unless told otherwise. The router's reverse-tunnel ALPN is not
/// published; offering none succeeds against a server that negotiates none, and a server that
/// requires one refuses with `no_application_protocol` (reported as AlpnMismatch, never as a
/// pass). Override with `--alpn`.
pub const DEFAULT_QUIC_ALPN: &[&str] = &[];
/// Default bound for the whole probe (resolve + connect + handshake).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Tls,
    Quic,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tls => "tls",
            Protocol::Quic => "quic",
        }
    }
}

/// A validated probe request.
#[derive(Debug, Clone)]
pub struct Probe {
    pub protocol: Protocol,
    /// `host:port` as it will be resolved.
    pub addr: String,
    pub server_name: String,
    pub bundle: Bundle,
    pub alpn: Vec<Vec<u8>>,
    pub timeout: Duration,
}

/// What a completed handshake negotiated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub tls_version: String,
    pub cipher_suite: String,
    pub alpn: Option<String>,
}

/// The result of one probe: what was used, what the server presented, and the verdict.
#[derive(Debug, Clone)]
pub struct Report {
    pub protocol: Protocol,
    pub addr: String,
    pub resolved: Option<SocketAddr>,
    pub server_name: String,
    pub bundle_path: String,
    pub bundle_certificates: usize,
    pub bundle_fingerprint: Option<String>,
    pub alpn_offered: Vec<String>,
    pub timeout: Duration,
    /// The presented chain (leaf first), empty when no certificate was seen.
    pub chain: Vec<CertSummary>,
    pub outcome: Result<Session, Failure>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.outcome.is_ok()
    }
}

/// `host:port` from the command line; `https://host:port[/]` is accepted for TLS (the form the
/// worker profile uses for the gRPC dial address).
pub fn parse_addr(protocol: Protocol, addr: &str) -> Result<String, String> {
    let mut a = addr.trim();
    if let Some(rest) = a.strip_prefix("https://") {
        if protocol == Protocol::Quic {
            return Err(format!("{addr}: a QUIC address is host:port, without a scheme"));
        }
        a = rest.trim_end_matches('/');
    } else if a.contains("://") {
        return Err(format!("{addr}: expected host:port (or https://host:port for tls)"));
    }
    let Some((host, port)) = a.rsplit_once(':') else {
        return Err(format!("{addr}: expected host:port (the port is required)"));
    };
    if host.is_empty() || (host.contains(':') && !(host.starts_with('[') && host.ends_with(']'))) {
        return Err(format!(
            "{addr}: expected host:port; write IPv6 addresses as [addr]:port"
        ));
    }
    match port.parse::<u16>() {
        Ok(p) if p != 0 => Ok(a.to_string()),
        _ => Err(format!("{addr}: port {port:?} is not a port number 1-65535")),
    }
}

/// `5s`, `500ms`, `2m` or a plain number of seconds; 1 ms ..= 10 min.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("timeout {text:?}: expected e.g. 5s, 500ms, 2m"))?;
    let d = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        _ => return Err(format!("timeout {text:?}: unit must be ms, s or m")),
    };
    if d.is_zero() || d > Duration::from_secs(600) {
        return Err(format!("timeout {text:?}: must be between 1ms and 10m"));
    }
    Ok(d)
}

fn timeout_text(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

pub(crate) fn alpn_text(alpn: &[Vec<u8>]) -> String {
    if alpn.is_empty() {
        "none".into()
    } else {
        alpn.iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Map a rustls handshake error (no chain refusal recorded) to a reason.
pub(crate) fn classify_rustls(e: &rustls::Error, addr: SocketAddr) -> Failure {
    use rustls::Error as E;
    match e {
        E::InvalidCertificate(ce) => Failure::new(reason::from_certificate_error(ce), e.to_string()),
        E::InvalidMessage(m) => Failure::new(
            Reason::NotTls,
            format!("server did not speak TLS: {addr} answered the ClientHello with bytes that are not a TLS record ({m:?})"),
        ),
        E::AlertReceived(rustls::AlertDescription::NoApplicationProtocol) | E::NoApplicationProtocol => {
            Failure::new(Reason::AlpnMismatch, format!("{addr}: no common ALPN protocol ({e})"))
        }
        E::AlertReceived(a) => Failure::new(
            Reason::HandshakeFailed,
            format!("{addr} aborted the TLS handshake with alert {a:?}"),
        ),
        other => Failure::new(Reason::HandshakeFailed, format!("TLS handshake with {addr} failed: {other}")),
    }
}

/// Run the probe. Never panics on network input; every outcome is in the report.
pub async fn run(p: &Probe) -> Report {
    let mut report = Report {
        protocol: p.protocol,
        addr: p.addr.clone(),
        resolved: None,
        server_name: p.server_name.clone(),
        bundle_path: p.bundle.path.clone(),
        bundle_certificates: p.bundle.certs.len(),
        bundle_fingerprint: p.bundle.fingerprint.clone(),
        alpn_offered: p.alpn.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect(),
        timeout: p.timeout,
        chain: vec![],
        outcome: Err(Failure::new(Reason::HandshakeFailed, "not run")),
    };
    report.outcome = attempt(p, &mut report).await;
    report
}

async fn attempt(p: &Probe, report: &mut Report) -> Result<Session, Failure> {
    if p.bundle.certs.is_empty() {
        return Err(Failure::new(
            Reason::EmptyBundle,
            format!(
                "{} holds no certificate: nothing can verify, so the probe did not connect",
                p.bundle.path
            ),
        ));
    }
    let tt = timeout_text(p.timeout);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(verifier::RecordingVerifier::new(
        p.bundle.roots(),
        &p.server_name,
        provider.clone(),
    ));
    let deadline = tokio::time::Instant::now() + p.timeout;

    let addr = match tokio::time::timeout_at(deadline, tokio::net::lookup_host(p.addr.as_str())).await {
        Err(_) => {
            return Err(Failure::new(
                Reason::Timeout,
                format!("resolving {} took longer than {tt}", p.addr),
            ))
        }
        Ok(Err(e)) => {
            return Err(Failure::new(
                Reason::Unreachable,
                format!("cannot resolve {}: {e}", p.addr),
            ))
        }
        Ok(Ok(mut addrs)) => match addrs.next() {
            Some(a) => a,
            None => {
                return Err(Failure::new(
                    Reason::Unreachable,
                    format!("{} resolves to no address", p.addr),
                ))
            }
        },
    };
    report.resolved = Some(addr);

    let result = match p.protocol {
        Protocol::Tls => {
            let name = rustls_pki_types::ServerName::try_from(p.server_name.clone())
                .map_err(|e| Failure::new(Reason::HandshakeFailed, format!("server name {:?}: {e}", p.server_name)))?;
            tls::handshake(addr, name, &p.alpn, verifier.clone(), provider, deadline, &tt).await
        }
        Protocol::Quic => {
            quic::handshake(
                addr,
                &p.server_name,
                &p.alpn,
                verifier.clone(),
                provider,
                p.timeout,
                deadline,
                &tt,
            )
            .await
        }
    };
    let seen = verifier.seen();
    report.chain = seen.chain.iter().map(|c| chain::summarize(c)).collect();
    match result {
        // Belt and braces: a handshake that completed without our verifier accepting the chain
        // is not a pass.
        Ok(_) if !seen.verified => Err(Failure::new(
            Reason::HandshakeFailed,
            "the handshake completed but the chain was never verified against the bundle",
        )),
        r => r,
    }
}

/// The human report (stdout).
pub fn render_human(r: &Report) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    line(format!("nvcf-validate probe {} {}", r.protocol.name(), r.addr));
    if let Some(a) = r.resolved {
        line(format!("  address:      {a}"));
    }
    line(format!("  server name:  {}", r.server_name));
    line(format!(
        "  bundle:       {} ({} certificate(s), {})",
        r.bundle_path,
        r.bundle_certificates,
        r.bundle_fingerprint.as_deref().unwrap_or("no fingerprint: empty")
    ));
    line(format!(
        "  alpn offered: {}",
        if r.alpn_offered.is_empty() {
            "none".into()
        } else {
            r.alpn_offered.join(", ")
        }
    ));
    line(format!("  timeout:      {}", timeout_text(r.timeout)));
    if !r.chain.is_empty() {
        line(format!("  presented chain ({} certificate(s)):", r.chain.len()));
        for (i, c) in r.chain.iter().enumerate() {
            line(format!("    [{i}] subject: {}", c.subject));
            line(format!("        issuer:  {}", c.issuer));
            if !c.sans.is_empty() {
                line(format!("        SANs:    {}", c.sans.join(", ")));
            }
            line(format!("        valid:   {} .. {}", c.not_before, c.not_after));
            line(format!(
                "        EKU:     {}",
                match c.server_auth {
                    None => "absent (any purpose)",
                    Some(true) => "serverAuth allowed",
                    Some(false) => "present WITHOUT serverAuth",
                }
            ));
            line(format!("        sha256:  {}", c.sha256));
        }
    }
    match &r.outcome {
        Ok(s) => line(format!(
            "OK: the chain verifies for {} against exactly {} ({}{}, ALPN {})",
            r.server_name,
            r.bundle_path,
            s.tls_version,
            if s.cipher_suite.is_empty() {
                String::new()
            } else {
                format!(", {}", s.cipher_suite)
            },
            s.alpn.as_deref().unwrap_or("none")
        )),
        Err(f) => {
            line(format!("REFUSED ({}): {}", f.reason.code(), f.detail));
            line(format!("  help: {}", f.reason.help()));
        }
    }
    out
}

/// The JSON report (`--format json`), schema `nvcf-validate/probe/v1`.
pub fn render_json(r: &Report) -> serde_json::Value {
    let (verdict, reason, message, session) = match &r.outcome {
        Ok(s) => (
            "ok",
            None,
            None,
            Some(json!({"tlsVersion": s.tls_version, "cipherSuite": s.cipher_suite, "alpn": s.alpn})),
        ),
        Err(f) => ("refused", Some(f.reason.code()), Some(f.detail.clone()), None),
    };
    json!({
        "schema": "nvcf-validate/probe/v1",
        "protocol": r.protocol.name(),
        "address": r.addr,
        "resolved": r.resolved.map(|a| a.to_string()),
        "serverName": r.server_name,
        "bundle": {"file": r.bundle_path, "certificates": r.bundle_certificates, "fingerprint": r.bundle_fingerprint},
        "alpnOffered": r.alpn_offered,
        "timeoutMs": r.timeout.as_millis() as u64,
        "chain": r.chain,
        "verdict": verdict,
        "reason": reason,
        "message": message,
        "help": r.outcome.as_ref().err().map(|f| f.reason.help()),
        "session": session,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(
            parse_addr(Protocol::Tls, "router.example.com:443").unwrap(),
            "router.example.com:443"
        );
        assert_eq!(
            parse_addr(Protocol::Tls, "https://grpc.example.com:443/").unwrap(),
            "grpc.example.com:443"
        );
        assert_eq!(parse_addr(Protocol::Quic, "[::1]:50072").unwrap(), "[::1]:50072");
        assert!(parse_addr(Protocol::Quic, "https://x:1").is_err());
        assert!(parse_addr(Protocol::Tls, "http://x:1").is_err());
        assert!(parse_addr(Protocol::Tls, "router.example.com").is_err());
        assert!(parse_addr(Protocol::Tls, "::1:443").is_err());
        assert!(parse_addr(Protocol::Tls, "x:0").is_err());
        assert!(parse_addr(Protocol::Tls, "x:99999").is_err());
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_timeout("7").unwrap(), Duration::from_secs(7));
        assert_eq!(parse_timeout("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_timeout("2m").unwrap(), Duration::from_secs(120));
        for bad in ["0s", "11m", "5h", "s", "", "-1s"] {
            assert!(parse_timeout(bad).is_err(), "{bad} accepted");
        }
    }

    #[tokio::test]
    async fn empty_bundle_refuses_without_connecting() {
        let bundle = bundle::parse("empty.pem", b"").unwrap();
        // A port nothing listens on: if the probe connected, the reason would differ.
        let p = Probe {
            protocol: Protocol::Tls,
            addr: "127.0.0.1:9".into(),
            server_name: "router.example.com".into(),
            bundle,
            alpn: vec![],
            timeout: Duration::from_secs(1),
        };
        let r = run(&p).await;
        assert_eq!(r.outcome.unwrap_err().reason, Reason::EmptyBundle);
        assert!(r.resolved.is_none(), "an empty bundle must not lead to a connection");
    }

    #[test]
    fn bundle_rejects_private_keys_without_echoing_them() {
        let pem = b"-----BEGIN PRIVATE KEY-----\nTUlJQ1NFQ1JFVA==\n-----END PRIVATE KEY-----\n";
        let e = bundle::parse("k.pem", pem).unwrap_err().0;
        assert!(e.contains("PRIVATE KEY block"), "{e}");
        assert!(!e.contains("TUlJQ1NFQ1JFVA"), "key material echoed: {e}");
    }
}
