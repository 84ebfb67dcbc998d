//! What `read` must find, per format and shape: a switch in a file is read with its value, and a
//! near miss (prose, an empty list, a nesting past the bound) is not read as configuration. Each
//! test names the defect it catches (issue 31: the mutants of `config_files.rs` that survived).

use super::*;
use serde_json::json;

/// The value of the leaf whose key is `key`, when `read` parses the file as `want`.
fn switch(name: &str, text: &str, want: Format, key: &str) -> Value {
    let Content::Config(f, v) = read(name, text) else {
        panic!("{name} is not read as configuration: {:?}\n{text}", read(name, text));
    };
    assert_eq!(f, want, "{name}");
    let found: Vec<Value> = leaves(&v)
        .into_iter()
        .filter(|(p, _)| leaf_key(p) == key)
        .map(|(_, v)| v.clone())
        .collect();
    assert_eq!(found.len(), 1, "{name}: one {key} in {v}");
    found[0].clone()
}

/// A key with a space (a JSON key, a quoted TOML key, an HCL block label) is legal in these
/// formats and written on purpose (no sentence parses as them): a file named by its extension is
/// parsed in it, and without an extension the sniffer reads it in the same format (it refuses
/// keys with whitespace only in YAML and INI, where prose parses), so the switch under such a
/// key is found either way.
#[test]
fn the_extension_decides_even_when_a_key_has_a_space() {
    let hcl = "servers \"my server\" {\n  tls_skip_verify = true\n}\n";
    let cases = [
        ("a.json", "{\"my server\": {\"tls_skip_verify\": true}}", Format::Json),
        (
            "a.toml",
            "[servers.\"my server\"]\ntls_skip_verify = true\n",
            Format::Toml,
        ),
        ("a.hcl", hcl, Format::Hcl),
        ("main.tf", hcl, Format::Hcl),
        ("job.nomad", hcl, Format::Hcl),
        ("agent.conf", hcl, Format::Hcl),
    ];
    for (name, text, format) in cases {
        assert_eq!(switch(name, text, format, "tls_skip_verify"), json!(true), "{name}");
        // Without the extension the same text is sniffed as the same format, the switch found
        // (it was read as text, and the switch under `my server` went unreported).
        assert_eq!(
            switch("noext", text, format, "tls_skip_verify"),
            json!(true),
            "{name} sniffed"
        );
    }
    // `.conf` that is not HCL falls back to INI.
    assert_eq!(
        switch("my.conf", "[client]\nssl-verify = off\n", Format::Ini, "ssl-verify"),
        json!("off")
    );
}

/// A list is a document: a JSON file that is a list of settings is read, the switch found under
/// its index; an empty list is not configuration.
#[test]
fn a_list_is_a_document_and_an_empty_one_is_not() {
    let text = "[{\"tls_skip_verify\": true}]";
    assert_eq!(switch("a.json", text, Format::Json, "tls_skip_verify"), json!(true));
    let Content::Config(_, v) = read("a.json", text) else {
        unreachable!()
    };
    assert_eq!(leaves(&v)[0].0, vec!["[0]".to_string(), "tls_skip_verify".into()]);
    for (name, text) in [("a.json", "[]"), ("b.json", "{}"), ("c.yaml", "[]\n")] {
        assert!(!matches!(read(name, text), Content::Config(..)), "{name}: {text}");
    }
}

/// Prose in a list is still prose: a bullet with a sentence before a colon parses as a YAML list
/// of mappings, but its key is not a name, so the file is read as text.
#[test]
fn a_bulleted_sentence_is_not_configuration() {
    assert_eq!(read("NOTES", "- never set insecure: true\n"), Content::Other);
    assert_eq!(
        read("NOTES", "- items:\n  - never set insecure: true\n"),
        Content::Other
    );
    // The near miss: a list of named keys is configuration.
    assert_eq!(
        switch("values", "- insecure: true\n", Format::Yaml, "insecure"),
        json!(true)
    );
}

/// Bracket nesting at the bound is parsed (the switch found); one level more is not parsed at
/// all, whatever brackets nest (parentheses in a string count: the bound is checked before any
/// parser runs).
#[test]
fn the_bracket_bound_is_inclusive() {
    let n = MAX_NESTING;
    let at = format!(
        "{}\"tls_skip_verify\": true{}",
        "{\"a\": ".repeat(n - 1) + "{",
        "}".repeat(n)
    );
    assert_eq!(switch("a.json", &at, Format::Json, "tls_skip_verify"), json!(true));
    let parens = |k: usize| {
        format!(
            "tls_skip_verify = true\nnote = \"{}{}\"\n",
            "(".repeat(k),
            ")".repeat(k)
        )
    };
    assert_eq!(
        switch("a.toml", &parens(n), Format::Toml, "tls_skip_verify"),
        json!(true)
    );
    for open in ["(", "[", "{"] {
        let close = match open {
            "(" => ")",
            "[" => "]",
            _ => "}",
        };
        let text = format!(
            "tls_skip_verify = true\nnote = \"{}{}\"\n",
            open.repeat(n + 1),
            close.repeat(n + 1)
        );
        assert_eq!(read("a.toml", &text), Content::TooDeep, "{open}");
    }
    // Closing brackets close: many sibling sections or lists are flat, not deep.
    let mut ini: String = (0..3 * n).map(|i| format!("[s{i}]\nk{i} = [1]\n")).collect();
    ini.push_str("[tls]\nssl-verify = off\n");
    assert_eq!(switch("a.ini", &ini, Format::Ini, "ssl-verify"), json!("off"));
}

/// A section named twice is one section: the switch set in its first occurrence is kept when
/// the second adds other keys.
#[test]
fn a_repeated_ini_section_keeps_both_halves() {
    let text = "[tls]\nssl-verify = off\n[other]\nx = 1\n[tls]\nca = /etc/ca.pem\n";
    let Content::Config(Format::Ini, v) = read("a.ini", text) else {
        panic!("INI");
    };
    assert_eq!(
        v,
        json!({"tls": {"ssl-verify": "off", "ca": "/etc/ca.pem"}, "other": {"x": "1"}})
    );
}

/// A top-level key named like a section keeps its value: `tls_skip_verify=true` before a
/// `[tls_skip_verify]` section is still found (it was replaced by the section).
#[test]
fn a_top_level_key_named_like_a_section_is_kept() {
    let text = "tls_skip_verify = true\n[tls_skip_verify]\nnote = x\n[tls_skip_verify]\nca = y\n";
    let Content::Config(Format::Ini, v) = read("a.ini", text) else {
        panic!("INI");
    };
    // Every occurrence is kept, each under its own list item.
    assert_eq!(v, json!({"tls_skip_verify": [["true", {"note": "x"}], {"ca": "y"}]}));
    assert_eq!(switch("a.ini", text, Format::Ini, "tls_skip_verify"), json!("true"));
}

/// A section header is a line that both opens and closes with a bracket: a line that only opens
/// or only closes makes the file not INI (read as text, never as an empty document).
#[test]
fn a_half_section_header_is_not_ini() {
    for text in ["[tls\nssl-verify = off\n", "tls]\nssl-verify = off\n"] {
        assert!(
            !matches!(read("a.ini", text), Content::Config(Format::Ini, _)),
            "{text}"
        );
    }
    assert_eq!(
        switch("a.ini", "[tls]\nssl-verify = off\n", Format::Ini, "ssl-verify"),
        json!("off")
    );
}

/// Backslashes are literal in INI values (Windows paths, regexes): `\t` in a path stays two
/// characters, the value is what the file says; surrounding quotes
/// are not part of it (a quoted `"off"` is off).
#[test]
fn ini_values_keep_backslashes() {
    let text = "[tls]\nca_file = C:\\tls\\new.pem\nssl-verify = off\n";
    assert_eq!(switch("a.ini", text, Format::Ini, "ca_file"), json!("C:\\tls\\new.pem"));
    assert_eq!(switch("a.ini", text, Format::Ini, "ssl-verify"), json!("off"));
    assert_eq!(
        switch("b.ini", "[tls]\nssl-verify = \"off\"\n", Format::Ini, "ssl-verify"),
        json!("off")
    );
}

/// The fuzz entry point walks what every name shape parses: one leaf per shape for a one-key
/// JSON object (eight shapes), none for a file too deep to parse.
#[test]
fn fuzz_read_counts_the_leaves_of_every_shape() {
    assert_eq!(fuzz_read("{\"tls_skip_verify\": true}"), 8);
    assert_eq!(fuzz_read("k: v\nk2: v\n"), fuzz_read("k: v\n") * 2);
}

/// A text that reads in two formats is read in the one its extension names: `a = true` is TOML
/// and HCL alike (sniffed, TOML comes first), a TOML table header `["x"]` is a JSON list too;
/// the format is what messages name.
#[test]
fn the_extension_names_the_format_of_a_text_two_formats_read() {
    let both = "tls_skip_verify = true\n";
    for name in ["a.hcl", "main.tf", "job.nomad", "agent.conf"] {
        assert_eq!(
            switch(name, both, Format::Hcl, "tls_skip_verify"),
            json!(true),
            "{name}"
        );
    }
    assert_eq!(switch("noext", both, Format::Toml, "tls_skip_verify"), json!(true));
    let header = "[\"tls_skip_verify\"]\n";
    assert!(matches!(read("a.toml", header), Content::Config(Format::Toml, _)));
    assert!(matches!(read("noext", header), Content::Config(Format::Json, _)));
}
