//! `nvcf-validate probe tls|quic ADDR --server-name NAME --bundle FILE`, and
//! `nvcf-validate probe --profile FILE` (every leg a worker given that profile dials: probe_profile.rs).
//!
//! Exit codes: 0 the chain verified for NAME against exactly the bundle; 1 refused (the reason
//! is printed: UnknownIssuer, NotValidForName, Expired, InvalidPurpose, EmptyBundle, NotTls,
//! ConnectionRefused, Timeout, ...); 2 the input is unusable (unreadable or malformed bundle,
//! malformed address, name or timeout). See docs/probes.md.

use crate::probe::{self, Probe, Protocol};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Probe as a worker given a ControlPlaneProfile (`probe --profile FILE`, see
    /// commands/probe_profile.rs).
    #[command(flatten)]
    pub profile: crate::commands::probe_profile::ProfileArgs,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// TLS over TCP with ALPN h2 (the worker gRPC path: Gateway listener or TLS proxy).
    Tls(ProbeArgs),
    /// QUIC (the worker reverse tunnel, UDP).
    Quic(ProbeArgs),
}

#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// host:port (tls also accepts https://host:port, the worker profile's gRPC dial address)
    pub addr: String,
    /// The name workers verify and send as SNI (a DNS name or an IP address).
    #[arg(long)]
    pub server_name: String,
    /// PEM file with the trust bundle; the ONLY roots trusted (no system roots).
    #[arg(long)]
    pub bundle: String,
    /// ALPN protocol to offer (repeatable). Default: h2 for tls, none for quic.
    #[arg(long = "alpn", value_name = "PROTO")]
    pub alpn: Vec<String>,
    /// Offer no ALPN protocol at all.
    #[arg(long, conflicts_with = "alpn")]
    pub no_alpn: bool,
    /// Bound for the whole probe: 5s, 500ms, 1m.
    #[arg(long, default_value = "5s")]
    pub timeout: String,
    /// Output format.
    #[arg(long, value_parser = ["human", "json"], default_value = "human")]
    pub format: String,
}

/// Build the request; `Err` is an unusable input (exit 2).
pub fn request(protocol: Protocol, a: &ProbeArgs) -> Result<Probe, String> {
    let addr = probe::parse_addr(protocol, &a.addr)?;
    let timeout = probe::parse_timeout(&a.timeout)?;
    rustls_pki_types::ServerName::try_from(a.server_name.as_str()).map_err(|_| {
        format!(
            "--server-name {:?} is neither a DNS name nor an IP address",
            a.server_name
        )
    })?;
    let bundle = probe::bundle::load(&a.bundle).map_err(|e| e.0)?;
    let alpn: Vec<Vec<u8>> = if a.no_alpn {
        vec![]
    } else if a.alpn.is_empty() {
        let d = match protocol {
            Protocol::Tls => probe::DEFAULT_TLS_ALPN,
            Protocol::Quic => probe::DEFAULT_QUIC_ALPN,
        };
        d.iter().map(|s| s.as_bytes().to_vec()).collect()
    } else {
        if let Some(bad) = a.alpn.iter().find(|p| p.is_empty() || p.len() > 255) {
            return Err(format!("--alpn {bad:?}: a protocol name is 1-255 bytes"));
        }
        a.alpn.iter().map(|s| s.as_bytes().to_vec()).collect()
    };
    Ok(Probe {
        protocol,
        addr,
        server_name: a.server_name.clone(),
        bundle,
        alpn,
        timeout,
    })
}

pub fn run(args: &Args) -> i32 {
    let (protocol, a) = match &args.command {
        Some(Command::Tls(a)) => (Protocol::Tls, a),
        Some(Command::Quic(a)) => (Protocol::Quic, a),
        None => return crate::commands::probe_profile::run(&args.profile),
    };
    let p = match request(protocol, a) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("nvcf-validate probe {}: {e}", protocol.name());
            return 2;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("nvcf-validate probe: cannot start the async runtime: {e}");
            return 2;
        }
    };
    let report = rt.block_on(probe::run(&p));
    if a.format == "json" {
        match serde_json::to_string_pretty(&probe::render_json(&report)) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("nvcf-validate probe: cannot encode the report: {e}");
                return 2;
            }
        }
    } else {
        print!("{}", probe::render_human(&report));
    }
    if report.passed() {
        0
    } else {
        1
    }
}
