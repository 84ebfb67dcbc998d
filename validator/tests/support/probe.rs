//! Loopback servers and test identities (used by tests/probe.rs and tests/openbao_e2e.rs).
//! Every server binds 127.0.0.1:0 (the kernel picks a free port), runs on its own thread and
//! runtime, and stops when dropped. Keys are generated at test time and never written to the
//! repository.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;
use std::thread::JoinHandle;

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

/// A server identity: the chain it sends (leaf first) and its key.
#[derive(Clone)]
pub struct Identity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key_pkcs8_der: Vec<u8>,
}

impl Identity {
    pub fn from_pem(chain_pem: &str, key_pkcs8_der: Vec<u8>) -> Identity {
        let chain = x509_parser::pem::Pem::iter_from_buffer(chain_pem.as_bytes())
            .map(|p| CertificateDer::from(p.expect("chain PEM parses").contents))
            .collect::<Vec<_>>();
        assert!(!chain.is_empty(), "identity chain holds no certificate");
        Identity { chain, key_pkcs8_der }
    }

    fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_pkcs8_der.clone()))
    }
}

pub struct Ca {
    pub params: CertificateParams,
    pub key: KeyPair,
    pub pem: String,
    pub der: CertificateDer<'static>,
}

fn ca_params(cn: &str) -> CertificateParams {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p
}

pub fn root(cn: &str) -> Ca {
    let params = ca_params(cn);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        der: cert.der().clone(),
        params,
        key,
    }
}

pub fn intermediate(cn: &str, parent: &Ca) -> Ca {
    let params = ca_params(cn);
    let key = KeyPair::generate().unwrap();
    let cert = params
        .signed_by(&key, &Issuer::from_params(&parent.params, &parent.key))
        .unwrap();
    Ca {
        pem: cert.pem(),
        der: cert.der().clone(),
        params,
        key,
    }
}

pub struct LeafSpec<'a> {
    pub names: &'a [&'a str],
    pub ekus: Vec<ExtendedKeyUsagePurpose>,
    pub expired: bool,
}

impl<'a> LeafSpec<'a> {
    pub fn server(names: &'a [&'a str]) -> Self {
        LeafSpec {
            names,
            ekus: vec![ExtendedKeyUsagePurpose::ServerAuth],
            expired: false,
        }
    }
}

/// A leaf signed by `issuer`; the identity's chain is the leaf plus `intermediates`.
pub fn leaf(spec: LeafSpec<'_>, issuer: &Ca, intermediates: &[&Ca]) -> Identity {
    let mut p = CertificateParams::new(spec.names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    p.distinguished_name
        .push(DnType::CommonName, spec.names.first().copied().unwrap_or("leaf"));
    p.extended_key_usages = spec.ekus;
    if spec.expired {
        p.not_before = time::OffsetDateTime::now_utc() - time::Duration::days(30);
        p.not_after = time::OffsetDateTime::now_utc() - time::Duration::days(1);
    }
    let key = KeyPair::generate().unwrap();
    let cert = p
        .signed_by(&key, &Issuer::from_params(&issuer.params, &issuer.key))
        .unwrap();
    let mut chain = vec![cert.der().clone()];
    chain.extend(intermediates.iter().map(|c| c.der.clone()));
    Identity {
        chain,
        key_pkcs8_der: key.serialize_der(),
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A background runtime thread that stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn spawn<F, Fut>(make: F) -> Server
where
    F: FnOnce(oneshot::Sender<SocketAddr>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let (addr_tx, addr_rx) = oneshot::channel::<SocketAddr>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            tokio::select! {
                _ = make(addr_tx) => {}
                _ = stop_rx => {}
            }
        });
    });
    let addr = addr_rx.blocking_recv().expect("test server failed to start");
    Server {
        addr,
        stop: Some(stop_tx),
        thread: Some(thread),
    }
}

/// TLS over TCP: completes handshakes with `identity`, offering `alpn`.
pub fn tls_server(identity: &Identity, alpn: &[&str]) -> Server {
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(identity.chain.clone(), identity.key())
        .unwrap();
    cfg.alpn_protocols = alpn.iter().map(|a| a.as_bytes().to_vec()).collect();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    spawn(move |ready| async move {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        ready.send(l.local_addr().unwrap()).unwrap();
        loop {
            let Ok((tcp, _)) = l.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            tokio::task::spawn_local(async move {
                if let Ok(mut s) = acceptor.accept(tcp).await {
                    let mut buf = [0u8; 64];
                    let _ = s.read(&mut buf).await;
                }
            });
        }
    })
}

/// QUIC: completes handshakes with `identity`; `alpn` empty = the server negotiates none.
pub fn quic_server(identity: &Identity, alpn: &[&str]) -> Server {
    let mut crypto = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(identity.chain.clone(), identity.key())
        .unwrap();
    crypto.alpn_protocols = alpn.iter().map(|a| a.as_bytes().to_vec()).collect();
    let qcfg = quinn::crypto::rustls::QuicServerConfig::try_from(crypto).unwrap();
    let server_cfg = quinn::ServerConfig::with_crypto(Arc::new(qcfg));
    spawn(move |ready| async move {
        let ep = quinn::Endpoint::server(server_cfg, "127.0.0.1:0".parse().unwrap()).unwrap();
        ready.send(ep.local_addr().unwrap()).unwrap();
        while let Some(incoming) = ep.accept().await {
            tokio::task::spawn_local(async move {
                if let Ok(conn) = incoming.await {
                    conn.closed().await;
                }
            });
        }
    })
}

/// How a plaintext TCP server behaves after accepting.
#[derive(Clone, Copy)]
pub enum Plain {
    /// Answers with an HTTP/1.1 response (bytes that are not TLS).
    Http,
    /// Reads the ClientHello and closes without a word.
    Close,
    /// Accepts and never answers.
    Silent,
}

pub fn plain_tcp_server(mode: Plain) -> Server {
    spawn(move |ready| async move {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        ready.send(l.local_addr().unwrap()).unwrap();
        let mut held = Vec::new();
        loop {
            let Ok((mut tcp, _)) = l.accept().await else {
                continue;
            };
            let mut buf = [0u8; 512];
            let _ = tcp.read(&mut buf).await;
            match mode {
                Plain::Http => {
                    let _ = tcp
                        .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                        .await;
                    let _ = tcp.shutdown().await;
                }
                Plain::Close => drop(tcp),
                Plain::Silent => held.push(tcp),
            }
        }
    })
}

/// A UDP server that answers every datagram with plaintext (not QUIC).
pub fn plain_udp_server() -> Server {
    spawn(move |ready| async move {
        let s = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        ready.send(s.local_addr().unwrap()).unwrap();
        let mut buf = [0u8; 2048];
        loop {
            if let Ok((_, from)) = s.recv_from(&mut buf).await {
                let _ = s.send_to(b"hello, this is not QUIC\n", from).await;
            }
        }
    })
}

/// A loopback port with nothing listening (TCP and UDP): bound, then released.
pub fn closed_port() -> u16 {
    let t = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = t.local_addr().unwrap().port();
    drop(t);
    port
}

/// Run `nvcf-validate probe <proto> ADDR --server-name NAME --bundle FILE [extra...]` (it runs
/// no tool and reads no clock variable: the caller's environment as it is).
pub fn probe(proto: &str, addr: &str, name: &str, bundle: &Path, extra: &[&str]) -> Output {
    Command::new(super::run::BIN)
        .args(["probe", proto, addr, "--server-name", name, "--bundle"])
        .arg(bundle)
        .args(extra)
        .output()
        .expect("run nvcf-validate")
}

pub fn text(o: &Output) -> String {
    format!(
        "exit={:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Assert the probe passed (exit 0 and the OK line).
pub fn assert_pass(o: &Output) {
    let t = text(o);
    assert_eq!(o.status.code(), Some(0), "expected a pass:\n{t}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("\nOK: the chain verifies for "),
        "{t}"
    );
}

/// Assert the probe refused (exit 1) with exactly `reason`.
pub fn assert_refused(o: &Output, reason: &str) {
    let t = text(o);
    assert_eq!(o.status.code(), Some(1), "expected a refusal ({reason}):\n{t}");
    let line = format!("REFUSED ({reason}): ");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&line),
        "expected {line:?}:\n{t}"
    );
    assert!(!String::from_utf8_lossy(&o.stdout).contains("\nOK: "), "{t}");
}

pub fn write(dir: &Path, name: &str, content: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p
}
