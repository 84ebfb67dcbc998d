//! `nvcf-validate probe --profile FILE [--connect HOST:PORT] [-e ENV]`: probe exactly what a
//! worker given this ControlPlaneProfile would reach, verified against the profile's own bundle.
//!
//! Before any connection: the profile must be one nvcf-cli reads (its rules, `profile::document`),
//! in trust mode `bundle`; the bundle's `nvcf-trust-bundle-v1` fingerprint is recomputed and must
//! equal the advertised one, `--expect-fingerprint`, and (with `-e`) the fingerprint of the roots
//! the environment publishes. A mismatch is a refusal (exit 1, `FingerprintMismatch`).
//!
//! Then one handshake per transport and name: QUIC to `requestRouterAddress` (or `--connect`) for
//! every name the router advertises (from `-e`, or `--server-name`, else the address's host), and
//! with `-e` (or `--grpc`) TLS with ALPN h2 to the gRPC dial address (or `--connect-grpc`) for its
//! host. Exit 0 when every probe passes, 1 when any is refused, 2 when the input is unusable.

use crate::commands::profile::{document, source};
use crate::engine;
use crate::probe::{self, bundle, Probe, Protocol};
use std::path::PathBuf;

/// Largest profile read.
const MAX_PROFILE: usize = 1 << 20;
/// Most names probed on one leg (the names come from input).
const MAX_NAMES: usize = 64;

#[derive(Debug, Clone, clap::Args)]
pub struct ProfileArgs {
    /// The ControlPlaneProfile to probe with (as `nvcf-validate profile` writes it).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<String>,
    /// Dial HOST:PORT for the QUIC leg instead of requestRouterAddress (the names stay).
    #[arg(long, value_name = "HOST:PORT", requires = "profile")]
    pub connect: Option<String>,
    /// Dial HOST:PORT for the gRPC TLS leg instead of the gRPC dial address (the name stays).
    #[arg(long, value_name = "HOST:PORT", requires = "profile")]
    pub connect_grpc: Option<String>,
    /// The worker gRPC dial address to probe too (https://host:port); `-e` reads it.
    #[arg(long, value_name = "URL", requires = "profile")]
    pub grpc: Option<String>,
    /// A name the router presents on QUIC (repeatable); `-e` reads the advertised names.
    #[arg(long = "server-name", value_name = "NAME", requires = "profile")]
    pub server_names: Vec<String>,
    /// The fingerprint the bundle must have (e.g. the cluster's nvcf.io/trust-bundle-fingerprint).
    #[arg(long, value_name = "sha256:HEX", requires = "profile")]
    pub expect_fingerprint: Option<String>,
    /// Read the environment's advertised names, gRPC dial address and published roots.
    #[arg(long = "environment", short = 'e', requires = "profile")]
    pub environment: Option<String>,
    /// The helmfile state for `-e` (default: as helmfile finds it here).
    #[arg(long, short = 'f', requires = "environment")]
    pub file: Option<PathBuf>,
    /// With `-e`: do not fetch remote charts.
    #[arg(long, requires = "environment")]
    pub offline: bool,
    /// With `-e`: render remote charts from tarballs in DIR.
    #[arg(long, value_name = "DIR", requires = "environment")]
    pub chart_mirror: Option<PathBuf>,
    /// ALPN for the QUIC leg (repeatable; default none, as `probe quic`).
    #[arg(long = "quic-alpn", value_name = "PROTO", requires = "profile")]
    pub quic_alpn: Vec<String>,
    /// Bound for each probe: 5s, 500ms, 1m.
    #[arg(long, default_value = "5s")]
    pub timeout: String,
}

fn fail(code: i32, msg: impl std::fmt::Display) -> i32 {
    eprintln!("nvcf-validate probe --profile: {msg}");
    code
}

fn refuse(msg: impl std::fmt::Display) -> i32 {
    println!("REFUSED (FingerprintMismatch): {msg}");
    1
}

struct Leg {
    protocol: Protocol,
    addr: String,
    names: Vec<String>,
    alpn: Vec<Vec<u8>>,
}

/// Host of `host:port` (brackets of an IPv6 literal removed).
fn host_of(addr: &str) -> &str {
    let hp = addr.strip_prefix("https://").unwrap_or(addr).trim_end_matches('/');
    let host = hp.rsplit_once(':').map_or(hp, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

pub fn run(a: &ProfileArgs) -> i32 {
    let Some(path) = a.profile.as_deref() else {
        return fail(2, "give --profile FILE, or a subcommand (tls, quic)");
    };
    let timeout = match probe::parse_timeout(&a.timeout) {
        Ok(t) => t,
        Err(e) => return fail(2, e),
    };
    let text = match std::fs::File::open(path)
        .map_err(|e| format!("{path}: cannot read: {e}"))
        .and_then(|f| crate::yaml::read_bounded(f, MAX_PROFILE, path).map_err(|e| format!("{e:#}")))
    {
        Ok(t) => t,
        Err(e) => return fail(2, e),
    };
    let doc = match crate::yaml::located(&text) {
        Ok(d) => d.value,
        Err(e) => {
            return fail(
                2,
                format!("{path}: not a YAML document: {}", crate::redact::error_text(&e)),
            )
        }
    };
    // nvcf-cli's rules on what a worker reads (the operator's other fields are not probed).
    let problems = document::validate(&doc, document::Scope::Fragment);
    let (mismatch, other): (Vec<_>, Vec<_>) = problems.into_iter().partition(|p| p.contains(": mismatch: "));
    if !other.is_empty() {
        return fail(
            2,
            format!("{path}: nvcf-cli would refuse this profile:\n- {}", other.join("\n- ")),
        );
    }
    if let Some(m) = mismatch.first() {
        return refuse(format!("{path}: {m}"));
    }
    let s = |p: &str| doc.pointer(p).and_then(|v| v.as_str()).unwrap_or("");
    if s("/transportTls/trustMode") != document::TRUST_MODE_BUNDLE {
        return fail(
            2,
            format!("{path}: transportTls.trustMode is not bundle: a worker would trust system roots, which a probe cannot stand for"),
        );
    }
    let advertised_fp = s("/transportTls/trustBundleFingerprint").to_string();
    let bundle = match bundle::parse(
        &format!("{path} (transportTls.trustBundlePem)"),
        s("/transportTls/trustBundlePem").as_bytes(),
    ) {
        Ok(b) => b,
        Err(e) => return fail(2, e.0),
    };
    if let Some(want) = &a.expect_fingerprint {
        if !crate::pki::fingerprint::is_well_formed(want) {
            return fail(
                2,
                format!("--expect-fingerprint {want:?} is not sha256:<64 lowercase hex>"),
            );
        }
        if *want != advertised_fp {
            return refuse(format!(
                "{path}: the profile's bundle is {advertised_fp}, expected {want} (--expect-fingerprint)"
            ));
        }
    }
    let router_addr = s("/controlPlane/addons/llm/requestRouterAddress").to_string();
    if router_addr.is_empty() {
        return fail(
            2,
            format!("{path}: controlPlane.addons.llm.requestRouterAddress is empty: nothing to probe"),
        );
    }

    let mut quic_names = a.server_names.clone();
    let mut grpc = a.grpc.clone();
    if let Some(env) = &a.environment {
        let args = super::render_args(a.file.as_deref(), vec![env.clone()], a.offline, a.chart_mirror.as_ref());
        let envs = match engine::check_graphs(&args) {
            Ok((_, e)) => e,
            Err(e) => return fail(2, format!("could not render {}: {e:#}", engine::describe(&args))),
        };
        let Some(g) = envs.iter().find(|e| &e.name == env) else {
            return fail(2, format!("environment {env} was not rendered"));
        };
        let m = match source::read(&g.graph, &Default::default()) {
            Ok(m) => m,
            Err(e) => return fail(2, e),
        };
        let published = crate::pki::fingerprint::fingerprint_of_ders(m.roots.iter().map(Vec::as_slice));
        if published != advertised_fp {
            return refuse(format!(
                "{path}: the profile's bundle is {advertised_fp} but environment {env} publishes roots {published}: \
                 the profile is stale or from another environment"
            ));
        }
        if m.quic_dial != router_addr {
            return fail(
                2,
                format!(
                    "{path}: requestRouterAddress {router_addr} but environment {env} advertises {}",
                    m.quic_dial
                ),
            );
        }
        if quic_names.is_empty() {
            quic_names = m.advertised.clone();
        }
        grpc.get_or_insert(m.grpc_dial.clone());
    }
    if quic_names.is_empty() {
        quic_names.push(host_of(&router_addr).to_string());
    }
    if quic_names.len() > MAX_NAMES {
        return fail(2, format!("{} names to probe; at most {MAX_NAMES}", quic_names.len()));
    }
    let mut legs = vec![Leg {
        protocol: Protocol::Quic,
        addr: a.connect.clone().unwrap_or(router_addr.clone()),
        names: quic_names,
        alpn: a.quic_alpn.iter().map(|p| p.as_bytes().to_vec()).collect(),
    }];
    if let Some(g) = &grpc {
        if !g.starts_with("https://") {
            return fail(
                2,
                format!("--grpc {g:?}: the worker gRPC dial address is https://host:port (TLS)"),
            );
        }
        legs.push(Leg {
            protocol: Protocol::Tls,
            addr: a.connect_grpc.clone().unwrap_or(g.clone()),
            names: vec![host_of(g).to_string()],
            alpn: probe::DEFAULT_TLS_ALPN.iter().map(|p| p.as_bytes().to_vec()).collect(),
        });
    }

    let mut probes = Vec::new();
    for leg in &legs {
        let addr = match probe::parse_addr(leg.protocol, &leg.addr) {
            Ok(x) => x,
            Err(e) => return fail(2, e),
        };
        for name in &leg.names {
            if rustls_pki_types::ServerName::try_from(name.as_str()).is_err() {
                return fail(
                    2,
                    format!("server name {name:?} is neither a DNS name nor an IP address"),
                );
            }
            probes.push(Probe {
                protocol: leg.protocol,
                addr: addr.clone(),
                server_name: name.clone(),
                bundle: bundle.clone(),
                alpn: leg.alpn.clone(),
                timeout,
            });
        }
    }
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fail(2, format!("cannot start the async runtime: {e}")),
    };
    let mut refused = 0;
    for p in &probes {
        let report = rt.block_on(probe::run(p));
        print!("{}", probe::render_human(&report));
        if !report.passed() {
            refused += 1;
        }
    }
    println!(
        "profile {path}: {} of {} probe(s) passed (bundle {advertised_fp})",
        probes.len() - refused,
        probes.len()
    );
    i32::from(refused > 0)
}
