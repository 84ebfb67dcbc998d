//! The admission backstop's data (charts/nvcf-admission): the regular expressions its
//! ValidatingAdmissionPolicy's CEL matches, generated from the gate's one table of insecure
//! switches (`switches::SWITCHES`), its truthiness, curl's short options, the OpenBao/Vault address
//! variables and loopback, so the cluster refuses the spellings the gate refuses without a second
//! hand-written list. `rules::admission_tests` compares the committed file with this output and
//! evaluates the rendered policies over the gate's fixture corpus.
//!
//! Only the regular-expression syntax RE2 (the API server's `matches`), Rust's `regex` and
//! Python's `re` read alike: a leading `(?i)` (ASCII case), no look-around, no backreferences,
//! no Unicode classes. The patterns are kept short: the API server charges `matches` by the
//! product of the string's and the pattern's length (one expression may cost 1,000,000).

use super::switches::{Name, When, SWITCHES};
use super::CURL_SHORT_WITH_VALUE;

/// The repository path of the generated file (charts read it with `.Files.Get`).
pub(crate) const GENERATED_PATH: &str = "charts/nvcf-admission/generated/patterns.json";

/// What ends a word on a command line or in a script (whitespace, quotes, shell punctuation).
const WORD_END: &str = r#"[\s'"`;&|)]"#;
/// What may start a word.
const WORD_START: &str = r#"(?:^|[\s'"`;&|(])"#;
/// A character of a flag's name (everything up to `=` or the end of the word).
const NAME_CHAR: &str = r#"[^=\s'"`;&|()]"#;
/// Characters of a flag's name that `norm` drops (not an ASCII letter or digit).
const NAME_GAP: &str = r"[^a-z0-9=\s]*";
/// A character of a flag's value.
const VALUE_CHAR: &str = r#"[^\s'"`;&|)]"#;
/// What `norm` drops from an environment variable's name.
const ENV_GAP: &str = "[^a-z0-9]*";

/// `truthy_str` / `falsy_str` of `switches`, as words.
const TRUTHY: &[&str] = &["true", "1", "yes", "on", "y", "t"];
const FALSY: &[&str] = &["false", "0", "no", "off", "n", "f"];

/// One character as a pattern (the patterns that use it are case-insensitive).
fn ci(c: char) -> String {
    if c.is_ascii_alphanumeric() {
        c.to_string()
    } else {
        format!("\\{c}")
    }
}

/// Case-insensitive (ASCII): RE2, Rust's `regex` and Python's `re` read a leading `(?i)` alike.
fn icase(p: String) -> String {
    format!("(?i){p}")
}

/// A normalised name as it may be written: its letters in either case, anything `norm` drops
/// (`gap`) between them.
fn spaced(norm_name: &str, gap: &str) -> String {
    norm_name.chars().map(ci).collect::<Vec<_>>().join(gap)
}

fn alt(items: &[String]) -> String {
    format!("(?:{})", items.join("|"))
}

/// One of `words`, any case.
fn one_of(words: &[&str]) -> String {
    alt(&words.iter().map(|w| w.chars().map(ci).collect()).collect::<Vec<_>>())
}

/// Any word of `VALUE_CHAR`s that is none of `words` (case-insensitively): the complement of a
/// finite set, built over its trie (no look-ahead in RE2).
fn none_of(words: &[String]) -> String {
    let mut alts = Vec::new();
    if !words.iter().any(String::is_empty) {
        alts.push(String::new());
    }
    let mut firsts: Vec<char> = words.iter().filter_map(|w| w.chars().next()).collect();
    firsts.sort_unstable();
    firsts.dedup();
    for &c in &firsts {
        let rest: Vec<String> = words
            .iter()
            .filter(|w| w.starts_with(c))
            .map(|w| w[c.len_utf8()..].to_string())
            .collect();
        alts.push(format!("{}{}", ci(c), none_of(&rest)));
    }
    let excluded: String = firsts.iter().collect();
    alts.push(format!(r#"[^\s'"`;&|){excluded}]{VALUE_CHAR}*"#));
    alt(&alts)
}

/// The names of the table's switches of one kind, as a flag name (the text between the dashes
/// and `=`).
fn flag_names(when: When) -> String {
    alt(&SWITCHES
        .iter()
        .filter(|d| d.when == when)
        .map(|d| match d.name {
            Name::Exact(n) => format!("{}{NAME_GAP}", spaced(n, NAME_GAP)),
            Name::Suffix(s) => format!("(?:[a-z]{NAME_CHAR}*)?{}{NAME_GAP}", spaced(s, NAME_GAP)),
        })
        .collect::<Vec<_>>())
}

/// The names of the table's switches of one kind, as a whole environment variable name.
fn env_names(when: When) -> String {
    let names: Vec<String> = SWITCHES
        .iter()
        .filter(|d| d.when == when)
        .map(|d| match d.name {
            Name::Exact(n) => format!("{ENV_GAP}{}", spaced(n, ENV_GAP)),
            Name::Suffix(s) => format!(".*{}", spaced(s, ENV_GAP)),
        })
        .collect();
    format!("^{}{ENV_GAP}$", alt(&names))
}

/// A shell variable name ending in one of the table's switches of one kind.
fn assign_names(when: When) -> String {
    alt(&SWITCHES
        .iter()
        .filter(|d| d.when == when)
        .map(|d| match d.name {
            Name::Exact(n) => format!("_*{}_*", spaced(n, "_*")),
            Name::Suffix(s) => format!("(?:[a-z_][a-z0-9_]*)?{}_*", spaced(s, "_*")),
        })
        .collect::<Vec<_>>())
}

/// Names that say `skip` or `insecure`: a negative switch whose false is the safe value
/// (`switches::verify_switch`).
fn negative(gap: &str) -> String {
    alt(&[spaced("skip", gap), spaced("insecure", gap)])
}

/// An octet of a dotted IPv4 address.
const OCTET: &str = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";

/// Every pattern the policy uses, by the name its CEL variables give it.
pub(crate) fn patterns() -> Vec<(&'static str, String)> {
    let falsy = one_of(FALSY);
    let truthy = one_of(TRUTHY);
    let not_falsy = none_of(&FALSY.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    // curl's short options that may precede `k` in one cluster: letters and digits that take no
    // value (`-fsSk`), as `insecure::command_switches` reads them.
    let curl_cluster: String = ('0'..='9')
        .chain('A'..='Z')
        .chain('a'..='z')
        .filter(|c| *c != 'k' && !CURL_SHORT_WITH_VALUE.contains(*c))
        .collect();
    let loop_v4 = format!(r"127\.{OCTET}\.{OCTET}\.{OCTET}");
    let loopback_host = alt(&[
        format!("{}\\.?", spaced("localhost", "")),
        loop_v4.clone(),
        r"\[(?:0{0,4}:){2,7}0{0,3}1\]".to_string(),
        format!(r"\[(?:0{{0,4}}:){{2,6}}f{{4}}:(?:{loop_v4}|7f[0-9a-f]{{2}}:[0-9a-f]{{1,4}})\]"),
    ]);
    let http = spaced("http", "");
    vec![
        // A flag of an `On` switch, bare or with a value that is not false (`--insecure`,
        // `-tls-skip-verify=true`, `--quic-insecure=1`), as a word of an argument or a script.
        (
            "flagOn",
            format!(
                "{WORD_START}--?{}(?:={not_falsy})?(?:$|{WORD_END})",
                flag_names(When::On)
            ),
        ),
        // A flag of an `Off` switch set false (`--tls-verify=false`).
        (
            "flagOff",
            format!("{WORD_START}--?{}={falsy}(?:$|{WORD_END})", flag_names(When::Off)),
        ),
        // A flag whose name says skip/insecure set to a value: its false is the safe value.
        (
            "flagNegative",
            format!("{WORD_START}--?{NAME_CHAR}*{}{NAME_CHAR}*=", negative(NAME_GAP)),
        ),
        // An insecure flag printed by echo/printf in the same simple command: text, not a switch.
        (
            "flagPrinted",
            format!(
                r"{WORD_START}(?:[^\s;&|()]*/)?(?:echo|printf)\s[^;&|\n]*\s--?{}",
                flag_names(When::On)
            ),
        ),
        // A script's `NAME=value` (leading assignment or `export`) of a switch.
        (
            "assignOn",
            format!(
                r#"{WORD_START}{}=['"]?{truthy}['"]?(?:$|{WORD_END})"#,
                assign_names(When::On)
            ),
        ),
        (
            "assignOff",
            format!(
                r#"{WORD_START}{}=['"]?{falsy}['"]?(?:$|{WORD_END})"#,
                assign_names(When::Off)
            ),
        ),
        (
            "assignNegative",
            format!("{WORD_START}[a-z0-9_]*{}[a-z0-9_]*=", negative("_*")),
        ),
        // curl's `-k` in a short-option cluster inside a script, and as words of an argv.
        (
            "curlInsecureText",
            format!(r"{WORD_START}(?:[^\s;&|()]*/)?curl\s(?:[^;&|\n]*\s)?-[{curl_cluster}]*k"),
        ),
        ("curlWord", "^(?:.*/)?curl$".to_string()),
        ("curlInsecureWord", format!("^-[{curl_cluster}]*k")),
        // An argument that is one whole `$(VAR)` reference: the kubelet expands it to any flag.
        ("wholeReference", r"^\$\([A-Za-z_][A-Za-z0-9_.-]*\)$".to_string()),
        // Environment variables of the table.
        ("envOn", env_names(When::On)),
        ("envOff", env_names(When::Off)),
        ("envNegative", negative(ENV_GAP)),
        ("truthy", format!(r"^\s*{truthy}\s*$")),
        ("falsy", format!(r"^\s*{falsy}\s*$")),
        // OpenBao/Vault client addresses (`VAULT_ADDR`, `BAO_ADDR`, `AGENT_INJECT_VAULT_ADDR`,
        // `BAO_API_ADDR`: a word VAULT or BAO, the last word ADDR or ADDRESS).
        (
            "vaultAddrName",
            format!(
                "^(?:.*_)?{}(?:_.*)?_{}$",
                alt(&[spaced("vault", ""), spaced("bao", "")]),
                alt(&[spaced("address", ""), spaced("addr", "")])
            ),
        ),
        ("http", format!(r"^\s*{http}://")),
        (
            "loopbackUrl",
            format!(r"^\s*{http}://(?:[^@/?#]*@)?{loopback_host}(?::[0-9]*)?(?:[/?#].*)?\s*$"),
        ),
        // cert-manager key usages, as `certificate-server-auth` compares them (any case).
        ("serverAuth", format!("^{}$", spaced("server auth", ""))),
        ("clientAuth", format!("^{}$", spaced("client auth", ""))),
    ]
    .into_iter()
    .map(|(k, p)| {
        if CASE_SENSITIVE.contains(&k) {
            (k, p)
        } else {
            (k, icase(p))
        }
    })
    .collect()
}

/// Patterns where case matters (curl's `-k` is not `-K`; a variable name is as written).
const CASE_SENSITIVE: &[&str] = &["curlInsecureText", "curlWord", "curlInsecureWord", "wholeReference"];

/// The generated file: the patterns as one JSON object, with a header saying where they come
/// from (JSON has no comments: the header is a field).
pub(crate) fn generated_json() -> String {
    let mut m = serde_json::Map::new();
    m.insert(
        "_generated".into(),
        serde_json::Value::String(
            "by nvcf-validate from rules/insecure/switches.rs SWITCHES (rules/insecure/admission.rs); \
             do not edit: NVCF_ADMISSION_WRITE=1 cargo test -p nvcf-validate --lib admission rewrites it"
                .into(),
        ),
    );
    for (k, v) in patterns() {
        m.insert(k.into(), serde_json::Value::String(v));
    }
    let mut s = serde_json::to_string_pretty(&serde_json::Value::Object(m)).expect("JSON of strings");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(name: &str) -> regex::Regex {
        let p = patterns().into_iter().find(|(k, _)| *k == name).unwrap().1;
        regex::Regex::new(&p).unwrap()
    }

    #[test]
    fn the_table_is_what_the_patterns_encode() {
        // The policy treats a name as an `On` switch when any `On` entry matches it, and as an
        // `Off` switch when an `Off` entry does: the same as the table's first-match rule only
        // while every `On` entry comes before every `Off` entry.
        let first_off = SWITCHES.iter().position(|d| d.when == When::Off).unwrap();
        assert!(SWITCHES[first_off..].iter().all(|d| d.when == When::Off));
        for d in SWITCHES {
            let (Name::Exact(n) | Name::Suffix(n)) = d.name;
            assert!(
                n.starts_with(|c: char| c.is_ascii_alphabetic()),
                "{n}: a flag body starts with a letter"
            );
        }
    }

    #[test]
    fn spellings_agree_with_the_gate() {
        let on = re("flagOn");
        for (w, want) in [
            ("--insecure", true),
            ("-tls-skip-verify", true),
            ("--insecure-skip-tls-verify=true", true),
            ("--quic-insecure=1", true),
            ("--insecure=maybe", true),
            ("--insecure=false", false),
            ("--insecure=FALSE", false),
            ("--insecure=0", false),
            ("--insecure=fals", true),
            ("--insecurely", false),
            ("--allow-insecure-remote-watch-http", true),
            ("--no-check-certificate", true),
            ("sh -c 'curl --insecure https://x'", true),
            ("--listen-addr=0.0.0.0:50071", false),
        ] {
            assert_eq!(on.is_match(w), want, "{w}");
        }
        assert!(re("flagOff").is_match("--tls-verify=false"));
        assert!(!re("flagOff").is_match("--tls-verify=true"));
        assert!(re("flagNegative").is_match("--insecure-tls-verify=false"));
        assert!(re("envOn").is_match("STARGATE_QUIC_INSECURE") && re("envOn").is_match("VAULT_SKIP_VERIFY"));
        assert!(!re("envOn").is_match("QUIC_INSECURE_PORT"));
        assert!(re("envOff").is_match("NODE_TLS_REJECT_UNAUTHORIZED"));
        assert!(
            re("curlInsecureText").is_match("curl -fsSk https://x") && !re("curlInsecureText").is_match("curl -ok x")
        );
        for lo in [
            "http://127.8.9.10:8200",
            "http://[::1]:8200",
            "http://[::ffff:127.0.0.1]:8200",
            "http://localhost.:8200",
        ] {
            assert!(re("loopbackUrl").is_match(lo), "{lo}");
        }
        for not in [
            "http://127.bao.corp.example.net:8200",
            "http://openbao.openbao.svc:8200",
            "http://127.0.0.1.nip.io",
        ] {
            assert!(!re("loopbackUrl").is_match(not), "{not}");
        }
        assert!(
            re("vaultAddrName").is_match("AGENT_INJECT_VAULT_ADDR") && !re("vaultAddrName").is_match("MYVAULT_ADDR")
        );
    }

    #[test]
    fn the_committed_patterns_are_generated_from_the_table() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(GENERATED_PATH);
        let want = generated_json();
        if std::env::var_os("NVCF_ADMISSION_WRITE").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let got = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            got == want,
            "{GENERATED_PATH} is not what rules/insecure/switches.rs SWITCHES generates; \
             rerun with NVCF_ADMISSION_WRITE=1 and commit it"
        );
    }
}
