//! Files carried in ConfigMaps and Secrets, read as the software that mounts them reads them:
//! a YAML, JSON, TOML, INI/properties or HCL file (kubeconfig and the worker profile are YAML)
//! becomes a value tree whose leaves the insecure-transport rules judge by key and value; a page
//! of markup (HTML, XML, Markdown) or prose is not configuration, so a hyperlink in it is not a
//! dial address; a shell script is a script.
//!
//! The format is decided by the file name's extension when it names one, otherwise by the
//! content (a shebang, markup, then each parser in turn, the strictest first). A file no parser
//! reads is [`Content::Other`]: the rules read it as text, as before (never silence by default).

use crate::graph::Object;
use serde_json::Value;

/// The formats a configuration file is parsed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
    Toml,
    Ini,
    Hcl,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Yaml => "YAML",
            Format::Json => "JSON",
            Format::Toml => "TOML",
            Format::Ini => "INI",
            Format::Hcl => "HCL",
        }
    }
}

/// What a file is.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Configuration, parsed: a mapping or a list.
    Config(Format, Value),
    /// A shell script (shebang or shell extension).
    Script,
    /// Markup or prose (HTML, XML, SVG, Markdown, plain text by extension): not configuration.
    Markup,
    /// Text no parser reads (nginx, templates, unknown syntaxes): read as text by the rules.
    Other,
    /// Nested deeper than the readers go ([`MAX_NESTING`]): not parsed, so what it sets is
    /// unknown (the rules decide whether that matters; it is never read as safe).
    TooDeep,
}

/// Bracket nesting beyond which no parser is tried (parsers recurse; nothing grows with input).
pub const MAX_NESTING: usize = 32;

/// One file of a ConfigMap or Secret: its key, its text and whether it came from a Secret (its
/// values are then never echoed beyond switch names and booleans).
#[derive(Debug, Clone)]
pub struct File<'a> {
    pub key: &'a str,
    pub text: std::borrow::Cow<'a, str>,
    pub secret: bool,
}

/// The files of a ConfigMap (`data`) or a Secret (`stringData`, and `data` decoded from base64
/// when it is UTF-8 text); none for other kinds.
pub fn files(obj: &Object) -> Vec<File<'_>> {
    use base64::Engine as _;
    let mut out = Vec::new();
    let text_of = |p: &str| obj.at(p).and_then(Value::as_object);
    match (obj.group(), obj.kind.as_str()) {
        ("", "ConfigMap") => {
            for (k, v) in text_of("/data").into_iter().flatten() {
                if let Some(s) = v.as_str() {
                    out.push(File {
                        key: k,
                        text: s.into(),
                        secret: false,
                    });
                }
            }
        }
        ("", "Secret") => {
            for (k, v) in text_of("/stringData").into_iter().flatten() {
                if let Some(s) = v.as_str() {
                    out.push(File {
                        key: k,
                        text: s.into(),
                        secret: true,
                    });
                }
            }
            for (k, v) in text_of("/data").into_iter().flatten() {
                let Some(s) = v.as_str() else { continue };
                let clean: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(clean) else {
                    continue;
                };
                if let Ok(s) = String::from_utf8(bytes) {
                    out.push(File {
                        key: k,
                        text: s.into(),
                        secret: true,
                    });
                }
            }
        }
        _ => {}
    }
    out
}

/// What the file named `name` holding `text` is.
pub fn read(name: &str, text: &str) -> Content {
    match parse(name, text) {
        // Indentation (YAML) and dotted keys (TOML, HCL) nest without brackets: a document with a
        // value below more than MAX_NESTING keys, which `leaves` does not reach, is as unknown
        // as one too deep to parse.
        Content::Config(_, v) if beyond_leaves(&v, MAX_NESTING) => Content::TooDeep,
        c => c,
    }
}

/// Whether `v` holds a value below more than `left` keys and list indices.
fn beyond_leaves(v: &Value, left: usize) -> bool {
    let mut children: Box<dyn Iterator<Item = &Value>> = match v {
        Value::Object(m) => Box::new(m.values()),
        Value::Array(a) => Box::new(a.iter()),
        _ => return false,
    };
    children.any(|c| left == 0 || beyond_leaves(c, left - 1))
}

fn parse(name: &str, text: &str) -> Content {
    if nesting(text) > MAX_NESTING {
        return Content::TooDeep;
    }
    let base = name.rsplit('/').next().unwrap_or(name);
    let ext = base
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let by_ext = match ext.as_str() {
        "json" => Some(json(text)),
        "yaml" | "yml" => Some(yaml(text)),
        "toml" => Some(toml(text)),
        "hcl" | "tf" | "nomad" => Some(hcl(text)),
        "ini" | "cfg" | "properties" | "env" => Some(ini(text)),
        "conf" => Some(hcl(text).or_else(|| ini(text))),
        "html" | "htm" | "xhtml" | "xml" | "svg" | "md" | "markdown" | "txt" | "rst" | "adoc" | "css" | "js"
        | "mjs" => return Content::Markup,
        e if crate::shell::is_shell(e) => return Content::Script,
        _ => None,
    };
    if let Some(Some(c)) = by_ext {
        return c;
    }
    sniff(text)
}

/// The content decides: a shebang is a script, a leading `<` is markup, then JSON, YAML (a
/// mapping or list), TOML, HCL and INI in turn (YAML and INI only when every key is a name).
fn sniff(text: &str) -> Content {
    let t = text.trim_start();
    if t.starts_with("#!") {
        return Content::Script;
    }
    if t.starts_with('<') {
        return Content::Markup;
    }
    json(text)
        .or_else(|| yaml(text))
        .or_else(|| toml(text))
        .or_else(|| hcl(text))
        .or_else(|| ini(text))
        .filter(|c| match c {
            // A key with whitespace is written on purpose in JSON, TOML and HCL (quoted, or an
            // HCL block label): no sentence parses as them, so such a document is configuration.
            // In YAML and INI an unquoted phrase before `:` or `=` is a key: prose, unless every
            // key is a name.
            Content::Config(Format::Json | Format::Toml | Format::Hcl, _) => true,
            Content::Config(_, v) => keys_are_names(v),
            _ => true,
        })
        .unwrap_or(Content::Other)
}

/// Whether every mapping key of a sniffed document is a name (no whitespace): a sentence with a
/// colon (`never set insecure: true`) parses as YAML, but it is prose, not configuration.
fn keys_are_names(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .all(|(k, c)| !k.trim().is_empty() && !k.contains(char::is_whitespace) && keys_are_names(c)),
        Value::Array(a) => a.iter().all(keys_are_names),
        _ => true,
    }
}

/// A parsed document counts as configuration when it is a non-empty mapping or list.
fn doc(format: Format, v: Value) -> Option<Content> {
    let nonempty = match &v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    };
    nonempty.then_some(Content::Config(format, v))
}

fn json(text: &str) -> Option<Content> {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| doc(Format::Json, v))
}

fn yaml(text: &str) -> Option<Content> {
    crate::yaml::value(text).ok().and_then(|v| doc(Format::Yaml, v))
}

fn toml(text: &str) -> Option<Content> {
    toml::from_str::<Value>(text).ok().and_then(|v| doc(Format::Toml, v))
}

fn hcl(text: &str) -> Option<Content> {
    hcl::from_str::<Value>(text).ok().and_then(|v| doc(Format::Hcl, v))
}

/// INI and Java-properties text: every line that is not blank or a comment is a `[section]` or
/// a `key=value`/`key: value` assignment (prose is not INI); keys outside a section sit at the
/// top level, the others under their section (a section named twice is one; a section named
/// like a top-level key sits beside its value in a list).
fn ini(text: &str) -> Option<Content> {
    let assignments = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(['#', ';', '!']));
    let mut any = false;
    for l in assignments {
        let section = l.starts_with('[') && l.ends_with(']');
        let assign = l
            .split_once(['=', ':'])
            .is_some_and(|(k, _)| !k.trim().is_empty() && !k.trim().contains(char::is_whitespace));
        if !section && !assign {
            return None;
        }
        any |= assign;
    }
    if !any {
        return None;
    }
    let parsed = ini::Ini::load_from_str_opt(
        text,
        ini::ParseOption {
            enabled_quote: true,
            enabled_escape: false,
            ..Default::default()
        },
    )
    .ok()?;
    let mut top = serde_json::Map::new();
    for (section, props) in parsed.iter() {
        let mut m = serde_json::Map::new();
        for (k, v) in props.iter() {
            m.insert(k.to_string(), Value::String(v.to_string()));
        }
        match section {
            None => top.extend(m),
            Some(s) => match top.get_mut(s) {
                Some(Value::Object(existing)) => existing.extend(m),
                // A top-level key named like a section: both are kept (as a list, whose items
                // `leaf_key` sees through), so neither hides a switch of the other.
                Some(other) => {
                    let before = other.take();
                    *other = Value::Array(vec![before, Value::Object(m)]);
                }
                None => {
                    top.insert(s.to_string(), Value::Object(m));
                }
            },
        }
    }
    doc(Format::Ini, Value::Object(top))
}

/// The deepest nesting of brackets and braces (a bound checked before any parser runs).
fn nesting(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for b in text.bytes() {
        match b {
            b'{' | b'[' | b'(' => {
                depth += 1;
                max = max.max(depth);
            }
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// Every scalar leaf of a parsed document with its path (object keys, `[i]` for list items), at
/// most MAX_NESTING levels deep (`read` gives any deeper document as `Content::TooDeep`).
pub fn leaves(v: &Value) -> Vec<(Vec<String>, &Value)> {
    fn go<'v>(v: &'v Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, &'v Value)>) {
        if path.len() > MAX_NESTING {
            return;
        }
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    path.push(k.clone());
                    go(c, path, out);
                    path.pop();
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    path.push(format!("[{i}]"));
                    go(c, path, out);
                    path.pop();
                }
            }
            _ => out.push((path.clone(), v)),
        }
    }
    let mut out = Vec::new();
    go(v, &mut Vec::new(), &mut out);
    out
}

/// The key a leaf is the value of (its last object key; list indices skipped).
pub fn leaf_key(path: &[String]) -> &str {
    path.iter()
        .rev()
        .find(|p| !p.starts_with('['))
        .map(String::as_str)
        .unwrap_or("")
}

/// The fuzz entry point: read a file as every name shape does and walk what is parsed.
pub fn fuzz_read(input: &str) -> usize {
    let mut n = 0;
    for name in [
        "x",
        "x.json",
        "x.yaml",
        "x.toml",
        "x.ini",
        "x.hcl",
        "x.conf",
        "kubeconfig",
    ] {
        if let Content::Config(_, v) = read(name, input) {
            n += leaves(&v).len();
        }
    }
    n
}

#[cfg(test)]
#[path = "config_files_tests.rs"]
mod config_files_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn format(name: &str, text: &str) -> Option<Format> {
        match read(name, text) {
            Content::Config(f, _) => Some(f),
            _ => None,
        }
    }

    #[test]
    fn formats_by_extension_and_by_content() {
        let cases: &[(&str, &str, Option<Format>)] = &[
            ("a.json", "{\"tls\": {\"insecure\": true}}", Some(Format::Json)),
            ("a", "{\"tls\": {\"insecure\": true}}", Some(Format::Json)),
            ("a.yaml", "tls:\n  insecure: true\n", Some(Format::Yaml)),
            ("kubeconfig", "apiVersion: v1\nclusters: []\n", Some(Format::Yaml)),
            ("a.toml", "[tls]\ninsecure = true\n", Some(Format::Toml)),
            ("a", "[tls]\ninsecure = true\n", Some(Format::Toml)),
            ("a.hcl", "vault {\n  tls_skip_verify = true\n}\n", Some(Format::Hcl)),
            ("agent", "vault {\n  tls_skip_verify = true\n}\n", Some(Format::Hcl)),
            ("a.ini", "[client]\nssl-verify = off\n", Some(Format::Ini)),
            ("a", "[client]\nssl-verify: off\nname = a b\n", Some(Format::Ini)),
            ("app.properties", "auth.h2=auth:9091\n", Some(Format::Ini)),
            ("index.html", "{\"a\": 1}", None),
            ("page", "<html><a href=\"http://example.com\">x</a></html>", None),
            ("notes", "Read the docs before you start.\nThen run it.", None),
            ("run", "#!/bin/sh\ncurl http://x\n", None),
            ("README", "never set insecure: true", None),
            ("README.yaml", "never set insecure: true", Some(Format::Yaml)),
        ];
        for (name, text, want) in cases {
            assert_eq!(format(name, text), *want, "{name}: {text:?}");
        }
        assert_eq!(read("index.html", "<p>"), Content::Markup);
        assert_eq!(read("README.md", "# x\nsee http://a"), Content::Markup);
        assert_eq!(read("run.sh", "curl http://x"), Content::Script);
        // Every shell of the one table names a script file by its extension.
        for sh in crate::shell::SHELLS {
            assert_eq!(read(&format!("run.{sh}"), "a = b"), Content::Script, "{sh}");
        }
        assert_eq!(read("n", "#!/bin/bash\n"), Content::Script);
        assert_eq!(
            read("nginx.conf", "server { listen 80; proxy_pass http://b:8080; }"),
            Content::Other
        );
    }

    #[test]
    fn ini_sections_and_leaves() {
        let Content::Config(Format::Ini, v) = read("my.cnf.ini", "top=1\n[client]\nssl_verify = 0\n") else {
            panic!("INI");
        };
        assert_eq!(v, json!({"top": "1", "client": {"ssl_verify": "0"}}));
        let l = leaves(&v);
        assert_eq!(l.len(), 2);
        assert_eq!(leaf_key(&l[1].0), "ssl_verify");
        assert_eq!(leaf_key(&["a".into(), "[0]".into()]), "a");
    }

    /// YAML nests by indentation and TOML by dotted keys, without brackets: a value below more
    /// keys than `leaves` reaches makes the document unknown, never a document without it.
    #[test]
    fn nesting_without_brackets_beyond_the_leaves_is_too_deep() {
        let yaml = |keys: usize| {
            let mut t: String = (0..keys - 1).map(|i| format!("{}k{i}:\n", "  ".repeat(i))).collect();
            t.push_str(&format!("{}tls_skip_verify: true\n", "  ".repeat(keys - 1)));
            t
        };
        let toml = |keys: usize| format!("{}tls_skip_verify = true\n", "k.".repeat(keys - 1));
        for (name, text) in [
            ("a.yaml", yaml(MAX_NESTING)),
            ("a.toml", toml(MAX_NESTING)),
            ("a", yaml(MAX_NESTING)),
        ] {
            let Content::Config(_, v) = read(name, &text) else {
                panic!("{name} at the bound is read: {text}");
            };
            let l = leaves(&v);
            assert_eq!(l.len(), 1, "{name}");
            assert_eq!((l[0].0.len(), leaf_key(&l[0].0)), (MAX_NESTING, "tls_skip_verify"));
        }
        for (name, text) in [
            ("a.yaml", yaml(MAX_NESTING + 1)),
            ("a.toml", toml(MAX_NESTING + 1)),
            ("a", yaml(40)),
        ] {
            assert_eq!(read(name, &text), Content::TooDeep, "{name}");
        }
        // A list item counts as a level as a key does.
        let mut listed = yaml(MAX_NESTING);
        listed = listed.replacen("k0:\n", "k0:\n- \n", 1).replace("\n  ", "\n    ");
        assert_eq!(read("a.yaml", &listed), Content::TooDeep, "{listed}");
    }

    #[test]
    fn deep_nesting_is_not_parsed() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert_eq!(read("a.json", &deep), Content::TooDeep);
        assert_eq!(fuzz_read(&deep), 0);
        // At the bound, every parser is tried on every shape of nesting and returns.
        let n = MAX_NESTING;
        for text in [
            format!("{}1{}", "[".repeat(n), "]".repeat(n)),
            format!("{}1{}", "{\"a\": ".repeat(n), "}".repeat(n)),
            format!("{}a = 1\n{}", "a {\n".repeat(n), "}\n".repeat(n)),
            format!("a = {}1{}", "[".repeat(n - 1), "]".repeat(n - 1)),
            format!("a = {}1{}", "{b = ".repeat(n - 1), "}".repeat(n - 1)),
        ] {
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || fuzz_read(&text))
                .unwrap()
                .join()
                .expect("parsers return within a small stack at the nesting bound");
        }
    }
}
