//! How `read_flags` splits and stops, case by case: which elements are read as shell-like word
//! lists, which words are flags, where Go's flag parsing stops, and when the next word is a
//! flag's value. Each case is a near miss of another, so a changed condition changes a result.

use super::*;
use serde_json::json;

fn flags(c: Value) -> Flags {
    read_flags(None, "", &c)
}

fn names(f: &Flags) -> Vec<&str> {
    f.flags.iter().map(|(n, _)| n.as_str()).collect()
}

fn ignored(f: &Flags) -> Vec<(&str, &str)> {
    f.ignored.iter().map(|(n, w)| (n.as_str(), w.as_str())).collect()
}

#[test]
fn an_element_with_spaces_is_a_word_list_only_when_it_carries_a_flag() {
    // `--a /x --b /y` in one element: split, both flags read.
    let f = flags(json!({"args": ["--tls-cert-path /c --tls-key-path /k"]}));
    assert_eq!(names(&f), [TLS_CERT_PATH, TLS_KEY_PATH]);
    // A flag after a word: ` -` inside the element makes it a word list too, read leniently
    // (the leading word does not stop parsing).
    let f = flags(json!({"args": ["exec --tls-cert-path /c"]}));
    assert_eq!(names(&f), [TLS_CERT_PATH]);
    assert!(f.ignored.is_empty(), "{f:?}");
    // Spaces but no flag: one positional argument, where Go's parsing stops.
    let f = flags(json!({"args": ["--tls-cert-path=/c", "hello world", "--tls-key-path=/k"]}));
    assert_eq!(names(&f), [TLS_CERT_PATH]);
    assert_eq!(ignored(&f), [(TLS_KEY_PATH, "hello world")]);
    // A dash but no space: one argument, not a word list (its positional value stops parsing).
    let f = flags(json!({"args": ["--backend-connectivity=a-b", "x-y", "--tls-key-path=/k"]}));
    assert_eq!(names(&f), [BACKEND_CONNECTIVITY]);
    assert_eq!(ignored(&f), [(TLS_KEY_PATH, "x-y")]);
}

#[test]
fn which_words_are_flags() {
    // A two-character flag is a flag (it takes no value here: the next word starts with `-`).
    let f = flags(json!({"args": ["-v", "--tls-cert-path=/c"]}));
    assert_eq!(
        f.flags,
        vec![
            ("--v".to_string(), None),
            (TLS_CERT_PATH.to_string(), Some("/c".to_string()))
        ]
    );
    // A lone `-` is not a flag: it is a positional argument and stops parsing.
    let f = flags(json!({"args": ["-", "--tls-cert-path=/c"]}));
    assert!(f.flags.is_empty(), "{f:?}");
    assert_eq!(ignored(&f), [(TLS_CERT_PATH, "-")]);
    // Three dashes are not a flag either.
    let f = flags(json!({"args": ["---tls-key-path=/k", "--tls-cert-path=/c"]}));
    assert!(f.flags.is_empty(), "{f:?}");
    assert_eq!(ignored(&f), [(TLS_CERT_PATH, "---tls-key-path=/k")]);
    // `--` ends the flags and is recorded as such.
    let f = flags(json!({"args": ["--", "--tls-cert-path=/c"]}));
    assert_eq!(ignored(&f), [(TLS_CERT_PATH, "--")]);
}

#[test]
fn an_unknown_flag_takes_the_next_word_only_when_it_is_not_a_flag() {
    let f = flags(json!({"args": ["--verbose", "--tls-cert-path", "/c"]}));
    assert_eq!(
        f.flags,
        vec![
            ("--verbose".to_string(), None),
            (TLS_CERT_PATH.to_string(), Some("/c".to_string()))
        ]
    );
    let f = flags(json!({"args": ["--log-level", "debug", "--tls-key-path", "-k"]}));
    assert_eq!(
        f.flags,
        vec![
            ("--log-level".to_string(), Some("debug".to_string())),
            (TLS_KEY_PATH.to_string(), Some("-k".to_string()))
        ]
    );
    // A flag at the end has no value.
    let f = flags(json!({"args": ["--tls-cert-path"]}));
    assert_eq!(f.flags, vec![(TLS_CERT_PATH.to_string(), None)]);
}

#[test]
fn a_whole_unreadable_argument_is_unknown_but_a_flag_with_an_unreadable_value_is_read() {
    let env = json!([{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]);
    // `$(S)` alone may be any flag.
    let f = flags(json!({"args": ["$(S)", "--tls-cert-path=/c"], "env": env}));
    assert_eq!(names(&f), [TLS_CERT_PATH]);
    assert_eq!(f.unknown.len(), 1);
    assert_eq!(f.unknown[0].0, None);
    // `$(S)=v` is not a whole unknown argument: a positional word, where parsing stops.
    let f = flags(json!({"args": ["$(S)=v", "--tls-cert-path=/c"], "env": env}));
    assert!(f.unknown.is_empty(), "{f:?}");
    assert_eq!(ignored(&f), [(TLS_CERT_PATH, "$(S)=v")]);
    // A known word that only mentions `$(`: read as written.
    let f = flags(json!({"args": ["x$(S)", "--tls-cert-path=/c"], "env": env}));
    assert!(f.unknown.is_empty(), "{f:?}");
    assert_eq!(ignored(&f), [(TLS_CERT_PATH, "x$(S)")]);
    // A readable `$(…)` word is read as what it expands to.
    let f = flags(json!({"args": ["$(F)"], "env": [{"name": "F", "value": "--tls-cert-path=/c"}]}));
    assert_eq!(names(&f), [TLS_CERT_PATH]);
    assert!(f.unknown.is_empty());
    // A flag's value that cannot be read: the flag is there, its value unknown.
    let f = flags(json!({"args": ["--tls-key-path", "$(S)"], "env": env}));
    assert_eq!(names(&f), [TLS_KEY_PATH]);
    assert_eq!(f.unknown[0].0.as_deref(), Some(TLS_KEY_PATH));
}

#[test]
fn the_program_is_the_first_element_of_a_non_empty_command() {
    // An empty `command` is no command: args start the flags.
    let f = flags(json!({"command": [], "args": ["--tls-cert-path=/c"]}));
    assert_eq!(names(&f), [TLS_CERT_PATH]);
    // A shell run by path is still a shell: its script is read leniently.
    let f = flags(json!({"command": ["/bin/sh", "-c", "cd /app && exec ./router --tls-cert-path /c"]}));
    assert!(names(&f).contains(&TLS_CERT_PATH), "{f:?}");
    assert!(f.ignored.is_empty(), "{f:?}");
    // Every program of the one shell table (`crate::shell::SHELLS`) is read leniently here too; a
    // program that is none stops at its first positional.
    for sh in crate::shell::SHELLS.iter().chain(&["busybox-sh"]) {
        let f = flags(json!({"command": [format!("/usr/bin/{sh}"), "cd", "--tls-cert-path=/c"]}));
        let shell = crate::shell::SHELLS.contains(sh);
        assert_eq!(f.ignored.is_empty(), shell, "{sh}: {f:?}");
    }
    // Not a shell: the same words as separate arguments stop at the first positional.
    let f = flags(json!({"command": ["/app/router"], "args": ["cd", "--tls-cert-path", "/c"]}));
    assert!(f.flags.is_empty(), "{f:?}");
    assert_eq!(ignored(&f), [(TLS_CERT_PATH, "cd")]);
}

#[test]
fn expand_items_counts_only_variable_names_as_unknown() {
    // With an envFrom source the gate cannot list, any `$(NAME)` may be defined there: unknown.
    // A shell's `$(cmd args)` or a reference starting with a digit is no variable name: as written.
    let c = json!({"envFrom": [{"secretRef": {"name": "s"}}]});
    let items = [json!("$(_A)"), json!("$(B-1.x)"), json!("$(1A)"), json!("$(echo hi)")];
    let e = expand_items(None, "nvcf", &c, items.iter());
    let unknown: Vec<Vec<&str>> = e
        .iter()
        .map(|x| x.unknown.iter().map(|(n, _)| n.as_str()).collect())
        .collect();
    assert_eq!(unknown, [vec!["_A"], vec!["B-1.x"], vec![], vec![]], "{e:?}");
    assert_eq!(e[3].text, "$(echo hi)");
}
