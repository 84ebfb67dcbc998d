//! The differential oracle (issue 23): the objects the gate judges are the objects helm would
//! send to the API server.
//!
//! For every realworld shape (`tests/realworld/`) the gate ends in a verdict on (exit 0 or 1), and
//! for this repository's stack in each environment, the gate runs sealed (`check --offline
//! --objects FILE`) and writes the objects its rules judged with the cluster it rendered them for.
//! Then the real helmfile and helm run OUTSIDE the seal, as `helmfile apply` runs them: `helmfile
//! template` of the releases the gate rendered, to standard output (the stream helm hands a
//! post-renderer and the API client, not `--output-dir`'s files), with the same `--kube-version`
//! and `--api-versions`. Its stream is read by helm itself (`fuzz/helm_oracle.rs`: helm's
//! `SplitManifests` and `sigs.k8s.io/yaml`), and each document with a top-level `items` list is
//! taken as its items, as the API client creates them. Normalised (document order, key order,
//! comments and number spelling do not count), the two sides must be equal document by document;
//! a difference fails naming the shape, environment, object and the first differing path.
//!
//! Where the gate also rendered a release as an upgrade (`.Release.IsUpgrade`), helm renders it
//! with `--is-upgrade` too: when that differs from what the gate judged, the gate's report must
//! carry `render-depends-on-cluster` for the release (only the install render is judged).
//!
//! Remote charts: offline without a mirror the gate reports them as not rendered (nothing to
//! compare). With `--chart-mirror` it renders the lock-checked tarball itself, passing the
//! values, `set:` and `helmDefaults.args` as helmfile passes them; `remote_charts_agree_with_
//! helmfile_fetching_from_a_loopback_repository` serves a chart repository (an `index.yaml` and a
//! tarball made by helm) over HTTP on loopback, lets the real helmfile add it and fetch from it
//! outside the seal, and compares object by object. Its runtime is printed (`cargo test --test
//! apply_oracle -- --nocapture`).

mod support;

#[path = "fuzz/helm_oracle.rs"]
mod helm_oracle;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::run::finish;
use support::{copy_dir, path_hiding, path_with_tools, repo, shapes, tool};

/// One stack the oracle compares: where it is, the gate's extra arguments and environment.
struct Case {
    name: String,
    dir: PathBuf,
    /// `--file` as the gate and helmfile are given it (relative to `dir`).
    file: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// Its releases include remote charts the gate renders from `--chart-mirror`: helmfile
    /// outside the seal then adds the repositories and fetches them (no `--skip-deps`).
    remote: bool,
    /// The gate runs online (no `--offline`): it pulls remote charts itself, checks their sha256
    /// and renders them.
    online: bool,
    /// Tools left off PATH for the gate and for helmfile outside the seal alike (a shape's
    /// `hide:` line), so the comparison judges the run `realworld.rs` judged.
    hide: Vec<String>,
}

/// The gate's side of one environment.
#[derive(Clone)]
struct GateEnv {
    name: String,
    kube_version: String,
    api_versions: Vec<String>,
    upgrade_rendered: Vec<String>,
    objects: Vec<(String, Value)>,
    /// Releases the gate rendered (`namespace/name`, namespace empty when the state sets none).
    rendered: Vec<(String, String)>,
}

/// A shape's `expect` file: its `args:`, `env:` and `hide:` lines (the checks are `realworld.rs`'s).
fn case_of(shape: &Path, scratch: &Path) -> Case {
    let name = shape.file_name().unwrap().to_string_lossy().into_owned();
    let dir = scratch.join(&name).join("stack");
    copy_dir(&shape.join("stack"), &dir);
    let outside = scratch.join(&name).join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let expect = shapes::expectations(&std::fs::read_to_string(shape.join("expect")).unwrap());
    let mut args = expect.args;
    let mut env = vec![("REALWORLD_OUTSIDE".to_string(), outside.display().to_string())];
    env.extend(expect.env);
    let mut file = ".".to_string();
    if let Some(i) = args.iter().position(|a| a == "--file" || a == "-f") {
        file = args[i + 1].clone();
        args.drain(i..=i + 1);
    }
    Case {
        name,
        dir,
        file,
        args,
        env,
        remote: false,
        online: false,
        hide: expect.hide,
    }
}

/// The gate in `dir` as every run here starts it (`support::run::command`), without the tools
/// `hide` on PATH, with a case's environment set.
fn gate_command(dir: &Path, hide: &[String], env: &[(String, String)]) -> Command {
    let mut c = support::run::command(dir);
    c.env("PATH", path_hiding(hide)).envs(env.iter().map(|(k, v)| (k, v)));
    c
}

/// Run the gate sealed; `None` (and why) when it ended without a verdict.
fn gate(case: &Case, scratch: &Path) -> Result<(Vec<GateEnv>, Value), String> {
    let objects = scratch.join(format!("{}.objects.json", case.name));
    let home = scratch.join(format!("{}.home", case.name));
    std::fs::create_dir_all(&home).unwrap();
    // Only a remote case renders charts from a mirror: helmfile outside the seal fetches them
    // there, and nowhere else (the report does not say which releases came from a mirror).
    assert!(
        case.remote || !case.args.iter().any(|a| a.starts_with("--chart-mirror")),
        "{}: --chart-mirror in a case not marked remote",
        case.name
    );
    // A private HOME, unless the case names its own.
    let env: Vec<(String, String)> = [("HOME".to_string(), home.display().to_string())]
        .into_iter()
        .chain(case.env.iter().cloned())
        .collect();
    let out = finish(
        gate_command(&case.dir, &case.hide, &env)
            .args(["check", "--no-cache", "--format", "json", "--file", &case.file])
            .args(if case.online { &[][..] } else { &["--offline"][..] })
            .arg("--objects")
            .arg(&objects)
            .args(&case.args),
        None,
    );
    if out.code != 0 && out.code != 1 {
        return Err(format!("no verdict (exit {})", out.code));
    }
    let report: Value = serde_json::from_str(&out.stdout).map_err(|e| format!("report: {e}"))?;
    let doc: Value = serde_json::from_slice(&std::fs::read(&objects).map_err(|e| format!("--objects file: {e}"))?)
        .map_err(|e| format!("--objects file: {e}"))?;
    assert_eq!(doc["schema"], "nvcf-validate/objects/v1");
    // It holds rendered Secrets: readable by its owner only, whatever the umask.
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&objects).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "--objects file mode {mode:o}");
    let strs = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    let mut envs = Vec::new();
    for e in doc["environments"].as_array().unwrap() {
        let name = e["name"].as_str().unwrap().to_string();
        let rep = report["environments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{}: environment {name} is not in the report", case.name));
        let rendered = rep["releases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["rendered"] == true)
            .map(|r| {
                (
                    r["namespace"].as_str().unwrap().to_string(),
                    r["name"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        envs.push(GateEnv {
            name,
            kube_version: e["kubeVersion"].as_str().unwrap().to_string(),
            api_versions: strs(&e["apiVersions"]),
            upgrade_rendered: strs(&e["upgradeRendered"]),
            objects: e["objects"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| (o["release"].as_str().unwrap_or("").to_string(), o["object"].clone()))
                .collect(),
            rendered,
        });
    }
    Ok((envs, report))
}

/// helmfile outside the seal, as the operator runs it for `env`.
fn helmfile(case: &Case, env: &GateEnv) -> Command {
    let mut c = Command::new(tool("helmfile"));
    // `--file .` is the gate's spelling of "as helmfile finds it here" (helmfile itself would
    // read `.` as a state file): the operator runs `helmfile apply` without `--file` then.
    if case.file != "." {
        c.args(["--file", &case.file]);
    }
    c.current_dir(&case.dir)
        .args(["--environment", &env.name])
        .env("PATH", path_hiding(&case.hide))
        .env_remove("NVCF_HELM")
        .env_remove("NVCF_HELMFILE");
    for (k, v) in &case.env {
        c.env(k, v);
    }
    c
}

/// The selectors of the releases the gate rendered, as helmfile itself lists them (`helmfile
/// list` of those releases by name and namespace): one helmfile does not list there is one the
/// state gives no namespace (the gate reports it in helm's default), selected by name.
fn selectors(case: &Case, env: &GateEnv) -> Result<Vec<(String, String)>, String> {
    let mut c = helmfile(case, env);
    for (ns, name) in &env.rendered {
        c.arg("--selector").arg(format!("name={name},namespace={ns}"));
    }
    let out = c
        .args(["--allow-no-matching-release", "list", "--output", "json"])
        .output()
        .map_err(|e| format!("cannot run helmfile: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "helmfile list failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let listed: Vec<Value> = match text.trim() {
        "" => Vec::new(),
        t => serde_json::from_str(t).map_err(|e| format!("helmfile list: {e}: {t}"))?,
    };
    let has = |ns: &str, name: &str| listed.iter().any(|l| l["name"] == name && l["namespace"] == ns);
    Ok(env
        .rendered
        .iter()
        .map(|(ns, name)| match has(ns, name) {
            true => (ns.clone(), name.clone()),
            false => (String::new(), name.clone()),
        })
        .collect())
}

/// `helmfile template` of `releases` outside the seal, as apply's helm renders them: its stdout.
fn helmfile_stream(case: &Case, env: &GateEnv, releases: &[(String, String)], upgrade: bool) -> Result<String, String> {
    let mut c = helmfile(case, env);
    for (ns, name) in releases {
        let sel = match ns.is_empty() {
            true => format!("name={name}"),
            false => format!("name={name},namespace={ns}"),
        };
        c.arg("--selector").arg(sel);
    }
    c.args(["--allow-no-matching-release", "template", "--include-crds"]);
    if !case.remote {
        c.arg("--skip-deps");
    }
    if !env.kube_version.is_empty() {
        c.args(["--kube-version", &env.kube_version]);
    }
    let mut helm: Vec<String> = env.api_versions.iter().map(|a| format!("--api-versions={a}")).collect();
    if upgrade {
        helm.push("--is-upgrade".into());
    }
    if !helm.is_empty() {
        c.arg("--args").arg(helm.join(" "));
    }
    let out = c.output().map_err(|e| format!("cannot run helmfile: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "helmfile template failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

/// The objects of a stream as the API client creates them: helm's reading of each document,
/// an `items` list taken as its items.
fn api_objects(docs: Vec<Value>) -> Vec<Value> {
    let mut out = Vec::new();
    for d in docs {
        match d.get("items").and_then(Value::as_array) {
            Some(items) => out.extend(api_objects(items.clone())),
            None => out.push(d),
        }
    }
    out
}

/// Which object a document is: apiVersion, kind, namespace (as written), name.
fn key(v: &Value) -> String {
    let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
    format!(
        "{} {} {}/{}",
        s("/apiVersion"),
        s("/kind"),
        s("/metadata/namespace"),
        s("/metadata/name")
    )
}

/// The first path where `a` and `b` differ (key order and number spelling aside), or `None`.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let p = format!("{path}/{k}");
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => first_difference(u, v, &p),
                    _ => Some(p),
                }
            })
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Some(format!("{path} (length {} and {})", x.len(), y.len()));
            }
            x.iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (u, v))| first_difference(u, v, &format!("{path}/{i}")))
        }
        (Value::Number(x), Value::Number(y)) => (x.as_f64() != y.as_f64()).then(|| path.to_string()),
        _ => (a != b).then(|| if path.is_empty() { "/".into() } else { path.to_string() }),
    }
}

/// Compare two sets of objects document by document; the disagreements, each naming the object
/// and the first differing path.
fn compare(gate: &[Value], helm: &[Value]) -> Vec<String> {
    let mut by_key: BTreeMap<String, (Vec<&Value>, Vec<&Value>)> = BTreeMap::new();
    for g in gate {
        by_key.entry(key(g)).or_default().0.push(g);
    }
    for h in helm {
        by_key.entry(key(h)).or_default().1.push(h);
    }
    let mut out = Vec::new();
    for (k, (g, h)) in by_key {
        if g.len() != h.len() {
            out.push(format!(
                "{k}: helm sends it {} time(s), the gate judged it {} time(s)",
                h.len(),
                g.len()
            ));
            continue;
        }
        // Same key twice (one object rendered by two releases): pair them in the order each side
        // has them, unless another pairing makes them equal.
        let mut unmatched: Vec<&Value> = h.clone();
        for gv in &g {
            match unmatched.iter().position(|hv| first_difference(gv, hv, "").is_none()) {
                Some(i) => {
                    unmatched.remove(i);
                }
                None => {
                    let d = first_difference(gv, unmatched[0], "").unwrap_or_default();
                    out.push(format!("{k}: differs first at {d}"));
                    unmatched.remove(0);
                }
            }
        }
    }
    out
}

/// helm's reading of every stream (name, text) in one helm run.
fn helm_read(streams: &[(String, String)]) -> Result<Vec<Vec<Value>>, String> {
    let texts: Vec<(String, Vec<u8>)> = streams
        .iter()
        .map(|(n, t)| (n.clone(), t.as_bytes().to_vec()))
        .collect();
    let readings = helm_oracle::helm_reads(&tool("helm"), &texts)?;
    readings
        .into_iter()
        .zip(streams)
        .map(|(r, (n, _))| match r {
            helm_oracle::Reading::Docs(d) => Ok(d.iter().map(|j| serde_json::from_str(j).unwrap()).collect()),
            helm_oracle::Reading::Refused(why) => Err(format!("helm cannot read the stream of {n}: {why}")),
        })
        .collect()
}

/// Compare one case; its disagreements and the number of objects compared, or (`Err`) why the
/// gate ended without a verdict (nothing to compare).
fn oracle(case: &Case, scratch: &Path) -> Result<(Vec<String>, usize), String> {
    let (envs, report) = gate(case, scratch)?;
    Ok(match compare_case(case, &envs, &report) {
        Ok(r) => r,
        Err(e) => (vec![format!("{}: {e}", case.name)], 0),
    })
}

/// The comparison of a case the gate judged: its disagreements and the number of objects
/// compared, or (`Err`) why helm outside the seal could not render what the gate judged.
fn compare_case(case: &Case, envs: &[GateEnv], report: &Value) -> Result<(Vec<String>, usize), String> {
    let mut fails = Vec::new();
    let mut compared = 0;
    let mut streams = Vec::new();
    // (environment, release, stream index) of each upgrade render.
    let mut upgrades = Vec::new();
    for env in envs {
        let stream = match env.rendered.is_empty() {
            true => String::new(),
            false => selectors(case, env)
                .and_then(|sel| helmfile_stream(case, env, &sel, false))
                .map_err(|e| format!("{}: {e}", env.name))?,
        };
        streams.push((format!("{}__{}.yaml", case.name, env.name), stream));
        for id in &env.upgrade_rendered {
            let (ns, name) = id.split_once('/').unwrap();
            let one = GateEnv {
                rendered: vec![(ns.to_string(), name.to_string())],
                ..env.clone()
            };
            let rel = selectors(case, &one).map_err(|e| format!("{}: {e}", env.name))?;
            let s = helmfile_stream(case, env, &rel, true).map_err(|e| format!("{}: {id}: {e}", env.name))?;
            upgrades.push((env.name.clone(), id.clone(), streams.len()));
            streams.push((format!("{}__{}__{}-{}.upgrade.yaml", case.name, env.name, ns, name), s));
        }
    }
    let read = helm_read(&streams)?;
    let mut i = 0;
    for env in envs {
        let helm = api_objects(read[i].clone());
        let gate: Vec<Value> = env.objects.iter().map(|(_, o)| o.clone()).collect();
        compared += gate.len();
        for f in compare(&gate, &helm) {
            fails.push(format!("{}: environment {}: {f}", case.name, env.name));
        }
        i += 1 + env.upgrade_rendered.len();
    }
    for (env_name, id, at) in upgrades {
        let env = envs.iter().find(|e| e.name == env_name).unwrap();
        let judged: Vec<Value> = env
            .objects
            .iter()
            .filter(|(r, _)| *r == id)
            .map(|(_, o)| o.clone())
            .collect();
        let upgrade = api_objects(read[at].clone());
        let differs = !compare(&judged, &upgrade).is_empty();
        let reported = report["findings"].as_array().unwrap().iter().any(|f| {
            f["rule"] == "render-depends-on-cluster"
                && f["environment"] == env_name.as_str()
                && f["release"] == id.as_str()
        });
        if differs && !reported {
            fails.push(format!(
                "{}: environment {env_name}: release {id}: helm's upgrade render differs from the judged install \
                 render and the report has no render-depends-on-cluster finding for it",
                case.name
            ));
        }
    }
    Ok((fails, compared))
}

#[test]
fn the_gate_judges_what_helm_sends() {
    let started = std::time::Instant::now();
    let scratch = tempfile::tempdir().unwrap();
    let mut cases: Vec<Case> = shapes::list().iter().map(|s| case_of(s, scratch.path())).collect();
    cases.push(Case {
        name: "stack".into(),
        dir: repo(),
        file: "helmfile.yaml".into(),
        args: Vec::new(),
        env: Vec::new(),
        remote: false,
        online: false,
        hide: Vec::new(),
    });
    let mut fails = Vec::new();
    let mut compared = Vec::new();
    let mut skipped = Vec::new();
    // While working on a shape: REALWORLD_ONLY=<part of its name> (or `stack`).
    let only = std::env::var("REALWORLD_ONLY").ok();
    if let Some(only) = &only {
        cases.retain(|c| c.name.contains(only.as_str()));
        assert!(!cases.is_empty(), "REALWORLD_ONLY={only:?} matches no case");
    }
    for case in &cases {
        match oracle(case, scratch.path()) {
            Ok((f, n)) => {
                fails.extend(f);
                compared.push(format!("{} ({n} objects)", case.name));
            }
            Err(why) if case.name == "stack" => fails.push(format!("stack: {why}")),
            Err(why) => skipped.push(format!("{}: {}", case.name, why.lines().next().unwrap_or(""))),
        }
    }
    eprintln!(
        "apply oracle: {} stacks compared, {} without a verdict, in {:.1} s\ncompared: {}\nskipped: {}",
        compared.len(),
        skipped.len(),
        started.elapsed().as_secs_f64(),
        compared.join(", "),
        skipped.join("; ")
    );
    // Every shape with a verdict and the stack were compared: a run that compares little passes
    // nothing.
    if only.is_none() {
        assert!(
            compared.iter().any(|c| c.starts_with("stack ")),
            "the stack was not compared"
        );
        assert!(
            compared.len() >= 20,
            "only {} stacks compared: {compared:?}",
            compared.len()
        );
    }
    assert!(
        fails.is_empty(),
        "{} disagreement(s):\n{}",
        fails.len(),
        fails.join("\n")
    );
}

/// The comparison: key order, number spelling and document order do not count; a changed value,
/// a missing object and an extra one do, each named with the object and the first path.
#[test]
fn the_comparison_names_the_object_and_the_first_differing_path() {
    let a: Value = serde_json::from_str(
        r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1", "n": 3}}"#,
    )
    .unwrap();
    let b: Value = serde_json::from_str(
        r#"{"data": {"n": 3.0, "x": "1"}, "metadata": {"name": "a"}, "kind": "ConfigMap", "apiVersion": "v1"}"#,
    )
    .unwrap();
    let other: Value =
        serde_json::from_str(r#"{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}"#).unwrap();
    assert!(compare(&[a.clone(), other.clone()], &[other.clone(), b.clone()]).is_empty());
    let mut c = b.clone();
    c["data"]["x"] = "2".into();
    assert_eq!(
        compare(std::slice::from_ref(&a), &[c]),
        vec!["v1 ConfigMap /a: differs first at /data/x"]
    );
    let missing = compare(std::slice::from_ref(&a), &[a.clone(), other.clone()]);
    assert_eq!(
        missing,
        vec!["v1 Secret /s: helm sends it 1 time(s), the gate judged it 0 time(s)"]
    );
    // A List is its items.
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [a.clone(), other.clone()]});
    assert!(compare(&[a, other], &api_objects(vec![list])).is_empty());
}

/// The oracle is not blind to the cluster: helm rendering shape 56 for its own default cluster
/// (no `--kube-version`, no `--api-versions`, as the gate rendered before issue 23) disagrees with
/// what the gate judged, on the Deployment's annotations that read the capabilities.
#[test]
fn a_render_for_another_cluster_disagrees() {
    let scratch = tempfile::tempdir().unwrap();
    let case = case_of(
        &repo().join("validator/tests/realworld/56-capabilities-upgrade-and-lists"),
        scratch.path(),
    );
    let (envs, _) = gate(&case, scratch.path()).unwrap();
    let env = &envs[0];
    let helm_default = GateEnv {
        kube_version: String::new(),
        api_versions: Vec::new(),
        ..env.clone()
    };
    let sel = selectors(&case, env).unwrap();
    let stream = helmfile_stream(&case, &helm_default, &sel, false).unwrap();
    let helm = api_objects(helm_read(&[("default.yaml".into(), stream)]).unwrap().remove(0));
    let judged: Vec<Value> = env.objects.iter().map(|(_, o)| o.clone()).collect();
    let d = compare(&judged, &helm);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(
        d[0].starts_with("apps/v1 Deployment /app: differs first at /metadata/annotations/"),
        "{d:?}"
    );
}

/// `--objects` is a record of a verdict: a run that cannot validate leaves no file, not even an
/// earlier run's.
#[test]
fn no_objects_file_without_a_verdict() {
    let scratch = tempfile::tempdir().unwrap();
    let case = case_of(
        &repo().join("validator/tests/realworld/11-required-env-missing"),
        scratch.path(),
    );
    let stale = scratch.path().join(format!("{}.objects.json", case.name));
    std::fs::write(&stale, "{}").unwrap();
    let why = gate(&case, scratch.path())
        .err()
        .expect("shape 11 ends without a verdict");
    assert!(why.contains("exit 2"), "{why}");
    assert!(!stale.exists(), "the earlier run's --objects file was left behind");
}

/// A chart repository on loopback: `index.yaml` and the tarballs of `dir` over HTTP/1.0, each
/// request counted by path.
fn serve_repository(dir: PathBuf) -> (std::net::SocketAddr, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let mut line = String::new();
            let mut r = BufReader::new(c.try_clone().unwrap());
            if r.read_line(&mut line).is_err() {
                continue;
            }
            // The headers, up to the empty line.
            let mut h = String::new();
            while r.read_line(&mut h).is_ok_and(|n| n > 0) && h.trim() != "" {
                h.clear();
            }
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            seen2.lock().unwrap().push(path.clone());
            let file = dir.join(path.trim_start_matches('/').split('?').next().unwrap_or(""));
            let _ = match std::fs::read(&file)
                .ok()
                .filter(|_| file.starts_with(&dir) && file.is_file())
            {
                Some(body) => c
                    .write_all(format!("HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes())
                    .and_then(|_| c.write_all(&body)),
                None => c.write_all(b"HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n"),
            };
        }
    });
    (addr, seen)
}

fn run_ok(c: &mut Command) -> String {
    let o = c.output().unwrap();
    assert!(o.status.success(), "{c:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Remote charts inside the oracle (issue 23): a chart repository served on loopback, the real
/// helmfile adding it and fetching the chart outside the seal as `helmfile apply` does, and the
/// gate rendering the same chart sealed from `--chart-mirror`, and online after pulling it from
/// the same repository, each time after its sha256 matched the lock.
/// The release has values, a `set:`, the state's `apiVersions:` and `helmDefaults.args` that change
/// the render (`--set` in both of helmfile's spellings, the later one winning, `--api-versions`,
/// `--kube-version`), so
/// the two agree only when the gate passes them as helmfile does. A flag the mirror render cannot
/// reproduce (`--version`, which would choose another chart) is refused: exit 2 naming it.
#[test]
fn remote_charts_agree_with_helmfile_fetching_from_a_loopback_repository() {
    let started = std::time::Instant::now();
    let scratch = tempfile::tempdir().unwrap();
    let s = scratch.path();
    // The chart: what it renders depends on values, `set:`, the args and the cluster.
    let src = s.join("src/web");
    std::fs::create_dir_all(src.join("templates")).unwrap();
    std::fs::write(
        src.join("Chart.yaml"),
        "apiVersion: v2\nname: web\nversion: 1.2.3\nappVersion: \"2.0\"\n",
    )
    .unwrap();
    std::fs::write(
        src.join("values.yaml"),
        "greeting: none\ntier: bronze\nfromArgs: \"no\"\nreplicas: 1\n",
    )
    .unwrap();
    std::fs::write(
        src.join("templates/config.yaml"),
        r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: {{ .Values.greeting | quote }}
  tier: {{ .Values.tier | quote }}
  fromArgs: {{ .Values.fromArgs | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  extra: {{ .Capabilities.APIVersions.Has "example.com/v1" | quote }}
  state: {{ .Capabilities.APIVersions.Has "state.example.com/v1" | quote }}
  namespace: {{ .Release.Namespace | quote }}
"#,
    )
    .unwrap();
    std::fs::write(
        src.join("templates/deployment.yaml"),
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
      - name: web
        image: registry.example.com/web:2.0@sha256:{{ printf "%064d" 0 }}
"#,
    )
    .unwrap();
    let repo_dir = s.join("repo");
    std::fs::create_dir_all(&repo_dir).unwrap();
    let home = s.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let helm = |args: &[&str]| {
        let mut c = Command::new(tool("helm"));
        c.args(args).env("HOME", &home).env("PATH", path_with_tools());
        run_ok(&mut c)
    };
    helm(&["package", src.to_str().unwrap(), "-d", repo_dir.to_str().unwrap()]);
    let tarball = repo_dir.join("web-1.2.3.tgz");
    let (addr, seen) = serve_repository(repo_dir.clone());
    helm(&[
        "repo",
        "index",
        repo_dir.to_str().unwrap(),
        "--url",
        &format!("http://{addr}"),
    ]);
    use sha2::Digest as _;
    let sha = hex::encode(sha2::Sha256::digest(std::fs::read(&tarball).unwrap()));
    let mirror = s.join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    std::fs::copy(&tarball, mirror.join("web-1.2.3.tgz")).unwrap();

    let stack = s.join("stack");
    std::fs::create_dir_all(&stack).unwrap();
    let state = |args: &str| {
        format!(
            r#"repositories:
- name: loop
  url: http://{addr}
apiVersions: [state.example.com/v1]
helmDefaults:
  args: [{args}]
releases:
- name: web
  namespace: apps
  chart: loop/web
  version: 1.2.3
  values:
  - greeting: hello
  set:
  - name: tier
    value: gold
"#
        )
    };
    std::fs::write(
        stack.join("helmfile.yaml"),
        state(r#""--set", "fromArgs=yes", "--set=replicas=2 --set replicas=3", "--api-versions example.com/v1", "--kube-version=1.36.0""#),
    )
    .unwrap();
    std::fs::write(
        stack.join("charts.lock.yaml"),
        format!(
            "charts:\n  - release: web\n    chart: web\n    repository: http://{addr}\n    version: 1.2.3\n    sha256: \
             {sha}\n"
        ),
    )
    .unwrap();
    // helm outside the seal keeps its repositories and cache here, not in the runner's HOME.
    let env: Vec<(String, String)> = [
        ("HOME", home.clone()),
        ("XDG_CONFIG_HOME", home.join(".config")),
        ("XDG_CACHE_HOME", home.join(".cache")),
        ("XDG_DATA_HOME", home.join(".local/share")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.display().to_string()))
    .collect();
    let case = Case {
        name: "loopback-repository".into(),
        dir: stack.clone(),
        file: ".".into(),
        args: vec!["--chart-mirror".into(), mirror.display().to_string()],
        env,
        remote: true,
        online: false,
        hide: Vec::new(),
    };
    let (envs, report) = gate(&case, s).unwrap_or_else(|e| panic!("the gate ended without a verdict: {e}"));
    let release = &report["environments"][0]["releases"][0];
    assert_eq!(release["rendered"], true, "{release}");
    assert!(
        release["reason"]
            .as_str()
            .unwrap_or("")
            .contains("after its sha256 matched the lock"),
        "{release}"
    );
    let before = seen.lock().unwrap().len();
    let (fails, compared) = compare_case(&case, &envs, &report).unwrap_or_else(|e| panic!("{e}"));
    let fetched = seen.lock().unwrap()[before..].to_vec();
    assert!(
        fetched.iter().any(|p| p.ends_with("/web-1.2.3.tgz")) && fetched.iter().any(|p| p.ends_with("/index.yaml")),
        "helmfile outside the seal did not fetch from the loopback repository: {fetched:?}"
    );
    assert_eq!(compared, 2);
    assert!(
        fails.is_empty(),
        "{} disagreement(s):\n{}",
        fails.len(),
        fails.join("\n")
    );
    // The args took effect (the later --set wins, the cluster is the args' one): the agreement
    // above is on the fields they change.
    let judged = |kind: &str| {
        envs[0]
            .objects
            .iter()
            .map(|(_, o)| o)
            .find(|o| o["kind"] == kind)
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} judged"))
    };
    let cm = judged("ConfigMap");
    assert_eq!(
        (&cm["data"]["fromArgs"], &cm["data"]["tier"], &cm["data"]["greeting"]),
        (&"yes".into(), &"gold".into(), &"hello".into()),
        "{cm}"
    );
    assert_eq!(
        (&cm["data"]["kube"], &cm["data"]["extra"], &cm["data"]["state"]),
        (&"v1.36.0".into(), &"true".into(), &"true".into()),
        "{cm}"
    );
    assert_eq!(judged("Deployment")["spec"]["replicas"], 3);

    // Online the gate pulls the chart itself from the same repository (its sha256 checked against
    // the lock) and renders it the same way: the same agreement.
    let online = Case {
        name: "loopback-repository-online".into(),
        args: Vec::new(),
        online: true,
        ..case
    };
    let before = seen.lock().unwrap().len();
    let (envs, report) = gate(&online, s).unwrap_or_else(|e| panic!("the online gate ended without a verdict: {e}"));
    let pulled = seen.lock().unwrap()[before..].to_vec();
    assert!(
        pulled.iter().any(|p| p.ends_with("/web-1.2.3.tgz")),
        "the online gate did not pull from the loopback repository: {pulled:?}"
    );
    let release = &report["environments"][0]["releases"][0];
    assert!(
        release["rendered"] == true
            && release["reason"]
                .as_str()
                .unwrap_or("")
                .contains("after its sha256 matched the lock"),
        "{release}"
    );
    let (fails, compared) = compare_case(&online, &envs, &report).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(compared, 2);
    assert!(
        fails.is_empty(),
        "online: {} disagreement(s):\n{}",
        fails.len(),
        fails.join("\n")
    );
    let case = online;

    // A flag that would choose another chart than the lock-checked tarball: refused, named.
    std::fs::write(stack.join("helmfile.yaml"), state(r#""--version", "9.9.9""#)).unwrap();
    let out = finish(
        gate_command(&stack, &case.hide, &case.env)
            .args(["check", "--offline", "--no-cache", "--file", ".", "--chart-mirror"])
            .arg(&mirror),
        None,
    );
    let err = out.stderr;
    assert_eq!(out.code, 2, "{err}");
    let first = err.lines().next().unwrap_or("");
    assert!(
        first.contains("helmfile.yaml")
            && first.contains("release apps/web")
            && first.contains("`--version`")
            && first.contains("remove the flag from helmDefaults.args"),
        "{err}"
    );
    eprintln!(
        "apply oracle (loopback repository): {compared} objects compared in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
