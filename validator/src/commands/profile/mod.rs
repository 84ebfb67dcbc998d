//! `nvcf-validate profile -e ENV [--base FILE] [--output FILE]`: write the `ControlPlaneProfile`
//! (nvcf-cli's worker hand-off, `document`) for one environment, from what the gate renders and
//! judges for it (`source`): `transportTls` (trust mode `bundle`, the published bundle's roots,
//! their `nvcf-trust-bundle-v1` fingerprint) and `controlPlane.addons.llm.requestRouterAddress`
//! (the router's advertised QUIC dial address), merged into the operator's base profile without
//! touching its other fields.
//!
//! Exit codes: 0 written; 1 the gate refuses the environment (no profile for a stack that must
//! not be applied); 2 no profile can be written: unreadable or invalid base, example trust
//! material, missing or inconsistent hand-off objects, or a result nvcf-cli would refuse (every
//! problem is listed in nvcf-cli's `field: problem` form). Nothing is written unless exit 0.
//!
//! Why the QUIC address (docs/operations.md, "The worker hand-off"): nvcf-cli accepts only
//! `host:port` there; Stargate's workers (pylon) dial a gRPC seed given without a scheme as
//! plaintext `http://`, while this stack's worker gRPC is TLS only (`https://` dial address).
//! The gRPC seed therefore never travels in this field; it is printed for the operator to set as
//! the NVCF API's worker address, and the field carries the reverse-tunnel address the issue and
//! nvcf-cli's own documentation name (`LLMAddon`: "the Stargate QUIC endpoint").

pub mod document;
pub mod source;

use crate::engine;
use crate::probe::{self, Protocol};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Largest base profile read (a profile is a few KiB).
const MAX_BASE: usize = 1 << 20;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The helmfile state, or a directory holding one (default: as helmfile finds it here).
    #[arg(long, short = 'f')]
    pub file: Option<PathBuf>,
    /// The environment whose profile is written.
    #[arg(long = "environment", short = 'e')]
    pub environment: String,
    /// The operator's ControlPlaneProfile (cluster name, NCA id, region, endpoints, gateway,
    /// hosts): kept as written, field order included; only transportTls and
    /// controlPlane.addons.llm.requestRouterAddress are set. Without it the output holds only
    /// the fields this stack owns (nvcf-cli needs the operator's fields before it accepts it).
    #[arg(long, value_name = "FILE")]
    pub base: Option<PathBuf>,
    /// Write the profile to FILE (replaced atomically) instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub render: super::RenderFlags,
}

fn fail(code: i32, msg: impl std::fmt::Display) -> i32 {
    eprintln!("nvcf-validate profile: {msg}");
    code
}

/// The directory the state lives in (for `examples/`).
fn stack_dir(file: &Path) -> PathBuf {
    if file.is_dir() {
        file.to_path_buf()
    } else {
        file.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }
}

fn read_base(path: &Path) -> Result<serde_json::Value, String> {
    let shown = path.display();
    let f = std::fs::File::open(path).map_err(|e| format!("--base {shown}: cannot read: {e}"))?;
    let text = crate::yaml::read_bounded(f, MAX_BASE, &format!("--base {shown}")).map_err(|e| format!("{e:#}"))?;
    let doc = crate::yaml::located(&text).map_err(|e| {
        format!(
            "--base {shown}: not one YAML document nvcf-cli could read: {}",
            crate::redact::error_text(&e)
        )
    })?;
    Ok(doc.value)
}

/// `host:port` of an address with or without `https://`.
fn host_port(addr: &str) -> &str {
    addr.strip_prefix("https://").unwrap_or(addr).trim_end_matches('/')
}

pub fn run(a: &Args) -> i32 {
    let base = match a.base.as_deref().map(read_base).transpose() {
        Ok(b) => b,
        Err(e) => return fail(2, e),
    };
    let args = a.render.check_args(a.file.as_deref(), vec![a.environment.clone()]);
    let (report, envs) = match engine::check_graphs(&args) {
        Ok(r) => r,
        Err(e) => return fail(2, format!("could not render {}: {e:#}", engine::describe(&args))),
    };
    let Some(env) = envs.iter().find(|e| e.name == a.environment) else {
        return fail(2, format!("environment {} was not rendered", a.environment));
    };
    if report.exit_code() != 0 {
        return fail(
            1,
            format!(
                "the gate refuses environment {} ({} error finding(s)); see `nvcf-validate check -e {}`: \
                 no profile is written for a stack that must not be applied",
                a.environment,
                report.counts().errors,
                a.environment
            ),
        );
    }
    let examples = source::example_certificates(&stack_dir(&args.file));
    let m = match source::read(&env.graph, &examples) {
        Ok(m) => m,
        Err(e) => return fail(2, e),
    };

    // The address: what nvcf-cli accepts, what the probes can dial, and never one a consumer
    // could mistake for the TLS gRPC endpoint (a gRPC seed without a scheme is dialled in
    // plaintext by Stargate's workers).
    if let Err(e) = probe::parse_addr(Protocol::Quic, &m.quic_dial) {
        return fail(2, format!("environment {}: QUIC dial address: {e}", a.environment));
    }
    if !m.grpc_dial.starts_with("https://") {
        return fail(
            2,
            format!(
                "environment {}: the gRPC dial address {:?} is not https://: workers would register in plaintext",
                a.environment, m.grpc_dial
            ),
        );
    }
    if host_port(&m.grpc_dial).eq_ignore_ascii_case(&m.quic_dial) {
        return fail(
            2,
            format!(
                "environment {}: the QUIC dial address {} is also the gRPC TLS endpoint's host:port; a worker \
                 reading requestRouterAddress as a gRPC seed would send its registration there in plaintext. \
                 Give the reverse tunnel its own port",
                a.environment, m.quic_dial
            ),
        );
    }

    let ders: Vec<&[u8]> = m.roots.iter().map(Vec::as_slice).collect();
    let owned = document::Owned {
        trust_bundle_pem: document::pem_of(&ders),
        trust_bundle_fingerprint: crate::pki::fingerprint::fingerprint_of_ders(ders.iter().copied()),
        request_router_address: m.quic_dial.clone(),
    };
    let scope = if base.is_some() {
        document::Scope::Full
    } else {
        document::Scope::Fragment
    };
    let (doc, replaced) = match document::merge(base.unwrap_or(serde_json::Value::Null), &owned) {
        Ok(r) => r,
        Err(e) => return fail(2, e),
    };
    let problems = document::validate(&doc, scope);
    if !problems.is_empty() {
        let shown = a.base.as_ref().map_or("the profile".to_string(), |b| {
            format!("the profile from --base {}", b.display())
        });
        return fail(
            2,
            format!(
                "nvcf-cli would refuse {shown}; nothing was written:\n- {}",
                problems.join("\n- ")
            ),
        );
    }
    let text = match crate::yaml::to_string(&doc) {
        Ok(t) => t,
        Err(e) => return fail(2, format!("cannot encode the profile: {e}")),
    };
    // The written text must read back as the same document (the encoder is not trusted blind).
    match crate::yaml::value(&text) {
        Ok(v) if v == doc => {}
        _ => return fail(2, "the encoded profile does not read back as written (internal error)"),
    }
    let written = match &a.output {
        Some(path) => write_atomic(path, text.as_bytes()),
        None => std::io::stdout()
            .write_all(text.as_bytes())
            .map_err(|e| format!("cannot write: {e}")),
    };
    if let Err(e) = written {
        return fail(2, e);
    }
    let mut note = format!(
        "nvcf-validate profile: environment {}: transportTls bundle of {} root(s), {}; requestRouterAddress {} (QUIC)",
        a.environment,
        m.roots.len(),
        owned.trust_bundle_fingerprint,
        m.quic_dial
    );
    if m.non_roots > 0 {
        note.push_str(&format!(
            "; {} non-root certificate(s) of the published bundle ({}) left out: workers trust roots",
            m.non_roots, m.published_fingerprint
        ));
    }
    for r in &replaced {
        note.push_str(&format!("; replaced the base's {}", r.field));
    }
    if scope == document::Scope::Fragment {
        note.push_str("; no --base: add your control plane's fields (clusterName, ncaID, region, gateway, endpoints) before nvcf-cli accepts it");
    }
    eprintln!("{note}");
    eprintln!(
        "nvcf-validate profile: worker gRPC seed (LLM_REQUEST_ROUTER_ADDRESS / the API's worker address): {}",
        m.grpc_dial
    );
    0
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    tmp.write_all(bytes)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| format!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}
