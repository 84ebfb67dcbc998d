//! The command line. Parsing only; the work lives in the library.
//!
//! Exit codes (contract): 0 no error-level finding, 1 at least one error-level finding,
//! 2 could not validate (bad input, missing tools, render failure, unreadable policy).

use clap::{Parser, Subcommand};
use nvcf_validate::engine::{self, CheckArgs};
use nvcf_validate::report::{self, catalog, Format};
use nvcf_validate::{commands, rules};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "nvcf-validate",
    version,
    about = "Render gate for the NVCF control-plane Helmfile stack"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Render the stack with the real helmfile/helm and check every environment.
    Check(Check),
    /// List the rules.
    Rules {
        #[arg(long, value_enum, default_value = "human")]
        format: catalog::CatalogFormat,
    },
    /// Explain a rule: what it does, why it matters, how to fix, an example.
    Explain { rule: String },
    /// Print the nvcf-trust-bundle-v1 fingerprint of a PEM bundle.
    Fingerprint(commands::fingerprint::Args),
    /// Certificate commands.
    Cert(commands::cert::Args),
    /// The operator's own CA for managed PKI: an offline root and the intermediate OpenBao imports.
    Ca(commands::ca::Args),
    /// Live, fail-closed handshake checks against a deployed router.
    Probe(commands::probe::Args),
    /// Draw each environment's chain of trust and worker path with its findings.
    Graph(commands::graph::Args),
    /// Write an environment's ControlPlaneProfile (nvcf-cli's worker hand-off).
    Profile(commands::profile::Args),
    /// Print the kubectl waits that say an applied environment is ready (issuers, Certificates, router).
    Readiness(commands::readiness::Args),
}

#[derive(clap::Args)]
struct Check {
    /// The helmfile state: a file, or a directory (its helmfile.yaml, helmfile.yaml.gotmpl or
    /// helmfile.d/, or the directory's own states). Default: as helmfile finds it in the current
    /// directory (helmfile.yaml, else helmfile.yaml.gotmpl, else helmfile.d/).
    #[arg(long, short = 'f')]
    file: Option<PathBuf>,
    /// Environment to check (repeatable). Default: every environment the state declares.
    #[arg(long = "environment", short = 'e')]
    environments: Vec<String>,
    /// Do not fetch remote charts: they are reported as pinned but not rendered.
    #[arg(long)]
    offline: bool,
    /// Render remote charts from tarballs in DIR after their sha256 matches charts.lock.yaml.
    #[arg(long, value_name = "DIR")]
    chart_mirror: Option<PathBuf>,
    /// Validate pre-rendered YAML (a file, a directory, or - for stdin) with the object rules.
    #[arg(long, value_name = "PATH|-")]
    manifests: Option<String>,
    /// Namespace of `--manifests` objects that name none, as `kubectl apply -n NS` would place them.
    #[arg(long, short = 'n', value_name = "NS", default_value = "default")]
    namespace: String,
    /// Policy file (default: validator-policy.yaml beside the state; without one, strict defaults).
    #[arg(long)]
    policy: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "human")]
    format: Format,
    /// Write the report to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// Report RULE as an error.
    #[arg(short = 'D', value_name = "RULE")]
    deny: Vec<String>,
    /// Report RULE as a warning.
    #[arg(short = 'W', value_name = "RULE")]
    warn: Vec<String>,
    /// Do not report RULE.
    #[arg(short = 'A', value_name = "RULE")]
    allow: Vec<String>,
    /// Bypass the render cache.
    #[arg(long)]
    no_cache: bool,
    /// Exit 2 when an installed release was not rendered (use it to gate an apply).
    #[arg(long)]
    require_rendered: bool,
    /// Also write the objects the rules judged, per environment, with the Kubernetes version and
    /// API versions helm rendered them for, to FILE (JSON, schema nvcf-validate/objects/v1).
    /// Written when the run ends in a verdict (exit 0 or 1); removed when it cannot validate.
    #[arg(long, value_name = "FILE")]
    objects: Option<PathBuf>,
}

fn main() {
    install_panic_hook();
    if std::env::var_os("NVCF_VALIDATE_DEBUG_PANIC").is_some() {
        // Lets the tests prove the hook: a panic must end in exit 2.
        panic!("panic requested by NVCF_VALIDATE_DEBUG_PANIC");
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let code = match &cli.command {
        Cmd::Check(c) => check(c),
        Cmd::Rules { format } => {
            print!("{}", catalog::rules(*format));
            0
        }
        Cmd::Explain { rule } => match rules::find(rule) {
            Some(r) => {
                print!("{}", catalog::explain(r));
                0
            }
            None => {
                eprintln!("nvcf-validate: unknown rule `{rule}`; `nvcf-validate rules` lists them");
                2
            }
        },
        Cmd::Fingerprint(a) => commands::fingerprint::run(a),
        Cmd::Cert(a) => commands::cert::run(a),
        Cmd::Ca(a) => commands::ca::run(a),
        Cmd::Probe(a) => commands::probe::run(a),
        Cmd::Profile(a) => commands::profile::run(a),
        Cmd::Readiness(a) => commands::readiness::run(a),
        Cmd::Graph(a) => match fixed_now() {
            Ok(now) => commands::graph::run(a, now),
            Err(e) => {
                eprintln!("nvcf-validate: {e}");
                2
            }
        },
    };
    std::process::exit(code);
}

fn check(c: &Check) -> i32 {
    // No --file: the state helmfile itself would load here (else `helmfile.yaml`, whose absence
    // is then the error).
    let file = nvcf_validate::stack::loader::state_file(c.file.as_deref());
    // Relative source paths in findings are relative to the stack's directory (or, for
    // --manifests, to the working directory); SARIF turns them into repository URIs.
    let base = match c.manifests {
        Some(_) => PathBuf::from("."),
        None => report::stack_dir(&file),
    };
    let outcome = fixed_now().map_err(Failed::Plain).and_then(|now| {
        let args = CheckArgs {
            file: file.clone(),
            environments: c.environments.clone(),
            offline: c.offline,
            chart_mirror: c.chart_mirror.clone(),
            manifests: c.manifests.clone(),
            policy: c.policy.clone(),
            namespace: Some(c.namespace.clone()),
            no_cache: c.no_cache,
            deny: c.deny.clone(),
            warn: c.warn.clone(),
            allow: c.allow.clone(),
            progress: std::io::stderr().is_terminal(),
            require_rendered: c.require_rendered,
            now,
        };
        // The markdown report (a PR comment) also shows where its findings sit on each picture;
        // --objects writes what the rules judged.
        let checked = if c.format == Format::Markdown || c.objects.is_some() {
            engine::check_objects(&args).map(|(r, judged)| {
                let objects = c.objects.as_ref().map(|_| report::objects::document(&judged));
                let graphs = (c.format == Format::Markdown)
                    .then(|| engine::env_graphs(&r, judged.into_iter().map(|j| j.graph).collect()));
                (r, graphs, objects)
            })
        } else {
            engine::check(&args).map(|r| (r, None, None))
        };
        checked.map_err(|e| {
            let cause = format!("could not validate {}: {e:#}", engine::describe(&args));
            match e.downcast::<engine::Incomplete>() {
                Ok(i) => Failed::Partial(i.report, cause),
                Err(_) => Failed::Plain(cause),
            }
        })
    });
    // Every run writes a report, exit 2 included: what was validated (the environments that
    // loaded, with their findings, and those that failed, with their error), or an empty one that
    // says why, so a workflow never uploads a stale report from an earlier run.
    let (report, graphs, objects, ctx) = match outcome {
        Ok((r, g, o)) => (r, g, o, report::Context::new(&base, None)),
        Err(Failed::Plain(cause)) => {
            eprintln!("nvcf-validate: {cause}");
            (report::empty(), None, None, report::Context::new(&base, Some(cause)))
        }
        Err(Failed::Partial(r, cause)) => {
            eprintln!("nvcf-validate: {cause}");
            (r, None, None, report::Context::new(&base, Some(cause)))
        }
    };
    // The judged objects exist only for a run that ended in a verdict: never leave an earlier
    // run's file behind for one that did not.
    if let Some(path) = &c.objects {
        let written = match &objects {
            Some(doc) => report::write_atomically_private(path, |w: &mut dyn Write| {
                serde_json::to_writer(&mut *w, doc).map_err(std::io::Error::from)
            }),
            None => match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(format!("cannot remove {}: {e}", path.display()))
                }
                _ => Ok(()),
            },
        };
        if let Err(e) = written {
            eprintln!("nvcf-validate: --objects: {e}");
            return 2;
        }
    }
    let color = c.output.is_none() && std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let write = |w: &mut dyn Write| match &graphs {
        // The diagrams go in only where they fit under the comment's size budget.
        Some(g) => {
            let diagrams = report::markdown::Section {
                title: "diagrams".into(),
                body: nvcf_validate::diagram::markdown::section(g),
            };
            w.write_all(report::markdown::render_with(&report, &ctx, &[diagrams]).as_bytes())
        }
        // JSON is written as it is serialised: a large run's report is never one string.
        None if c.format == Format::Json => report::json::write(&report, &ctx, w),
        None => w.write_all(report::render(&report, &ctx, c.format, color).as_bytes()),
    };
    let written = match &c.output {
        Some(path) => report::write_atomically(path, write),
        None => write(&mut std::io::stdout().lock()).map_err(|e| format!("cannot write report: {e}")),
    };
    if let Err(e) = written {
        eprintln!("nvcf-validate: {e}");
        return 2;
    }
    if ctx.failure.is_none() && (c.output.is_some() || c.format != Format::Human) {
        eprintln!("nvcf-validate: {}", report::summary_line(&report));
    }
    if c.format == Format::Sarif && report::sarif::omitted(&report) > 0 {
        eprintln!(
            "nvcf-validate: the SARIF report leaves out {} of {} findings (GitHub accepts {} results per run); the JSON report has all",
            report::sarif::omitted(&report),
            report.findings.len(),
            report::sarif::MAX_RESULTS
        );
    }
    ctx.exit_code(&report)
}

/// Why a check ended in exit 2: with the partial report of what it validated, or without one.
enum Failed {
    Plain(String),
    Partial(nvcf_validate::report::Report, String),
}

/// A panic is never an answer: whatever thread panics, the process says so and exits 2 ("could not
/// validate"), never 101 and never with a half-written report taken for a verdict.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let what: String = what.chars().take(300).collect();
        eprintln!(
            "nvcf-validate: could not validate: internal error (a bug in nvcf-validate, please report it){place}: {what}"
        );
        std::process::exit(2);
    }));
}

/// `NVCF_VALIDATE_NOW` (RFC 3339) fixes the clock that judges certificate validity and waiver
/// expiry, for reproducible reports in tests and for asking "would this pass on date X?".
fn fixed_now() -> Result<Option<time::OffsetDateTime>, String> {
    match std::env::var("NVCF_VALIDATE_NOW") {
        Ok(v) if !v.is_empty() => time::OffsetDateTime::parse(&v, &time::format_description::well_known::Rfc3339)
            .map(Some)
            .map_err(|e| format!("NVCF_VALIDATE_NOW={v} is not an RFC 3339 time: {e}")),
        _ => Ok(None),
    }
}
