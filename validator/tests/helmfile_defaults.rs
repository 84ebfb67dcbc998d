//! Differential test: where the loader re-implements how helmfile applies `helmDefaults` and
//! places releases (effective `devel`, `insecureSkipTLSVerify` from the release, `helmDefaults`
//! or `helmDefaults.args`, a release without a namespace), the real helmfile is the oracle.
//! helmfile's own `helm template` calls (seen through a recording helm) show `--devel`,
//! `--insecure-skip-tls-verify` and `--namespace` per release; the loader's model of the same
//! state must say the same for every combination.

mod support;
use nvcf_validate::stack::load;
use std::process::Command;
use support::tool;

fn release(name: &str, devel: Option<bool>, insecure: bool, ns: Option<&str>) -> String {
    let mut s = format!("- name: {name}\n  chart: ./charts/app\n");
    if let Some(d) = devel {
        s += &format!("  devel: {d}\n");
    }
    if insecure {
        s += "  insecureSkipTLSVerify: true\n";
    }
    if let Some(n) = ns {
        s += &format!("  namespace: {n}\n");
    }
    s
}

#[test]
fn effective_defaults_and_placement_match_helmfile() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("charts/app/templates")).unwrap();
    std::fs::write(
        root.join("charts/app/Chart.yaml"),
        "apiVersion: v2\nname: app\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(
        root.join("charts/app/templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
    )
    .unwrap();
    let log = root.join("calls");
    let rec = root.join("rec-helm");
    std::fs::write(
        &rec,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            tool("helm").display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&rec, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let tools = nvcf_validate::tools::Tools {
        helmfile: tool("helmfile"),
        helm: rec.clone(),
        env: Vec::new(),
        writable: None,
        ns: None,
        network: false,
    };
    let defaults = [
        "",
        "helmDefaults:\n  devel: true\n",
        "helmDefaults:\n  devel: false\n  insecureSkipTLSVerify: true\n",
        "helmDefaults:\n  args: [--insecure-skip-tls-verify]\n",
    ];
    let mut compared = 0;
    for (i, hd) in defaults.iter().enumerate() {
        let mut rels = String::from("releases:\n");
        let mut n = 0;
        for devel in [None, Some(true), Some(false)] {
            for insecure in [false, true] {
                for ns in [None, Some("apps")] {
                    rels += &release(&format!("r{n}"), devel, insecure, ns);
                    n += 1;
                }
            }
        }
        let state = root.join(format!("helmfile-{i}.yaml"));
        std::fs::write(&state, format!("{hd}{rels}")).unwrap();
        let _ = std::fs::remove_file(&log);
        let mut c = Command::new(&tools.helmfile);
        c.current_dir(&root)
            .args(["--file"])
            .arg(&state)
            .args(["--helm-binary"])
            .arg(&rec)
            .args(["template", "--skip-deps"]);
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let calls = std::fs::read_to_string(&log).unwrap();

        let docs = load::build(&tools, &state, "default", &[]).unwrap();
        let model = load::env_state("default", &docs, &root, &state);
        assert_eq!(model.releases.len(), n);
        for r in &model.releases {
            let call = calls
                .lines()
                .find(|l| l.starts_with(&format!("template {} ", r.name)))
                .unwrap_or_else(|| panic!("helmfile made no template call for {}:\n{calls}", r.name));
            let args: Vec<&str> = call.split_whitespace().collect();
            let ctx = format!("state {i}, release {}: helm was called `{call}`", r.name);
            assert_eq!(r.devel, args.contains(&"--devel"), "devel: {ctx}");
            assert_eq!(
                r.insecure_tls.is_some(),
                args.contains(&"--insecure-skip-tls-verify"),
                "insecure: {ctx}"
            );
            let ns = args.iter().position(|a| *a == "--namespace").map(|p| args[p + 1]);
            assert_eq!(r.namespace_unset, ns.is_none(), "namespace: {ctx}");
            if let Some(ns) = ns {
                assert_eq!(r.namespace, ns, "namespace: {ctx}");
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 48);
}

/// Differential: the states `loader::state_files_in` sees in a `helmfile.d`-style directory are
/// the ones the real helmfile loads from it, in the same order.
#[test]
fn a_directory_of_states_is_what_helmfile_loads() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    let dir = root.join("helmfile.d");
    std::fs::create_dir_all(&dir).unwrap();
    for n in [
        "z.yaml",
        "b.yml",
        "d.yaml.gotmpl",
        "e.yml.gotmpl",
        ".h.yaml",
        "0.yml.gotmpl",
        "c.gotmpl",
        "f.json",
        "g.YAML",
        "i.yaml.tpl",
    ] {
        let name: String = n
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { 'x' })
            .collect();
        std::fs::write(dir.join(n), format!("releases:\n- name: r{name}\n  chart: ./c\n")).unwrap();
    }
    let out = Command::new(tool("helmfile"))
        .current_dir(&root)
        .args(["--file", "helmfile.d", "--helm-binary"])
        .arg(tool("helm"))
        .args(["build"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let loaded: Vec<std::path::PathBuf> =
        nvcf_validate::tools::build::parse_build(&String::from_utf8_lossy(&out.stdout))
            .unwrap()
            .into_iter()
            .map(|d| d.path)
            .collect();
    assert_eq!(loaded.len(), 6, "{loaded:?}");
    assert_eq!(nvcf_validate::stack::loader::state_files_in(&dir), loaded);
}
