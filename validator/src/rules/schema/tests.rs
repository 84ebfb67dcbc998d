//! `schema-valid` judged in the library with the built-in Kubernetes schemas: every fixture of
//! `tests/fixtures/schema` (fires with exactly what its header states, or stays silent), and the
//! cases no fixture shows (the cap on listed violations, the help per kind of violation, many
//! objects validated on several threads).

use super::schema_valid::check;
use crate::finding::Finding;
use crate::policy::Policy;
use crate::rules::Ctx;
use crate::schema::{SchemaSet, MAX_ISSUES_PER_OBJECT};
use crate::testkit;
use std::path::Path;

fn run(yaml: &str, policy: &Policy) -> Vec<Finding> {
    let set = SchemaSet::load(policy, Path::new(env!("CARGO_MANIFEST_DIR"))).expect("schemas load");
    let g = testkit::with_externals(testkit::graph("fixture", yaml), policy);
    check(&Ctx {
        schemas: Some(&set),
        ..testkit::ctx(&g, policy)
    })
}

/// Each firing fixture produces every finding its `# expect:` lines state and nothing else (so
/// a fixture with two defects cannot pass on one); each silent one produces none.
#[test]
fn every_schema_fixture_fires_with_what_it_states_or_stays_silent() {
    let dir = testkit::fixture_dir("schema");
    let mut stems: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".yaml").map(str::to_string))
        .collect();
    stems.sort();
    let mut failures = Vec::new();
    let (mut fired, mut silent) = (0, 0);
    for stem in &stems {
        let text = std::fs::read_to_string(dir.join(format!("{stem}.yaml"))).unwrap();
        let pfile = dir.join("policy").join(format!("{stem}.yaml"));
        let policy = if pfile.exists() {
            // Its real path as its name: `settings.crdFiles` are read relative to it.
            Policy::load(&pfile, pfile.to_str().unwrap(), crate::rules::family_of).unwrap()
        } else {
            testkit::default_fixture_policy()
        };
        let f = run(&text, &policy);
        let expect: Vec<&str> = text
            .lines()
            .take_while(|l| l.starts_with('#'))
            .filter_map(|l| l.strip_prefix("# expect: "))
            .collect();
        if stem.starts_with("fires-") {
            fired += 1;
            if expect.is_empty() {
                failures.push(format!("{stem}: states no `# expect:`"));
            }
            for w in &expect {
                if !f.iter().any(|f| f.message.contains(w)) {
                    failures.push(format!("{stem}: no finding contains `{w}`; got {f:#?}"));
                }
            }
            for x in &f {
                if !expect.iter().any(|w| x.message.contains(w)) {
                    failures.push(format!("{stem}: a finding its header does not state: {}", x.message));
                }
            }
        } else {
            silent += 1;
            if !f.is_empty() {
                failures.push(format!("{stem}: expected no finding; got {f:#?}"));
            }
        }
    }
    assert!(fired >= 5 && silent >= 3, "fixtures not found in {}", dir.display());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A ConfigMap with `n` misspelt top-level fields (each an `unknown field`).
fn configmap(name: &str, n: usize) -> String {
    let mut s = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\n");
    for i in 0..n {
        s.push_str(&format!("field{i:02}: x\n"));
    }
    s
}

#[test]
fn at_most_the_cap_is_listed_and_the_rest_is_counted() {
    let p = Policy::default();
    let yaml = [
        configmap("exact", MAX_ISSUES_PER_OBJECT),
        configmap("over", MAX_ISSUES_PER_OBJECT + 3),
    ]
    .join("---\n");
    let f = run(&yaml, &p);
    let of = |name: &str| -> Vec<&str> {
        f.iter()
            .filter(|f| f.object.as_ref().is_some_and(|o| o.name == name))
            .map(|f| f.message.as_str())
            .collect()
    };
    let exact = of("exact");
    assert_eq!(exact.len(), MAX_ISSUES_PER_OBJECT, "{exact:#?}");
    assert!(exact.iter().all(|m| m.contains(": unknown field")), "{exact:#?}");
    let over = of("over");
    assert_eq!(over.len(), MAX_ISSUES_PER_OBJECT + 1, "{over:#?}");
    assert_eq!(
        over.last().copied(),
        Some("3 more schema violations in this object are not listed")
    );
}

#[test]
fn each_kind_of_violation_has_its_own_help() {
    let p = Policy::default();
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndatas: {a: b}\n---\n\
                apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{image: x}]}\n---\n\
                apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: \"80\"}]}\n";
    let f = run(yaml, &p);
    let help = |needle: &str| -> &str {
        let x = f
            .iter()
            .find(|f| f.message.contains(needle))
            .unwrap_or_else(|| panic!("no finding with `{needle}`: {f:#?}"));
        x.help.as_deref().unwrap_or("")
    };
    assert!(help("datas: unknown field").contains("check its spelling"), "{f:#?}");
    assert!(
        help("containers[0].name: missing required field").contains("set this field"),
        "{f:#?}"
    );
    assert!(
        help("spec.ports[0].port: wrong type").contains("a value its schema accepts"),
        "{f:#?}"
    );
}

/// Past 256 objects validation runs on several threads (where the machine has them): every
/// object's violations are still reported, on that object, in order; with no object at all it
/// never splits (a split of nothing into chunks of 0 panics).
#[test]
fn many_objects_keep_their_own_findings() {
    let p = Policy::default();
    // No object (or only externals): nothing to validate, and nothing to split among threads.
    assert!(run("", &p).is_empty());
    let n = 300;
    let docs: Vec<String> = (0..n)
        .map(|i| {
            if i % 97 == 5 {
                format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndatas{i}: x\n")
            } else {
                format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\ndata: {{a: b}}\n")
            }
        })
        .collect();
    let f = run(&docs.join("---\n"), &p);
    let got: Vec<(String, String)> = f
        .iter()
        .map(|f| (f.object.as_ref().unwrap().name.clone(), f.message.clone()))
        .collect();
    let want: Vec<(String, String)> = [5, 102, 199, 296]
        .iter()
        .map(|i| {
            (
                format!("c{i}"),
                format!("datas{i}: unknown field (per the Kubernetes 1.35 schema)"),
            )
        })
        .collect();
    assert_eq!(got, want);
}
