//! Output formats, one file each. Every format shows the same findings and the releases that
//! were not rendered (pinned but not rendered is never silent).

pub mod catalog;
pub mod github;
pub mod human;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod objects;
pub mod sarif;
pub mod text;
pub mod uri;

use crate::finding::Finding;
use crate::render::ReleaseStatus;
use crate::sink;
use std::path::{Path, PathBuf};

/// One environment in the report.
#[derive(Debug, Clone)]
pub struct EnvReport {
    pub name: String,
    pub releases: Vec<ReleaseStatus>,
    pub objects: usize,
    /// Why helmfile could not render this environment, when state findings explain it.
    pub render_error: Option<String>,
    /// Schema coverage (`schema-valid`): kinds without a schema; `None` when the rule is off or
    /// the environment was not rendered.
    pub schema_coverage: Option<crate::schema::Coverage>,
}

#[derive(Debug, Clone)]
pub struct Report {
    pub environments: Vec<EnvReport>,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn counts(&self) -> sink::Counts {
        sink::count(&self.findings)
    }

    pub fn objects(&self) -> usize {
        self.environments.iter().map(|e| e.objects).sum()
    }

    /// 0 no error-level finding, 1 at least one.
    pub fn exit_code(&self) -> i32 {
        if self.counts().errors > 0 {
            1
        } else {
            0
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Human,
    Json,
    Sarif,
    Junit,
    Github,
    Markdown,
}

/// What a format needs besides the findings: whether the run could validate at all, and where
/// source paths are resolved (SARIF URIs, GitHub annotation paths).
#[derive(Debug, Clone)]
pub struct Context {
    /// Why the run could not validate (exit 2). The report is then empty or partial, and every
    /// format says so: a report exists on every run, never a stale one from an earlier run.
    pub failure: Option<String>,
    pub paths: uri::Paths,
}

impl Context {
    /// `base` is the stack's directory (or the working directory for `--manifests`).
    pub fn new(base: &Path, failure: Option<String>) -> Context {
        Context {
            failure,
            paths: uri::Paths::new(base),
        }
    }

    /// The exit code for this report: 2 when the run could not validate, else the findings'.
    pub fn exit_code(&self, report: &Report) -> i32 {
        if self.failure.is_some() {
            2
        } else {
            report.exit_code()
        }
    }
}

/// An empty report, for a run that could not validate anything.
pub fn empty() -> Report {
    Report {
        environments: Vec::new(),
        findings: Vec::new(),
    }
}

/// The stack's directory for `--file F|DIR` (relative paths in findings are relative to it).
pub fn stack_dir(file: &Path) -> PathBuf {
    crate::stack::loader::stack_dir(file)
}

pub fn render(report: &Report, ctx: &Context, format: Format, color: bool) -> String {
    match format {
        Format::Human => human::render(report, ctx, color),
        Format::Json => json::render(report, ctx),
        Format::Sarif => sarif::render(report, ctx),
        Format::Junit => junit::render(report, ctx),
        Format::Github => github::render(report, ctx),
        Format::Markdown => markdown::render(report, ctx),
    }
}

/// `file:line` of a finding, or `-`.
pub fn location(f: &Finding) -> String {
    match &f.source {
        Some(s) => match s.line {
            Some(l) => format!("{}:{l}", s.file),
            None => s.file.clone(),
        },
        None => "-".into(),
    }
}

/// `Kind namespace/name` of a finding's object, if any.
pub fn object_label(f: &Finding) -> Option<String> {
    f.object.as_ref().map(|o| match &o.namespace {
        Some(ns) => format!("{} {ns}/{}", o.kind, o.name),
        None => format!("{} {}", o.kind, o.name),
    })
}

/// The one-line summary every human-facing format ends with.
pub fn summary_line(report: &Report) -> String {
    let c = report.counts();
    let not_rendered = report
        .environments
        .iter()
        .flat_map(|e| &e.releases)
        .filter(|r| r.missing())
        .count();
    format!(
        "{} error{}, {} warning{}, {} waived; {} environment{}, {} objects{}",
        c.errors,
        if c.errors == 1 { "" } else { "s" },
        c.warnings,
        if c.warnings == 1 { "" } else { "s" },
        c.waived,
        report.environments.len(),
        if report.environments.len() == 1 { "" } else { "s" },
        report.objects(),
        if not_rendered > 0 {
            format!(", {not_rendered} release(s) not rendered")
        } else {
            String::new()
        }
    )
}

/// The help text of a finding: its own, else a pointer to the rule's explanation.
pub fn help(f: &Finding) -> String {
    f.help.clone().unwrap_or_else(|| {
        format!(
            "run `nvcf-validate explain {}` for why this matters and how to fix it",
            f.rule
        )
    })
}

/// Related locations in one line (`also: file:line (Kind ns/name); …`), if any.
pub fn related_brief(f: &Finding) -> Option<String> {
    if f.related.is_empty() {
        return None;
    }
    let items: Vec<String> = f
        .related
        .iter()
        .map(|r| {
            let loc = match &r.source {
                Some(s) => match s.line {
                    Some(l) => format!("{}:{l}", s.file),
                    None => s.file.clone(),
                },
                None => "-".into(),
            };
            match &r.object {
                Some(o) => format!(
                    "{loc} ({} {}{})",
                    o.kind,
                    o.namespace.as_deref().map(|n| format!("{n}/")).unwrap_or_default(),
                    o.name
                ),
                None => loc,
            }
        })
        .collect();
    Some(format!("also: {}", items.join("; ")))
}

/// The message prefixed with the finding's object, unless the message already starts with it.
pub fn message_with_object(f: &Finding) -> String {
    match object_label(f) {
        Some(o) if !f.message.starts_with(o.as_str()) => format!("{o}: {}", f.message),
        _ => f.message.clone(),
    }
}

/// Write what `write` writes to `path` atomically: into a new file beside it, then renamed over
/// it. A reader (or an upload step) sees the previous report or the new one, never a mix or a
/// truncated file.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), String> {
    write_atomically_mode(path, 0o666, write)
}

/// [`write_atomically`] for a file that may hold secrets (`check --objects` carries rendered
/// Secrets, as `helmfile template` output does): created readable by its owner only (0600), so the
/// rename never exposes it under the umask's wider default.
pub fn write_atomically_private(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), String> {
    write_atomically_mode(path, 0o600, write)
}

fn write_atomically_mode(
    path: &Path,
    mode: u32,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let fail = |e: std::io::Error| format!("cannot write report to {}: {e}", path.display());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| format!("cannot write report to {}: not a file name", path.display()))?;
    if path.is_dir() {
        return Err(format!("cannot write report to {}: it is a directory", path.display()));
    }
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        let mut w = std::io::BufWriter::new(&mut f);
        write(&mut w)?;
        w.flush()?;
        drop(w);
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(fail)
}
