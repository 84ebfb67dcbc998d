//! The order of a `check` over a helmfile stack, in one place: tools (located once, on first
//! use) → `stack::loader` (entry, environments, each environment's state model) → `render`
//! (which consumes the state) → back to the engine for graph → rules → sink → report. Each
//! environment is loaded and rendered on its own thread, through the render cache (a hit runs
//! neither helm nor helmfile).

use crate::render::cache;
use crate::render::helmfile::{self, EnvRender};
use crate::render::manifests::RenderedDoc;
use crate::stack::loader::{self, Inputs};
use crate::stack::Options;
use crate::stack::{load, ChartLock, Stack};
use crate::tools;
use anyhow::Result;
use std::path::Path;

/// Load and render the selected environments (all declared ones when `selected` is empty).
pub fn load_and_render(
    file: &Path,
    selected: &[String],
    opts: &Options,
    use_cache: bool,
    progress: bool,
) -> Result<(Stack, Vec<EnvRender>)> {
    let entry = loader::resolve_entry(file)?;
    let root = loader::root_of(&entry);
    let lock = ChartLock::load_named(&root, &opts.lock_file)?;
    let cache = if use_cache { cache::Cache::open() } else { None };
    let entry_rel = crate::tools::paths::relative(&entry, &root);
    let tree = if cache.is_some() {
        cache::Tree::scan_with(&root, cache.as_ref())?
    } else {
        cache::Tree::default()
    };
    let mirror = match &opts.chart_mirror {
        Some(d) => crate::render::mirror_fingerprint(d)?,
        None => "-".into(),
    };
    let mode = format!(
        "offline={} mirror={mirror} kube={} api={}",
        opts.offline,
        opts.kube_version,
        cache::key(&opts.api_versions.iter().map(String::as_str).collect::<Vec<_>>())
    );
    // The binaries that would render (found, never started) and the lock as read.
    let binaries = match &cache {
        Some(c) => {
            let found = tools::Tools::locate(&root).ok();
            format!(
                "helmfile={} helm={}",
                cache::binary_identity(c, found.as_ref().map(|t| t.helmfile.as_path())),
                cache::binary_identity(c, found.as_ref().map(|t| t.helm.as_path())),
            )
        }
        None => String::new(),
    };
    let lock_read = format!("{:?} {lock:?}", opts.lock_file);
    let tree_hash = cache::key(&[&tree.hash, &binaries, &lock_read]);

    // Tools: with a mirror, helmfile gets a helm front that serves OCI pulls from it; both run
    // sealed (hooks and `exec` write nothing outside the run and reach no host Unix socket), and
    // offline also without network, the front answering every registry call (mirror or
    // placeholder).
    let tools = tools::Lazy::new(&root, opts.chart_mirror.as_deref(), opts.offline)?;
    let get_tools = || tools.get();

    // Load: the environments (helmfile's own list, from a load of `default`), and (below, per
    // environment) each state model.
    let names_key = cache::key(&[&tree_hash, &entry_rel, "environments"]);
    let inputs = Inputs {
        entry: &entry,
        root: &root,
        lock: &lock,
        opts,
    };
    let known: Option<Vec<String>> = match cache.as_ref().and_then(|c| c.get::<Vec<String>>(&names_key)) {
        // `--environment E` loads only E, as `helmfile -e E` does (never `default` first: with
        // `bases:` or templated environments, `default` may not even load). An undeclared E is
        // helmfile's error for that environment.
        _ if !selected.is_empty() => Some(loader::select(selected, selected, &entry)?),
        Some(n) => Some(n),
        None => None,
    };
    // One environment, through the cache. `loaded` sees its load before it renders (`None`:
    // nothing to tell; the cache is then read as well).
    let one = |env: &str, loaded: Option<&mut dyn FnMut(&loader::Built)>| -> Result<EnvRender> {
        let key = cache::key(&[&tree_hash, &entry_rel, env, &mode]);
        if let Some(hit) = cache
            .as_ref()
            .filter(|_| loaded.is_none())
            .and_then(|c| c.get::<EnvRender>(&key))
        {
            return Ok(hit);
        }
        if progress {
            eprintln!("nvcf-validate: rendering environment {env} …");
        }
        // A failing environment is reported as such; the others are still checked.
        let mut nothing = |_: &loader::Built| {};
        let loaded = get_tools().and_then(|t| load_then_render(&t, &inputs, env, loaded.unwrap_or(&mut nothing)));
        let r = match loaded {
            Ok(r) => r,
            Err(e) if !selected.is_empty() => failed_env(&inputs, env, undeclared(&get_tools, &entry, env, e)),
            Err(e) => failed_env(&inputs, env, e),
        };
        // Kept only once the tools' versions passed their check (it runs beside the first commands).
        if let (Some(c), None, Ok(())) = (&cache, &r.render_error, tools.verified()) {
            c.put(&key, &cache::deps(&root, &r.state)?, &r)?;
        }
        if progress {
            eprintln!(
                "nvcf-validate: environment {env}: {} objects from {} releases",
                r.docs.len(),
                r.status.iter().filter(|s| s.rendered).count()
            );
        }
        Ok(r)
    };
    let results: Vec<Result<EnvRender>> = std::thread::scope(|s| -> Result<Vec<Result<EnvRender>>> {
        let one = &one;
        let entry = &entry;
        if let Some(names) = known {
            let handles: Vec<_> = names.into_iter().map(|env| s.spawn(move || one(&env, None))).collect();
            return Ok(handles
                .into_iter()
                .map(|h| h.join().expect("render thread panicked"))
                .collect());
        }
        // The environments are helmfile's: those a load of `default` prints. While it runs, the
        // environments the entry's text appears to declare start loading too (a guess that only
        // saves time: a guessed environment helmfile does not print is dropped, one it prints
        // that was not guessed is loaded after).
        // If the state does not even load as `default`, that is `default`'s failure, reported
        // as such rather than a run that stops before any rule; which other environments it
        // declares cannot be told then, so the run cannot pass.
        let (tx, rx) = std::sync::mpsc::channel::<Vec<String>>();
        let default = s.spawn(move || {
            let mut names = |b: &loader::Built| {
                let _ = tx.send(load::environment_names(&b.docs, entry));
            };
            one("default", Some(&mut names))
        });
        let guessed: Vec<String> = load::guessed_environments(entry)
            .into_iter()
            .filter(|n| n != "default")
            .collect();
        let mut handles: Vec<(String, _)> = guessed
            .iter()
            .map(|env| {
                let e = env.clone();
                (env.clone(), s.spawn(move || one(&e, None)))
            })
            .collect();
        let names = rx.recv().ok();
        // The names come from the `default` load: stored with its inputs outside the tree
        // once it is rendered (below).
        let names_deps = |d: &Result<EnvRender>| match d {
            Ok(r) if r.render_error.is_none() => cache::deps(&root, &r.state),
            _ => Ok(None),
        };
        let loaded_names = names.clone();
        let names = names.unwrap_or_else(|| vec!["default".to_string()]);
        for env in names.iter().filter(|n| *n != "default" && !guessed.contains(n)) {
            let e = env.clone();
            handles.push((env.clone(), s.spawn(move || one(&e, None))));
        }
        let default = default.join().expect("render thread panicked");
        if let (Some(n), Some(c), Ok(())) = (&loaded_names, &cache, tools.verified()) {
            c.put(&names_key, &names_deps(&default)?, n)?;
        }
        let mut done: Vec<(String, Result<EnvRender>)> = vec![("default".to_string(), default)];
        for (env, h) in handles {
            done.push((env, h.join().expect("render thread panicked")));
        }
        Ok(names
            .iter()
            .filter_map(|n| done.iter().position(|(e, _)| e == n).map(|i| done.swap_remove(i).1))
            .collect())
    })?;
    // A refusal of the tools' versions stands for every environment, whatever the commands
    // that ran beside the check produced (as when it ran first: each environment fails with it).
    let verdict = tools.verified();
    let mut renders = Vec::new();
    for r in results {
        let r = r?;
        renders.push(match &verdict {
            Ok(()) => r,
            Err(e) => failed_env(&inputs, &r.state.name, anyhow::anyhow!("{e:#}")),
        });
    }
    let stack = Stack { root, entry, lock };
    Ok((stack, renders))
}

/// helmfile loads no state for an environment no state declares (`no releases found …
/// environment(E)`): name the environments helmfile does see (from a load of `default`).
fn undeclared(
    get_tools: &dyn Fn() -> Result<tools::Tools>,
    entry: &Path,
    env: &str,
    e: anyhow::Error,
) -> anyhow::Error {
    let text = format!("{e:#}");
    if env == "default" || !text.contains(&format!("selector() and environment({env})")) {
        return e;
    }
    match loader::environment_names(get_tools, entry) {
        Ok((names, _)) if !names.iter().any(|n| n == env) => e.context(format!(
            "environment `{env}` is not declared in {} (declared: {}); pass one of them with -e",
            entry.display(),
            names.join(", ")
        )),
        _ => e,
    }
}

/// An environment that could not be loaded or rendered: its error, said so a user can act on it.
fn failed_env(inputs: &Inputs, env: &str, e: anyhow::Error) -> EnvRender {
    EnvRender {
        state: crate::stack::EnvState {
            name: env.to_string(),
            ..Default::default()
        },
        docs: Vec::new(),
        status: Vec::new(),
        render_error: Some(crate::stack::failure::explain(&e, inputs, env)),
        failed: Vec::new(),
        render_blame: Vec::new(),
        rendered_for: Default::default(),
        twins: Default::default(),
    }
}

/// One environment: its state model (`helmfile build`), then its render. `helmfile template`
/// starts with the build when the state's text tells which releases to leave out of it (see
/// `helmfile::start_template_guessed`), else once the build is read. That the build printed every
/// release helmfile sees is vouched for by that render (`helmfile::render_env_witnessed`), or else
/// asked of `helmfile list` (`loader::check_complete`): an incomplete build is exit 2.
/// `loaded` sees the environment's load before it is rendered (the `default` load gives the
/// environments).
fn load_then_render(
    tools: &tools::Tools,
    inputs: &Inputs,
    env: &str,
    loaded: &mut dyn FnMut(&loader::Built),
) -> Result<EnvRender> {
    let early = helmfile::start_template_guessed(tools, inputs, env);
    let built = loader::load_env(tools, inputs.entry, env)?;
    loaded(&built);
    let refused = built.refused.clone();
    let (docs, state) = loader::load_state(tools, inputs, env, Some(built))?;
    let (first, witnessed) = helmfile::render_env_witnessed(tools, inputs, env, state.clone(), early)?;
    if !witnessed {
        loader::check_complete(tools, inputs.entry, env, &loader::Built { docs, refused })?;
    }
    // At apply time the CRDs a release installs are served to the releases after it: when the
    // environment renders CRDs helm was not told about and a chart asks `.Capabilities.APIVersions`,
    // render again with them.
    let missing: Vec<String> = helmfile::rendered_api_versions(&first.docs)
        .into_iter()
        .filter(|a| !inputs.opts.api_versions.contains(a))
        .collect();
    if first.render_error.is_some()
        || missing.is_empty()
        || inputs.opts.api_versions.is_empty()
        || !helmfile::reads_api_versions(inputs.root, &first.state, &first.status)
    {
        return with_upgrade(tools, inputs, env, first);
    }
    let mut opts = inputs.opts.clone();
    opts.api_versions.extend(missing);
    opts.api_versions.sort();
    let again = Inputs { opts: &opts, ..*inputs };
    with_upgrade(
        tools,
        &again,
        env,
        helmfile::render_env(tools, &again, env, state, None)?,
    )
}

/// Whether a release that was rendered may render differently as an upgrade: a file of its chart
/// holds a needle of `tools::mirror::ASKS_NEEDLES` (`IsUpgrade`, `IsInstall`, or the release
/// object taken whole), or its values do (`values_ask_upgrade`): the decision the helm front's
/// `may_ask` makes for the twin it renders.
fn asks_upgrade(root: &Path, r: &crate::stack::Release, status: &[crate::render::ReleaseStatus]) -> bool {
    let one = crate::stack::EnvState {
        releases: vec![r.clone()],
        ..Default::default()
    };
    helmfile::charts_mention(root, &one, status, tools::mirror::ASKS_NEEDLES) || values_ask_upgrade(r)
}

/// Whether a release's values (and `set:` entries) hold a needle of `tools::mirror::ASKS_NEEDLES`:
/// a chart that renders them with `tpl` reads what their text reads. Values too large to read ask.
/// The front's `may_ask` greps the values files and `--set` arguments helm is given alike.
fn values_ask_upgrade(r: &crate::stack::Release) -> bool {
    match load::value_strings(&r.values, &r.set) {
        None => true,
        Some(strings) => strings.iter().any(|s| {
            tools::mirror::ASKS_NEEDLES
                .iter()
                .any(|n| s.as_bytes().windows(n.len()).any(|w| w == *n))
        }),
    }
}

/// Every apply after the first is an upgrade (`.Release.IsUpgrade`). When a chart the
/// environment rendered asks (`IsUpgrade`/`IsInstall`, or the release object taken whole:
/// `asks_upgrade`), it is rendered again as an upgrade; a
/// release whose objects differ between the two renders (or whose upgrade render fails) gets a
/// `render-depends-on-cluster` finding naming them, since only the install render is judged.
///
/// The upgrade render of a release helmfile rendered is normally made by the helm front beside
/// the install render, from the same call with `--is-upgrade` (`install.twins`). A release that
/// asks and has no such render (a remote chart the gate renders itself, or a call the front did
/// not recognise) is rendered again by `helmfile template --args --is-upgrade`, by name. Which
/// releases ask is decided here (`charts_mention` reads every file of the chart, vendored
/// subchart archives too); the front, which cannot read archives, renders more (a chart holding
/// one), and those renders are not used.
fn with_upgrade(tools: &tools::Tools, inputs: &Inputs, env: &str, mut install: EnvRender) -> Result<EnvRender> {
    let twins = std::mem::take(&mut install.twins);
    if install.render_error.is_some() {
        return Ok(install);
    }
    let twinned = |id: &str| twins.ran.iter().any(|(r, _)| r == id);
    let asks = |r: &crate::stack::Release| asks_upgrade(inputs.root, r, &install.status);
    // (A release that did not render has no install render to compare: its values may still ask.)
    let rendered = |r: &crate::stack::Release| install.status.iter().any(|s| s.rendered && s.id() == r.id());
    let asking: Vec<String> = install
        .state
        .releases
        .iter()
        .filter(|r| rendered(r) && asks(r))
        .map(crate::stack::Release::id)
        .collect();
    if asking.is_empty() {
        return Ok(install);
    }
    install.rendered_for.upgrade_rendered = asking.clone();
    let mut again = install.state.clone();
    again.releases.retain(|r| asking.contains(&r.id()) && !twinned(&r.id()));
    let fallback = (!again.releases.is_empty()).then(|| {
        let mut opts = inputs.opts.clone();
        opts.is_upgrade = true;
        let upgrade_inputs = Inputs { opts: &opts, ..*inputs };
        helmfile::render_env(tools, &upgrade_inputs, env, again, None)
    });
    let objects_of = |docs: &[RenderedDoc], id: &str| {
        let mut v: Vec<String> = docs
            .iter()
            .filter(|d| d.prov.release.as_deref() == Some(id))
            .map(|d| d.body.to_string())
            .collect();
        v.sort();
        v
    };
    let named = |docs: &[RenderedDoc], id: &str, other: &[String]| -> Vec<String> {
        docs.iter()
            .filter(|d| d.prov.release.as_deref() == Some(id) && !other.contains(&d.body.to_string()))
            .map(|d| {
                let s = |p: &str| {
                    d.body
                        .pointer(p)
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                format!("{} {}", s("/kind"), s("/metadata/name"))
            })
            .collect()
    };
    const FAILED: &str =
        "its upgrade render (`--is-upgrade`) failed, so what every apply after the first installs was not judged";
    for i in 0..install.state.releases.len() {
        let id = install.state.releases[i].id();
        if !asking.contains(&id) {
            continue;
        }
        // The upgrade render's objects, or why there are none.
        let upgrade: std::result::Result<&[RenderedDoc], String> =
            match (twins.ran.iter().find(|(r, _)| *r == id), &fallback) {
                (Some((_, None)), _) => Ok(&twins.docs),
                (Some((_, Some(why))), _) => Err(format!(
                    "its upgrade render (`--is-upgrade`) failed: {}",
                    crate::redact::tool_output(why)
                )),
                (None, Some(Err(e))) => Err(format!(
                    "its upgrade render (`--is-upgrade`) failed: {}",
                    crate::redact::tool_output(&format!("{e:#}"))
                )),
                // (only a release that render rendered: one it left out did not render nothing)
                (None, Some(Ok(u)))
                    if u.render_error.is_none() && u.status.iter().any(|s| s.rendered && s.id() == id) =>
                {
                    Ok(&u.docs)
                }
                (None, _) => Err(FAILED.to_string()),
            };
        let what = match upgrade {
            Err(why) => Some(why),
            Ok(docs) => {
                let (a, b) = (objects_of(&install.docs, &id), objects_of(docs, &id));
                (a != b).then(|| {
                    let mut changed = named(docs, &id, &a);
                    changed.extend(named(&install.docs, &id, &b));
                    changed.sort();
                    changed.dedup();
                    changed.truncate(5);
                    format!(
                        "its upgrade render (`.Release.IsUpgrade`: every apply after the first is an upgrade) differs from \
                         its install render ({}); only the install render was judged",
                        changed.join(", ")
                    )
                })
            }
        };
        if let Some(what) = what {
            install.state.releases[i].cluster_reads.push(crate::stack::ClusterRead {
                file: None,
                line: None,
                what,
            });
        }
    }
    Ok(install)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gate's decision that a chart asks for the upgrade render (`asks_upgrade`) and the helm
    /// front's (`may_ask`, which renders the twin) agree on every shape of reading the fields
    /// `--is-upgrade` flips: by name, or through the release object taken whole (a function, a
    /// variable, `with`, a helper, a string key). `.Release.Name`/`.Namespace`/`.Service` alone do
    /// not ask; a key computed from pieces is not seen by either (a known limit).
    #[test]
    fn the_gate_and_the_front_agree_on_which_charts_ask() {
        use std::os::unix::fs::PermissionsExt;
        let table: &[(&str, &str, bool)] = &[
            ("field", "{{ if .Release.IsUpgrade }}x{{ end }}", true),
            ("install", "{{ if not $.Release.IsInstall }}x{{ end }}", true),
            ("index-key", "{{ if index .Release \"IsUpgrade\" }}x{{ end }}", true),
            (
                "computed",
                "{{ if index .Release (printf \"Is%s\" \"Upgrade\") }}x{{ end }}",
                true,
            ),
            (
                "variable",
                "{{ $r := .Release }}{{ if get $r (print \"Is\" \"Upgrade\") }}x{{ end }}",
                true,
            ),
            ("with", "{{ with .Release }}{{ toJson . }}{{ end }}", true),
            ("json", "{{ $.Release | toJson }}", true),
            ("helper", "{{ template \"x\" .Release }}", true),
            ("tight", "{{.Release}}", true),
            ("paren", "{{ (.Release) | toYaml }}", true),
            ("tab", "{{ toJson .Release\t}}", true),
            ("line-end", "{{ include \"x\"\n  .Release\n}}", true),
            ("crlf", "{{ include \"x\"\r\n  .Release\r\n}}", true),
            ("root-key", "{{ index . \"Release\" }}", true),
            ("raw-key", "{{ index $ `Release` }}", true),
            (
                "names",
                "{{ .Release.Name }} {{ $.Release.Namespace }} {{ .Release.Service }}",
                false,
            ),
            (
                "other",
                "{{ .Values.ReleaseName }} {{ .Values.Release.x }} Release notes",
                false,
            ),
            ("pieces", "{{ index . (print \"Rel\" \"ease\") }}", false),
        ];
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        let log = p.join("real.log");
        let real = p.join("real-helm");
        std::fs::write(&real, format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display())).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        let tools = tools::Tools {
            helmfile: "/bin/false".into(),
            helm: real,
            env: Vec::new(),
            writable: None,
            ns: None,
            network: true,
        };
        std::fs::create_dir_all(p.join("front")).unwrap();
        let front = tools::mirror::front(&tools, None, false, None, &p.join("front"))
            .unwrap()
            .helm;
        for x in ["render/out.upgrade", "render/out.upgrade-status"] {
            std::fs::create_dir_all(p.join(x)).unwrap();
        }
        for (name, template, asks) in table {
            let c = p.join("charts").join(name);
            std::fs::create_dir_all(c.join("templates")).unwrap();
            std::fs::write(c.join("Chart.yaml"), format!("name: {name}\n")).unwrap();
            std::fs::write(c.join("templates/t.yaml"), template).unwrap();
            // The gate's decision.
            let r = crate::testkit::rel(
                "helmfile.yaml",
                1,
                "apps",
                name,
                crate::testkit::local(&format!("charts/{name}")),
            );
            let status = crate::render::ReleaseStatus {
                name: name.to_string(),
                namespace: "apps".into(),
                chart: format!("charts/{name}"),
                version: None,
                installed: true,
                rendered: true,
                reason: None,
                objects: 1,
                mirror: None,
            };
            let gate = asks_upgrade(p, &r, &[status]);
            // The front's: a second (`--is-upgrade`) run of the same call.
            std::fs::remove_file(&log).ok();
            let out = p.join(format!("render/out/0123abcd/apps__{name}"));
            let o = std::process::Command::new(&front)
                .args(["template", name, &format!("charts/{name}"), "--output-dir"])
                .arg(&out)
                .current_dir(p)
                .output()
                .unwrap();
            assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
            let runs = std::fs::read_to_string(&log).unwrap_or_default();
            let front_asks = runs.lines().any(|l| {
                l.ends_with(&format!(
                    "--is-upgrade --output-dir {}",
                    p.join(format!("render/out.upgrade/0123abcd/apps__{name}")).display()
                ))
            });
            assert_eq!((gate, front_asks), (*asks, *asks), "{name}: {template:?}\n{runs}");
        }
        // The values: a file (`--values`) or a `--set` string a chart may render with `tpl`.
        // (name, values file, a --set entry, asks)
        type Row<'a> = (&'a str, &'a str, Option<(&'a str, &'a str)>, bool);
        let values: &[Row] = &[
            (
                "v-upgrade",
                "tag: '{{ if .Release.IsUpgrade }}x{{ end }}'\n",
                None,
                true,
            ),
            ("v-whole", "tag: '{{ $r := .Release }}{{ toJson $r }}'\n", None, true),
            ("v-bare", "tag: .Release.IsInstall\n", None, true),
            ("v-names", "tag: '{{ .Release.Name }}'\n", None, false),
            ("s-upgrade", "{}\n", Some(("tag", "{{ .Release.IsUpgrade }}")), true),
            ("s-names", "{}\n", Some(("tag", "{{ .Release.Name }}")), false),
        ];
        let c = p.join("charts/plain");
        std::fs::create_dir_all(c.join("templates")).unwrap();
        std::fs::write(c.join("Chart.yaml"), "name: plain\n").unwrap();
        std::fs::write(c.join("templates/t.yaml"), "kind: ConfigMap\n").unwrap();
        for (name, text, set, asks) in values {
            let mut r = crate::testkit::rel("helmfile.yaml", 1, "apps", name, crate::testkit::local("charts/plain"));
            r.values = crate::yaml::value(text).unwrap();
            r.set = set
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
                .collect();
            let status = crate::render::ReleaseStatus {
                name: name.to_string(),
                namespace: "apps".into(),
                chart: "charts/plain".into(),
                version: None,
                installed: true,
                rendered: true,
                reason: None,
                objects: 1,
                mirror: None,
            };
            let gate = asks_upgrade(p, &r, &[status]);
            std::fs::remove_file(&log).ok();
            let file = p.join(format!("{name}.yaml"));
            std::fs::write(&file, text).unwrap();
            let out = p.join(format!("render/out/0123abcd/apps__{name}"));
            let mut cmd = std::process::Command::new(&front);
            cmd.args(["template", name, "charts/plain", "--output-dir"])
                .arg(&out)
                .arg("--values")
                .arg(&file);
            for (k, v) in set.iter() {
                cmd.args(["--set", &format!("{k}={v}")]);
            }
            let o = cmd.current_dir(p).output().unwrap();
            assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
            let runs = std::fs::read_to_string(&log).unwrap_or_default();
            let front_asks = runs.lines().any(|l| l.contains(" --is-upgrade --output-dir "));
            assert_eq!((gate, front_asks), (*asks, *asks), "{name}: {text:?} {set:?}\n{runs}");
        }
    }
}
