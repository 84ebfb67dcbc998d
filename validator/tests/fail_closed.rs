//! The reproductions of issue 10 ("fail closed everywhere"), end to end through the real CLI: each
//! input passed (exit 0) without validating what it claimed, or printed a secret, before the gate
//! refused it. Every test here fails on the validator before that work.

mod support;
use support::repo;
use support::run::{copy_of, findings_of, json, run_cached, unwaived_rules};

fn stack(name: &str) -> tempfile::TempDir {
    copy_of(&format!("validator/tests/stacks/{name}"))
}

#[test]
fn a_stack_whose_only_release_renders_nothing_is_exit_2() {
    let d = stack("fires-release-renders-nothing-guarded");
    std::fs::write(
        d.path().join("helmfile.yaml"),
        "releases:\n  - name: metrics\n    namespace: nvcf\n    chart: ./charts/app\n    values:\n      - enabled: false\n",
    )
    .unwrap();
    let r = run_cached(d.path(), &["check", "--offline", "--format", "json"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.lines().next().is_some_and(|l| l.contains(
            "environment default: rendered no objects (1 of 1 installed releases rendered) from helmfile.yaml, so \
             nothing was validated; switch on"
        )),
        "{}",
        r.stderr
    );
    // The report is still written, in the chosen format, and says why nothing was validated
    // (an empty stdout or a report without the error would pass for a crash).
    let report = r.json();
    let errors = report["errors"].as_array().expect("the report lists its errors");
    assert!(
        errors.iter().any(|e| e["message"]
            .as_str()
            .is_some_and(|m| m.contains("environment default: rendered no objects"))),
        "{}",
        r.stdout
    );
    assert_eq!(report["summary"]["environments"], 1, "{}", r.stdout);
    assert_eq!(
        unwaived_rules(&json(&r.stdout)),
        vec!["release-renders-nothing".to_string()]
    );
}

#[test]
fn an_empty_never_waive_cannot_waive_the_insecure_family_and_no_policy_is_strict() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: nvcf}\nspec:\n  containers:\n    - name: c\n      image: nvcr.io/nvidia/nvcf/stargate:1.4.2\n      args: [--quic-insecure]\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("policy.yaml"),
        "version: 1\nsettings: {neverWaive: [], allowedImageRegistries: [nvcr.io]}\nwaivers:\n- {rule: insecure-flag, target: {kind: Pod}, reason: lab, expires: 2027-01-01}\n",
    )
    .unwrap();
    let r = run_cached(
        d.path(),
        &[
            "check",
            "--manifests",
            "pod.yaml",
            "--policy",
            "policy.yaml",
            "--format",
            "json",
        ],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let rules = unwaived_rules(&json(&r.stdout));
    assert!(rules.contains(&"insecure-flag".to_string()), "{rules:?}");
    assert!(rules.contains(&"waiver-forbidden".to_string()), "{rules:?}");
    let r = run_cached(
        d.path(),
        &[
            "check",
            "--manifests",
            "pod.yaml",
            "--policy",
            "policy.yaml",
            "-A",
            "insecure-flag",
        ],
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);

    // No policy file at all: strict defaults, and the report says so in every format.
    for format in ["json", "human", "sarif", "markdown", "github", "junit"] {
        let r = run_cached(d.path(), &["check", "--manifests", "pod.yaml", "--format", format]);
        assert_eq!(r.code, 1, "{format}: {}{}", r.stdout, r.stderr);
        assert!(r.stdout.contains("policy-file-missing"), "{format}: {}", r.stdout);
    }
    let r = run_cached(d.path(), &["check", "--manifests", "pod.yaml", "--format", "json"]);
    let rules = unwaived_rules(&json(&r.stdout));
    assert!(
        rules.contains(&"image-pinned".to_string()),
        "no registry is allowed by default: {rules:?}"
    );

    // Allowing everything takes an explicit "*", shown as a warning.
    std::fs::write(
        d.path().join("any.yaml"),
        "version: 1\nsettings: {allowedImageRegistries: [\"*\"]}\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("clean.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: nvcf}\nspec:\n  containers: [{name: c, image: \"ghcr.io/x/y:1.0.0\"}]\n",
    )
    .unwrap();
    let r = run_cached(
        d.path(),
        &[
            "check",
            "--manifests",
            "clean.yaml",
            "--policy",
            "any.yaml",
            "--format",
            "json",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(unwaived_rules(&json(&r.stdout)), vec!["policy-allows-any".to_string()]);
}

#[test]
fn manifests_without_namespaces_take_the_namespace_flag_and_are_judged() {
    let d = tempfile::tempdir().unwrap();
    let fixture = repo().join("validator/tests/fixtures/pki/fires-san-covers-advertised-name-exact-pod-names.yaml");
    let text: String = std::fs::read_to_string(fixture)
        .unwrap()
        .lines()
        .filter(|l| l.trim() != "namespace: nvcf")
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        !text.contains("namespace:"),
        "the helm template output has no namespaces"
    );
    std::fs::write(d.path().join("m.yaml"), text).unwrap();
    let policy = repo().join("validator/tests/fixtures/policy/default.yaml");
    let policy = policy.to_str().unwrap();
    for ns in [None, Some("nvcf")] {
        let mut args = vec!["check", "--manifests", "m.yaml", "--policy", policy, "--format", "json"];
        if let Some(ns) = ns {
            args.extend(["--namespace", ns]);
        }
        let r = run_cached(d.path(), &args);
        assert_eq!(r.code, 1, "{ns:?}: {}{}", r.stdout, r.stderr);
        let v = r.json();
        let san = findings_of(&v, "san-covers-advertised-name");
        assert!(!san.is_empty(), "{ns:?}: {}", r.stdout);
        assert_eq!(san[0]["object"]["namespace"], ns.unwrap_or("default"), "{ns:?}");
    }
}

#[test]
fn secrets_in_urls_and_policy_errors_are_never_printed() {
    let d = tempfile::tempdir().unwrap();
    let long = "a".repeat(100_000);
    std::fs::write(
        d.path().join("pod.yaml"),
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: p, namespace: nvcf}}\nspec:\n  containers:\n    - name: c\n      image: nvcr.io/nvidia/nvcf/stargate:1.4.2\n      env:\n        - {{name: BAO_ADDR, value: \"http://root:hunter2-s3cret@openbao.openbao.svc:8200\"}}\n        - {{name: VAULT_ADDR, value: \"http://openbao.openbao.svc:8200/{long}\"}}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        d.path().join("policy.yaml"),
        "version: 1\nsettings: {allowedImageRegistries: [nvcr.io]}\n",
    )
    .unwrap();
    for format in ["json", "human", "sarif", "markdown", "github", "junit"] {
        let r = run_cached(
            d.path(),
            &[
                "check",
                "--manifests",
                "pod.yaml",
                "--policy",
                "policy.yaml",
                "--format",
                format,
            ],
        );
        assert_eq!(r.code, 1, "{format}: {}", r.stderr);
        assert!(r.stdout.contains("plaintext-endpoint"), "{format}");
        assert!(
            !r.stdout.contains("hunter2") && !r.stderr.contains("hunter2"),
            "{format}: password printed"
        );
        assert!(
            // Markdown escapes the asterisks of the redaction (`\*`), which render as `***`.
            r.stdout.contains("http://***@openbao.openbao.svc:8200")
                || (format == "markdown" && r.stdout.contains(r"http://\*\*\*@openbao.openbao.svc:8200")),
            "{format}: {}",
            &r.stdout[..r.stdout.len().min(3000)]
        );
        assert!(
            !r.stdout.contains(&"a".repeat(200)),
            "{format}: the 100 kB value was echoed"
        );
    }
    // A key pasted into the wrong policy field is not echoed by the parse error.
    std::fs::write(
        d.path().join("bad.yaml"),
        "version: \"-----BEGIN PRIVATE KEY----- MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7 -----END PRIVATE KEY-----\"\n",
    )
    .unwrap();
    let r = run_cached(d.path(), &["check", "--manifests", "pod.yaml", "--policy", "bad.yaml"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("bad.yaml"), "{}", r.stderr);
    assert!(!r.stderr.contains("MIIEvQ"), "key echoed: {}", r.stderr);
}

#[test]
fn private_keys_in_state_values_are_found_without_being_printed() {
    let d = stack("silent-insecure-flag-state-value");
    let state = std::fs::read_to_string(d.path().join("helmfile.yaml")).unwrap();
    assert!(state.contains("releases:"), "{state}");
    let key = "-----BEGIN RSA PRIVATE KEY-----\\nTk9UIEEgUkVBTCBLRVk=\\n-----END RSA PRIVATE KEY-----";
    let with_key = state.replacen("releases:", &format!("releases:\n  - name: leak\n    namespace: nvcf\n    chart: ./charts/router\n    values:\n      - serverKey: \"{key}\"\n"), 1);
    std::fs::write(d.path().join("helmfile.yaml"), with_key).unwrap();
    let r = run_cached(d.path(), &["check", "--offline", "--format", "json", "--no-cache"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let rules = unwaived_rules(&json(&r.stdout));
    assert!(rules.contains(&"private-key-in-render".to_string()), "{rules:?}");
    assert!(!r.stdout.contains("Tk9UIEEgUkVBTCBLRVk"), "key printed");
}

/// A small stack in a temporary directory: `files` are (path, text), plus one local chart.
fn temp_stack(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("charts/app/templates")).unwrap();
    std::fs::write(
        d.path().join("charts/app/Chart.yaml"),
        "apiVersion: v2\nname: app\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("charts/app/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  args: {{ .Values.args | default list | toJson | quote }}\n",
    )
    .unwrap();
    for (path, text) in files {
        let p = d.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    d
}

#[test]
fn a_state_path_with_a_dashes_line_is_exit_2_never_a_dropped_state() {
    // Issue 11 audit (s2b): a sub-state in a directory named "sub\n---\nx" breaks helmfile's
    // `#  Source:` line across documents; splitting the text by hand dropped the sub-state (and
    // its `--quic-insecure` release) and passed.
    let d = temp_stack(&[
        (
            "helmfile.yaml",
            "helmfiles:\n- path: \"sub\\n---\\nx/helmfile.yaml\"\nreleases:\n- name: good\n  namespace: ns1\n  chart: ./charts/app\n",
        ),
        (
            "sub\n---\nx/helmfile.yaml",
            "releases:\n- name: bad\n  namespace: ns2\n  chart: ../charts/app\n  values:\n  - args: [\"--quic-insecure\"]\n",
        ),
    ]);
    let r = run_cached(d.path(), &["check", "--offline", "--no-cache", "--format", "json"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    // This refusal, not one of the three others that also say "rename".
    assert!(
        r.stderr.contains("reading `helmfile build` output for")
            && r.stderr.contains("a state path with a line break or a `---` line in its name (directory or file) would make it unreadable: rename it"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_failing_environment_keeps_the_report_of_the_others_in_every_format() {
    // Issue 11 audit (g1): prod cannot load; default's findings must still be reported, next to
    // prod's error, in every format (exit 2).
    let d = temp_stack(&[(
        "helmfile.yaml.gotmpl",
        "environments:\n  default: {}\n  prod: {}\n---\nreleases:\n- name: app\n  namespace: apps\n  chart: ./charts/app\n  devel: true\n{{- if eq .Environment.Name \"prod\" }}\n  values:\n  - token: {{ requiredEnv \"NVCF_PROD_TOKEN\" }}\n{{- end }}\n",
    )]);
    let r = run_cached(d.path(), &["check", "--offline", "--format", "json"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let v = r.json();
    let envs = v["environments"].as_array().unwrap();
    assert_eq!(envs.len(), 2, "{}", r.stdout);
    let prod = envs.iter().find(|e| e["name"] == "prod").unwrap();
    assert!(
        prod["renderError"].as_str().unwrap().contains("NVCF_PROD_TOKEN"),
        "{prod}"
    );
    assert!(envs.iter().find(|e| e["name"] == "default").unwrap()["renderError"].is_null());
    assert!(
        unwaived_rules(&json(&r.stdout)).contains(&"chart-version-pinned".to_string()),
        "{}",
        r.stdout
    );
    assert!(!v["errors"].as_array().unwrap().is_empty());
    for format in ["human", "junit", "markdown", "sarif", "github"] {
        let r = run_cached(d.path(), &["check", "--offline", "--format", format]);
        assert_eq!(r.code, 2, "{format}: {}{}", r.stdout, r.stderr);
        assert!(
            r.stdout.contains("chart-version-pinned"),
            "{format}: default's finding is missing:\n{}",
            r.stdout
        );
        assert!(
            r.stdout.contains("NVCF_PROD_TOKEN"),
            "{format}: prod's error is missing:\n{}",
            r.stdout
        );
    }
}

#[test]
fn a_template_failure_is_explained_only_by_a_finding_about_that_release() {
    // Issue 11 audit (j1 + an unrelated release): helm cannot render `umb` offline (its chart's
    // dependency is not vendored). The other release's finding explains nothing: exit 2, with a
    // message naming the state file, release, chart, mode and fix, and no argument dump.
    let d = temp_stack(&[
        (
            "helmfile.yaml",
            "releases:\n- name: umb\n  namespace: apps\n  chart: ./charts/umb\n- name: other\n  namespace: apps\n  chart: ./charts/app\n  devel: true\n",
        ),
        (
            "charts/umb/Chart.yaml",
            "apiVersion: v2\nname: umb\nversion: 0.1.0\ndependencies:\n- name: redis\n  version: 19.6.1\n  repository: oci://registry-1.docker.io/bitnamicharts\n",
        ),
        ("charts/umb/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: umb\n"),
    ]);
    let r = run_cached(d.path(), &["check", "--offline", "--no-cache", "--format", "json"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    for said in [
        "helmfile.yaml: release apps/umb (chart charts/umb)",
        "--offline",
        "helm dependency build charts/umb",
    ] {
        assert!(r.stderr.contains(said), "`{said}` missing:\n{}", r.stderr);
    }
    for gone in [" bytes)", "ARGS:", "COMBINED OUTPUT"] {
        assert!(!r.stderr.contains(gone), "`{gone}` left in:\n{}", r.stderr);
    }
    // The rest was rendered and judged.
    let v = r.json();
    let rels = v["environments"][0]["releases"].as_array().unwrap();
    let other = rels.iter().find(|x| x["name"] == "other").unwrap();
    assert_eq!(
        (other["rendered"].as_bool(), other["objects"].as_u64()),
        (Some(true), Some(1)),
        "{other}"
    );
    // A finding about umb itself does explain it (exit 1): here, devel on umb.
    let state = std::fs::read_to_string(d.path().join("helmfile.yaml")).unwrap();
    std::fs::write(
        d.path().join("helmfile.yaml"),
        state.replacen("chart: ./charts/umb\n", "chart: ./charts/umb\n  devel: true\n", 1),
    )
    .unwrap();
    let r = run_cached(d.path(), &["check", "--offline", "--no-cache", "--format", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
}

#[test]
fn the_policy_cannot_hide_its_own_weakening_and_what_it_cannot_read_fails_closed() {
    let d = tempfile::tempdir().unwrap();
    let w = |name: &str, text: &str| std::fs::write(d.path().join(name), text).unwrap();
    w(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: nvcf}\nspec:\n  containers: [{name: c, image: \"evil.example.com/x/y:1.0.0\"}]\n",
    );
    // "*" plus a severity override of the finding that reports it: refused with the line.
    w(
        "hidden.yaml",
        "version: 1\nsettings:\n  allowedImageRegistries: [\"*\"]\nseverity:\n  policy-allows-any: allow\n",
    );
    let check = |policy: &str, extra: &[&str]| {
        let mut args = vec![
            "check",
            "--manifests",
            "pod.yaml",
            "--policy",
            policy,
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        run_cached(d.path(), &args)
    };
    let r = check("hidden.yaml", &[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("hidden.yaml:5: `severity` lowers `policy-allows-any`"),
        "{}",
        r.stderr
    );
    // The operator may, visibly on the command line.
    w(
        "star.yaml",
        "version: 1\nsettings:\n  allowedImageRegistries: [\"*\"]\n",
    );
    let r = check("star.yaml", &[]);
    assert_eq!(
        (r.code, unwaived_rules(&json(&r.stdout))),
        (0, vec!["policy-allows-any".to_string()])
    );
    let r = check("star.yaml", &["-A", "policy-allows-any"]);
    assert_eq!(
        (r.code, unwaived_rules(&json(&r.stdout))),
        (0, Vec::<String>::new()),
        "{}",
        r.stderr
    );
    // A key in the policy next to a value the reader refuses: exit 2, not a pass without the scan.
    let key = "-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIBMHcCAQEEIB\\n-----END EC PRIVATE KEY-----\\n";
    let ext =
        format!("externals:\n- {{apiVersion: v1, kind: Secret, namespace: nvcf, name: s, data: {{tls.key: \"{key}\"");
    w(
        "key.yaml",
        &format!("settings: {{allowedImageRegistries: [evil.example.com]}}\n{ext}}}}}\n"),
    );
    w(
        "key-inf.yaml",
        &format!("settings: {{allowedImageRegistries: [evil.example.com]}}\n{ext}, weight: .inf}}}}\n"),
    );
    let r = check("key.yaml", &[]);
    assert_eq!(
        (r.code, unwaived_rules(&json(&r.stdout))),
        (1, vec!["private-key-in-render".to_string()]),
        "{}",
        r.stderr
    );
    let r = check("key-inf.yaml", &[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("key-inf.yaml") && !r.stderr.contains("MHcC"),
        "{}",
        r.stderr
    );
    // Merge keys apply; duplicate keys and second documents are refused.
    w(
        "merge.yaml",
        "settings:\n  allowedImageRegistries: &r [evil.example.com]\n  allowedChartRepositories: *r\nexternals:\n- &gw {apiVersion: v1, kind: ConfigMap, namespace: nvcf, name: a}\n- <<: *gw\n  name: b\n",
    );
    let r = check("merge.yaml", &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    w(
        "dup.yaml",
        "settings:\n  allowedImageRegistries: [nvcr.io]\nsettings:\n  allowedImageRegistries: [\"*\"]\n",
    );
    let r = check("dup.yaml", &[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("key `settings` is written twice in one mapping (lines 1 and 3)"),
        "{}",
        r.stderr
    );
    w("two.yaml", "version: 1\n---\nversion: 1\n");
    assert_eq!(check("two.yaml", &[]).code, 2);
    // Values pasted into the wrong field are not echoed, in any format.
    let pem = format!("-----BEGIN PRIVATE KEY----- {}", "Q".repeat(3000));
    w("echo.yaml", &format!("settings:\n  lockFile: \"/{pem}\"\n"));
    for format in ["json", "sarif", "human"] {
        let r = run_cached(
            d.path(),
            &[
                "check",
                "--manifests",
                "pod.yaml",
                "--policy",
                "echo.yaml",
                "--format",
                format,
            ],
        );
        assert_eq!(r.code, 2, "{format}");
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(!all.contains("QQQQ"), "{format}: {all}");
        assert!(
            r.stderr
                .contains("echo.yaml:2: settings.lockFile `<3029 characters, not shown>`"),
            "{}",
            r.stderr
        );
        assert!(r.stderr.len() < 1000, "{format}: {} bytes", r.stderr.len());
    }
}
