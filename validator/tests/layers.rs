//! The layers of `validator/src`, and the check that keeps them: every top-level module sits in
//! one layer of [`LAYERS`], and no module imports one in a higher layer (nor, within a layer,
//! closes a cycle). The module graph is derived from the source with `syn`: every `use` tree and
//! every path (in code and inside macro invocations) that names `crate::x`, `$crate::x` or climbs
//! with `super::` out of its top-level module. Comments and string literals are not code, so they
//! never count.
//!
//! Unit tests (`#[cfg(test)]` items and the files of `#[cfg(test)] mod x;`) are checked like the
//! code of their module: a rule's tests use the Rules layer and below, never the sink or a report
//! (what needs those is a test of a higher module, or an integration test in this folder). Test
//! code may also use the test kit ([`TEST_ONLY`]), which itself uses nothing above its own layer;
//! nothing else may use it.
//!
//! CONTRIBUTING.md shows [`picture`]; the last test keeps the two the same.

use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// Bottom to top. A module may use its own layer (without a cycle) and the layers below it.
#[rustfmt::skip]
const LAYERS: &[(&str, &[&str], &str)] = &[
    ("Yaml",   &["meaning", "pki", "redact", "shell", "yaml"], "leaf libraries: text, values by meaning, shell words, echo limits, X.509"),
    ("Tools",  &["tools"], "running helm/helmfile; their output, paths, build documents"),
    ("Stack",  &["stack"], "helmfile state model, lock, Options"),
    ("Render", &["pipeline", "render"], "rendered docs, Provenance, ReleaseStatus, cache"),
    ("Model",  &["config_files", "finding", "fold", "graph", "pod_shape", "router"], "objects, kinds, pod shapes, config files, findings, folding by cause"),
    ("Policy", &["policy", "schema", "scope"], "validated settings, kind scopes, schemas"),
    ("Rules",  &["rules"], "pure checks over Ctx"),
    ("Sink",   &["sink"], "severities, overrides, waivers"),
    ("Report", &["diagram", "report"], "formats, Report, pictures"),
    ("Engine", &["engine"], "the order of a run"),
    ("Cli",    &["commands", "probe"], "subcommands (main.rs: flags, exit codes)"),
];

/// Test-only modules, usable only from test code, each with the highest layer it may use itself
/// (the test kit builds graphs and contexts for rule tests: it stops at Rules; the seeded
/// generator of the property-style tests uses nothing of the crate).
const TEST_ONLY: &[(&str, &str)] = &[("seeded", "Yaml"), ("testkit", "Rules")];

fn test_only(module: &str) -> Option<usize> {
    TEST_ONLY
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, layer)| LAYERS.iter().position(|(l, _, _)| l == layer).unwrap())
}

/// No file under `src/rules/` is longer than this: a rule that needs more is two concerns.
const RULE_FILE_MAX_LINES: usize = 550;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// One reference from one module to another top-level module.
#[derive(Debug, Clone)]
struct Use {
    from: String,
    to: String,
    /// `crate::rules::find` as written (resolved from `super::`).
    path: String,
    file: String,
    line: usize,
    test: bool,
}

struct Walker<'a> {
    file: String,
    /// The module path of the item being visited (`["rules", "pki", "tests"]`).
    module: Vec<String>,
    test: usize,
    uses: &'a mut Vec<Use>,
    /// `mod x;` declarations: (module path, test, file to read).
    children: Vec<(Vec<String>, bool, PathBuf)>,
    /// Where the files of `mod x;` declared here live.
    dir: PathBuf,
    /// The folder of this file (`#[path]` is relative to it).
    file_dir: PathBuf,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && {
            let t = a.meta.require_list().map(|l| l.tokens.to_string()).unwrap_or_default();
            t.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == "test") && !t.contains("not")
        }
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs
        .iter()
        .find(|a| a.path().is_ident("path"))
        .and_then(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    use syn::Item::*;
    match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        ExternCrate(i) => &i.attrs,
        Fn(i) => &i.attrs,
        ForeignMod(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Mod(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        TraitAlias(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => &[],
    }
}

impl Walker<'_> {
    /// Record `segments` (as written) if they leave this top-level module.
    fn reference(&mut self, segments: &[String], line: usize) {
        let Some(first) = segments.first() else { return };
        let (target, rest) = match first.as_str() {
            "crate" | "$crate" => match segments.get(1) {
                Some(t) => (t.clone(), &segments[2..]),
                None => return,
            },
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                if ups < self.module.len() {
                    return; // stays inside its top-level module
                }
                match segments.get(ups) {
                    Some(t) => (t.clone(), &segments[ups + 1..]),
                    None => return,
                }
            }
            _ => return,
        };
        let from = self.module[0].clone();
        if target == from {
            return;
        }
        let mut path = format!("crate::{target}");
        for s in rest {
            path.push_str("::");
            path.push_str(s);
        }
        self.uses.push(Use {
            from,
            to: target,
            path,
            file: self.file.clone(),
            line,
            test: self.test > 0,
        });
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.reference(prefix, n.ident.span().start().line);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.reference(prefix, r.ident.span().start().line);
                prefix.pop();
            }
            syn::UseTree::Glob(g) => {
                let line = g.star_token.spans[0].start().line;
                prefix.push("*".into());
                self.reference(prefix, line);
                prefix.pop();
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    /// Paths inside a macro invocation (`format!`, `vec!`, `assert!`): `crate :: a :: b` and
    /// `super :: …` token runs.
    fn tokens(&mut self, ts: TokenStream) {
        let flat: Vec<TokenTree> = ts.into_iter().collect();
        let mut i = 0;
        while i < flat.len() {
            match &flat[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) if id == "crate" || id == "super" => {
                    let dollar = i > 0 && matches!(&flat[i - 1], TokenTree::Punct(p) if p.as_char() == '$');
                    let mut segs = vec![if dollar { "$crate".to_string() } else { id.to_string() }];
                    let line = id.span().start().line;
                    let mut j = i + 1;
                    while j + 2 < flat.len() {
                        let colons = matches!(&flat[j], TokenTree::Punct(p) if p.as_char() == ':')
                            && matches!(&flat[j + 1], TokenTree::Punct(p) if p.as_char() == ':');
                        match (&flat[j + 2], colons) {
                            (TokenTree::Ident(next), true) => {
                                segs.push(next.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    self.reference(&segs, line);
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let test = is_cfg_test(item_attrs(item));
        self.test += usize::from(test);
        syn::visit::visit_item(self, item);
        self.test -= usize::from(test);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let test = is_cfg_test(&f.attrs);
        self.test += usize::from(test);
        syn::visit::visit_impl_item_fn(self, f);
        self.test -= usize::from(test);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let name = m.ident.to_string();
        match &m.content {
            Some((_, items)) => {
                self.module.push(name.clone());
                let inner = self.dir.join(&name);
                let dir = std::mem::replace(&mut self.dir, inner);
                for i in items {
                    self.visit_item(i);
                }
                self.dir = dir;
                self.module.pop();
            }
            None => {
                let mut module = self.module.clone();
                module.push(name.clone());
                let file = match path_attr(&m.attrs) {
                    Some(p) => self.file_dir.join(p),
                    None => {
                        let flat = self.dir.join(format!("{name}.rs"));
                        if flat.exists() {
                            flat
                        } else {
                            self.dir.join(&name).join("mod.rs")
                        }
                    }
                };
                self.children.push((module, self.test > 0, file));
            }
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if let Some(first) = p.segments.first() {
            self.reference(&segs, first.ident.span().start().line);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.visit_path(&m.path);
        self.tokens(m.tokens.clone());
    }
}

/// Walk one file as module `module`; returns its `mod x;` children.
fn walk_file(
    text: &str,
    rel: &str,
    module: Vec<String>,
    test: bool,
    dir: PathBuf,
    file_dir: PathBuf,
    uses: &mut Vec<Use>,
) -> Vec<(Vec<String>, bool, PathBuf)> {
    let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{rel}: not parseable by syn: {e}"));
    let mut w = Walker {
        file: rel.to_string(),
        module,
        test: usize::from(test),
        uses,
        children: Vec::new(),
        file_dir,
        dir,
    };
    w.visit_file(&file);
    w.children
}

/// Every reference between top-level modules, following `mod` declarations from `lib.rs`; and
/// every file that was read.
fn module_graph(root: &Path) -> (BTreeSet<String>, Vec<Use>, BTreeSet<PathBuf>) {
    let mut uses = Vec::new();
    let mut read = BTreeSet::new();
    let lib = root.join("lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    let file = syn::parse_file(&text).unwrap();
    read.insert(lib.clone());
    let mut top = BTreeSet::new();
    let mut queue = Vec::new();
    for item in &file.items {
        if let syn::Item::Mod(m) = item {
            let name = m.ident.to_string();
            top.insert(name.clone());
            let flat = root.join(format!("{name}.rs"));
            let (file, dir) = if flat.exists() {
                (flat, root.join(&name))
            } else {
                (root.join(&name).join("mod.rs"), root.join(&name))
            };
            assert!(m.content.is_none(), "lib.rs: write module {name} in its own file");
            queue.push((vec![name], is_cfg_test(&m.attrs), file, dir));
        }
    }
    while let Some((module, test, file, dir)) = queue.pop() {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let rel = file
            .strip_prefix(root.parent().unwrap())
            .unwrap_or(&file)
            .display()
            .to_string();
        read.insert(file.clone());
        for (child, ctest, cfile) in walk_file(
            &text,
            &rel,
            module,
            test,
            dir,
            file.parent().unwrap().to_path_buf(),
            &mut uses,
        ) {
            let cdir = if cfile.file_name().is_some_and(|n| n == "mod.rs") {
                cfile.parent().unwrap().to_path_buf()
            } else {
                cfile.with_extension("")
            };
            queue.push((child, ctest, cfile, cdir));
        }
    }
    (top, uses, read)
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods, _)| mods.contains(&module))
}

/// What is wrong with these references: upward uses (test code included), uses of the test kit
/// outside tests, modules not in the table, cycles inside a layer.
fn violations(top: &BTreeSet<String>, uses: &[Use]) -> Vec<String> {
    let mut out = Vec::new();
    for m in top {
        if layer_of(m).is_none() && test_only(m).is_none() {
            out.push(format!("module `{m}` is in no layer: add it to LAYERS in validator/tests/layers.rs and the picture in CONTRIBUTING.md"));
        }
    }
    let mut within: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for u in uses {
        if !top.contains(&u.to) {
            out.push(format!(
                "{}:{}: `{}` names `{}`, which is not a module",
                u.file, u.line, u.path, u.to
            ));
            continue;
        }
        let code = if u.test { "test code of " } else { "" };
        if test_only(&u.to).is_some() {
            if !u.test {
                out.push(format!(
                    "{}:{}: `{}` uses `{}` outside test code",
                    u.file, u.line, u.from, u.path
                ));
            }
            continue;
        }
        if let Some(cap) = test_only(&u.from) {
            match layer_of(&u.to) {
                Some(b) if b > cap => out.push(format!(
                    "{}:{}: test kit `{}` (up to layer {}) uses `{}` (layer {}, above it)",
                    u.file, u.line, u.from, LAYERS[cap].0, u.path, LAYERS[b].0
                )),
                _ => {}
            }
            continue;
        }
        let (Some(a), Some(b)) = (layer_of(&u.from), layer_of(&u.to)) else {
            continue;
        };
        if b > a {
            out.push(format!(
                "{}:{}: {code}`{}` (layer {}) uses `{}` (layer {}, above it)",
                u.file, u.line, u.from, LAYERS[a].0, u.path, LAYERS[b].0
            ));
        } else if a == b {
            within.entry(u.from.as_str()).or_default().insert(u.to.as_str());
        }
    }
    // A cycle inside a layer: a depth-first search for a back edge.
    fn dfs<'a>(
        n: &'a str,
        g: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        out: &mut Vec<String>,
    ) {
        if let Some(pos) = stack.iter().position(|s| *s == n) {
            out.push(format!("cycle inside a layer: {} -> {n}", stack[pos..].join(" -> ")));
            return;
        }
        if !done.insert(n) {
            return;
        }
        stack.push(n);
        for m in g.get(n).into_iter().flatten() {
            dfs(m, g, stack, done, out);
        }
        stack.pop();
    }
    let mut done = BTreeSet::new();
    for n in within.keys() {
        dfs(n, &within, &mut Vec::new(), &mut done, &mut out);
    }
    out
}

/// The layer picture CONTRIBUTING.md shows, top layer first.
fn picture() -> String {
    let mut s = String::from("```text\n");
    for (name, mods, what) in LAYERS.iter().rev() {
        s.push_str(&format!("{name:<7} {:<38} {what}\n", mods.join(", ")));
    }
    s.push_str("```\n");
    s
}

#[test]
fn no_module_imports_a_higher_layer() {
    let root = src();
    let (top, uses, _) = module_graph(&root);
    let v = violations(&top, &uses);
    assert!(v.is_empty(), "{} layer violation(s):\n{}", v.len(), v.join("\n"));
}

#[test]
fn every_source_file_is_a_module_the_check_read() {
    let root = src();
    let (_, _, read) = module_graph(&root);
    let mut unread = Vec::new();
    for e in walkdir::WalkDir::new(&root) {
        let p = e.unwrap().into_path();
        if p.extension().is_some_and(|x| x == "rs") && p != root.join("main.rs") && !read.contains(&p) {
            unread.push(p.display().to_string());
        }
    }
    assert!(unread.is_empty(), "files no `mod` declaration reaches: {unread:?}");
}

#[test]
fn no_rule_file_is_over_the_limit() {
    let mut long = Vec::new();
    for e in walkdir::WalkDir::new(src().join("rules")) {
        let p = e.unwrap().into_path();
        if p.extension().is_some_and(|x| x == "rs") {
            let n = std::fs::read_to_string(&p).unwrap().lines().count();
            if n > RULE_FILE_MAX_LINES {
                long.push(format!("{}: {n} lines", p.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "rule files over {RULE_FILE_MAX_LINES} lines (split along their concerns):\n{}",
        long.join("\n")
    );
}

#[test]
fn contributing_shows_the_layers_this_test_enforces() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../CONTRIBUTING.md")).unwrap();
    let want = picture();
    assert!(
        text.contains(&want),
        "CONTRIBUTING.md must show the layer picture exactly:\n{want}"
    );
}

/// The check itself: a synthetic tree with an upward `use`, an upward path in a macro, a `super::`
/// climb, an upward import in test code (refused), the test kit in test code (allowed) and outside
/// it (refused), the test kit reaching above its layer (refused), and a cycle.
#[test]
fn the_check_finds_what_it_should_and_nothing_else() {
    let files = [
        (
            vec!["policy"],
            false,
            "use crate::rules::find;\n// use crate::engine::x; a comment\nfn f() { let _ = \"crate::engine::x\"; format!(\"{}\", crate::sink::y()); }\n#[cfg(test)]\nmod tests { use crate::engine::Run; use crate::testkit; use crate::graph::Object; }\n",
        ),
        (vec!["testkit"], true, "use crate::rules::Ctx;\nfn h() { crate::report::print(); }\n"),
        (vec!["yaml"], false, "fn g() { super::report::print(); }\nuse crate::testkit::graph;\n"),
        (vec!["pki"], false, "use crate::redact::x;\n"),
        (vec!["redact"], false, "use crate::{yaml::y, pki::{self, z}};\n"),
        (vec!["rules", "pki", "inner"], false, "use super::super::helpers; use super::super::super::graph::Object;\n"),
    ];
    let mut uses = Vec::new();
    for (module, test, text) in files {
        let module: Vec<String> = module.into_iter().map(String::from).collect();
        let rel = format!("{}.rs", module.join("/"));
        walk_file(
            text,
            &rel,
            module,
            test,
            PathBuf::from("/nowhere"),
            PathBuf::from("/nowhere"),
            &mut uses,
        );
    }
    let top: BTreeSet<String> = LAYERS
        .iter()
        .flat_map(|(_, m, _)| m.iter())
        .chain(TEST_ONLY.iter().map(|(m, _)| m))
        .map(|s| s.to_string())
        .collect();
    let v = violations(&top, &uses);
    let want = [
        "policy.rs:1: `policy` (layer Policy) uses `crate::rules::find` (layer Rules, above it)",
        "policy.rs:3: `policy` (layer Policy) uses `crate::sink::y` (layer Sink, above it)",
        "policy.rs:5: test code of `policy` (layer Policy) uses `crate::engine::Run` (layer Engine, above it)",
        "testkit.rs:2: test kit `testkit` (up to layer Rules) uses `crate::report::print` (layer Report, above it)",
        "yaml.rs:1: `yaml` (layer Yaml) uses `crate::report::print` (layer Report, above it)",
        "yaml.rs:2: `yaml` uses `crate::testkit::graph` outside test code",
    ];
    for w in want {
        assert!(v.iter().any(|x| x == w), "missing {w:?} in {v:#?}");
    }
    assert!(
        v.iter()
            .any(|x| x.starts_with("cycle inside a layer:") && x.contains("pki") && x.contains("redact")),
        "{v:#?}"
    );
    assert_eq!(v.len(), want.len() + 1, "{v:#?}");
    // `rules::pki::inner` reaching `graph` by three `super`s is a reference to `graph` (allowed).
    assert!(uses
        .iter()
        .any(|u| u.from == "rules" && u.to == "graph" && u.path == "crate::graph::Object"));
    assert!(!uses.iter().any(|u| u.to == "helpers"));
}
