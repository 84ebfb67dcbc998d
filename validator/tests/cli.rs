//! CLI tests of `nvcf-validate check`: every output format, exit codes, offline and mirror modes,
//! the render cache (a warm run starts no helm/helmfile), waivers and bad input.
//!
//! They render the small stack in tests/cli/stack with the real helmfile/helm from
//! `<repo>/.tools/bin` (installed by ./ci/setup).

mod support;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::run::{copy_of, json, report_schema, run, schema_errors, Run};
use support::{copy_dir, repo, tool};

/// The CLI test stack.
const STACK: &str = "validator/tests/cli/stack";

/// Check the stack in `dir` with a private cache directory.
fn check(dir: &Path, extra: &[&str]) -> Run {
    let cache = dir.join(".cache");
    let cache = cache.to_str().unwrap();
    let mut args = vec!["check", "--file", "helmfile.yaml.gotmpl", "--offline"];
    args.extend_from_slice(extra);
    run(dir, &args, &[("XDG_CACHE_HOME", cache)], None)
}

fn normalise(s: &str, dir: &Path) -> String {
    s.replace(dir.to_str().unwrap(), "[STACK]")
        .replace(&repo().display().to_string(), "[REPO]")
        .replace(env!("CARGO_PKG_VERSION"), "[VERSION]")
}

/// The release `name` of the report's first environment.
fn release_of(report: &serde_json::Value, name: &str) -> serde_json::Value {
    report["environments"][0]["releases"]
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["name"] == name))
        .unwrap_or_else(|| panic!("release {name} missing from {report}"))
        .clone()
}

/// A copy of the CLI stack whose file `rel` is rewritten by `edit` from its text (empty when
/// the stack has no such file).
fn stack_with(rel: &str, edit: impl FnOnce(String) -> String) -> tempfile::TempDir {
    let d = copy_of(STACK);
    let p = d.path().join(rel);
    let text = std::fs::read_to_string(&p).unwrap_or_default();
    std::fs::write(&p, edit(text)).unwrap();
    d
}

/// A copy of the CLI stack whose remote release `upstream` comes from an https repository
/// (`upstream-repo`), with a mirror `mirror/` holding a stand-in chart packaged at test time
/// (`upstream` 1.2.3, `template` as its `templates/cm.yaml`) and the lock pinning its sha256.
/// An https repository, not OCI: offline with a mirror, helmfile cannot load OCI releases'
/// values (it pulls OCI charts while loading the state). Returns the copy, the tarball and its
/// sha256.
fn stack_with_mirrored_upstream(template: &str) -> (tempfile::TempDir, PathBuf, String) {
    let d = stack_with("helmfile.yaml.gotmpl", |text| {
        text.replace(
            "---\nreleases:",
            "---\nrepositories:\n  - name: upstream-repo\n    url: https://charts.invalid/upstream\nreleases:",
        )
        .replace(
            "chart: oci://registry.invalid/charts/upstream",
            "chart: upstream-repo/upstream",
        )
    });
    let src = d.path().join("upstream-src");
    std::fs::create_dir_all(src.join("templates")).unwrap();
    std::fs::write(
        src.join("Chart.yaml"),
        "apiVersion: v2\nname: upstream\nversion: 1.2.3\n",
    )
    .unwrap();
    std::fs::write(src.join("templates/cm.yaml"), template).unwrap();
    let tgz = helm_package(&src, &d.path().join("mirror"));
    let sha = sha256_file(&tgz);
    for f in ["charts.lock.yaml", "validator-policy.yaml"] {
        let p = d.path().join(f);
        let t = std::fs::read_to_string(&p)
            .unwrap()
            .replace("oci://registry.invalid/charts", "https://charts.invalid/upstream")
            .replace(&"0".repeat(64), &sha);
        std::fs::write(&p, t).unwrap();
    }
    (d, tgz, sha)
}

#[test]
fn every_format_reports_findings_and_unrendered_releases() {
    let d = copy_of(STACK);
    for format in ["human", "json", "sarif", "junit", "github", "markdown"] {
        let r = check(d.path(), &["--format", format]);
        assert_eq!(r.code, 1, "format {format}: {}", r.stderr);
        let out = normalise(&r.stdout, d.path());
        // The offline remote release is visible in every format, never silent.
        assert!(
            out.contains("upstream") && out.contains("not rendered"),
            "format {format} hides the unrendered release:\n{out}"
        );
        assert!(
            out.contains("image-pinned"),
            "format {format} lacks the finding:\n{out}"
        );
        // The SARIF rule table is the whole registry (its texts have their own test below);
        // the snapshot keeps the results and notifications.
        let out = if format == "sarif" {
            let mut v = json(&out);
            let n = v["runs"][0]["tool"]["driver"]["rules"].as_array().map_or(0, Vec::len);
            v["runs"][0]["tool"]["driver"]["rules"] = serde_json::json!(format!("[{n} rules]"));
            serde_json::to_string_pretty(&v).unwrap()
        } else {
            out
        };
        insta::assert_snapshot!(format!("format_{format}"), out);
    }
}

#[test]
fn json_report_follows_the_contract_schema() {
    let d = copy_of(STACK);
    let r = check(d.path(), &["--format", "json"]);
    let report = json(&r.stdout);
    let errors = schema_errors(&report, &report_schema());
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(report["summary"]["errors"], 2);
    assert_eq!(report["summary"]["environments"], 2);
    let up = &release_of(&report, "upstream");
    assert_eq!(up["rendered"], false);
    assert!(up["reason"].as_str().unwrap().contains("--offline"));
}

#[test]
fn sarif_is_strict_consumer_friendly() {
    let d = copy_of(STACK);
    let r = check(d.path(), &["--format", "sarif"]);
    let sarif = json(&r.stdout);
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    assert!(rules
        .iter()
        .all(|r| r["help"]["text"].as_str().is_some_and(|t| t.contains("How to fix"))));
    for res in run["results"].as_array().unwrap() {
        let locs = res["locations"].as_array().expect("results carry a location here");
        assert!(!locs.is_empty());
        let phys = &locs[0]["physicalLocation"];
        assert_eq!(phys["artifactLocation"]["uri"], "charts/app/templates/deployment.yaml");
        assert!(phys["region"]["startLine"].as_u64().unwrap() >= 1);
        let idx = res["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[idx]["id"], res["ruleId"]);
    }
}

#[test]
fn exit_codes() {
    let d = copy_of(STACK);
    assert_eq!(check(d.path(), &[]).code, 1, "an error-level finding is exit 1");
    let r = check(d.path(), &["-A", "image-pinned"]);
    assert_eq!(r.code, 0, "no error-level finding is exit 0: {}{}", r.stdout, r.stderr);
    let r = check(d.path(), &["-W", "image-pinned"]);
    assert_eq!(r.code, 0, "warnings do not fail the gate");
    assert!(r.stdout.contains("warning[image-pinned]"));
    let r = check(d.path(), &["--environment", "staging"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("environment `staging` is not declared") && r.stderr.contains("default, prod"),
        "{}",
        r.stderr
    );
    let r = check(d.path(), &["-D", "no-such-rule"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("unknown rule"), "{}", r.stderr);
    let r = check(d.path(), &["-A", "insecure-flag"]);
    assert_eq!(r.code, 2, "never-waivable rules cannot be allowed");
    assert!(r.stderr.contains("may never be waived"), "{}", r.stderr);
    let r = run(d.path(), &["check", "--file", "missing.yaml"], &[], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("missing.yaml") && r.stderr.contains("not found"),
        "{}",
        r.stderr
    );
    let r = run(d.path(), &["check", "--bogus-flag"], &[], None);
    assert_eq!(r.code, 2, "usage errors are exit 2");
    let r = run(d.path(), &["explain", "no-such-rule"], &[], None);
    assert_eq!(r.code, 2);
}

#[test]
fn online_without_registry_access_fails_closed() {
    // `.invalid` never resolves: the remote chart cannot be fetched, so nothing is validated.
    let d = copy_of(STACK);
    let cache = d.path().join(".cache");
    let r = run(
        d.path(),
        &["check", "--file", "helmfile.yaml.gotmpl"],
        &[("XDG_CACHE_HOME", cache.to_str().unwrap())],
        None,
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("registr") && r.stderr.contains("--offline") && r.stderr.contains("--chart-mirror"),
        "{}",
        r.stderr
    );
}

#[test]
fn templated_chart_references_render_like_plain_ones() {
    // The state's text hides that `app` is local: the early template run guesses wrong and
    // must be redone once helmfile build has told the truth.
    let d = stack_with("helmfile.yaml.gotmpl", |text| {
        text.replace("chart: ./charts/app", "chart: {{ printf \"./charts/%s\" \"app\" }}")
    });
    let r = check(d.path(), &["--format", "json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let report = json(&r.stdout);
    for env in report["environments"].as_array().unwrap() {
        let app = env["releases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "app")
            .unwrap();
        assert_eq!(app["rendered"], true, "{app}");
        assert_eq!(app["objects"], 2, "{app}");
    }
}

#[test]
fn a_local_release_named_like_a_remote_one_is_rendered() {
    // Releases are picked for helmfile template by name and namespace: leaving the remote
    // `upstream/upstream` out must not leave out a local `other/upstream`.
    let d = stack_with("helmfile.yaml.gotmpl", |text| {
        format!("{text}  - name: upstream\n    namespace: other\n    chart: ./charts/app\n")
    });
    let r = check(d.path(), &["--format", "json", "-e", "default"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let report = json(&r.stdout);
    let rels = report["environments"][0]["releases"].as_array().unwrap();
    let local = rels
        .iter()
        .find(|r| r["name"] == "upstream" && r["namespace"] == "other")
        .unwrap();
    assert_eq!(local["rendered"], true, "{local}");
    assert_eq!(local["objects"], 2, "{local}");
    let remote = rels
        .iter()
        .find(|r| r["name"] == "upstream" && r["namespace"] == "upstream")
        .unwrap();
    assert_eq!(remote["rendered"], false, "{remote}");
    let errors = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["release"] == "other/upstream")
        .count();
    assert_eq!(errors, 1, "the local release's unpinned image is found");
}

#[test]
fn a_render_failure_is_exit_2_once_its_explanation_is_waived_away() {
    // helmfile refuses a dangling need; the state rule that explains it makes the run exit 1.
    // Allowing that rule leaves an environment nothing validated: exit 2, never a pass.
    let stack = repo().join("validator/tests/stacks/fires-needs-resolvable-dangling");
    let cache = tempfile::tempdir().unwrap();
    let env = [("XDG_CACHE_HOME", cache.path().to_str().unwrap())];
    let r = run(&stack, &["check", "--offline"], &env, None);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let r = run(&stack, &["check", "--offline", "-A", "needs-resolvable"], &env, None);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("could not render"), "{}", r.stderr);
}

#[test]
fn rendered_lists_are_expanded_and_non_objects_refused() {
    let d = stack_with("charts/app/templates/list.yaml", |_| {
        "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: apps/v1\n    kind: Deployment\n    metadata: {name: hidden}\n    spec:\n      template:\n        spec:\n          containers: [{name: c, image: \"registry.example.com/hidden:latest\"}]\n".into()
    });
    let r = check(d.path(), &["--format", "json", "-e", "default"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let report = json(&r.stdout);
    let hidden = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["object"]["name"] == "hidden" && f["rule"] == "image-pinned");
    assert!(hidden, "an object inside a List is judged: {}", r.stdout);

    std::fs::write(d.path().join("charts/app/templates/list.yaml"), "just: data\n").unwrap();
    let r = check(d.path(), &["-e", "default"]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("not a Kubernetes object") && r.stderr.contains("charts/app/templates/list.yaml"),
        "{}",
        r.stderr
    );
}

#[test]
fn empty_manifests_are_not_a_pass() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("empty.yaml"), "# nothing here\n").unwrap();
    let r = run(d.path(), &["check", "--manifests", "empty.yaml"], &[], None);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("no Kubernetes objects"), "{}", r.stderr);
}

#[test]
fn require_rendered_refuses_unrendered_releases() {
    let d = copy_of(STACK);
    let r = check(d.path(), &["-A", "image-pinned", "--require-rendered"]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(
        r.stderr.contains("upstream/upstream") && r.stderr.contains("not rendered"),
        "{}",
        r.stderr
    );
    // Cause first: the state file, the release and the fix on the first line.
    let first = r.stderr.lines().next().unwrap_or("");
    assert!(
        first.contains("--require-rendered: helmfile.yaml")
            && first.contains("release upstream/upstream")
            && first.contains("; render it (--chart-mirror DIR"),
        "{first}"
    );
}

#[test]
fn environment_variables_the_templates_read_are_part_of_the_cache_key() {
    let d = copy_of(STACK);
    let values = d.path().join("charts/app/values.yaml");
    std::fs::write(&values, "replicas: 1\nimage: registry.example.com/web:1.4.2\n").unwrap();
    let state = d.path().join("helmfile.yaml.gotmpl");
    let text = std::fs::read_to_string(&state).unwrap();
    // The image comes from the environment when WEB_IMAGE is set.
    std::fs::write(
        &state,
        text.replace(
            "      - replicas:",
            "      - image: {{ env \"WEB_IMAGE\" | default \"registry.example.com/web:1.4.2\" }}\n        replicas:",
        ),
    )
    .unwrap();
    let cache = d.path().join(".cache");
    let c = cache.to_str().unwrap();
    let args = ["check", "--file", "helmfile.yaml.gotmpl", "--offline", "-e", "default"];
    let pinned = run(d.path(), &args, &[("XDG_CACHE_HOME", c)], None);
    assert_eq!(pinned.code, 0, "{}{}", pinned.stdout, pinned.stderr);
    let latest = run(
        d.path(),
        &args,
        &[("XDG_CACHE_HOME", c), ("WEB_IMAGE", "registry.example.com/web:latest")],
        None,
    );
    assert_eq!(
        latest.code, 1,
        "a warm cache must not hide what WEB_IMAGE changes: {}",
        latest.stdout
    );
}

#[test]
fn selected_environment_only() {
    let d = copy_of(STACK);
    let r = check(d.path(), &["--environment", "prod", "--format", "json"]);
    let report = json(&r.stdout);
    let envs: Vec<_> = report["environments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].clone())
        .collect();
    assert_eq!(envs, vec!["prod"]);
}

/// Fake helm/helmfile that record being called and fail.
fn poisoned_tools(dir: &Path) -> (PathBuf, PathBuf) {
    let bin = dir.join("poison-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = dir.join("tool-was-called");
    for t in ["helm", "helmfile"] {
        let p = bin.join(t);
        std::fs::write(
            &p,
            format!("#!/bin/sh\necho \"$0 $*\" >> {}\nexit 3\n", marker.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (bin, marker)
}

#[test]
fn warm_cache_runs_no_helm_or_helmfile() {
    let d = copy_of(STACK);
    let cache = d.path().join(".cache");
    let cache = cache.to_str().unwrap();
    let args = [
        "check",
        "--file",
        "helmfile.yaml.gotmpl",
        "--offline",
        "--format",
        "json",
    ];
    // Outside the stack: anything written inside it would change the inputs and miss the cache.
    // The sealed tools may write there (the recording tools' log; every run, so the reports,
    // which then carry `offline-seal-partial`, stay comparable).
    let elsewhere = tempfile::tempdir().unwrap();
    let (helm, helmfile, marker) = recording_tools(elsewhere.path());
    let env = [
        ("XDG_CACHE_HOME", cache),
        ("NVCF_TEST_SEAL_WRITABLE", elsewhere.path().to_str().unwrap()),
        ("NVCF_HELM", helm.to_str().unwrap()),
        ("NVCF_HELMFILE", helmfile.to_str().unwrap()),
    ];
    let cold = run(d.path(), &args, &env, None);
    assert_eq!(cold.code, 1, "{}", cold.stderr);
    assert!(marker.exists(), "the cold run renders");
    std::fs::remove_file(&marker).unwrap();
    // The same tools (the key holds their identity, so they cannot be swapped for poisoned ones).
    let warm = run(d.path(), &args, &env, None);
    assert_eq!(warm.code, 1, "{}", warm.stderr);
    assert!(
        !marker.exists(),
        "a warm run called: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
    assert_eq!(cold.stdout, warm.stdout, "a cached report equals the rendered one");
    // Without the cache the same tools are called again.
    let uncached = run(d.path(), &[&args[..], &["--no-cache"]].concat(), &env, None);
    assert_eq!(uncached.code, 1, "{}", uncached.stdout);
    assert!(marker.exists());
    // Any input change misses the cache; so does another helm (a different binary).
    std::fs::write(
        d.path().join("charts/app/values.yaml"),
        "replicas: 1\nimage: registry.example.com/web:1.4.2\n",
    )
    .unwrap();
    let changed = run(d.path(), &args, &env, None);
    assert_eq!(changed.code, 0, "{}{}", changed.stdout, changed.stderr);
    let (poisoned, _) = poisoned_tools(elsewhere.path());
    let poisoned_helm = poisoned.join("helm");
    let other_helm = [env[0], env[1], ("NVCF_HELM", poisoned_helm.to_str().unwrap()), env[3]];
    let swapped = run(d.path(), &args, &other_helm, None);
    assert_eq!(
        swapped.code, 2,
        "a warm entry made by another helm is not used: {}",
        swapped.stdout
    );
}

/// helm and helmfile wrappers that log each call to a marker file, then run the real tool.
fn recording_tools(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let bin = dir.join("recording-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = dir.join("tool-was-called");
    let mut out = Vec::new();
    for t in ["helm", "helmfile"] {
        let p = bin.join(t);
        std::fs::write(
            &p,
            format!(
                "#!/bin/sh\necho \"$0 $*\" >> {}\nexec '{}' \"$@\"\n",
                marker.display(),
                tool(t).display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        out.push(p);
    }
    (out[0].clone(), out[1].clone(), marker)
}

fn helm_package(chart_src: &Path, out: &Path) -> PathBuf {
    let o = Command::new(tool("helm"))
        .arg("package")
        .arg(chart_src)
        .arg("--destination")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "tgz"))
        .unwrap()
}

fn sha256_file(p: &Path) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(std::fs::read(p).unwrap()))
}

/// A remote chart rendered from the mirror whose template calls `lookup` is
/// `render-depends-on-cluster` as a local one is (naming the template, its line and the tarball);
/// the same chart without the call stays silent.
#[test]
fn lookup_in_a_mirror_chart_is_render_depends_on_cluster() {
    for (template, fires) in [
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upstream-config\ndata:\n  a: {{ (lookup \"v1\" \"Secret\" \"x\" \"y\").data | default \"none\" | toString | quote }}\n",
            true,
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upstream-config\ndata:\n  lookupTable: \"none\"\n",
            false,
        ),
    ] {
        let (d, _, _) = stack_with_mirrored_upstream(template);
        let r = check(
            d.path(),
            &["--chart-mirror", "mirror", "--format", "json", "-A", "image-pinned"],
        );
        let report = json(&r.stdout);
        assert_eq!(release_of(&report, "upstream")["rendered"], true, "{}", r.stderr);
        let found: Vec<String> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"] == "render-depends-on-cluster" && f["environment"] == report["environments"][0]["name"])
            .map(|f| f["message"].as_str().unwrap().to_string())
            .collect();
        if fires {
            assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(
                found[0].contains("template templates/cm.yaml line 6") && found[0].contains("upstream-1.2.3.tgz"),
                "{found:?}"
            );
        } else {
            assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
            assert!(found.is_empty(), "{found:?}");
        }
    }
}

/// A remote chart rendered from the mirror whose template reads `.Release.Revision` (1 here, the
/// next revision at every apply after the first) is `render-depends-on-cluster` as a local one is,
/// naming the template, its line and the tarball; the same chart reading the release's name is not.
#[test]
fn the_revision_in_a_mirror_chart_is_render_depends_on_cluster() {
    for (value, fires) in [
        ("{{ .Release.Revision | quote }}", true),
        ("{{ .Release.Name | quote }}", false),
    ] {
        let template =
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upstream-config\ndata:\n  a: {value}\n");
        let (d, _, _) = stack_with_mirrored_upstream(&template);
        let r = check(
            d.path(),
            &["--chart-mirror", "mirror", "--format", "json", "-A", "image-pinned"],
        );
        let report = json(&r.stdout);
        assert_eq!(release_of(&report, "upstream")["rendered"], true, "{}", r.stderr);
        let found: Vec<String> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| {
                f["rule"] == "render-depends-on-cluster" && f["environment"] == report["environments"][0]["name"]
            })
            .map(|f| f["message"].as_str().unwrap().to_string())
            .collect();
        if fires {
            assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(
                found[0]
                    .contains("template templates/cm.yaml line 6 (in upstream-1.2.3.tgz) reads the release revision"),
                "{found:?}"
            );
        } else {
            assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
            assert!(found.is_empty(), "{found:?}");
        }
    }
}

/// [`stack_with_mirrored_upstream`] whose upstream tarball vendors a subchart archive,
/// `upstream/charts/sub-0.1.0.tgz`, its one template `sub_template`; the lock and the policy pin
/// the new tarball. `helm package` writes a vendored archive back as a directory, so the tarball is
/// made by GNU tar (helm's loader reads it as it reads its own).
fn stack_with_mirrored_upstream_vendoring(sub_template: &str) -> tempfile::TempDir {
    let (d, tgz, sha) =
        stack_with_mirrored_upstream("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upstream-config\n");
    let sub = d.path().join("sub-src");
    std::fs::create_dir_all(sub.join("templates")).unwrap();
    std::fs::write(sub.join("Chart.yaml"), "apiVersion: v2\nname: sub\nversion: 0.1.0\n").unwrap();
    std::fs::write(sub.join("templates/sub.yaml"), sub_template).unwrap();
    let upstream = d.path().join("upstream-src");
    helm_package(&sub, &upstream.join("charts"));
    let o = Command::new("tar")
        .arg("-czf")
        .arg(&tgz)
        .arg("-C")
        .arg(d.path())
        .arg("--transform=s,^upstream-src,upstream,")
        .arg("upstream-src")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let listed = Command::new("tar").arg("-tzf").arg(&tgz).output().unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("upstream/charts/sub-0.1.0.tgz"),
        "{listed:?}"
    );
    let new_sha = sha256_file(&tgz);
    for f in ["charts.lock.yaml", "validator-policy.yaml"] {
        let p = d.path().join(f);
        let t = std::fs::read_to_string(&p).unwrap().replace(&sha, &new_sha);
        std::fs::write(&p, t).unwrap();
    }
    d
}

/// A remote chart from the mirror that vendors a subchart archive (`charts/sub-0.1.0.tgz` inside
/// its tarball) whose template calls `lookup` is `render-depends-on-cluster`, naming the template
/// inside the nested archive and the tarball; the same nesting without the call stays silent.
#[test]
fn lookup_in_a_subchart_archive_inside_a_mirror_chart_is_render_depends_on_cluster() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub-config\ndata:\n";
    for (sub_data, fires) in [
        (
            "  a: {{ (lookup \"v1\" \"Secret\" \"x\" \"y\").data | default \"none\" | toString | quote }}\n",
            true,
        ),
        ("  lookupTable: \"none\"\n", false),
    ] {
        let d = stack_with_mirrored_upstream_vendoring(&format!("{cm}{sub_data}"));
        let r = check(
            d.path(),
            &["--chart-mirror", "mirror", "--format", "json", "-A", "image-pinned"],
        );
        let report = json(&r.stdout);
        assert_eq!(release_of(&report, "upstream")["rendered"], true, "{}", r.stderr);
        assert_eq!(release_of(&report, "upstream")["objects"], 2, "{}", r.stderr);
        let found: Vec<String> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| {
                f["rule"] == "render-depends-on-cluster" && f["environment"] == report["environments"][0]["name"]
            })
            .map(|f| f["message"].as_str().unwrap().to_string())
            .collect();
        if fires {
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(
                found[0].contains("charts/sub-0.1.0.tgz/templates/sub.yaml line 6")
                    && found[0].contains("upstream-1.2.3.tgz"),
                "{found:?}"
            );
        } else {
            assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
            assert!(found.is_empty(), "{found:?}");
        }
    }
}

/// `check --chart-mirror mirror` of the stack in `dir` (JSON, `image-pinned` waived): the run, its
/// report, and the releases its first environment also rendered as an upgrade (`upgradeRendered` of
/// `--objects`).
fn check_mirror_upgrade_rendered(dir: &Path) -> (Run, serde_json::Value, Vec<String>) {
    let objects = dir.join("objects.json");
    let r = check(
        dir,
        &[
            "--chart-mirror",
            "mirror",
            "--format",
            "json",
            "-A",
            "image-pinned",
            "--objects",
            objects.to_str().unwrap(),
        ],
    );
    let report = json(&r.stdout);
    let doc = json(&std::fs::read_to_string(&objects).unwrap());
    let upgraded = doc["environments"][0]["upgradeRendered"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect();
    (r, report, upgraded)
}

/// A remote chart from the mirror whose vendored subchart archive asks `.Release.IsUpgrade` is
/// rendered again as an upgrade (`upgradeRendered` of `--objects`) and the difference is a
/// finding; the same nesting that does not ask is not rendered again.
#[test]
fn a_subchart_archive_inside_a_mirror_chart_asking_is_upgrade_is_rendered_as_an_upgrade() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sub-config\ndata:\n";
    for (sub_data, asks) in [
        (
            "  a: {{ if .Release.IsUpgrade }}upgrade{{ else }}install{{ end }}\n",
            true,
        ),
        ("  a: install\n", false),
    ] {
        let d = stack_with_mirrored_upstream_vendoring(&format!("{cm}{sub_data}"));
        let (r, report, upgraded) = check_mirror_upgrade_rendered(d.path());
        assert_eq!(release_of(&report, "upstream")["rendered"], true, "{}", r.stderr);
        let upgraded = upgraded.iter().any(|r| r == "upstream/upstream");
        let differs = report["findings"].as_array().unwrap().iter().any(|f| {
            f["rule"] == "render-depends-on-cluster"
                && f["release"] == "upstream/upstream"
                && f["message"].as_str().unwrap().contains("upgrade render")
        });
        assert_eq!((upgraded, differs), (asks, asks), "{}{}", r.stdout, r.stderr);
    }
}

/// Two releases ask `.Release.IsUpgrade`: the local one is rendered as an upgrade by the helm front
/// beside its install render, the mirror's (which the gate renders itself) by the render by name.
/// Each gets its own verdict: the mirror's upgrade render differs (not "failed"), the local one
/// renders the same either way (no finding).
#[test]
fn an_upgrade_render_by_the_front_and_one_by_name_each_judge_their_release() {
    let (d, _, _) = stack_with_mirrored_upstream(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upstream-config\ndata:\n  \
         a: {{ if .Release.IsUpgrade }}upgrade{{ else }}install{{ end }}\n",
    );
    let app = d.path().join("charts/app/templates");
    let first = std::fs::read_dir(&app).unwrap().flatten().next().unwrap().path();
    let text = std::fs::read_to_string(&first).unwrap();
    std::fs::write(&first, format!("{{{{/* the same on .Release.IsUpgrade */}}}}\n{text}")).unwrap();
    let (r, report, mut upgraded) = check_mirror_upgrade_rendered(d.path());
    upgraded.sort_unstable();
    assert_eq!(upgraded, ["apps/app", "upstream/upstream"], "{}", r.stderr);
    let upgrade_findings: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "render-depends-on-cluster")
        .map(|f| {
            (
                f["release"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .filter(|(_, m)| m.contains("upgrade render"))
        .collect();
    // (one per environment)
    assert!(!upgrade_findings.is_empty(), "{}", r.stderr);
    assert!(
        upgrade_findings
            .iter()
            .all(|(rel, m)| rel == "upstream/upstream" && m.contains("differs from its install render")),
        "{upgrade_findings:?}"
    );
}

/// A mirror chart whose upgrade render fails (its render by name leaves it out): "its upgrade
/// render failed", never an upgrade render without objects.
#[test]
fn a_mirror_chart_failing_only_as_an_upgrade_is_reported_failed() {
    let (d, _, _) = stack_with_mirrored_upstream(
        "{{ if .Release.IsUpgrade }}{{ fail \"no upgrade path\" }}{{ end }}\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upstream-config\ndata:\n  a: b\n",
    );
    let r = check(
        d.path(),
        &["--chart-mirror", "mirror", "--format", "json", "-A", "image-pinned"],
    );
    let report = json(&r.stdout);
    assert_eq!(release_of(&report, "upstream")["rendered"], true, "{}", r.stderr);
    let upgrade: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "render-depends-on-cluster" && f["release"] == "upstream/upstream")
        .filter_map(|f| f["message"].as_str())
        .filter(|m| m.contains("upgrade render"))
        .collect();
    assert!(!upgrade.is_empty(), "{}{}", r.stdout, r.stderr);
    assert!(
        upgrade
            .iter()
            .all(|m| m.contains("upgrade render (`--is-upgrade`) failed")),
        "{upgrade:?}"
    );
}

#[test]
fn chart_mirror_renders_only_matching_tarballs() {
    let (d, tgz, sha) = stack_with_mirrored_upstream(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: upstream-config\ndata:\n  a: b\n",
    );
    let lock = d.path().join("charts.lock.yaml");
    let r = check(
        d.path(),
        &["--chart-mirror", "mirror", "--format", "json", "-A", "image-pinned"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let report = json(&r.stdout);
    let up = release_of(&report, "upstream");
    assert_eq!(up["rendered"], true, "{up}");
    assert_eq!(up["objects"], 1);
    // The same chart from an OCI registry: helmfile would pull it while loading the state; with
    // the mirror it loads it from there, so its values are known and it renders.
    let oci = d.path().join("oci-copy");
    copy_dir(&repo().join(STACK), &oci);
    std::fs::create_dir_all(oci.join("mirror")).unwrap();
    let lock_text = std::fs::read_to_string(oci.join("charts.lock.yaml")).unwrap();
    std::fs::write(oci.join("charts.lock.yaml"), lock_text.replace(&"0".repeat(64), &sha)).unwrap();
    let release = |r: &Run| {
        let report = json(&r.stdout);
        release_of(&report, "upstream")
    };
    let r = check(
        &oci,
        &["--chart-mirror", "mirror", "--format", "json", "-A", "image-pinned"],
    );
    let up = release(&r);
    assert_eq!(up["rendered"], false, "an empty mirror renders nothing: {up}");
    assert!(up["reason"].as_str().unwrap().contains("not in --chart-mirror"), "{up}");
    std::fs::copy(&tgz, oci.join("mirror").join(tgz.file_name().unwrap())).unwrap();
    let r = check(
        &oci,
        &["--chart-mirror", "mirror", "--format", "json", "-A", "image-pinned"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let up = release(&r);
    assert_eq!(up["rendered"], true, "{up}");
    assert_eq!(up["objects"], 1, "{up}");
    // A tarball that does not match the lock is not rendered and fails the digest rule.
    let pinned = std::fs::read_to_string(&lock).unwrap();
    std::fs::write(&lock, pinned.replace(&sha, &"0".repeat(64))).unwrap();
    let r = check(
        d.path(),
        &["--chart-mirror", "mirror", "--format", "json", "-A", "image-pinned"],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let report = json(&r.stdout);
    let up = release_of(&report, "upstream");
    assert_eq!(up["rendered"], false);
    assert!(
        up["reason"]
            .as_str()
            .unwrap()
            .contains("does not match the pinned sha256"),
        "{up}"
    );
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["rule"] == "chart-digest-pinned"),
        "{}",
        r.stdout
    );
}

#[test]
fn waivers_valid_expired_unused_forbidden() {
    let d = stack_with("validator-policy.yaml", |_| {
        "version: 1\nsettings: {allowedChartRepositories: [oci://registry.invalid/charts], allowedImageRegistries: [registry.example.com]}\nwaivers:\n\
         - rule: image-pinned\n  target: {environment: default, kind: Deployment, namespace: apps, name: web}\n  reason: web image is rebuilt nightly until TICKET-1 lands\n  expires: 2027-01-31\n\
         - rule: image-pinned\n  target: {environment: prod}\n  reason: old exception\n  expires: 2026-10-01\n\
         - rule: object-one-owner\n  target: {release: apps/app}\n  reason: stale\n  expires: 2027-01-31\n\
         - rule: insecure-flag\n  target: {environment: default}\n  reason: testing QUIC without TLS\n  expires: 2027-01-31\n".into()
    });
    let r = check(d.path(), &["--format", "json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let report = json(&r.stdout);
    let findings: Vec<_> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| serde_json::json!({"rule": f["rule"], "severity": f["severity"], "environment": f["environment"], "waived": f["waived"], "source": f["source"]}))
        .collect();
    insta::assert_json_snapshot!("waivers", findings);
    assert_eq!(report["summary"]["waived"], 1);
}

#[test]
fn policy_errors_name_the_file_and_entry() {
    let d = stack_with("validator-policy.yaml", |_| {
        "waivers:\n- rule: image-pinned\n  target: {environment: default}\n  expires: 2027-01-01\n".into()
    });
    let r = check(d.path(), &[]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("validator-policy.yaml") && r.stderr.contains("waiver #1") && r.stderr.contains("reason"),
        "{}",
        r.stderr
    );
    std::fs::write(d.path().join("validator-policy.yaml"), "settings: [unclosed\n").unwrap();
    let r = check(d.path(), &[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("validator-policy.yaml"), "{}", r.stderr);
}

#[test]
fn malformed_inputs_fail_closed_without_leaking_secrets() {
    let d = tempfile::tempdir().unwrap();
    let bad = d.path().join("bad.yaml");
    // A broken manifest that carries key material: the error must name the file, not echo it.
    std::fs::write(&bad, "apiVersion: v1\nkind: Secret\nmetadata: {name: x\nstringData:\n  tls.key: |\n    -----BEGIN PRIVATE KEY-----\n    MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n    -----END PRIVATE KEY-----\n").unwrap();
    let r = run(d.path(), &["check", "--manifests", "bad.yaml"], &[], None);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("bad.yaml"), "{}", r.stderr);
    assert!(
        !r.stderr.contains("MIIEvQ") && !r.stdout.contains("MIIEvQ"),
        "key material echoed: {}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"));

    let r = run(d.path(), &["check", "--manifests", "nope.yaml"], &[], None);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("nope.yaml"), "{}", r.stderr);

    std::fs::write(d.path().join("notk8s.yaml"), "just: data\n").unwrap();
    let r = run(d.path(), &["check", "--manifests", "notk8s.yaml"], &[], None);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not a Kubernetes object"), "{}", r.stderr);

    // A broken state file: helmfile's own message, naming the file.
    let s = stack_with("helmfile.yaml.gotmpl", |_| {
        "releases:\n  - name: app\n    chart: [unclosed\n".into()
    });
    let r = check(s.path(), &[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("helmfile.yaml.gotmpl"), "{}", r.stderr);

    // A chart that does not render.
    let s = stack_with("charts/app/templates/broken.yaml", |_| {
        "{{ fail \"broken on purpose\" }}\n".into()
    });
    let r = check(s.path(), &[]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("broken on purpose"), "{}", r.stderr);
}

#[test]
fn manifests_from_stdin_and_directories() {
    let d = tempfile::tempdir().unwrap();
    let yaml = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: apps}\nspec:\n  template:\n    spec:\n      containers:\n        - {name: web, image: \"registry.example.com/web\"}\n";
    std::fs::create_dir_all(d.path().join("m/sub")).unwrap();
    std::fs::write(d.path().join("m/sub/a.yaml"), yaml).unwrap();
    let r = run(d.path(), &["check", "--manifests", "m", "--format", "json"], &[], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let report = json(&r.stdout);
    assert_eq!(report["findings"][0]["rule"], "image-pinned");
    assert_eq!(report["findings"][0]["source"]["file"], "m/sub/a.yaml");

    let r = run(
        d.path(),
        &["check", "--manifests", "-", "--format", "json"],
        &[],
        Some(yaml),
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["findings"][0]["source"]["file"], "<stdin>");
}

#[test]
fn rules_and_explain_come_from_the_registry() {
    let d = tempfile::tempdir().unwrap();
    let r = run(d.path(), &["rules", "--format", "json"], &[], None);
    assert_eq!(r.code, 0);
    let rules = json(&r.stdout);
    let ids: Vec<&str> = rules
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    for id in [
        "release-one-owner",
        "insecure-flag",
        "san-covers-advertised-name",
        "route-parent-resolves",
        "waiver-expired",
    ] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
    }
    let e = run(d.path(), &["explain", "insecure-flag"], &[], None);
    assert_eq!(e.code, 0);
    let from_registry = rules
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "insecure-flag")
        .unwrap()["explain"]
        .as_str()
        .unwrap()
        .trim_end()
        .to_string();
    assert!(e.stdout.contains(&from_registry), "explain prints the registry text");
    insta::assert_snapshot!(
        "rules_markdown",
        run(d.path(), &["rules", "--format", "markdown"], &[], None).stdout
    );
}
