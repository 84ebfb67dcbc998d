//! QUIC (TLS 1.3 inside QUIC) with quinn: one connection attempt, verified by the recording
//! verifier, closed right after the handshake.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use quinn::crypto::rustls::{HandshakeData, QuicClientConfig};
use quinn::{ConnectionError, Endpoint, IdleTimeout, TransportConfig, TransportErrorCode};
use tokio::time::{timeout_at, Instant};

use super::reason::{Failure, Reason};
use super::verifier::RecordingVerifier;
use super::Session;

/// QUIC error codes 0x100..=0x1ff carry a TLS alert.
fn tls_alert(code: TransportErrorCode) -> Option<rustls::AlertDescription> {
    let c = u64::from(code);
    (0x100..=0x1ff)
        .contains(&c)
        .then(|| rustls::AlertDescription::from((c - 0x100) as u8))
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn handshake(
    addr: SocketAddr,
    server_name: &str,
    alpn: &[Vec<u8>],
    verifier: Arc<RecordingVerifier>,
    provider: Arc<rustls::crypto::CryptoProvider>,
    timeout: Duration,
    deadline: Instant,
    timeout_text: &str,
) -> Result<Session, Failure> {
    let setup = |e: String| Failure::new(Reason::HandshakeFailed, format!("QUIC client setup: {e}"));
    let mut crypto = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| setup(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_no_client_auth();
    crypto.alpn_protocols = alpn.to_vec();
    let quic = QuicClientConfig::try_from(crypto).map_err(|e| setup(e.to_string()))?;
    let mut client = quinn::ClientConfig::new(Arc::new(quic));
    let mut transport = TransportConfig::default();
    transport.max_idle_timeout(Some(IdleTimeout::try_from(timeout).map_err(|e| setup(e.to_string()))?));
    client.transport_config(Arc::new(transport));

    let bind: SocketAddr = if addr.is_ipv6() { "[::]:0" } else { "0.0.0.0:0" }
        .parse()
        .expect("literal address");
    let endpoint = Endpoint::client(bind)
        .map_err(|e| Failure::new(Reason::Unreachable, format!("cannot open a UDP socket: {e}")))?;
    let connecting = endpoint
        .connect_with(client, addr, server_name)
        .map_err(|e| setup(format!("{e}")))?;

    let result = match timeout_at(deadline, connecting).await {
        Err(_) => Err(no_answer(addr, timeout_text)),
        Ok(Err(e)) => Err(connection_error(addr, &e, &verifier, alpn, timeout_text)),
        Ok(Ok(conn)) => {
            let alpn = conn
                .handshake_data()
                .and_then(|d| d.downcast::<HandshakeData>().ok())
                .and_then(|d| d.protocol)
                .map(|p| String::from_utf8_lossy(&p).into_owned());
            conn.close(0u32.into(), b"nvcf-validate probe done");
            Ok(Session {
                tls_version: "QUIC, TLS 1.3".into(),
                cipher_suite: String::new(),
                alpn,
            })
        }
    };
    // Let the close frame go out; never wait long for it.
    let _ = tokio::time::timeout(Duration::from_millis(500), endpoint.wait_idle()).await;
    result
}

fn no_answer(addr: SocketAddr, timeout_text: &str) -> Failure {
    Failure::new(
        Reason::Timeout,
        format!(
            "no QUIC handshake answer from {addr} (UDP) within {timeout_text}: nothing listens on that \
             UDP port, UDP is filtered on the way, or the server does not speak QUIC"
        ),
    )
}

fn connection_error(
    addr: SocketAddr,
    e: &ConnectionError,
    verifier: &RecordingVerifier,
    alpn: &[Vec<u8>],
    timeout_text: &str,
) -> Failure {
    if let Some((reason, detail)) = verifier.seen().refusal {
        return Failure::new(reason, detail);
    }
    let offered = super::alpn_text(alpn);
    match e {
        ConnectionError::TimedOut => no_answer(addr, timeout_text),
        ConnectionError::ConnectionClosed(close) => match tls_alert(close.error_code) {
            Some(rustls::AlertDescription::NoApplicationProtocol) => Failure::new(
                Reason::AlpnMismatch,
                format!("{addr} refused the handshake: it supports none of the offered ALPN protocols ({offered})"),
            ),
            Some(alert) => Failure::new(
                Reason::HandshakeFailed,
                format!("{addr} aborted the QUIC handshake with TLS alert {alert:?}"),
            ),
            None => Failure::new(
                Reason::HandshakeFailed,
                format!("{addr} closed the QUIC connection: {close}"),
            ),
        },
        ConnectionError::TransportError(t) => match tls_alert(t.code) {
            Some(rustls::AlertDescription::NoApplicationProtocol) => Failure::new(
                Reason::AlpnMismatch,
                format!(
                    "{addr} selected no ALPN protocol although the probe offered {offered}; QUIC requires \
                     agreement (use --no-alpn if the server negotiates none)"
                ),
            ),
            _ => Failure::new(
                Reason::HandshakeFailed,
                format!("QUIC handshake with {addr} failed: {t}"),
            ),
        },
        ConnectionError::VersionMismatch => Failure::new(
            Reason::HandshakeFailed,
            format!("{addr} supports no QUIC version this probe speaks"),
        ),
        other => Failure::new(
            Reason::HandshakeFailed,
            format!("QUIC handshake with {addr} failed: {other}"),
        ),
    }
}
