//! Every fixture, end to end through the real CLI, in one place:
//!
//! - `tests/fixtures/<family>/fires-<rule>-<case>.yaml` must produce a finding of `<rule>` (exit 1
//!   when it is an error),
//!   and `silent-<rule>-<case>.yaml` must produce none of it (`check --manifests`, with the policy
//!   `tests/fixtures/<family>/policy/<fixture>.yaml` when there is one);
//! - `tests/stacks/fires-<rule>-<case>/` and `silent-…/` are helmfile stacks rendered with the real
//!   helmfile/helm (`check --offline`); what each reports is snapshotted;
//! - for the ownership, pinning and insecure-transport families, a silent case must be clean of
//!   every rule and exit 0 (their fixtures are complete stacks of objects; the PKI and route
//!   fixtures are deliberately small and trip other families' rules);
//! - every rule of the registry has at least one firing and one silent fixture (the policy family's
//!   waiver findings are exercised by the CLI tests instead);
//! - a firing fixture (or a firing stack's `helmfile.yaml`) states in its header, as `# expect: TEXT`
//!   lines, every finding of its rule it must produce (`check_expectations`).

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use support::copy_dir;

/// Families whose silent fixtures must be clean of every rule.
const STRICT_FAMILIES: &[&str] = &["ownership", "pinning", "insecure transport"];

fn validator_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `(id, family)` of every registered rule.
fn rules() -> Vec<(&'static str, &'static str)> {
    nvcf_validate::rules::registry()
        .into_iter()
        .map(|r| (r.id, r.family))
        .collect()
}

/// The rule a fixture or stack is about (the one naming convention, `rules::fixture_rule`).
fn rule_of(name: &str) -> Option<(bool, &'static str, &'static str)> {
    nvcf_validate::rules::fixture_rule(name).map(|(fires, r)| (fires, r.id, r.family))
}

struct Run {
    code: i32,
    findings: Vec<serde_json::Value>,
    output: String,
    /// Why the run's output cannot be trusted as a verdict (a panic, a report that is not JSON).
    broken: Option<String>,
}

fn nvcf_validate(cwd: &Path, args: &[&str]) -> Run {
    let cache = cwd.join(".cache");
    let support::run::Run { code, stdout, stderr } = support::run::run(
        cwd,
        args,
        &[
            // After the example CA in examples/pki became valid (a silent fixture embeds it).
            ("NVCF_VALIDATE_NOW", support::run::AFTER_EXAMPLES),
            ("XDG_CACHE_HOME", cache.to_str().unwrap()),
        ],
        None,
    );
    // Every run writes a JSON report, exit 2 included; anything else (a panic, a crash, text) is a
    // failure of the fixture, never "silent".
    let report = serde_json::from_str::<serde_json::Value>(&stdout);
    let broken = if code == 101 || stderr.contains("panicked") {
        Some(format!("panicked (exit {code})"))
    } else if !matches!(code, 0..=2) {
        Some(format!("ended with exit {code}"))
    } else {
        match &report {
            Err(e) if code != 2 => Some(format!("wrote no JSON report ({e})")),
            Ok(v) if !v["findings"].is_array() => Some("wrote a report without `findings`".to_string()),
            _ => None,
        }
    };
    let findings = report
        .ok()
        .and_then(|v| v["findings"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|f| f["waived"].is_null())
        .collect();
    Run {
        code,
        findings,
        output: format!("{stdout}{stderr}"),
        broken,
    }
}

/// The `# expect: TEXT` lines of a fixture's header (the comment block it starts with).
fn expectations(text: &str) -> Vec<String> {
    text.lines()
        .take_while(|l| l.starts_with('#'))
        .filter_map(|l| l.strip_prefix("# expect:"))
        .map(|w| w.trim().to_string())
        .collect()
}

/// What a firing fixture states it must produce, checked against what it produced: it states at
/// least one finding; each `# expect: TEXT` is in the message (or help) of one of `rule`'s
/// findings; and each of `rule`'s findings is one the header states (in its message). A fixture with two defects
/// therefore names both, and cannot pass on the wrong one.
fn check_expectations(what: &str, expect: &[String], rule: &str, r: &Run) -> Vec<String> {
    let mine: Vec<&serde_json::Value> = r.findings.iter().filter(|f| f["rule"] == rule).collect();
    let text = |f: &serde_json::Value, w: &str| {
        f["message"].as_str().is_some_and(|m| m.contains(w)) || f["help"].as_str().is_some_and(|h| h.contains(w))
    };
    let mut out = Vec::new();
    if expect.is_empty() {
        out.push(format!(
            "{what}: states no expected finding: add a `# expect: TEXT` header line (key words of the message, or the object and path) for each finding of `{rule}` it must produce"
        ));
        return out;
    }
    for w in expect {
        if !mine.iter().any(|f| text(f, w)) {
            let got: Vec<&str> = mine.iter().filter_map(|f| f["message"].as_str()).collect();
            out.push(format!("{what}: no `{rule}` finding contains `{w}`; got {got:#?}"));
        }
    }
    // A help text is shared by every finding of a kind: only a message states which finding it is.
    for f in &mine {
        if !expect
            .iter()
            .any(|w| f["message"].as_str().is_some_and(|m| m.contains(w.as_str())))
        {
            out.push(format!(
                "{what}: `{rule}` reported a finding its header does not state (add `# expect:` for it, or fix the rule): {}",
                f["message"]
            ));
        }
    }
    out
}

/// The verdict on one fixture or stack; a description of what is wrong, if anything.
fn judge(what: &str, fires: bool, rule: &str, strict: bool, r: &Run) -> Option<String> {
    let rules: Vec<&str> = r.findings.iter().filter_map(|f| f["rule"].as_str()).collect();
    if let Some(why) = &r.broken {
        return Some(format!("{what}: {why}:\n{}", r.output));
    }
    if r.code == 2 {
        return Some(format!("{what}: could not be validated (exit 2):\n{}", r.output));
    }
    if fires && !rules.contains(&rule) {
        return Some(format!(
            "{what}: expected `{rule}` to fire; got exit {} with {rules:?}",
            r.code
        ));
    }
    // An error-level finding fails the gate (a rule may report a warning-level variant).
    let errors = r.findings.iter().any(|f| f["rule"] == rule && f["severity"] == "error");
    if fires && errors && r.code != 1 {
        return Some(format!(
            "{what}: `{rule}` reported an error but the exit code is {}",
            r.code
        ));
    }
    if !fires && rules.contains(&rule) {
        return Some(format!(
            "{what}: expected `{rule}` to stay silent; it fired:\n{}",
            r.output
        ));
    }
    if !fires && strict && (r.code != 0 || !rules.is_empty()) {
        return Some(format!(
            "{what}: expected exit 0 and no finding at all; got exit {} with {rules:?}",
            r.code
        ));
    }
    None
}

#[test]
fn every_fixture_fires_or_stays_silent_and_every_rule_has_both() {
    let rules = rules();
    let mut seen: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut record = |rule: &'static str, fires: bool| {
        let e = seen.entry(rule).or_default();
        if fires {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    };
    // Fixtures without a policy of their own get this one (allow-lists are strict by default).
    let empty = validator_dir().join("tests/fixtures/policy/default.yaml");

    let mut files: Vec<PathBuf> = walk(&validator_dir().join("tests/fixtures"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .filter(|p| {
            p.parent()
                .and_then(|d| d.file_name())
                .is_none_or(|n| n != "policy" && n != "certs" && n != "crds")
        })
        .collect();
    files.sort();
    for f in files {
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        let Some((fires, rule, family)) = rule_of(&name) else {
            failures.push(format!(
                "{}: not named fires-<rule>-<case> or silent-<rule>-<case> for a registered rule",
                f.display()
            ));
            continue;
        };
        let policy = f.parent().unwrap().join("policy").join(f.file_name().unwrap());
        let policy = if policy.is_file() { policy } else { empty.clone() };
        let tmp = tempfile::tempdir().unwrap();
        let r = nvcf_validate(
            tmp.path(),
            &[
                "check",
                "--manifests",
                f.to_str().unwrap(),
                "--policy",
                policy.to_str().unwrap(),
                "--format",
                "json",
            ],
        );
        record(rule, fires);
        let shown = f.strip_prefix(validator_dir()).unwrap_or(&f).display().to_string();
        let verdict = judge(&shown, fires, rule, STRICT_FAMILIES.contains(&family), &r);
        if fires && verdict.is_none() {
            let expect = expectations(&std::fs::read_to_string(&f).unwrap());
            failures.extend(check_expectations(&shown, &expect, rule, &r));
        }
        failures.extend(verdict);
    }

    let stacks = validator_dir().join("tests/stacks");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&stacks)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        let Some((fires, rule, family)) = rule_of(&name) else {
            failures.push(format!(
                "stack {name}: not named fires-<rule>-<case> or silent-<rule>-<case> for a registered rule"
            ));
            continue;
        };
        let tmp = tempfile::tempdir().unwrap();
        copy_dir(&d, tmp.path());
        let r = nvcf_validate(
            tmp.path(),
            &["check", "--file", "helmfile.yaml", "--offline", "--format", "json"],
        );
        record(rule, fires);
        let verdict = judge(
            &format!("stack {name}"),
            fires,
            rule,
            STRICT_FAMILIES.contains(&family),
            &r,
        );
        if fires && verdict.is_none() {
            let expect = expectations(&std::fs::read_to_string(d.join("helmfile.yaml")).unwrap());
            failures.extend(check_expectations(
                &format!("stack {name}/helmfile.yaml"),
                &expect,
                rule,
                &r,
            ));
        }
        failures.extend(verdict);
        // Lines of state findings depend on the loader's line finder; snapshot what a reviewer
        // reads: rule, release, file, message.
        let summary: Vec<serde_json::Value> = r
            .findings
            .iter()
            .map(|f| serde_json::json!({"rule": f["rule"], "severity": f["severity"], "release": f["release"], "file": f["source"]["file"], "message": f["message"]}))
            .collect();
        insta::assert_json_snapshot!(format!("stack-{name}"), summary);
    }

    for (id, family) in &rules {
        if *family == "policy" {
            continue;
        }
        let (f, s) = seen.get(id).copied().unwrap_or_default();
        if f == 0 {
            failures.push(format!(
                "rule {id} has no firing fixture (tests/fixtures/*/fires-{id}-*.yaml or tests/stacks/fires-{id}-*/)"
            ));
        }
        if s == 0 {
            failures.push(format!("rule {id} has no silent near-miss fixture (silent-{id}-*)"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problem(s):\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn dangling_needs_point_at_the_release_line() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(
        &validator_dir().join("tests/stacks/fires-needs-resolvable-dangling"),
        tmp.path(),
    );
    let r = nvcf_validate(
        tmp.path(),
        &["check", "--file", "helmfile.yaml", "--offline", "--format", "json"],
    );
    let needs: Vec<&serde_json::Value> = r.findings.iter().filter(|f| f["rule"] == "needs-resolvable").collect();
    assert_eq!(needs.len(), 1, "{:#?}", r.findings);
    let text = std::fs::read_to_string(tmp.path().join("helmfile.yaml")).unwrap();
    let line = needs[0]["source"]["line"].as_u64().unwrap() as usize;
    assert_eq!(
        text.lines().nth(line - 1).map(str::trim),
        Some("- name: request-router")
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}
