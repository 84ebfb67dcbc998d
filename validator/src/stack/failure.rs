//! When helmfile or helm fails: what helmfile says, read from its own words, and a message a
//! user can act on (the state file, the release and its chart when helmfile names them, the mode,
//! and the fix).
//!
//! - helmfile's dump of a failed command arrives condensed (`tools::output::condense`).
//! - `state_chain` resolves helmfile's `in A: in .helmfiles[0]: in B: …` to the state files, each
//!   relative to the one before (as helmfile resolves `helmfiles:` paths).
//! - `refusal` reads the releases helmfile refuses while loading a state (a release declared
//!   twice in one state file; an OCI chart whose version is not semver); the loader leaves them out
//!   and judges the rest.
//! - `explain` (loading) and `explain_template` (rendering) say what failed and what to do.

use super::loader::Inputs;
use crate::tools::paths::{absolute, normalize, relative};
use std::path::{Path, PathBuf};

/// What helmfile refused while loading a state, naming one release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub name: String,
    /// The release's namespace when helmfile names it (`duplicate release "x" found in namespace
    /// "ns"`); `Some("")` for a release without one; `None` when helmfile does not say.
    pub namespace: Option<String>,
    /// The state file that declares it (absolute), from helmfile's error chain.
    pub file: Option<PathBuf>,
    pub kind: RefusalKind,
    /// helmfile's own words (condensed).
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// Declared twice in one state file (`release-one-owner` reports it).
    Duplicate,
    /// An OCI chart with `latest`, no version or a non-semver version (`chart-version-pinned`).
    OciVersion,
}

/// The files of helmfile's error chain on `line` (`in A: in .helmfiles[0]: in B: rest`) as
/// written, and the rest of the line.
pub fn chain_of(line: &str) -> Option<(Vec<String>, &str)> {
    let mut rest = line.trim_start();
    let mut files = Vec::new();
    while let Some(r) = rest.strip_prefix("in ") {
        let Some((seg, after)) = r.split_once(": ") else {
            break;
        };
        if !seg.starts_with(".helmfiles[") {
            files.push(seg.to_string());
        }
        rest = after;
    }
    (!files.is_empty()).then_some((files, rest))
}

/// The state files helmfile's error names, resolved as helmfile resolves them: the first against
/// the working directory, each later one against the directory of the one before.
pub fn state_chain(text: &str) -> Vec<PathBuf> {
    let Some((files, _)) = text.lines().find_map(chain_of) else {
        return Vec::new();
    };
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut out: Vec<PathBuf> = Vec::new();
    for f in files {
        let base = out
            .last()
            .and_then(|p| p.parent())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| cwd.clone());
        let p = Path::new(&f);
        out.push(normalize(&if p.is_absolute() { p.to_path_buf() } else { base.join(p) }));
    }
    out
}

/// The last line of helmfile's error chain: what it says after naming the state files.
fn chained_message(text: &str) -> Option<String> {
    text.lines().find_map(chain_of).map(|(_, rest)| rest.trim().to_string())
}

/// helmfile's `duplicate release "NAME" found in namespace "NS": …` (or `… found: …` for a
/// release without a namespace): name and namespace.
fn duplicate(text: &str) -> Option<(String, String)> {
    let at = text.find("duplicate release \"")?;
    let rest = &text[at + "duplicate release \"".len()..];
    let (name, after) = rest.split_once('"')?;
    let ns = match after.strip_prefix(" found in namespace \"") {
        Some(r) => r.split('"').next()?.to_string(),
        None => String::new(),
    };
    Some((name.to_string(), ns))
}

/// The releases helmfile refused while loading a state, from its error (empty when the error is
/// something else). Each error names one release.
pub fn refusal(text: &str) -> Option<Refusal> {
    let file = state_chain(text).pop();
    let message = chained_message(text).unwrap_or_else(|| text.trim().to_string());
    if let Some((name, ns)) = duplicate(text) {
        return Some(Refusal {
            name,
            namespace: Some(ns),
            file,
            kind: RefusalKind::Duplicate,
            message,
        });
    }
    // `[release "NAME": the version for OCI charts should be semver compliant, …]`
    let at = text.find("[release \"")?;
    let rest = &text[at + "[release \"".len()..];
    let (name, why) = rest.split_once("\": ")?;
    why.starts_with("the version for OCI charts should be semver compliant")
        .then(|| Refusal {
            name: name.to_string(),
            namespace: None,
            file,
            kind: RefusalKind::OciVersion,
            message,
        })
}

/// The cause in helmfile's words, for the first line of a message whose kind nothing above
/// recognised: its innermost error (helmfile wraps each cause in the ones around it, `a: b: c`,
/// and prints the innermost last), cut to a line; the mode (`--offline`) is named only by the
/// messages where it is the cause.
fn cause(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with("at ") && !l.starts_with("exit status"))
        .unwrap_or("helmfile printed no error");
    let mut c: String = line.chars().take(300).collect();
    if c.len() < line.len() {
        c.push('…');
    }
    format!("{c} (helmfile's words below)")
}

fn mode(inputs: &Inputs) -> String {
    match (&inputs.opts.chart_mirror, inputs.opts.offline) {
        (Some(d), true) => format!("--offline --chart-mirror {}", d.display()),
        (Some(d), false) => format!("--chart-mirror {}", d.display()),
        (None, true) => "--offline".into(),
        (None, false) => "online".into(),
    }
}

/// The state file helmfile names in its error (the last of its chain), else the entry; relative
/// to the stack's directory.
fn state_file(text: &str, inputs: &Inputs) -> String {
    let p = state_chain(text).pop().unwrap_or_else(|| inputs.entry.to_path_buf());
    relative(&absolute(&p), inputs.root)
}

/// The release a failed helm command was about: `helm template NAME CHART … --namespace NS` (or
/// `helm pull CHART --version V`) in a condensed dump, with `[release "NAME":` when helmfile says.
struct Named {
    release: Option<(String, Option<String>)>,
    chart: Option<String>,
    version: Option<String>,
}

fn named(text: &str) -> Named {
    let mut n = Named {
        release: None,
        chart: None,
        version: None,
    };
    if let Some(at) = text.find("[release \"") {
        let rest = &text[at + "[release \"".len()..];
        if let Some(name) = rest.split('"').next() {
            n.release = Some((name.to_string(), None));
        }
    }
    let cmd = text.lines().find_map(|l| {
        let at = l.find("helm ")?;
        let line = l[at..].strip_suffix(':').unwrap_or(&l[at..]);
        let line = line.split(" exited with status ").next()?;
        Some(line.split_whitespace().map(str::to_string).collect::<Vec<_>>())
    });
    if let Some(words) = cmd {
        let flag = |f: &str| {
            words
                .iter()
                .position(|w| w == f)
                .and_then(|p| words.get(p + 1))
                .cloned()
        };
        let ns = flag("--namespace");
        n.version = flag("--version");
        match words.get(1).map(String::as_str) {
            Some("template") | Some("upgrade") | Some("install") | Some("diff") => {
                if let (Some(name), Some(chart)) = (words.get(2), words.get(3)) {
                    n.release = Some((name.clone(), ns));
                    n.chart = Some(chart.clone());
                }
            }
            Some("pull") | Some("fetch") | Some("show") => n.chart = words.get(2).cloned(),
            Some("dependency") => n.chart = words.get(3).cloned(),
            _ => {}
        }
        if let (Some((_, ns @ None)), Some(v)) = (n.release.as_mut(), flag("--namespace")) {
            *ns = Some(v);
        }
    }
    // helmfile's own progress line for the chart: `Building dependency release=NAME, chart=CHART`
    // (or `Templating release=…`).
    if let (None, Some(chart)) = (&n.release, &n.chart) {
        n.release = text.lines().find_map(|l| {
            let rest = &l[l.find("release=")? + "release=".len()..];
            let (name, c) = rest.split_once(", chart=")?;
            (c.trim() == chart).then(|| (name.to_string(), None))
        });
    }
    n
}

fn describe(n: &Named) -> Option<String> {
    let (name, ns) = n.release.as_ref()?;
    let id = match ns {
        Some(ns) => format!("{ns}/{name}"),
        None => name.clone(),
    };
    Some(match &n.chart {
        Some(c) => format!(
            "release {id} (chart {c}{})",
            n.version.as_deref().map(|v| format!(" {v}")).unwrap_or_default()
        ),
        None => format!("release {id}"),
    })
}

/// Say what failed while loading a state and what to do, keeping helmfile's last lines below for
/// reference.
pub fn explain(e: &anyhow::Error, inputs: &Inputs, env: &str) -> String {
    let text = format!("{e:#}");
    let file = state_file(&text, inputs);
    let mode = mode(inputs);
    let sealed = inputs.opts.offline || inputs.opts.chart_mirror.is_some();
    let n = named(&text);
    if text.starts_with("environment `") && text.lines().next().is_some_and(|l| l.contains("` is not declared in ")) {
        // Already said (see `pipeline::undeclared`), helmfile's words below it.
        return text;
    }
    let head = if let Some(h) = sealed_tools_failure(&text, &file, &mode, inputs.root) {
        h
    } else if let Some(var) = required_env(&text) {
        let (place, release) = template_place(&text, inputs);
        format!(
            "{}: {}the state requires the environment variable {var} (`requiredEnv`), which is not set; \
             set {var} (any placeholder value will do for a check) and run again",
            place.unwrap_or_else(|| file.clone()),
            release.map(|r| format!("release {r}: ")).unwrap_or_default()
        )
    } else if let Some(m) = unknown_field(&text) {
        format!("{file}: {m}{}", newer_helmfile())
    } else if let Some(func) = undefined_function(&text) {
        let v = found_helmfile()
            .map(|v| v.to_string())
            .unwrap_or_else(|| "found".into());
        format!(
            "{file}: the state calls the template function `{func}`, which helmfile {v} does not define: a typo, or a \
             function of a newer helmfile{}",
            newer_helmfile()
        )
    } else if text.contains("nvcf-validate --offline: `git") {
        let entry = std::fs::read_to_string(inputs.root.join(&file))
            .ok()
            .and_then(|s| crate::stack::load::first_remote_entry(&s));
        let (place, what) = match entry {
            Some((line, url)) => (format!("{file}:{line}"), format!("the remote helmfile {url}")),
            None => (file.clone(), "a remote helmfile (`git::…` in `helmfiles:`)".to_string()),
        };
        format!(
            "{place}: the state loads {what}, which cannot be fetched --offline (offline runs are sealed); vendor that \
             state into the repository, or run online"
        )
    } else if let Some(refused) = sealed_refusal(&text) {
        // A hook helmfile names (`hook[CMD]: command `CMD` failed`), found in the state's text.
        let hook_cmd = text
            .split("]: command `")
            .nth(1)
            .and_then(|r| r.split('`').next())
            .map(str::to_string);
        let source = std::fs::read_to_string(inputs.root.join(&file)).unwrap_or_default();
        let hook = hook_cmd
            .as_deref()
            .and_then(|c| crate::stack::load::hook_command_at(&source, c));
        let (place, release) = match &hook {
            Some((l, _)) => (
                format!("{file}:{l}"),
                crate::stack::load::release_at(&source, *l).map(|(r, _)| format!("release {r}: ")),
            ),
            None => {
                let (p, r) = template_place(&text, inputs);
                (p.unwrap_or_else(|| file.clone()), r.map(|r| format!("release {r}: ")))
            }
        };
        let what = match &hook {
            Some((_, ev)) if !ev.is_empty() => format!("its {} hook", ev.join("/")),
            Some(_) => "a hook".to_string(),
            None => "a hook or template `exec`".to_string(),
        };
        if text.contains(ONLINE_REFUSAL) {
            format!(
                "{place}: {}{what} runs `{refused}`, which the gate refuses (hooks and `exec` run sealed, online too: \
                 no cluster client, no container runtime, no host sockets, no writes outside the run); move what it \
                 does into a chart, or guard it behind an environment the gate does not check",
                release.unwrap_or_default()
            )
        } else {
            format!(
                "{place}: {}{what} runs `{refused}`, which --offline refuses (offline runs are sealed: no network, \
                 no cluster, no host sockets); guard it behind an environment the gate does not check, or run online",
                release.unwrap_or_default()
            )
        }
    } else if let Some((name, ns)) = duplicate(&text) {
        let id = if ns.is_empty() { name } else { format!("{ns}/{name}") };
        format!(
            "{file}: helmfile refuses release {id}, declared twice in this state file; keep one declaration (see \
             release-one-owner)"
        )
    } else if let Some(p) = text.lines().find(|l| l.contains("helmfile crashed: panic:")) {
        let remote = p.contains("pkg/remote") || p.contains("HttpFileExists") || p.contains("goGetter");
        let what = p.trim();
        if remote {
            format!(
                "{file}: {what}, while fetching a remote file (an https:// or git:: chart, values file or state); \
                 this run ({mode}) gives helmfile no network{}; vendor that file into the repository{}",
                if sealed { " (offline runs are sealed)" } else { "" },
                if sealed { ", or run online" } else { "" }
            )
        } else if let Some(cmd) = missing_executable(p) {
            let source = std::fs::read_to_string(inputs.root.join(&file)).unwrap_or_default();
            let hook = crate::stack::load::hook_command_at(&source, &cmd);
            let place = hook
                .as_ref()
                .map(|(l, _)| format!("{file}:{l}"))
                .unwrap_or_else(|| file.clone());
            let release = hook
                .as_ref()
                .and_then(|(l, _)| crate::stack::load::release_at(&source, *l))
                .map(|(r, _)| format!("release {r}: "))
                .unwrap_or_default();
            let events = hook
                .map(|(_, e)| e.join("/"))
                .filter(|e| !e.is_empty())
                .map(|e| format!("{e} "))
                .unwrap_or_default();
            format!(
                "{place}: {release}a {events}hook runs `{cmd}`, which is not installed where the gate runs (helmfile \
                 crashes: executable file not found in $PATH); install `{cmd}` on PATH, or remove the hook or guard it \
                 behind an environment"
            )
        } else {
            format!(
                "{file}: {what} while loading environment {env}; run `helmfile -e {env} build` on the state to see \
                 where it crashes, and change what it names"
            )
        }
    } else if network(&text) {
        if let Some(cmd) = exec_command(&text) {
            format!(
                "{file}: a template of the state runs `{cmd}` (`exec`), which needs the network, and this run ({mode}) \
                 gives it none{}; compute the value without the network (a values file, an environment variable) \
                 or guard the `exec` behind an environment{}",
                if sealed { " (offline runs are sealed)" } else { "" },
                if sealed { ", or run online" } else { "" }
            )
        } else {
            let what = describe(&n)
                .or_else(|| n.chart.as_ref().map(|c| format!("chart {c}")))
                .unwrap_or_else(|| "a chart or repository".into());
            if sealed {
                format!(
                    "{file}: loading {what} needs the network, which this run ({mode}) does not give helmfile; put the \
                     chart in a mirror (--chart-mirror DIR with <chart>-<version>.tgz) or run online"
                )
            } else {
                format!(
                    "{file}: loading {what} failed on the network; check access to the registry, or run with --offline \
                     (remote charts are then reported as pinned but not rendered) or --chart-mirror DIR"
                )
            }
        }
    } else if let Some(x) = failed_exec(&text) {
        let (place, release) = template_place(&text, inputs);
        let place = place.unwrap_or_else(|| file.clone());
        format!(
            "{place}: {}the state's template calls `exec` of `{}`, which failed ({}{}); make the command succeed where \
             the gate runs (the tool installed, the files and variables it reads present), or take the value from a \
             values file or an environment variable instead",
            release.map(|r| format!("release {r}: ")).unwrap_or_default(),
            x.command,
            x.status,
            x.error.map(|e| format!(": {e}")).unwrap_or_default()
        )
    } else if text.contains("no releases found that matches specified selector") && text.contains("environment(") {
        format!(
            "{file}: environment {env} is not declared by any state here, or its states declare no releases; check \
             -e {env}"
        )
    } else if let Some(what) = describe(&n) {
        format!(
            "{file}: helmfile could not load {what} for environment {env}: {}; fix what helmfile names there",
            cause(&text)
        )
    } else {
        format!(
            "{file}: helmfile could not load environment {env}: {}; fix what helmfile names there",
            cause(&text)
        )
    };
    format!("{head}\n{text}")
}

/// Why `helmfile template` failed, for a user.
#[derive(Debug, Clone)]
pub struct TemplateFailure {
    /// What failed and what to do, helmfile's condensed words below.
    pub message: String,
    /// The releases it names: name, and namespace when helmfile gives one (`None` for a release
    /// without a namespace).
    pub blamed: Vec<(String, Option<String>)>,
    /// helmfile refused the whole state because of the blamed releases (an undefined `needs:`
    /// entry): no selection renders the others.
    pub whole_state: bool,
}

/// Say why `helmfile template` failed and what to do, and which releases it failed on.
pub fn explain_template(text: &str, inputs: &Inputs, env: &str) -> TemplateFailure {
    let mode = mode(inputs);
    let sealed = inputs.opts.offline || inputs.opts.chart_mirror.is_some();
    let file = state_file(text, inputs);
    // helmfile's own refusal: `release(s) "ns/a", "ns/b" depend(s) on an undefined release "…"`.
    if let Some(at) = text.find("release(s) ") {
        let rest = &text[at + "release(s) ".len()..];
        if let Some((list, _)) = rest.split_once(" depend(s) on an undefined release") {
            let blamed: Vec<(String, Option<String>)> = list
                .split(", ")
                .map(|q| q.trim_matches('"'))
                .filter(|q| !q.is_empty())
                .map(|id| match id.rsplit_once('/') {
                    Some((ns, name)) => (name.to_string(), Some(ns.rsplit('/').next().unwrap_or(ns).to_string())),
                    None => (id.to_string(), None),
                })
                .collect();
            let head = format!(
                "{file}: helmfile refuses to render {}: a `needs:` entry names no release of this environment (see \
                 needs-resolvable)",
                list
            );
            return TemplateFailure {
                message: format!("{head}\n{text}"),
                blamed,
                whole_state: true,
            };
        }
    }
    let n = named(text);
    let what = describe(&n).unwrap_or_else(|| "a release".into());
    let error = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("Error: "))
        .map(|l| crate::redact::cap(l, 300));
    let head = if let Some(dep) = text
        .split("found in Chart.yaml, but missing in charts/ directory: ")
        .nth(1)
        .map(|r| r.lines().next().unwrap_or("").trim().to_string())
    {
        let chart = n.chart.clone().unwrap_or_else(|| "the chart".into());
        if sealed {
            format!(
                "{file}: {what}: the chart depends on {dep} (Chart.yaml `dependencies:`), which is not vendored in \
                 {chart}/charts/, and this run ({mode}) fetches nothing; run `helm dependency build {chart}` and \
                 commit {chart}/charts/ and Chart.lock, or run online"
            )
        } else {
            format!(
                "{file}: {what}: the chart depends on {dep}, which is missing in {chart}/charts/; run `helm dependency \
                 build {chart}` (or commit {chart}/charts/)"
            )
        }
    } else if network(text) {
        if sealed {
            format!(
                "{file}: rendering {what} needs the network (chart dependencies or repositories), which this run \
                 ({mode}) does not give; vendor the chart's dependencies (`helm dependency build`, commit charts/) \
                 or run online"
            )
        } else {
            format!(
                "{file}: rendering {what} failed on the network (helmfile adds the state's repositories and builds \
                 chart dependencies); check access, or run with --offline or --chart-mirror DIR"
            )
        }
    } else if let Some(err) = error.as_deref().filter(|e| e.starts_with("Error: template: ")) {
        format!(
            "{file}: {what}: a template of the chart fails to render: {}; fix the template or the values \
             it reads",
            err.trim_start_matches("Error: ")
        )
    } else if let Some(err) = error {
        format!(
            "{file}: {what}: helm cannot render the chart: {}; fix the chart (Chart.yaml, templates) or \
             its values",
            err.trim_start_matches("Error: ")
        )
    } else {
        format!(
            "{file}: helmfile could not render {what} in environment {env}: {}; fix what helmfile names there",
            cause(text)
        )
    };
    TemplateFailure {
        message: format!("{head}\n{text}"),
        blamed: n.release.into_iter().collect(),
        whole_state: false,
    }
}

/// helmfile 0.166 reading a state key it does not know: `line N: field F not found in type
/// state.T`. Says which block and what helmfile accepts instead.
fn unknown_field(text: &str) -> Option<String> {
    let at = text.find("field ")?;
    let rest = &text[at + "field ".len()..];
    let (field, after) = rest.split_once(" not found in type ")?;
    let ty = after.split_whitespace().next()?.trim_end_matches([':', ',']);
    let line = text[..at]
        .rsplit("line ")
        .next()
        .and_then(|l| l.split(':').next())
        .filter(|l| l.chars().all(|c| c.is_ascii_digit()) && !l.is_empty());
    let doc = text
        .find("reading document at index ")
        .and_then(|i| text[i + "reading document at index ".len()..].split(':').next())
        .map(str::to_string);
    let place = match (doc, line) {
        (Some(d), Some(l)) => format!(" (document {d}, line {l})"),
        (None, Some(l)) => format!(" (line {l})"),
        _ => String::new(),
    };
    let (block, instead) = match (ty, field) {
        ("state.RepositorySpec", "insecure_skip_tls_verify") => (
            "a repository",
            "helmfile 0.166 names it `skipTLSVerify` (which turns TLS verification off: prefer `caFile:` with the \
             repository's CA)",
        ),
        ("state.HelmSpec", "namespace") => (
            "`helmDefaults`",
            "helmfile 0.166 has no default namespace there: set `namespace:` on each release (or on a `templates:` \
             entry they inherit)",
        ),
        ("state.RepositorySpec", _) => (
            "a repository",
            "see helmfile's repository fields (name, url, oci, caFile, …)",
        ),
        ("state.HelmSpec", _) => ("`helmDefaults`", "see helmfile's `helmDefaults` fields"),
        ("state.ReleaseSpec", _) => ("a release", "see helmfile's release fields"),
        ("state.HelmState", _) => ("the state's top level", "see helmfile's top-level keys"),
        _ => ("the state", "see helmfile's documentation for the block"),
    };
    Some(format!(
        "helmfile 0.166 does not accept `{}` in {block}{place} ({ty}) and refuses the whole state; remove it: {instead}",
        crate::redact::cap(field, 80)
    ))
}

/// The helmfile version of this run, when the tools were located (`tools::versions`).
fn found_helmfile() -> Option<crate::tools::versions::Version> {
    crate::tools::versions::found().and_then(|f| f.helmfile)
}

/// With a helmfile 0.x: what a state written for helmfile 1.x needs, naming both versions.
fn newer_helmfile() -> String {
    match found_helmfile() {
        Some(v) if v.major == 0 => format!(
            "; if the state is written for helmfile 1.x, it needs helmfile 1.1 or newer, and this run found helmfile \
             {v}: install a newer helmfile (github.com/helmfile/helmfile/releases) first on PATH or point \
             $NVCF_HELMFILE at it"
        ),
        _ => String::new(),
    }
}

/// helmfile's words for a template function it does not know: `function "X" not defined`.
fn undefined_function(text: &str) -> Option<String> {
    let at = text.find("function \"")?;
    let rest = &text[at + "function \"".len()..];
    let (name, after) = rest.split_once('"')?;
    (after.starts_with(" not defined") && !name.is_empty() && name.len() <= 80).then(|| name.to_string())
}

/// Failures the sealed tools explain themselves (`crate::tools`): a remote file helmfile
/// downloads itself (go-getter) and a missing `kustomize`.
fn sealed_tools_failure(text: &str, file: &str, mode: &str, root: &Path) -> Option<String> {
    let remote_entry = std::fs::read_to_string(root.join(file))
        .ok()
        .and_then(|s| crate::stack::load::first_remote_entry(&s));
    if let Some(named) = text
        .lines()
        .find_map(|l| l.trim().strip_prefix(crate::tools::remote::HEADLINE))
    {
        let named = named.trim();
        let fix = "vendor it into the repository and reference it by path (a chart from a chart repository or an OCI \
                   registry is reported \"not rendered: --offline\" instead), or run online";
        return Some(match (named.is_empty(), mode) {
            (false, _) => format!(
                "{named}: a remote file that helmfile downloads itself (go-getter), which this run ({mode}) cannot \
                 fetch (offline runs are sealed); {fix}"
            ),
            (true, "online") => format!(
                "{file}: helmfile could not download a remote file itself (go-getter: a `chart:`, `values:`, \
                 `secrets:`, `bases:` or `helmfiles:` entry that is an http(s)://, s3:// or git:: URL); check that \
                 it is reachable, or vendor it into the repository"
            ),
            (true, _) if remote_entry.is_some() => {
                let (line, url) = remote_entry.clone().unwrap_or_default();
                format!(
                    "{file}:{line}: the state names {url}, a remote file that helmfile downloads itself (go-getter), \
                     which this run ({mode}) cannot fetch (offline runs are sealed); {fix}"
                )
            }
            (true, _) => format!(
                "{file}: helmfile tried to download a remote file itself (go-getter: a `values:`, `secrets:`, \
                 `bases:` or `helmfiles:` entry that is an http(s)://, s3:// or git:: URL), which this run ({mode}) \
                 cannot fetch (offline runs are sealed); {fix}"
            ),
        });
    }
    if text.contains("failed reading adhoc dependencies") {
        let named = std::fs::read_to_string(root.join(file))
            .map(|s| crate::stack::load::releases_with(&s, "dependencies"))
            .unwrap_or_default();
        let who = match named.as_slice() {
            [] => "a release has".to_string(),
            [one] => format!("release {one} has"),
            many => format!("releases {} have", many.join(", ")),
        };
        return Some(format!(
            "{file}: {who} `dependencies:` (chart dependencies added by helmfile) from a chart repository, \
             which helmfile resolves through helm's repository list while loading the state; this run ({mode}) has \
             none (offline runs are sealed: nothing is added or fetched); move the dependency into a local chart's \
             charts/ directory, or run online"
        ));
    }
    if text.contains("kustomize is not installed") || text.contains("\"kustomize\": executable file not found") {
        // chartify works in <tmp>/chartify<N>/<namespace>/<name>.
        let release = text.split("/chartify").nth(1).and_then(|rest| {
            let mut parts = rest.split('/').skip(1);
            let (ns, name) = (parts.next()?, parts.next()?);
            let name = name.split(|c: char| c.is_whitespace()).next()?;
            Some(format!("release {ns}/{name}"))
        });
        return Some(format!(
            "{file}: {} has strategicMergePatches, jsonPatches or transformers, which helmfile applies with \
             kustomize, and kustomize is not installed; install kustomize (v5) on PATH, or drop the patches",
            release.unwrap_or_else(|| "a release".into())
        ));
    }
    None
}

/// A template `exec` that ran and failed: helmfile's `error calling exec: CMD exited with status
/// N:` and the command's first line of error output below it.
struct FailedExec {
    command: String,
    status: String,
    error: Option<String>,
}

fn failed_exec(text: &str) -> Option<FailedExec> {
    let mut lines = text.lines();
    let (command, status) = lines.by_ref().find_map(|l| {
        let rest = &l[l.find("error calling exec: ")? + "error calling exec: ".len()..];
        let (cmd, status) = rest.split_once(" exited with status ")?;
        Some((cmd.to_string(), status.trim_end_matches(':').trim().to_string()))
    })?;
    let error = lines
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("at ") && !l.starts_with("helmfile "))
        .map(|l| crate::redact::cap(&crate::redact::tool_output(l), 200));
    Some(FailedExec {
        command: crate::redact::cap(&crate::redact::tool_output(&command), 160),
        status: format!("exit status {status}"),
        error,
    })
}

/// The command helmfile could not find: `exec: "NAME": executable file not found`.
fn missing_executable(text: &str) -> Option<String> {
    let at = text.find("exec: \"")?;
    let rest = &text[at + "exec: \"".len()..];
    let (name, after) = rest.split_once('"')?;
    (after.starts_with(": executable file not found") && !name.is_empty() && name.len() <= 120)
        .then(|| name.to_string())
}

/// Where a state template failed: helmfile's `error during F.part.N parsing: template:
/// stringTemplate:L:C` read as the state file's own line (parts are split at `\n---\n`), and the
/// release whose declaration holds it.
fn template_place(text: &str, inputs: &Inputs) -> (Option<String>, Option<String>) {
    let parsed = (|| {
        let rest = &text[text.find(".part.")? + ".part.".len()..];
        let (part, rest) = rest.split_once(' ')?;
        let part: usize = part.parse().ok()?;
        let rest = &rest[rest.find("stringTemplate:")? + "stringTemplate:".len()..];
        let line: usize = rest.split(':').next()?.parse().ok()?;
        Some((part, line))
    })();
    let file = state_file(text, inputs);
    let Some((part, line)) = parsed else {
        return (None, None);
    };
    let Ok(source) = std::fs::read_to_string(inputs.root.join(&file)) else {
        return (None, None);
    };
    let parts: Vec<&str> = source.split("\n---\n").collect();
    if part >= parts.len() {
        return (None, None);
    }
    let before: usize = parts[..part].iter().map(|p| p.matches('\n').count() + 2).sum();
    let at = before + line;
    let release = crate::stack::load::release_at(&source, at).map(|(r, _)| r);
    (Some(format!("{file}:{at}")), release)
}

/// The marker of an online front's refusal (`tools::seal`): `nvcf-validate sealed: `CMD` refused`.
const ONLINE_REFUSAL: &str = "nvcf-validate sealed: `";

/// The command the seal refused: `nvcf-validate --offline: `CMD` refused`, or online
/// `nvcf-validate sealed: `CMD` refused`.
fn sealed_refusal(text: &str) -> Option<String> {
    let at = ["nvcf-validate --offline: `", ONLINE_REFUSAL]
        .iter()
        .find_map(|m| text.find(m).map(|i| i + m.len()))?;
    let rest = &text[at..];
    let cmd = rest.split('`').next()?;
    Some(crate::redact::cap(&crate::redact::tool_output(cmd), 160))
}

fn required_env(text: &str) -> Option<String> {
    let at = text.find("required env var `")?;
    let rest = &text[at + "required env var `".len()..];
    rest.split('`').next().map(str::to_string)
}

/// A template `exec` of a network client that failed (`curl …`, `wget …`).
fn exec_command(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let t = l.trim();
        let at = ["curl ", "wget "].iter().find_map(|c| t.find(c))?;
        let cmd = t[at..].split(" exited with status ").next()?;
        (t.contains(" exited with status ")).then(|| crate::redact::cap(cmd, 160))
    })
}

/// The text says a connection failed (DNS, proxy, refused, timeout), whoever printed it.
pub fn network(text: &str) -> bool {
    [
        "no such host",
        "proxyconnect",
        "dial tcp",
        "connection refused",
        "i/o timeout",
        "failed to do request",
        "Could not resolve host",
        "Could not resolve proxy",
        "could not read Username",
        "Couldn't connect to server",
        "Failed to connect to",
        "Proxy CONNECT aborted",
        "Connection timed out",
        "Network is unreachable",
    ]
    .iter()
    .any(|n| text.contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Offline is named only where it is the cause; otherwise the first line carries helmfile's
    /// innermost error.
    #[test]
    fn offline_is_named_only_when_it_is_the_cause() {
        let (entry, root) = (Path::new("/s/helmfile.yaml"), Path::new("/s"));
        let lock = crate::stack::lock::ChartLock::default();
        let opts = crate::stack::Options {
            offline: true,
            ..Default::default()
        };
        let inputs = Inputs {
            entry,
            root,
            lock: &lock,
            opts: &opts,
        };
        let e = anyhow::anyhow!(
            "helmfile list failed (exit status: 1):\n  in ./helmfile.yaml: failed to read helmfile.yaml: reading document at index 1: yaml: line 3: mapping values are not allowed in this context"
        );
        let m = explain(&e, &inputs, "default");
        let first = m.lines().next().unwrap();
        assert!(!first.contains("--offline"), "{m}");
        assert!(
            first.contains("mapping values are not allowed in this context"),
            "{first}"
        );
        let t = explain_template(
            "helmfile template failed (exit status: 1):\n  some wrapper: the innermost cause here",
            &inputs,
            "default",
        );
        let first = t.message.lines().next().unwrap();
        assert!(
            !first.contains("--offline") && first.contains("the innermost cause here"),
            "{first}"
        );
        // Where the seal is the cause, it is named.
        let e = anyhow::anyhow!("helmfile list failed:\n  nvcf-validate --offline: `git clone x` refused");
        assert!(explain(&e, &inputs, "default")
            .lines()
            .next()
            .unwrap()
            .contains("--offline"));
    }

    #[test]
    fn reads_helmfile_duplicate_and_required_env() {
        let t = "helmfile build failed:\n  in /s/helmfile.yaml: in .helmfiles[0]: in sub/helmfile.yaml: in .helmfiles[0]: in deeper/helmfile.yaml: duplicate release \"b\" found in namespace \"nb\": there were 2 releases";
        let r = refusal(t).unwrap();
        assert_eq!((r.name.as_str(), r.namespace.as_deref()), ("b", Some("nb")));
        assert_eq!(r.kind, RefusalKind::Duplicate);
        // Each path of the chain is relative to the state before it.
        assert_eq!(r.file.as_deref(), Some(Path::new("/s/sub/deeper/helmfile.yaml")));
        let t = "in /s/helmfile.yaml: duplicate release \"a\" found: there were 2 releases named \"a\" matching";
        let r = refusal(t).unwrap();
        assert_eq!((r.name.as_str(), r.namespace.as_deref()), ("a", Some("")));
        assert_eq!(refusal("no duplicate here"), None);
        let t = "in /s/helmfile.yaml: [release \"redis\": the version for OCI charts should be semver compliant, the latest tag is not supported anymore for helm >= 3.8.0]";
        let r = refusal(t).unwrap();
        assert_eq!((r.name.as_str(), r.kind), ("redis", RefusalKind::OciVersion));
        assert_eq!(r.file.as_deref(), Some(Path::new("/s/helmfile.yaml")));
        // A pull that failed on the network is not a refusal of the release.
        assert_eq!(
            refusal("in /s/h.yaml: [release \"cm\": command \"helm\" exited with non-zero status:"),
            None
        );
        let r = "error calling requiredEnv: required env var `NVCF_TOKEN` is not set";
        assert_eq!(required_env(r).as_deref(), Some("NVCF_TOKEN"));
        assert!(network(
            "proxyconnect tcp: dial tcp 127.0.0.1:9: connect: connection refused"
        ));
        assert!(network(
            "curl: (7) Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server"
        ));
        assert!(network("curl: (56) Proxy CONNECT aborted"));
        assert!(!network("template: parse error"));
        let k = "in ./h.yaml: [exit status 127\n  COMMAND:\n    kustomize build /tmp/s/w/tmp/chartify123/apps/app --output x\n  OUTPUT:\n    nvcf-validate: `kustomize build` cannot run: kustomize is not installed, and helmfile";
        let h = sealed_tools_failure(k, "h.yaml", "--offline", Path::new("/nonexistent")).unwrap();
        assert!(
            h.starts_with("h.yaml: release apps/app has strategicMergePatches"),
            "{h}"
        );
        let r = "nvcf-validate: remote file: \nhelmfile build failed";
        assert!(
            sealed_tools_failure(r, "h.yaml", "--offline", Path::new("/nonexistent"))
                .unwrap()
                .starts_with("h.yaml: helmfile tried")
        );
        let r = "nvcf-validate: remote file: h.yaml: release a/b takes values from https://x/v.yaml\n";
        assert!(
            sealed_tools_failure(r, "h.yaml", "--offline", Path::new("/nonexistent"))
                .unwrap()
                .starts_with("h.yaml: release a/b takes values from https://x/v.yaml: a remote file")
        );
        assert_eq!(
            sealed_tools_failure(
                "template: parse error",
                "h.yaml",
                "--offline",
                Path::new("/nonexistent")
            ),
            None
        );
    }

    #[test]
    fn names_the_release_and_chart_of_a_condensed_dump() {
        let n = named(&crate::tools::output::condense(crate::tools::output::tests::DUMP));
        assert_eq!(n.release, Some(("umb".into(), Some("apps".into()))));
        assert_eq!(n.chart.as_deref(), Some("charts/umb"));
    }

    #[test]
    fn names_the_field_helmfile_refuses_and_what_it_accepts() {
        let t = "in ./helmfile.yaml: failed to read helmfile.yaml: reading document at index 1: yaml: unmarshal errors:\n  line 4: field insecure_skip_tls_verify not found in type state.RepositorySpec";
        let m = unknown_field(t).unwrap();
        assert!(
            m.contains("`insecure_skip_tls_verify` in a repository (document 1, line 4)"),
            "{m}"
        );
        assert!(m.contains("skipTLSVerify"), "{m}");
        let t = "  line 2: field namespace not found in type state.HelmSpec";
        let m = unknown_field(t).unwrap();
        assert!(
            m.contains("`namespace` in `helmDefaults` (line 2)") && m.contains("on each release"),
            "{m}"
        );
        assert_eq!(unknown_field("field of view"), None);
    }

    /// A failed `exec`, a missing hook command and a sealed refusal: the first line names the state
    /// file and line, the release whose declaration holds it, and the fix.
    #[test]
    fn exec_and_hook_failures_name_the_line_the_release_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("helmfile.yaml.gotmpl"),
            "environments:\n  default: {}\n---\nreleases:\n- name: web\n  chart: ./c\n- name: app\n  chart: ./c\n  \
             values:\n  - v: {{ exec \"x\" (list) }}\n  hooks:\n  - events: [prepare, cleanup]\n    command: \
             \"/opt/bin/gen\"\n",
        )
        .unwrap();
        let entry = root.join("helmfile.yaml.gotmpl");
        let lock = crate::stack::lock::ChartLock::default();
        let opts = crate::stack::Options::default();
        let inputs = Inputs {
            entry: &entry,
            root,
            lock: &lock,
            opts: &opts,
        };
        let e = anyhow::anyhow!(
            "helmfile list failed:\n  in {}: error during helmfile.yaml.gotmpl.part.1 parsing: template: \
             stringTemplate:7:10: executing \"stringTemplate\" at <exec>: error calling exec: x exited with status 3:\n    \
             lookup failed\n",
            entry.display()
        );
        let first = explain(&e, &inputs, "default").lines().next().unwrap().to_string();
        assert!(
            first.starts_with(
                "helmfile.yaml.gotmpl:10: release app: the state's template calls `exec` of `x`, which failed (exit \
                 status 3: lookup failed); make the command succeed"
            ),
            "{first}"
        );
        let e = anyhow::anyhow!(
            "helmfile build failed:\n  helmfile crashed: panic: unexpected error: exec: \"gen\": executable file not \
             found in $PATH (in helmexec.Output)"
        );
        let first = explain(&e, &inputs, "default").lines().next().unwrap().to_string();
        assert!(
            first.starts_with(
                "helmfile.yaml.gotmpl:13: release app: a prepare/cleanup hook runs `gen`, which is not installed"
            ),
            "{first}"
        );
        assert!(first.contains("; install `gen` on PATH"), "{first}");
        let e = anyhow::anyhow!(
            "helmfile build failed:\n  hook[prepare] logs |\n  in {}: [hook[gen]: command `gen` failed: gen exited with \
             status 1:\n    nvcf-validate --offline: `gen --all` refused (sealed)",
            entry.display()
        );
        let first = explain(&e, &inputs, "default").lines().next().unwrap().to_string();
        assert!(
            first.starts_with("helmfile.yaml.gotmpl:13: release app: its prepare/cleanup hook runs `gen --all`, which --offline refuses"),
            "{first}"
        );
        // Outside every release item: no release named.
        assert_eq!(
            crate::stack::load::release_at("environments:\n  a: {}\nreleases:\n- name: r\n", 2),
            None
        );
        assert_eq!(
            crate::stack::load::release_at("releases:\n- name: r\n  chart: c\nrepositories:\n- name: x\n", 5),
            None
        );
        assert_eq!(missing_executable("exec: \"\": executable file not found"), None);
        assert!(failed_exec("error calling exec: without status").is_none());
    }

    #[test]
    fn chain_paths_resolve_against_the_state_before() {
        assert_eq!(
            chain_of("in a.yaml: in .helmfiles[2]: in b/c.yaml: boom"),
            Some((vec!["a.yaml".to_string(), "b/c.yaml".to_string()], "boom"))
        );
        assert_eq!(chain_of("nothing"), None);
        assert_eq!(
            state_chain("x\n  in /r/helmfile.d/10-a.yaml: in .helmfiles[0]: in ../sub/h.yaml: e"),
            vec![PathBuf::from("/r/helmfile.d/10-a.yaml"), PathBuf::from("/r/sub/h.yaml")]
        );
    }
}
