//! Which helm and helmfile were found, and whether that pair can work (issue #28).
//!
//! helmfile 0.x asks helm `version --client --short` before every run and refuses any major but 3;
//! Helm 4 removed `--client` and refuses that call ("unknown flag: --client"). So helmfile 0.x
//! drives Helm 4 only through a front that answers that one call (`ci/helm-front`, which
//! `ci/setup` installs before the pinned Helm 4); helmfile 1.x drives Helm 4 itself. The pair is
//! checked once per run when the tools are first located, by making helmfile 0.x's own call (the
//! real helm is the oracle, not a version table), on its own thread beside the first helmfile
//! commands (`start`; nothing they produce is kept before it passed, see `tools::Lazy::verified`):
//! a refusal is exit 2 naming both versions and the ways out. The versions found are kept for
//! messages (`found`): a state helmfile 0.x cannot read but 1.x may (`stack::failure`) names them.

use super::Tools;
use anyhow::{bail, Result};
use std::process::Command;
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};

/// `major.minor.patch` of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The versions of one run's tools (`None`: the tool did not say, in a form we read; for helm
/// also: not asked, because helm's answer to helmfile 0.x's question settled the check).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Found {
    pub helm: Option<Version>,
    pub helmfile: Option<Version>,
}

static FOUND: OnceLock<Found> = OnceLock::new();

/// Checks started with [`start`] and not finished yet, and the signal that one finished.
static IN_FLIGHT: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

/// The versions located in this run, once the tools were located (waiting for a check that
/// [`start`] began, so a message never misses them because the check was still running).
pub fn found() -> Option<Found> {
    let (count, done) = &IN_FLIGHT;
    let mut n = count.lock().unwrap_or_else(PoisonError::into_inner);
    while *n > 0 {
        n = done.wait(n).unwrap_or_else(PoisonError::into_inner);
    }
    drop(n);
    FOUND.get().copied()
}

/// A [`check`] running beside the first helmfile commands of a run (`tools::Lazy`).
pub struct Pending(std::thread::JoinHandle<Result<Checked, String>>);

/// Start [`check`] on its own thread. When it passes and helm answered helmfile 0.x's question
/// (`Checked::client_short`), the answer is written to `answer` (atomically: a reader sees all of
/// it or nothing), where the run's helm front reads it (`mirror::front`); until the check ends,
/// [`pending_marker`] of `answer` exists.
pub fn start(tools: Tools, answer: Option<std::path::PathBuf>) -> Pending {
    /// Counts the check out when its thread ends, however it ends.
    struct Finished;
    impl Drop for Finished {
        fn drop(&mut self) {
            let (count, done) = &IN_FLIGHT;
            *count.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
            done.notify_all();
        }
    }
    *IN_FLIGHT.0.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    /// Removes the marker that says the answer is still coming (`answer` + `.pending`), however
    /// the check ends: the front then stops waiting for it.
    struct Asking(Option<std::path::PathBuf>);
    impl Drop for Asking {
        fn drop(&mut self) {
            if let Some(p) = &self.0 {
                let _ = std::fs::remove_file(p);
            }
        }
    }
    // Counted out by the thread, or, when the thread cannot start, with the closure that holds it.
    let finished = Finished;
    let asking = Asking(
        answer
            .as_ref()
            .map(|a| pending_marker(a))
            .filter(|m| std::fs::write(m, "").is_ok()),
    );
    Pending(std::thread::spawn(move || {
        let _finished = finished;
        let _asking = asking;
        let checked = check(&tools).map_err(|e| format!("{e:#}"))?;
        if let (Some(path), Some(a)) = (answer, &checked.client_short) {
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, format!("{a}\n"))
                .and_then(|()| std::fs::rename(&tmp, &path))
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
        Ok(checked)
    }))
}

/// The file that exists while the check is asking helm the question whose answer goes to `answer`
/// (the helm front waits for the answer while it exists, `mirror::front`).
pub fn pending_marker(answer: &std::path::Path) -> std::path::PathBuf {
    let mut p = answer.as_os_str().to_owned();
    p.push(".pending");
    p.into()
}

impl Pending {
    /// Wait for the check: its refusal, or what it found.
    pub fn wait(self) -> Result<Checked, String> {
        self.0
            .join()
            .unwrap_or_else(|_| Err("the check of helm's and helmfile's versions panicked".to_string()))
    }
}

/// The first word of `text` that reads as a version: `v4.3.1+gc0d08d0`, `0.166.0`, `v1.1.8`
/// (pre-release and build suffixes ignored). Words are bounded; nothing grows with the input.
pub fn parse(text: &str) -> Option<Version> {
    text.split_whitespace().take(16).find_map(|w| {
        let w = w.trim_matches(|c: char| c == '"' || c == ',' || c == '{' || c == '}');
        let w = w.strip_prefix('v').unwrap_or(w);
        let core = w.split(['+', '-']).next()?;
        let mut it = core.split('.');
        let v = Version {
            major: it.next()?.parse().ok()?,
            minor: it.next()?.parse().ok()?,
            patch: it.next()?.parse().ok()?,
        };
        it.next().is_none().then_some(v)
    })
}

/// A started version query; `answer` waits for it: (succeeded, what it said (stdout when it
/// succeeded, else stderr), capped).
struct Asked(std::io::Result<std::process::Child>);

fn ask(mut c: Command) -> Asked {
    use std::process::Stdio;
    Asked(
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn(),
    )
}

impl Asked {
    fn answer(self) -> (bool, String) {
        match self.0.and_then(std::process::Child::wait_with_output) {
            Ok(o) => (
                o.status.success(),
                crate::redact::cap(
                    &String::from_utf8_lossy(if o.status.success() { &o.stdout } else { &o.stderr }),
                    300,
                ),
            ),
            Err(e) => (false, e.to_string()),
        }
    }
}

/// The versions of a run's tools, and helm's answer to helmfile 0.x's own question.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    pub found: Found,
    /// What `helm version --client --short` printed in this run (one line, a version), when it
    /// succeeded: helmfile 0.x asks it before every command, and the run's helm front gives this
    /// answer instead of starting helm again (`mirror::front`). `None`: it failed or printed
    /// something else; the front then passes the call on.
    pub client_short: Option<String>,
}

/// The exact line `helm version --client --short` printed, when it is one version and nothing a
/// shell would read specially (it is written into the helm front).
fn client_answer(ok: bool, said: &str) -> Option<String> {
    let line = said.strip_suffix('\n').unwrap_or(said);
    let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | '_');
    (ok && !line.is_empty() && line.len() <= 100 && line.chars().all(plain) && parse(line).is_some())
        .then(|| line.to_string())
}

/// Read the versions and refuse a pair that cannot work, naming both and the fix. helmfile's
/// `--version` and helmfile 0.x's own question (`helm version --client --short`) are asked at once;
/// helm's `version --short` only when the verdict needs it: helmfile 0.x got no Helm 3 answer
/// (helm's own version then decides, and names helm in the refusal). When helm answered helmfile
/// 0.x's question with a Helm 3 version, helmfile 0.x accepts this helm whatever it is, so asking
/// again would only cost a helm start (one of the two real helm runs the check made before; its
/// version is not needed for anything else, `Found::helm` is then `None`).
pub fn check(tools: &Tools) -> Result<Checked> {
    let mut hf = tools.tool_command(&tools.helmfile);
    hf.arg("--version");
    let mut c = tools.helm();
    c.args(["version", "--client", "--short"]);
    let (hf, c) = (ask(hf), ask(c));
    let helmfile = parse(&hf.answer().1);
    let (client_ok, client_said) = c.answer();
    let client_is_helm3 = client_ok && parse(&client_said).is_some_and(|v| v.major == 3);
    let helm = match helmfile {
        Some(hf) if hf.major == 0 && !client_is_helm3 => {
            let mut h = tools.helm();
            h.args(["version", "--short"]);
            parse(&ask(h).answer().1)
        }
        _ => None,
    };
    let found = Found { helm, helmfile };
    if let (Some(hf), Some(h)) = (helmfile, helm) {
        if hf.major == 0 && h.major >= 4 {
            // helmfile 0.x's own call did not give what it accepts: a Helm 3 version.
            bail!(
                "cannot render: helmfile {hf} ({}) cannot drive helm {h} ({}): helmfile 0.x runs `helm version \
                 --client --short` before every command, and Helm 4 refuses it ({}). Use helmfile 1.1 or newer \
                 with Helm 4, or a Helm 3 with helmfile {hf}, or put this repository's .tools/bin first on PATH \
                 (./ci/setup installs helmfile {hf} with Helm 4 behind ci/helm-front, which answers that call)",
                tools.helmfile.display(),
                tools.helm.display(),
                client_said
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("no answer")
                    .trim()
            );
        }
    }
    let _ = FOUND.set(found);
    Ok(Checked {
        found,
        client_short: client_answer(client_ok, &client_said),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_helm_and_helmfile_print_them() {
        let v = |a, b, c| {
            Some(Version {
                major: a,
                minor: b,
                patch: c,
            })
        };
        assert_eq!(parse("v4.3.1+gc0d08d0\n"), v(4, 3, 1));
        assert_eq!(parse("v3.99.0+helm-4.3.1-gc0d08d0"), v(3, 99, 0));
        assert_eq!(parse("helmfile version 0.166.0\n"), v(0, 166, 0));
        assert_eq!(parse("helmfile version v1.1.8"), v(1, 1, 8));
        assert_eq!(parse("Error: unknown flag: --client"), None);
        assert_eq!(parse("1.2"), None);
        assert_eq!(parse(&"x ".repeat(100_000)), None);
    }

    /// A check started beside the first commands: `found` waits for it, and its answer is
    /// written where the front reads it.
    #[test]
    fn found_waits_for_the_check_and_the_answer_is_written() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let script = |name: &str, body: &str| {
            let p = d.path().join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        };
        let tools = Tools {
            // Slow to answer, so `found` is asked while the check still runs.
            helmfile: script("helmfile", "sleep 0.5; echo 'helmfile version 0.166.0'"),
            helm: script("helm", "echo v3.15.3+g3bb50bb"),
            env: Vec::new(),
            writable: None,
            ns: None,
            network: false,
        };
        let answer = d.path().join("client-short");
        let pending = start(tools, Some(answer.clone()));
        assert!(
            pending_marker(&answer).exists(),
            "the front is told the answer is coming"
        );
        let v = found().and_then(|f| f.helmfile);
        assert_eq!(v.map(|v| v.to_string()).as_deref(), Some("0.166.0"));
        let checked = pending.wait().unwrap();
        assert_eq!(checked.client_short.as_deref(), Some("v3.15.3+g3bb50bb"));
        assert_eq!(std::fs::read_to_string(&answer).unwrap(), "v3.15.3+g3bb50bb\n");
        assert!(!pending_marker(&answer).exists());
    }

    /// helm's own `version --short` is asked only when helm's answer to helmfile 0.x's question is
    /// not a Helm 3 version: then it decides, and a Helm 4 is refused by name.
    #[test]
    fn helm_is_asked_its_own_version_only_when_the_answer_does_not_settle_it() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("asked");
        let script = |name: &str, body: &str| {
            let p = d.path().join(name);
            std::fs::write(&p, format!("#!/bin/sh\necho \"$*\" >> {}\n{body}\n", log.display())).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        };
        let tools = |helm: &str| Tools {
            helmfile: script("helmfile", "echo 'helmfile version 0.166.0'"),
            helm: script(helm, &format!("exec {}/{helm}.real \"$@\"", d.path().display())),
            env: Vec::new(),
            writable: None,
            ns: None,
            network: false,
        };
        // What helm answers (behind the logging script).
        let real = |name: &str, body: &str| {
            let p = d.path().join(format!("{name}.real"));
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        let asked = || std::fs::read_to_string(&log).unwrap_or_default();
        // A front: Helm 4 behind an answer helmfile 0.x accepts. One helm run.
        real(
            "front",
            r#"case "$*" in "version --client --short") echo v3.99.0+helm-4.3.1-gc0d08d0 ;; *) echo v4.3.1+gc0d08d0 ;; esac"#,
        );
        let c = check(&tools("front")).unwrap();
        assert_eq!(c.client_short.as_deref(), Some("v3.99.0+helm-4.3.1-gc0d08d0"));
        assert_eq!(c.found.helm, None);
        assert!(!asked().contains("version --short\n"), "{}", asked());
        assert_eq!(asked().matches("version --client --short").count(), 1, "{}", asked());
        // Helm 4 itself refuses `--client`: its own version is asked and named in the refusal.
        std::fs::remove_file(&log).unwrap();
        real(
            "bare",
            r#"case "$*" in *--client*) echo 'Error: unknown flag: --client' >&2; exit 1 ;; *) echo v4.3.1+gc0d08d0 ;; esac"#,
        );
        let e = format!("{:#}", check(&tools("bare")).unwrap_err());
        assert!(
            e.contains("cannot drive helm 4.3.1") && e.contains("unknown flag: --client"),
            "{e}"
        );
        assert!(asked().contains("version --short\n"), "{}", asked());
        // A Helm 3 that fails helmfile's question is not refused on that alone (as before).
        real(
            "old",
            r#"case "$*" in *--client*) exit 1 ;; *) echo v3.15.3+g3bb50bb ;; esac"#,
        );
        assert!(check(&tools("old")).unwrap().client_short.is_none());
    }

    #[test]
    fn only_a_plain_version_line_is_kept_as_the_answer() {
        let kept = |ok, s: &str| client_answer(ok, s);
        assert_eq!(
            kept(true, "v3.99.0+helm-4.3.1-gc0d08d0\n").as_deref(),
            Some("v3.99.0+helm-4.3.1-gc0d08d0")
        );
        assert_eq!(kept(true, "v3.15.3+g3bb50bb\n").as_deref(), Some("v3.15.3+g3bb50bb"));
        assert_eq!(kept(false, "v3.15.3\n"), None);
        assert_eq!(kept(true, "Error: unknown flag: --client\n"), None);
        assert_eq!(kept(true, "v3.1.0'; rm -rf /; '\n"), None);
        assert_eq!(kept(true, "v3.1.0\nv3.2.0\n"), None);
        assert_eq!(kept(true, ""), None);
    }
}
