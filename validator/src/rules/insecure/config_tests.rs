//! Generated: configuration content is configuration. Switch spellings × formats (YAML, JSON,
//! TOML, INI, HCL) × file names (with the format's extension, and without one: sniffed) × places
//! (ConfigMap `data`, Secret `stringData`, Secret base64 `data`) × the insecure value and the safe
//! one: each insecure file is one insecure-flag finding, each safe one none. The same places and
//! formats carrying an http:// dial address are plaintext-endpoint findings, https:// ones and
//! markup pages holding the same link are not. A Secret's value is never shown in a message.

use super::tests::rule;
use super::*;
use crate::testkit::*;
use base64::Engine as _;
use serde_json::json;

/// (switch as written, insecure value, safe value).
const SWITCHES_WRITTEN: &[(&str, &str, &str)] = &[
    ("tls_skip_verify", "true", "false"),
    ("insecure-skip-tls-verify", "true", "false"),
    ("insecureSkipVerify", "true", "false"),
    ("skipTLSVerify", "true", "false"),
    ("sslVerify", "false", "true"),
    ("quic_insecure", "true", "false"),
];

/// One file holding `key = value` under a section `outer`, per format: (extension, text).
fn files(key: &str, value: &str) -> Vec<(&'static str, String)> {
    vec![
        ("yaml", format!("outer:\n  name: a\n  {key}: {value}\n")),
        (
            "json",
            format!("{{\"outer\": {{\"name\": \"a\", \"{key}\": {value}}}}}"),
        ),
        ("toml", format!("[outer]\nname = \"a\"\n{key} = {value}\n")),
        ("ini", format!("[outer]\nname = a\n{key} = {value}\n")),
        ("hcl", format!("outer {{\n  name = \"a\"\n  {key} = {value}\n}}\n")),
    ]
}

/// The file as each place carries it.
fn places(name: &str, text: &str) -> Vec<(&'static str, serde_json::Value)> {
    let meta = json!({"name": "holder", "namespace": "nvcf"});
    let b64 = base64::engine::general_purpose::STANDARD.encode(text);
    vec![
        (
            "ConfigMap data",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {name: text}}),
        ),
        (
            "Secret stringData",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "stringData": {name: text}}),
        ),
        (
            "Secret data",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {name: b64}}),
        ),
    ]
}

fn run(id: &str, obj: &serde_json::Value) -> Vec<Finding> {
    let g = graph("e", &serde_json::to_string(obj).unwrap());
    let policy = crate::policy::Policy::default();
    (rule(id).check)(&ctx(&g, &policy))
}

#[test]
fn switches_in_every_format_and_place() {
    let mut checked = 0;
    for (key, bad, good) in SWITCHES_WRITTEN {
        for (value, fires) in [(bad, true), (good, false)] {
            for (ext, text) in files(key, value) {
                for name in [format!("client.{ext}"), "client".to_string()] {
                    for (place, obj) in places(&name, &text) {
                        let found = run(INSECURE_FLAG, &obj);
                        let case = format!("{key}={value} in {ext} file `{name}`, {place}");
                        if fires {
                            assert_eq!(found.len(), 1, "{case}: {found:#?}");
                            // A Secret's value is judged, never shown.
                            let shown = if place.starts_with("Secret") {
                                format!("outer.{key} = <value of Secret nvcf/holder key `{name}`>")
                            } else {
                                format!("outer.{key} = {value}")
                            };
                            assert!(found[0].message.contains(&shown), "{case}: {}", found[0].message);
                        } else {
                            assert!(found.is_empty(), "{case}: {found:#?}");
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, SWITCHES_WRITTEN.len() * 2 * 5 * 2 * 3);
}

#[test]
fn dial_addresses_in_every_format_and_place_and_never_in_markup() {
    let mut checked = 0;
    for (url, fires) in [
        ("\"http://api.example.net:8080/v1?token=hidden\"", true),
        ("\"https://api.example.net:8443/v1\"", false),
    ] {
        for (ext, text) in files("endpoint", url) {
            // INI values are not quoted by their writers.
            let text = if ext == "ini" { text.replace('"', "") } else { text };
            for name in [format!("client.{ext}"), "client".to_string()] {
                for (place, obj) in places(&name, &text) {
                    let found = run(PLAINTEXT_ENDPOINT, &obj);
                    let case = format!("{url} in {ext} file `{name}`, {place}");
                    if fires {
                        assert_eq!(found.len(), 1, "{case}: {found:#?}");
                        if place.starts_with("Secret") {
                            // A Secret's value is judged, never shown: neither the URL nor its host.
                            let m = &found[0].message;
                            assert!(
                                m.contains(&format!(
                                    "(`outer.endpoint`) dials `<value of Secret nvcf/holder key `{name}`>`"
                                )) && !m.contains("hidden")
                                    && !m.contains("api.example.net"),
                                "{case}: a Secret's URL is printed: {m}"
                            );
                        } else {
                            assert!(
                                found[0]
                                    .message
                                    .contains("(`outer.endpoint`) dials `http://api.example.net:8080"),
                                "{case}: {}",
                                found[0].message
                            );
                        }
                    } else {
                        assert!(found.is_empty(), "{case}: {found:#?}");
                    }
                    checked += 1;
                }
            }
        }
    }
    // The same link in markup or prose is not a dial address, in any place.
    for (name, text) in [
        (
            "index.html",
            "<p><a href=\"http://api.example.net:8080/v1\">api</a></p>",
        ),
        (
            "page",
            "<!DOCTYPE html>\n<a href=\"http://api.example.net:8080/v1\">api</a>",
        ),
        (
            "README.md",
            "The API is at http://api.example.net:8080/v1 (do not use).",
        ),
        ("notes.txt", "The API is at http://api.example.net:8080/v1"),
    ] {
        for (place, obj) in places(name, text) {
            let found = run(PLAINTEXT_ENDPOINT, &obj);
            assert!(found.is_empty(), "markup `{name}` in {place}: {found:#?}");
            checked += 1;
        }
    }
    assert_eq!(checked, 2 * 5 * 2 * 3 + 4 * 3);
}

#[test]
fn a_file_too_deep_to_read_that_names_a_switch_is_a_finding() {
    let deep = |inner: &str| format!("{}{inner}{}", "{\"a\": ".repeat(40), "}".repeat(40));
    for (place, obj) in places("client.json", &deep("{\"insecureSkipVerify\": true}")) {
        let found = run(INSECURE_FLAG, &obj);
        assert_eq!(found.len(), 1, "{place}: {found:#?}");
        assert!(
            found[0].message.contains("nests deeper than 32 levels"),
            "{}",
            found[0].message
        );
    }
    for (place, obj) in places("client.json", &deep("{\"name\": true}")) {
        assert!(run(INSECURE_FLAG, &obj).is_empty(), "{place}");
    }
}

/// YAML nests by indentation and TOML by dotted keys, without a bracket: a switch below more keys
/// than the gate reads is a finding (the file is unknown), never silence; the same file without a
/// switch is none, and a switch at the bound is read with its path.
#[test]
fn a_file_nested_without_brackets_beyond_the_bound_is_read_as_too_deep() {
    let yaml = |keys: usize, leaf: &str| {
        let mut t: String = (0..keys - 1).map(|i| format!("{}k{i}:\n", "  ".repeat(i))).collect();
        t.push_str(&format!("{}{leaf}: true\n", "  ".repeat(keys - 1)));
        t
    };
    let toml = |keys: usize, leaf: &str| format!("{}{leaf} = true\n", "k.".repeat(keys - 1));
    let n = crate::config_files::MAX_NESTING;
    for (name, text) in [
        ("client.yaml", yaml(n + 1, "tls_skip_verify")),
        ("client", yaml(n + 1, "tls_skip_verify")),
        ("client.toml", toml(n + 1, "tls_skip_verify")),
    ] {
        for (place, obj) in places(name, &text) {
            let found = run(INSECURE_FLAG, &obj);
            assert_eq!(found.len(), 1, "{name}, {place}: {found:#?}");
            assert!(
                found[0].message.contains("nests deeper than 32 levels")
                    && found[0].message.contains("names the switch"),
                "{}",
                found[0].message
            );
        }
        for (place, obj) in places(name, &text.replace("tls_skip_verify", "name")) {
            assert!(run(INSECURE_FLAG, &obj).is_empty(), "{name}, {place}");
        }
    }
    for (name, text) in [
        ("client.yaml", yaml(n, "tls_skip_verify")),
        ("client.toml", toml(n, "tls_skip_verify")),
    ] {
        let found = run(INSECURE_FLAG, &places(name, &text)[0].1);
        assert_eq!(found.len(), 1, "{name}: {found:#?}");
        assert!(
            found[0].message.contains(".k.tls_skip_verify = true`")
                || found[0].message.contains(".k30.tls_skip_verify = true`"),
            "{}",
            found[0].message
        );
    }
}

/// An INI switch at the top level is found when a section bears its name (the section once
/// replaced it); the same file with the safe value is silent.
#[test]
fn an_ini_switch_named_like_a_section_is_found() {
    for (value, fires) in [("true", true), ("false", false)] {
        let text = format!("tls_skip_verify = {value}\n[tls_skip_verify]\nnote = a\n");
        for (place, obj) in places("client.ini", &text) {
            let found = run(INSECURE_FLAG, &obj);
            assert_eq!(found.len(), usize::from(fires), "{value} in {place}: {found:#?}");
            if fires {
                assert!(found[0].message.contains("tls_skip_verify"), "{}", found[0].message);
            }
        }
    }
}

/// A file without an extension is sniffed: JSON, TOML and HCL with a key that has a space
/// (`"my server"`, written on purpose) are configuration, and the switch below it is judged; a
/// YAML sentence with a colon stays prose and is not.
#[test]
fn a_sniffed_file_with_a_quoted_key_is_judged_and_prose_is_not() {
    for (value, fires) in [("true", true), ("false", false)] {
        let files = [
            format!("{{\"my server\": {{\"tls_skip_verify\": {value}}}}}"),
            format!("[servers.\"my server\"]\ntls_skip_verify = {value}\n"),
            format!("servers \"my server\" {{\n  tls_skip_verify = {value}\n}}\n"),
        ];
        for text in &files {
            for (place, obj) in places("client", text) {
                let found = run(INSECURE_FLAG, &obj);
                assert_eq!(
                    found.len(),
                    usize::from(fires),
                    "{value} in {place}: {text}\n{found:#?}"
                );
                if fires {
                    assert!(found[0].message.contains("tls_skip_verify"), "{}", found[0].message);
                }
            }
        }
    }
    for (place, obj) in places("NOTES", "never set tls_skip_verify: true\n") {
        assert!(run(INSECURE_FLAG, &obj).is_empty(), "prose in {place}");
    }
}
