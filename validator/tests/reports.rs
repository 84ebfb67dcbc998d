//! What the report formats promise their consumers (issue 17), one test per defect found by
//! feeding them to real consumers: a report on every run (exit 2 included, written atomically
//! over `--output`), SARIF locations as repository URIs, JUnit counts that match the exit code
//! and XML that every parser accepts, a Markdown comment that is safe to post.
//!
//! The real consumers themselves (sarif-multitool, the Jenkins JUnit XSD with lxml, junitparser,
//! cmark-gfm) run over the same inputs in `ci/consumers/check`.

mod support;
use std::path::Path;
use support::repo;
use support::run::{copy_of, json, report_schema, run, schema_errors, Run};

const FORMATS: [&str; 6] = ["human", "json", "sarif", "junit", "github", "markdown"];

fn run_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> Run {
    // An absent allow-list allows nothing: unless a test brings its own policy, the registry the
    // test objects use is allowed, so the reports hold what the objects themselves do wrong.
    let policy = dir.join("validator-policy.yaml");
    if !policy.exists() && !args.contains(&"--policy") {
        std::fs::write(
            &policy,
            "version: 1\nsettings:\n  allowedImageRegistries: [registry.example.com]\n",
        )
        .unwrap();
    }
    let cache = dir.join(".cache");
    run(dir, args, &[("XDG_CACHE_HOME", cache.to_str().unwrap())], stdin)
}

fn deployment(name: &str, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  template:\n    spec:\n      containers:\n        - {{name: web, image: \"{image}\"}}\n"
    )
}

/// Exit 2 used to write nothing and leave an existing --output file untouched, so a workflow
/// uploaded the previous run's results.
#[test]
fn exit_2_writes_a_report_in_every_format_over_a_stale_one() {
    let d = copy_of("validator/tests/cli/stack");
    let cause = "environment `staging` is not declared";
    for format in FORMATS {
        let out = d.path().join(format!("report.{format}"));
        std::fs::write(&out, "STALE REPORT FROM AN EARLIER RUN").unwrap();
        let r = run_in(
            d.path(),
            &[
                "check",
                "--file",
                "helmfile.yaml.gotmpl",
                "--offline",
                "-e",
                "staging",
                "--format",
                format,
                "--output",
                out.to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(r.code, 2, "{format}: {}", r.stderr);
        assert!(r.stderr.contains(cause), "{format}: {}", r.stderr);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(!text.contains("STALE"), "{format}: the stale report was left in place");
        assert!(text.contains("staging"), "{format} does not carry the cause:\n{text}");
        match format {
            "sarif" => {
                let v = json(&text);
                let inv = &v["runs"][0]["invocations"][0];
                assert_eq!(inv["executionSuccessful"], false);
                assert_eq!(inv["toolExecutionNotifications"][0]["level"], "error");
            }
            "json" => {
                let v = json(&text);
                assert!(v["errors"][0]["message"].as_str().unwrap().contains(cause), "{v}");
                for schema in [report_schema(), repo().join("../shared/design/report.schema.json")] {
                    if schema.is_file() {
                        let errors = schema_errors(&v, &schema);
                        assert!(errors.is_empty(), "{}: {errors:#?}", schema.display());
                    }
                }
            }
            "junit" => {
                assert!(text.contains("errors=\"1\"") && text.contains("<error "), "{text}");
            }
            "github" => assert!(text.starts_with("::error "), "{text}"),
            "markdown" => assert!(text.contains("could not validate"), "{text}"),
            "human" => assert!(text.contains("could not validate"), "{text}"),
            _ => unreachable!(),
        }
        // Nothing is left beside the report (the atomic write's temporary file).
        let leftovers: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
    // Without --output the report goes to stdout, the cause to stderr as before.
    let r = run_in(
        d.path(),
        &["check", "--manifests", "missing.yaml", "--format", "json"],
        None,
    );
    assert_eq!(r.code, 2);
    assert!(json(&r.stdout)["errors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("missing.yaml"));
    assert!(r.stderr.contains("missing.yaml"), "{}", r.stderr);
}

/// A failing write is exit 2 and leaves the previous report whole.
#[test]
fn an_unwritable_output_is_exit_2() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("m.yaml"), deployment("web", "registry.example.com/web")).unwrap();
    let r = run_in(
        d.path(),
        &[
            "check",
            "--manifests",
            "m.yaml",
            "--output",
            "no/such/dir/report.json",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("cannot write report to no/such/dir/report.json"),
        "{}",
        r.stderr
    );
}

fn sarif_uris(v: &serde_json::Value) -> Vec<(Option<String>, Option<String>)> {
    v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let a = &r["locations"][0]["physicalLocation"]["artifactLocation"];
            (
                a["uri"].as_str().map(String::from),
                a["uriBaseId"].as_str().map(String::from),
            )
        })
        .collect()
}

/// An absolute --manifests path gave absolute `uri`s; `%` and spaces were not encoded (GitHub's
/// fingerprinting throws on a bare `%`); stdin was emitted as a uri.
#[test]
fn sarif_locations_are_encoded_uris_relative_to_the_root() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("d 100%");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("p,q.yaml"), deployment("web", "registry.example.com/web")).unwrap();
    let abs = dir.join("p,q.yaml");
    let r = run_in(
        d.path(),
        &["check", "--manifests", abs.to_str().unwrap(), "--format", "sarif"],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v = json(&r.stdout);
    let uris = sarif_uris(&v);
    assert!(!uris.is_empty());
    for (uri, base) in &uris {
        assert_eq!(uri.as_deref(), Some("d%20100%25/p%2Cq.yaml"));
        assert_eq!(base.as_deref(), Some("%SRCROOT%"));
    }
    let root = v["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"].as_str().unwrap();
    assert!(root.starts_with("file:///") && root.ends_with('/'), "{root}");
    assert!(v["runs"][0]["tool"]["driver"]["informationUri"]
        .as_str()
        .unwrap()
        .starts_with("https://"));

    // A file outside the root (the working directory here) is a file:// URI.
    let other = tempfile::tempdir().unwrap();
    let cwd = d.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(
        other.path().join("o.yaml"),
        deployment("web", "registry.example.com/web"),
    )
    .unwrap();
    let o = other.path().join("o.yaml");
    let v = json(
        &run_in(
            &cwd,
            &["check", "--manifests", o.to_str().unwrap(), "--format", "sarif"],
            None,
        )
        .stdout,
    );
    for (uri, base) in sarif_uris(&v) {
        let uri = uri.unwrap();
        assert!(uri.starts_with("file:///") && uri.ends_with("/o.yaml"), "{uri}");
        assert_eq!(base, None);
    }

    // Stdin has no file: a logical location only.
    let r = run_in(
        d.path(),
        &["check", "--manifests", "-", "--format", "sarif"],
        Some(&deployment("web", "registry.example.com/web")),
    );
    let v = json(&r.stdout);
    for res in v["runs"][0]["results"].as_array().unwrap() {
        assert!(res["locations"][0].get("physicalLocation").is_none(), "{res}");
        assert!(res["locations"][0]["logicalLocations"][0]["name"].is_string());
    }
    assert!(!r.stdout.contains("<stdin>"));
}

/// `ci/validate` passes an absolute --file: chart findings were relative but the waiver
/// findings on the policy file were absolute paths.
#[test]
fn sarif_waiver_findings_are_relative_too_and_fingerprints_are_stable() {
    let d = copy_of("validator/tests/cli/stack");
    std::fs::write(
        d.path().join("validator-policy.yaml"),
        "version: 1\nwaivers:\n- rule: image-pinned\n  target: {release: apps/app}\n  reason: old exception\n  expires: 2026-10-01\n",
    )
    .unwrap();
    let file = d.path().join("helmfile.yaml.gotmpl");
    let elsewhere = tempfile::tempdir().unwrap();
    let args = [
        "check",
        "--file",
        file.to_str().unwrap(),
        "--offline",
        "--format",
        "sarif",
    ];
    let r = run_in(elsewhere.path(), &args, None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v = json(&r.stdout);
    let uris: Vec<String> = sarif_uris(&v).into_iter().filter_map(|(u, _)| u).collect();
    assert!(uris.contains(&"validator-policy.yaml".to_string()), "{uris:?}");
    assert!(uris.iter().all(|u| !u.starts_with('/')), "{uris:?}");
    let prints = |v: &serde_json::Value| -> Vec<String> {
        v["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["partialFingerprints"]["nvcfFinding/v1"].as_str().unwrap().to_string())
            .collect()
    };
    let first = prints(&v);
    assert_eq!(first.len(), uris.len());
    let mut distinct = first.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), first.len(), "fingerprints must tell findings apart");
    // The same stack checked from another directory, with the template's line moved: same prints.
    let tpl = d.path().join("charts/app/templates/deployment.yaml");
    let text = std::fs::read_to_string(&tpl).unwrap();
    std::fs::write(&tpl, format!("# a comment that moves every line\n{text}")).unwrap();
    let again = json(&run_in(d.path(), &args, None).stdout);
    assert_eq!(prints(&again), first);
}

/// Findings with no environment (an expired waiver whose target names none) were dropped, so a
/// run that exits 1 showed failures="0"; counts were per rule.
#[test]
fn junit_failures_match_the_exit_code() {
    let d = copy_of("validator/tests/cli/stack");
    std::fs::write(
        d.path().join("validator-policy.yaml"),
        "version: 1\nwaivers:\n- rule: image-pinned\n  target: {release: apps/app}\n  reason: old exception\n  expires: 2026-10-01\n",
    )
    .unwrap();
    let base = [
        "check",
        "--file",
        "helmfile.yaml.gotmpl",
        "--offline",
        "-A",
        "image-pinned",
    ];
    let j = run_in(d.path(), &[&base[..], &["--format", "json"]].concat(), None);
    assert_eq!(j.code, 1, "the expired waiver alone fails the gate: {}", j.stderr);
    let report = json(&j.stdout);
    let errors = report["summary"]["errors"].as_u64().unwrap();
    assert!(report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["environment"].is_null()));
    let x = run_in(d.path(), &[&base[..], &["--format", "junit"]].concat(), None).stdout;
    let top = x.lines().nth(1).unwrap();
    assert!(top.contains(&format!("failures=\"{errors}\"")), "{top}");
    assert!(
        !top.contains("skipped="),
        "junit-4.xsd has no skipped attribute on <testsuites>: {top}"
    );
    assert!(
        !x.contains("<skipped message"),
        "junit-4.xsd allows no attributes on <skipped>"
    );
    assert_eq!(x.matches("<failure ").count() as u64, errors);
}

/// U+FFFE/U+FFFF made the XML invalid for every parser; a raw CR was not kept; HTML came alive
/// in the Markdown comment, a CR split a table row, a backtick closed a code span.
#[test]
fn hostile_names_stay_inert_in_junit_and_markdown() {
    let fixture = repo().join("validator/tests/reports/hostile.json");
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(&fixture, d.path().join("t`x`|.json")).unwrap();
    let x = run_in(
        d.path(),
        &["check", "--manifests", "t`x`|.json", "--format", "junit"],
        None,
    )
    .stdout;
    assert!(!x.contains('\u{FFFF}') && !x.contains('\u{FFFE}'), "{x}");
    assert!(x.contains("[U+FFFF]") && x.contains("&#13;"), "{x}");
    assert!(!x.contains('\r'));
    assert!(!x.contains("<script"));

    let r = run_in(
        d.path(),
        &["check", "--manifests", "t`x`|.json", "--format", "markdown"],
        None,
    );
    assert_eq!(r.code, 1);
    let md = r.stdout;
    assert!(!md.contains('\r'), "{md}");
    assert!(!md.to_lowercase().contains("<script") && !md.contains("<img"), "{md}");
    let json_report = json(
        &run_in(
            d.path(),
            &["check", "--manifests", "t`x`|.json", "--format", "json"],
            None,
        )
        .stdout,
    );
    let n = json_report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .count();
    assert!(n >= 1);
    let rows = md.lines().filter(|l| l.starts_with("| **error** |")).count();
    assert_eq!(rows, n, "one table row per finding:\n{md}");
    assert!(
        md.contains("``t`x`\\|.json:1``"),
        "the location's code span outlasts its backtick:\n{md}"
    );
}

/// A failing run of the fixture corpus was a 617 KB comment; GitHub's limit is 65,536.
#[test]
fn the_markdown_comment_fits_a_pull_request() {
    let d = tempfile::tempdir().unwrap();
    let docs: Vec<String> = (0..2_000)
        .map(|i| deployment(&format!("web-{i}"), "registry.example.com/web:latest"))
        .collect();
    std::fs::write(d.path().join("many.yaml"), docs.join("---\n")).unwrap();
    let r = run_in(
        d.path(),
        &["check", "--manifests", "many.yaml", "--format", "markdown"],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.len() <= 60_000, "{} bytes", r.stdout.len());
    assert!(
        r.stdout.contains(" more** — see the SARIF/JSON artifact"),
        "{}",
        &r.stdout[..2000]
    );
}
