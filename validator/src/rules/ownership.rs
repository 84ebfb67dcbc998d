//! Rule family: ownership. Every release is declared once, every `needs` entry names a release
//! of the same state file, every object has one writer, and every TLS Secret has one writer.

use super::{Ctx, Rule, Scope};
use crate::finding::{Finding, Severity};
use crate::graph::Object;
use crate::stack::Release;
use serde_json::Value;
use std::collections::BTreeMap;

pub static RULES: &[Rule] = &[
    Rule {
        id: RELEASE_ONE_OWNER,
        family: "ownership",
        severity: Severity::Error,
        summary: "a release (namespace/name) is declared more than once across all state files",
        explain: RELEASE_ONE_OWNER_DOC,
        scope: Scope::State,
        check: release_one_owner,
    },
    Rule {
        id: NEEDS_RESOLVABLE,
        family: "ownership",
        severity: Severity::Error,
        summary: "a `needs` entry names no release of the same state file",
        explain: NEEDS_RESOLVABLE_DOC,
        scope: Scope::State,
        check: needs_resolvable,
    },
    Rule {
        id: OBJECT_ONE_OWNER,
        family: "ownership",
        severity: Severity::Error,
        summary: "two releases (or one twice) render the same group/kind/namespace/name",
        explain: OBJECT_ONE_OWNER_DOC,
        scope: Scope::Objects,
        check: object_one_owner,
    },
    Rule {
        id: TLS_SECRET_ONE_OWNER,
        family: "ownership",
        severity: Severity::Error,
        summary: "a TLS Secret has two writers (Certificates, a rendered Secret, a pre-created Secret)",
        explain: TLS_SECRET_ONE_OWNER_DOC,
        scope: Scope::Objects,
        check: tls_secret_one_owner,
    },
];

const RELEASE_ONE_OWNER: &str = "release-one-owner";
const NEEDS_RESOLVABLE: &str = "needs-resolvable";
const OBJECT_ONE_OWNER: &str = "object-one-owner";
const TLS_SECRET_ONE_OWNER: &str = "tls-secret-one-owner";

const RELEASE_ONE_OWNER_DOC: &str = r#"## What it does
Reports every release (`namespace/name`) that is declared more than once across the state files
of an environment (the entry `helmfile.yaml` and every state it loads through `helmfiles:`),
whether or not each declaration is enabled. Each extra declaration is reported with its own
file:line and the line of the first one.

## Why it matters
Two declarations of one release are two owners with their own gates: the reference stack shipped
`nvcf-pki` in two states with different conditions, so which values were installed depended on
which state file helmfile processed last. helmfile itself does not refuse this across state files.

## How to fix
Keep exactly one declaration; move environment differences into values or a single `condition:`.

## Example
```yaml
# helmfile.yaml
helmfiles: [{path: pki/helmfile.yaml}]
releases:
  - name: nvcf-pki          # first declaration
    namespace: nvcf
    chart: ./charts/nvcf-pki
# pki/helmfile.yaml
releases:
  - name: nvcf-pki          # fires: second owner of nvcf/nvcf-pki
    namespace: nvcf
    chart: ../charts/nvcf-pki
```
"#;

const NEEDS_RESOLVABLE_DOC: &str = r#"## What it does
Checks every `needs` entry against the releases declared in the *same state file*, the way
helmfile resolves them: `name` means a release of that name in the needing release's namespace,
`namespace/name` names the namespace, `kubecontext/namespace/name` also a kube context (the
context is not modelled; namespace and name must match). Releases switched off (`installed:
false` or a false `condition:`) still count: helmfile accepts a need on them (it only warns).
A release declared in another state file does not count: helmfile resolves `needs` per state file.

## Why it matters
helmfile refuses to render a state with a dangling need ("depend(s) on an undefined release"),
and an operator then sees a render error instead of the line to fix. The gate reports the release,
its file and line, and the name that does not resolve (exit 1).

## How to fix
Name an existing release as `namespace/name`, or declare the missing release in the same state file.

## Example
```yaml
releases:
  - name: nvcf-pki
    namespace: nvcf
  - name: request-router
    namespace: nvcf
    needs:
      - nvcf/nvcf-pki      # silent
      - nvcf/nvcf-pkii     # fires: no release nvcf/nvcf-pkii in this state file
```
"#;

const OBJECT_ONE_OWNER_DOC: &str = r#"## What it does
Reports every object identity (API group, kind, namespace, name) that the rendered stack writes
more than once: by two releases, or twice by one release. Objects declared in the policy as
existing outside the stack are not counted here (a pre-created TLS Secret is
`tls-secret-one-owner`'s business).

## Why it matters
Helm refuses to install an object another release owns, or — with adoption annotations — the two
releases overwrite each other on every sync. Either way, the last writer silently wins.

## How to fix
Render the object from one release only; make the other chart reference it (a value such as
`existingSecret`/`create: false`).

## Example
```yaml
# release nvcf/nvcf-pki renders ConfigMap nvcf/nvcf-trust-bundle, and
# release nvcf/request-router renders ConfigMap nvcf/nvcf-trust-bundle too  -> fires
```
"#;

const TLS_SECRET_ONE_OWNER_DOC: &str = r#"## What it does
Finds every writer of each Secret that holds TLS material — cert-manager `Certificate`s
(`spec.secretName`), Gateways and Ingresses annotated for cert-manager's shims
(`cert-manager.io/issuer`, `cert-manager.io/cluster-issuer`; one Certificate per listener
`certificateRefs` / `tls[].secretName`), Secrets the stack renders, and Secrets the policy
declares pre-created (externals) — and reports every writer beyond the first. Precedence of the
first writer: the pre-created Secret, then a rendered Secret, then Certificates in render order.

## Why it matters
A TLS Secret has exactly one writer. A Certificate aimed at a customer's pre-created Secret makes
cert-manager overwrite the customer's certificate (or fight over it on each renewal); two
Certificates flip the Secret between two keys; a rendered Secret is reset on every helm upgrade.
Workers then see a certificate that does not match what was published.

## How to fix
Keep one writer: in `secret` mode render no Certificate (the customer owns the Secret); otherwise
give each Certificate its own `secretName` and do not render the Secret.

## Example
```yaml
# policy: externals: [{apiVersion: v1, kind: Secret, namespace: nvcf, name: router-tls}]
apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: router, namespace: nvcf}
spec: {secretName: router-tls}   # fires: the policy declares nvcf/router-tls pre-created
```
"#;

// ---------------------------------------------------------------------------------------------
// release-one-owner, needs-resolvable
// ---------------------------------------------------------------------------------------------

fn at(r: &Release) -> String {
    match r.line {
        Some(l) => format!("{}:{l}", r.file),
        None => r.file.clone(),
    }
}

fn release_one_owner(ctx: &Ctx) -> Vec<Finding> {
    let Some(state) = ctx.state else {
        return Vec::new();
    };
    let mut first: BTreeMap<String, &Release> = BTreeMap::new();
    let mut out = Vec::new();
    for r in &state.releases {
        match first.get(&r.id()) {
            None => {
                first.insert(r.id(), r);
            }
            Some(f) => out.push(
                Finding::state(RELEASE_ONE_OWNER, Some(ctx.environment), Some(r.id()), &r.file, r.line, format!("release {} is declared again here; it is already declared at {}", r.id(), at(f)))
                    .with_help("keep one declaration of the release; express environment differences with values or one `condition:`"),
            ),
        }
    }
    out
}

/// A parsed `needs` entry: (namespace, name), or why it cannot be parsed.
fn parse_need<'a>(need: &'a str, own_namespace: &'a str) -> Result<(&'a str, &'a str), String> {
    let parts: Vec<&str> = need.trim().split('/').collect();
    let (ns, name) = match parts.as_slice() {
        [name] => (own_namespace, *name),
        [ns, name] => (*ns, *name),
        [_ctx, ns, name] => (*ns, *name),
        _ => {
            return Err(format!(
                "`{need}` is not `name`, `namespace/name` or `kubecontext/namespace/name`"
            ))
        }
    };
    if name.trim().is_empty() {
        return Err(format!("`{need}` names no release"));
    }
    Ok((ns.trim(), name.trim()))
}

fn needs_resolvable(ctx: &Ctx) -> Vec<Finding> {
    let Some(state) = ctx.state else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for r in &state.releases {
        for need in &r.needs {
            let problem = match parse_need(need, &r.namespace) {
                Err(e) => Some((e, None)),
                Ok((ns, name)) => {
                    let same_file = state
                        .releases
                        .iter()
                        .any(|o| o.file == r.file && o.namespace == ns && o.name == name);
                    if same_file {
                        None
                    } else {
                        let elsewhere = state.releases.iter().find(|o| o.namespace == ns && o.name == name);
                        let similar = state.releases.iter().find(|o| o.file == r.file && o.name == name);
                        let hint = match (elsewhere, similar) {
                            (Some(o), _) => Some(format!("{}/{} is declared in {}, but helmfile resolves `needs` only within one state file; move the release or the need into one state file", o.namespace, o.name, at(o))),
                            (None, Some(o)) => Some(format!("did you mean `{}`? (the release {} is in namespace {})", o.id(), o.name, o.namespace)),
                            _ => None,
                        };
                        Some((format!("`{need}` names no release {ns}/{name} in {}", r.file), hint))
                    }
                }
            };
            if let Some((msg, hint)) = problem {
                out.push(
                    Finding::state(NEEDS_RESOLVABLE, Some(ctx.environment), Some(r.id()), &r.file, r.line, format!("release {}: needs {msg}; helmfile refuses to render this state", r.id()))
                        .with_help(hint.unwrap_or_else(|| "name an existing release of this state file as `namespace/name`, or declare the missing release".into())),
                );
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// object-one-owner
// ---------------------------------------------------------------------------------------------

/// `release nvcf/x (file:line)` for messages.
fn writer(o: &Object) -> String {
    let rel = match &o.prov.release {
        Some(r) => format!("release {r}"),
        None => "the input".to_string(),
    };
    match (&o.prov.file, o.prov.line) {
        (Some(f), Some(l)) => format!("{rel} ({f}:{l})"),
        (Some(f), None) => format!("{rel} ({f})"),
        _ => rel,
    }
}

fn object_one_owner(ctx: &Ctx) -> Vec<Finding> {
    let mut out = Vec::new();
    for (key, objs) in ctx.graph.duplicates() {
        let objs: Vec<&Object> = objs.into_iter().filter(|o| !o.prov.external).collect();
        let Some((first, rest)) = objs.split_first() else {
            continue;
        };
        for o in rest {
            let same = o.prov.release.is_some() && o.prov.release == first.prov.release;
            let who = if same {
                "rendered twice by the same release".to_string()
            } else {
                "rendered by two releases".to_string()
            };
            out.push(
                Finding::object(
                    OBJECT_ONE_OWNER,
                    o,
                    format!(
                        "{key} is {who}: {} and {}; the last writer silently wins",
                        writer(first),
                        writer(o)
                    ),
                )
                .with_help("render the object from one release only and let the other reference it"),
            );
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// tls-secret-one-owner
// ---------------------------------------------------------------------------------------------

/// Who writes a TLS Secret, in precedence order (the first writer is the owner).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum WriterKind {
    PreCreated,
    RenderedSecret,
    Certificate,
}

struct Writer<'a> {
    kind: WriterKind,
    obj: &'a Object,
    /// How it writes, for messages (`Certificate nvcf/router (spec.secretName)`).
    how: String,
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Secrets written by cert-manager's gateway-shim / ingress-shim for an annotated object.
fn shim_secrets(o: &Object) -> Vec<(String, String)> {
    let annotated = o.annotations().is_some_and(|a| {
        a.contains_key("cert-manager.io/issuer")
            || a.contains_key("cert-manager.io/cluster-issuer")
            || a.get("kubernetes.io/tls-acme").and_then(Value::as_str) == Some("true")
    });
    let ns = o.namespace.clone().unwrap_or_default();
    let mut out = Vec::new();
    if !annotated {
        return out;
    }
    match (o.group(), o.kind.as_str()) {
        ("gateway.networking.k8s.io", "Gateway") => {
            for l in o.at("/spec/listeners").and_then(Value::as_array).into_iter().flatten() {
                if l.pointer("/tls/mode").and_then(Value::as_str).unwrap_or("Terminate") != "Terminate"
                    || l.get("hostname").is_none()
                {
                    continue;
                }
                for r in l
                    .pointer("/tls/certificateRefs")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if str_of(r, "kind").unwrap_or("Secret") == "Secret" && str_of(r, "group").unwrap_or("").is_empty()
                    {
                        if let Some(name) = str_of(r, "name") {
                            out.push((str_of(r, "namespace").unwrap_or(&ns).to_string(), name.to_string()));
                        }
                    }
                }
            }
        }
        ("networking.k8s.io", "Ingress") => {
            for t in o.at("/spec/tls").and_then(Value::as_array).into_iter().flatten() {
                if let Some(name) = str_of(t, "secretName") {
                    out.push((ns.clone(), name.to_string()));
                }
            }
        }
        _ => {}
    }
    out.sort();
    out.dedup();
    out
}

fn tls_secret_one_owner(ctx: &Ctx) -> Vec<Finding> {
    // (namespace, secret name) → writers
    let mut writers: BTreeMap<(String, String), Vec<Writer>> = BTreeMap::new();
    let mut tls_secrets: std::collections::BTreeSet<(String, String)> = Default::default();
    for o in &ctx.graph.objects {
        let ns = o.namespace.clone().unwrap_or_default();
        match (o.group(), o.kind.as_str()) {
            ("cert-manager.io", "Certificate") if !o.prov.external => {
                if let Some(s) = o.str_at("/spec/secretName") {
                    tls_secrets.insert((ns.clone(), s.to_string()));
                    let how = format!("Certificate {ns}/{} (spec.secretName)", o.name);
                    writers.entry((ns, s.to_string())).or_default().push(Writer {
                        kind: WriterKind::Certificate,
                        obj: o,
                        how,
                    });
                }
            }
            ("", "Secret") => {
                let tls = o.str_at("/type") == Some("kubernetes.io/tls")
                    || ["/data/tls.crt", "/stringData/tls.crt"]
                        .iter()
                        .any(|p| o.at(p).is_some());
                if tls {
                    tls_secrets.insert((ns.clone(), o.name.clone()));
                }
                let (kind, how) = if o.prov.external {
                    (
                        WriterKind::PreCreated,
                        format!(
                            "Secret {ns}/{} declared pre-created in {}",
                            o.name,
                            o.prov.file.as_deref().unwrap_or("the policy")
                        ),
                    )
                } else {
                    (
                        WriterKind::RenderedSecret,
                        format!("Secret {ns}/{} rendered by {}", o.name, writer(o)),
                    )
                };
                writers
                    .entry((ns, o.name.clone()))
                    .or_default()
                    .push(Writer { kind, obj: o, how });
            }
            _ if !o.prov.external => {
                for (sns, s) in shim_secrets(o) {
                    tls_secrets.insert((sns.clone(), s.clone()));
                    let how = format!(
                        "{} via cert-manager's {} shim (certificate for {sns}/{s})",
                        o.display(),
                        o.kind
                    );
                    writers.entry((sns, s)).or_default().push(Writer {
                        kind: WriterKind::Certificate,
                        obj: o,
                        how,
                    });
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (key, mut ws) in writers {
        if ws.len() < 2 || !tls_secrets.contains(&key) {
            continue;
        }
        ws.sort_by_key(|w| w.kind);
        let owner = &ws[0];
        for (i, w) in ws.iter().enumerate().skip(1) {
            // Two rendered Secrets of one identity are object-one-owner's finding.
            if w.kind == WriterKind::RenderedSecret && ws[..i].iter().any(|p| p.kind == WriterKind::RenderedSecret) {
                continue;
            }
            // Two pre-created declarations are one object outside the stack.
            if w.kind == WriterKind::PreCreated {
                continue;
            }
            let (msg, help) = match owner.kind {
                WriterKind::PreCreated => (
                    format!("{} writes TLS Secret {}/{}, which {} declares pre-created: the stack would overwrite the customer's certificate", w.how, key.0, key.1, owner.obj.prov.file.as_deref().unwrap_or("the policy")),
                    "in secret mode the customer owns the Secret: render no Certificate or Secret for it (or remove the external declaration if the stack should own it)",
                ),
                _ => (
                    format!("{} is a second writer of TLS Secret {}/{}; it is already written by {}", w.how, key.0, key.1, owner.how),
                    "keep one writer per TLS Secret: give each Certificate its own secretName and do not render the Secret itself",
                ),
            };
            let needle = match (w.kind, w.obj.kind.as_str()) {
                (WriterKind::Certificate, "Certificate") | (WriterKind::Certificate, "Ingress") => "secretName:",
                (WriterKind::Certificate, _) => "certificateRefs:",
                _ => "kind: Secret",
            };
            out.push(Finding::object_at(TLS_SECRET_ONE_OWNER, w.obj, needle, msg).with_help(help));
        }
    }
    out
}

/// Test support shared by the ownership, pinning and insecure families: the fixture harness
/// (`tests/fixtures/<family>/`) and a small builder for helmfile state.
#[cfg(test)]
pub(crate) mod testkit {
    use crate::finding::Finding;
    use crate::graph::Graph;
    use crate::policy::Policy;
    use crate::render::ReleaseStatus;
    use crate::rules::{Ctx, Rule, Scope};
    use crate::stack::{ChartRef, EnvState, Release, Repository, Stack};
    use serde_json::Value;
    use std::path::PathBuf;

    pub fn fixture_dir(family: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(family)
    }

    /// The object rules of `rules` over one fixture (`<stem>.yaml`), with its policy
    /// (`policy/<stem>.yaml`) when it has one.
    pub fn run_fixture(family: &str, stem: &str, rules: &[Rule]) -> Vec<Finding> {
        let dir = fixture_dir(family);
        let text = std::fs::read_to_string(dir.join(format!("{stem}.yaml"))).expect("fixture readable");
        let pfile = dir.join("policy").join(format!("{stem}.yaml"));
        let policy = if pfile.exists() {
            Policy::load(&pfile, &format!("policy/{stem}.yaml")).expect("fixture policy parses")
        } else {
            Policy::default()
        };
        let g = crate::testutil::with_externals(crate::testutil::graph("fixture", &text), &policy);
        let ctx = crate::testutil::ctx(&g, &policy);
        rules
            .iter()
            .filter(|r| r.scope != Scope::State)
            .flat_map(|r| (r.check)(&ctx))
            .collect()
    }

    /// Runs every fixture of a family: `fires-<id>-*` must report `<id>`, `silent-<id>-*` must
    /// report nothing from the family. Returns the findings per fixture stem for snapshots.
    pub fn check_family(family: &str, rules: &[Rule]) -> Vec<(String, Vec<Finding>)> {
        let mut stems: Vec<String> = std::fs::read_dir(fixture_dir(family))
            .expect("fixture dir")
            .flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".yaml"))
                    .map(str::to_string)
            })
            .collect();
        stems.sort();
        assert!(!stems.is_empty(), "no fixtures for {family}");
        let mut out = Vec::new();
        for stem in stems {
            let (fires, rest) = match (stem.strip_prefix("fires-"), stem.strip_prefix("silent-")) {
                (Some(r), _) => (true, r),
                (_, Some(r)) => (false, r),
                _ => panic!("fixture {family}/{stem}.yaml must be named fires-<rule>-<case> or silent-<rule>-<case>"),
            };
            let id = rules
                .iter()
                .map(|r| r.id)
                .filter(|id| rest.starts_with(&format!("{id}-")))
                .max_by_key(|id| id.len())
                .unwrap_or_else(|| panic!("fixture {family}/{stem}.yaml names no rule of the {family} family"));
            let findings = run_fixture(family, &stem, rules);
            if fires {
                assert!(
                    findings.iter().any(|f| f.rule == id),
                    "{family}/{stem}.yaml must fire {id}; got {findings:#?}"
                );
            } else {
                assert!(
                    findings.is_empty(),
                    "{family}/{stem}.yaml must stay silent; got {findings:#?}"
                );
            }
            out.push((stem, findings));
        }
        out
    }

    /// Every object rule of the family has a firing and a silent fixture.
    pub fn every_object_rule_has_fixtures(family: &str, rules: &[Rule]) {
        let names: Vec<String> = std::fs::read_dir(fixture_dir(family))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        for r in rules.iter().filter(|r| r.scope != Scope::State) {
            for kind in ["fires", "silent"] {
                assert!(
                    names.iter().any(|n| n.starts_with(&format!("{kind}-{}-", r.id))),
                    "rule {} has no {kind}-{}-*.yaml fixture",
                    r.id,
                    r.id
                );
            }
        }
    }

    pub fn local(path: &str) -> ChartRef {
        ChartRef::Local { path: path.to_string() }
    }

    pub fn repo(repo: &str, chart: &str, url: &str, oci: bool) -> ChartRef {
        ChartRef::Repo {
            repo: repo.into(),
            chart: chart.into(),
            url: Some(url.into()),
            oci,
        }
    }

    /// A release declared at `file:line`.
    pub fn rel(file: &str, line: usize, namespace: &str, name: &str, chart_ref: ChartRef) -> Release {
        let chart = match &chart_ref {
            ChartRef::Local { path } if path.starts_with("..") => path.clone(),
            ChartRef::Local { path } => format!("./{path}"),
            ChartRef::Repo { repo, chart, .. } => format!("{repo}/{chart}"),
            ChartRef::Oci { url } => url.clone(),
            ChartRef::Other { raw } => raw.clone(),
        };
        Release {
            name: name.into(),
            namespace: namespace.into(),
            chart,
            chart_ref,
            version: None,
            devel: false,
            installed: true,
            needs: Vec::new(),
            declared_values: Vec::new(),
            values: Value::Null,
            set: Vec::new(),
            file: file.into(),
            line: Some(line),
        }
    }

    pub fn repository(name: &str, url: &str, oci: bool) -> Repository {
        Repository {
            name: name.into(),
            url: url.into(),
            oci,
            file: "helmfile.yaml".into(),
        }
    }

    pub fn state(releases: Vec<Release>, repositories: Vec<Repository>) -> EnvState {
        let mut files: Vec<String> = Vec::new();
        for r in &releases {
            if !files.contains(&r.file) {
                files.push(r.file.clone());
            }
        }
        EnvState {
            name: "default".into(),
            state_files: files,
            releases,
            repositories,
        }
    }

    /// A context for state rules.
    pub fn ctx<'a>(
        graph: &'a Graph,
        policy: &'a Policy,
        stack: &'a Stack,
        state: &'a EnvState,
        status: &'a [ReleaseStatus],
    ) -> Ctx<'a> {
        Ctx {
            environment: "default",
            stack: Some(stack),
            state: Some(state),
            graph,
            policy,
            status,
            now: time::macros::datetime!(2026-11-29 12:00 UTC),
            schemas: None,
        }
    }

    /// Run one rule over a state.
    pub fn run_state(
        rule: &Rule,
        state: &EnvState,
        stack: &Stack,
        policy: &Policy,
        status: &[ReleaseStatus],
    ) -> Vec<Finding> {
        let g = Graph::new("default", Vec::new());
        (rule.check)(&ctx(&g, policy, stack, state, status))
    }
}

#[cfg(test)]
mod tests {
    use super::testkit::*;
    use super::*;
    use crate::graph::{Graph, Provenance};
    use crate::policy::Policy;
    use crate::stack::Stack;

    fn rule(id: &str) -> &'static Rule {
        RULES.iter().find(|r| r.id == id).unwrap()
    }

    #[test]
    fn fixtures_fire_and_stay_silent() {
        every_object_rule_has_fixtures("ownership", RULES);
        for (stem, findings) in check_family("ownership", RULES) {
            insta::assert_json_snapshot!(stem, findings);
        }
    }

    #[test]
    fn release_declared_in_two_state_files() {
        let mut gated = rel("pki/helmfile.yaml", 3, "nvcf", "nvcf-pki", local("charts/nvcf-pki"));
        gated.installed = false; // a disabled declaration is still a second owner
        let st = state(
            vec![
                rel("helmfile.yaml", 10, "nvcf", "nvcf-pki", local("charts/nvcf-pki")),
                rel(
                    "helmfile.yaml",
                    20,
                    "nvcf",
                    "request-router",
                    local("charts/request-router"),
                ),
                gated,
                // near miss: the same name in another namespace is another release
                rel(
                    "pki/helmfile.yaml",
                    9,
                    "nvcf-staging",
                    "nvcf-pki",
                    local("charts/nvcf-pki"),
                ),
            ],
            vec![],
        );
        let f = run_state(rule(RELEASE_ONE_OWNER), &st, &Stack::default(), &Policy::default(), &[]);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].rule, "release-one-owner");
        assert_eq!(f[0].release.as_deref(), Some("nvcf/nvcf-pki"));
        assert_eq!(
            f[0].source.as_ref().map(|s| (s.file.as_str(), s.line)),
            Some(("pki/helmfile.yaml", Some(3)))
        );
        assert!(f[0].message.contains("helmfile.yaml:10"), "{}", f[0].message);
        insta::assert_json_snapshot!(f);
    }

    #[test]
    fn needs_resolve_within_one_state_file() {
        let mut pki_off = rel("helmfile.yaml", 5, "nvcf", "nvcf-pki", local("charts/nvcf-pki"));
        pki_off.installed = false; // helmfile only warns about a need on a disabled release
        let mut router = rel(
            "helmfile.yaml",
            12,
            "nvcf",
            "request-router",
            local("charts/request-router"),
        );
        router.needs = vec![
            "nvcf-pki".into(),
            "nvcf/nvcf-pki".into(),
            "kind-nvcf/nvcf/nvcf-pki".into(),
        ];
        let f = run_state(
            rule(NEEDS_RESOLVABLE),
            &state(vec![pki_off, router], vec![]),
            &Stack::default(),
            &Policy::default(),
            &[],
        );
        assert!(f.is_empty(), "{f:#?}");
    }

    #[test]
    fn dangling_needs_fire_with_file_line_and_hint() {
        let mut gw = rel(
            "helmfile.yaml",
            30,
            "nvcf-gateway",
            "gateway-routes",
            local("charts/gateway-routes"),
        );
        gw.needs = vec![
            "nvcf/request-routr".into(), // typo
            "request-router".into(),     // bare name: gateway's own namespace
            "openbao/openbao".into(),    // declared in another state file
            "a/b/c/d".into(),            // malformed
        ];
        let st = state(
            vec![
                rel(
                    "helmfile.yaml",
                    20,
                    "nvcf",
                    "request-router",
                    local("charts/request-router"),
                ),
                rel(
                    "openbao/helmfile.yaml",
                    4,
                    "openbao",
                    "openbao",
                    repo("openbao", "openbao", "https://openbao.github.io/openbao-helm", false),
                ),
                gw,
            ],
            vec![],
        );
        let f = run_state(rule(NEEDS_RESOLVABLE), &st, &Stack::default(), &Policy::default(), &[]);
        assert_eq!(f.len(), 4, "{f:#?}");
        assert!(f
            .iter()
            .all(|f| f.rule == "needs-resolvable" && f.source.as_ref().unwrap().line == Some(30)));
        assert!(
            f[1].help
                .as_deref()
                .unwrap()
                .contains("did you mean `nvcf/request-router`"),
            "{:?}",
            f[1].help
        );
        assert!(
            f[2].help.as_deref().unwrap().contains("openbao/helmfile.yaml:4"),
            "{:?}",
            f[2].help
        );
        insta::assert_json_snapshot!(f);
    }

    fn obj(yaml: &str, release: &str, external: bool) -> crate::graph::Object {
        let v = crate::yaml::value(yaml).unwrap();
        let prov = Provenance {
            environment: "default".into(),
            release: (!external).then(|| release.to_string()),
            file: Some(if external {
                "validator-policy.yaml".into()
            } else {
                format!("charts/{}/templates/x.yaml", release.rsplit('/').next().unwrap())
            }),
            line: Some(1),
            external,
            ..Provenance::default()
        };
        crate::graph::Object::from_value(v, Some("nvcf"), prov).unwrap()
    }

    #[test]
    fn object_written_by_two_releases() {
        let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nvcf-trust-bundle}\n";
        let g = Graph::new(
            "default",
            vec![obj(cm, "nvcf/nvcf-pki", false), obj(cm, "nvcf/request-router", false)],
        );
        let p = Policy::default();
        let f = (rule(OBJECT_ONE_OWNER).check)(&crate::testutil::ctx(&g, &p));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].release.as_deref(), Some("nvcf/request-router"));
        assert!(f[0].message.contains("rendered by two releases: release nvcf/nvcf-pki (charts/nvcf-pki/templates/x.yaml:1) and release nvcf/request-router"), "{}", f[0].message);
    }

    #[test]
    fn shim_annotated_gateway_alone_is_one_writer() {
        let yaml = "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata:\n  name: nvcf\n  namespace: nvcf-gateway\n  annotations: {cert-manager.io/cluster-issuer: openbao}\nspec:\n  listeners:\n    - {name: llm, protocol: HTTPS, port: 443, hostname: llm.example.com, tls: {certificateRefs: [{name: llm-tls}]}}\n    - {name: raw, protocol: TLS, port: 8443, hostname: raw.example.com, tls: {mode: Passthrough, certificateRefs: [{name: llm-tls}]}}\n";
        let g = crate::testutil::graph("default", yaml);
        let p = Policy::default();
        assert!((rule(TLS_SECRET_ONE_OWNER).check)(&crate::testutil::ctx(&g, &p)).is_empty());
        // The same Gateway plus an Ingress annotated for the ingress-shim writing the same Secret.
        let ingress = "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: llm\n  namespace: nvcf-gateway\n  annotations: {cert-manager.io/issuer: local}\nspec:\n  tls: [{hosts: [llm.example.com], secretName: llm-tls}]\n";
        let g = crate::testutil::graph("default", &format!("{yaml}{ingress}"));
        let f = (rule(TLS_SECRET_ONE_OWNER).check)(&crate::testutil::ctx(&g, &p));
        assert_eq!(f.len(), 1, "{f:#?}");
        assert!(
            f[0].message
                .starts_with("Ingress nvcf-gateway/llm via cert-manager's Ingress shim"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn externals_are_not_object_owners_but_are_tls_secret_owners() {
        let secret =
            "apiVersion: v1\nkind: Secret\nmetadata: {name: router-tls, namespace: nvcf}\ntype: kubernetes.io/tls\n";
        let g = Graph::new(
            "default",
            vec![obj(secret, "", true), obj(secret, "nvcf/nvcf-pki", false)],
        );
        let p = Policy::default();
        let c = crate::testutil::ctx(&g, &p);
        assert!((rule(OBJECT_ONE_OWNER).check)(&c).is_empty());
        let f = (rule(TLS_SECRET_ONE_OWNER).check)(&c);
        assert_eq!(f.len(), 1, "{f:#?}");
        assert_eq!(f[0].release.as_deref(), Some("nvcf/nvcf-pki"));
        assert!(
            f[0].message.contains("validator-policy.yaml declares pre-created"),
            "{}",
            f[0].message
        );
        // Only the external: one writer, silent.
        let g = Graph::new("default", vec![obj(secret, "", true)]);
        assert!((rule(TLS_SECRET_ONE_OWNER).check)(&crate::testutil::ctx(&g, &p)).is_empty());
    }
}
