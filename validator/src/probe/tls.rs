//! TLS over TCP: connect, handshake with the recording verifier, report.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};
use tokio_rustls::TlsConnector;

use super::reason::{Failure, Reason};
use super::verifier::RecordingVerifier;
use super::{classify_rustls, Session};

pub(super) async fn handshake(
    addr: SocketAddr,
    server_name: rustls_pki_types::ServerName<'static>,
    alpn: &[Vec<u8>],
    verifier: Arc<RecordingVerifier>,
    provider: Arc<rustls::crypto::CryptoProvider>,
    deadline: Instant,
    timeout_text: &str,
) -> Result<Session, Failure> {
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Failure::new(Reason::HandshakeFailed, format!("TLS configuration: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier.clone())
        .with_no_client_auth();
    config.alpn_protocols = alpn.to_vec();

    let tcp = match timeout_at(deadline, TcpStream::connect(addr)).await {
        Err(_) => {
            return Err(Failure::new(
                Reason::Timeout,
                format!(
                "no TCP connection to {addr} within {timeout_text} (packets dropped: firewall, wrong address or port)"
            ),
            ))
        }
        Ok(Err(e)) => return Err(connect_error(addr, &e)),
        Ok(Ok(s)) => s,
    };
    let connector = TlsConnector::from(Arc::new(config));
    match timeout_at(deadline, connector.connect(server_name, tcp)).await {
        Err(_) => Err(Failure::new(
            Reason::Timeout,
            format!(
                "{addr} accepted the TCP connection but completed no TLS handshake within {timeout_text} \
                 (a plaintext server waiting for its own protocol, or an overloaded server)"
            ),
        )),
        Ok(Err(e)) => Err(handshake_error(addr, &e, &verifier)),
        Ok(Ok(mut stream)) => {
            let (_, conn) = stream.get_ref();
            let session = Session {
                tls_version: match conn.protocol_version() {
                    Some(rustls::ProtocolVersion::TLSv1_3) => "TLS 1.3".into(),
                    Some(rustls::ProtocolVersion::TLSv1_2) => "TLS 1.2".into(),
                    Some(v) => format!("{v:?}"),
                    None => String::new(),
                },
                cipher_suite: conn
                    .negotiated_cipher_suite()
                    .map(|s| format!("{:?}", s.suite()))
                    .unwrap_or_default(),
                alpn: conn.alpn_protocol().map(|p| String::from_utf8_lossy(p).into_owned()),
            };
            // Best effort close_notify; the verdict is already reached.
            let _ = timeout_at(deadline, tokio::io::AsyncWriteExt::shutdown(&mut stream)).await;
            Ok(session)
        }
    }
}

fn connect_error(addr: SocketAddr, e: &std::io::Error) -> Failure {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::ConnectionRefused => Failure::new(
            Reason::ConnectionRefused,
            format!("TCP connection to {addr} refused: nothing listens on that port"),
        ),
        K::TimedOut => Failure::new(Reason::Timeout, format!("TCP connection to {addr} timed out")),
        _ => Failure::new(Reason::Unreachable, format!("cannot connect to {addr}: {e}")),
    }
}

fn handshake_error(addr: SocketAddr, e: &std::io::Error, verifier: &RecordingVerifier) -> Failure {
    // The verifier knows the precise reason when the chain was refused.
    if let Some((reason, detail)) = verifier.seen().refusal {
        return Failure::new(reason, detail);
    }
    if let Some(rustls_err) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        return classify_rustls(rustls_err, addr);
    }
    use std::io::ErrorKind as K;
    match e.kind() {
        K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => Failure::new(
            Reason::NotTls,
            format!(
                "server did not speak TLS: {addr} closed the connection without a TLS response to the \
                 ClientHello (a plaintext listener such as the router's own h2c port, or a proxy with \
                 no healthy backend)"
            ),
        ),
        _ => Failure::new(
            Reason::HandshakeFailed,
            format!("TLS handshake with {addr} failed: {e}"),
        ),
    }
}
