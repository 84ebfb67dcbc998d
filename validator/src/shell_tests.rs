//! The shell reader against the real `/bin/sh`, on generated words (property style, seeded): every
//! word of quoting a script can hold — single quotes, double quotes with expansions and escapes,
//! backslashes, unquoted expansions whose values hold blanks, empty quotes, parameter operators —
//! read by [`script_commands`] + [`resolve`] must give exactly the fields `/bin/sh` gives them
//! (`set -f; set -- WORDS; printf '%s\0' "$#" "$@"`, pathname expansion off: the reader does not
//! do it). A failure prints the script, the environment and both readings.

use super::*;
use crate::seeded::Gen;
use std::process::Command;

/// Characters plain in every context (no glob, tilde, comment or operator meaning).
const PLAIN: &str = "abcxyz019-_.:/,@%+=";
/// The variables of the environment: X and Y hold generated values, E is empty, U is unset.
const VARS: &[&str] = &["X", "Y", "E"];

/// A variable's value: blanks where splitting happens (leading, trailing, doubled, tabs) and
/// characters a shell would treat specially in source but not in a value.
fn value(g: &mut Gen) -> String {
    g.text("ab $\t'\"\\*;|&-=k", 8)
}

/// An expansion of one variable, as written.
fn param(g: &mut Gen) -> String {
    let v = g.pick(VARS);
    let dflt = g.text("ab -z", 4);
    // A bare `$V` is followed by a character no name holds, so the next piece does not lengthen it.
    let end = g.pick(&["-", ".", ":", "/"]);
    match g.below(9) {
        0 | 1 => format!("${v}{end}"),
        2 => format!("${{{v}}}"),
        3 => format!("${{{v}:-{dflt}}}"),
        4 => format!("${{{v}-{dflt}}}"),
        5 => format!("${{{v}:+{dflt}}}"),
        6 => format!("${{{v}+{dflt}}}"),
        7 => format!("${{{v}:={dflt}}}"),
        _ => format!("${v}${}{end}", g.pick(VARS)),
    }
}

/// One piece of a word, as source text.
fn piece(g: &mut Gen) -> String {
    match g.below(9) {
        0 | 1 => {
            let t = g.text(PLAIN, 5);
            if t.is_empty() {
                "a".into()
            } else {
                t
            }
        }
        // Single quotes: everything literal, `$X` included.
        2 => format!("'{}'", g.text("ab $X\"\\`{}*;-", 6)),
        // Double quotes: expansions, escapes that escape and escapes that do not.
        3 | 4 => {
            let mut s = String::from("\"");
            for _ in 0..g.below(4) {
                match g.below(6) {
                    0 => s.push_str(&param(g)),
                    1 => s.push_str(g.pick::<&str>(&["\\$", "\\\"", "\\\\", "\\`", "\\a", "\\ ", "\\'"])),
                    2 => s.push_str(g.pick::<&str>(&["'", " ", "  ", "*", ";", "#", "\t"])),
                    // A `$` that starts no expansion is the character.
                    3 => s.push_str(g.pick::<&str>(&["$ ", "$/", "$,"])),
                    _ => s.push_str(&g.text(PLAIN, 3)),
                }
            }
            s.push('"');
            s
        }
        // A backslash outside quotes escapes any character.
        5 => format!(
            "\\{}",
            g.pick(&["a", "$", "\"", "'", "\\", " ", "*", ";", "|", "&", "#"])
        ),
        6 | 7 => param(g),
        _ => g.pick(&["''", "\"\""]).to_string(),
    }
}

fn word(g: &mut Gen) -> String {
    (0..1 + g.below(4)).map(|_| piece(g)).collect()
}

/// The fields `/bin/sh` gives `words` with `env` (one process per case).
fn shell_fields(words: &str, env: &[(String, String)]) -> Vec<String> {
    let script = format!("set -f; set -- {words}; printf '%s\\0' \"$#\" \"$@\"");
    let mut cmd = Command::new("/bin/sh");
    cmd.env_clear().arg("-c").arg(&script);
    for (n, v) in env {
        cmd.env(n, v);
    }
    let out = cmd.output().expect("run /bin/sh");
    assert!(
        out.status.success(),
        "/bin/sh failed on {script:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut fields: Vec<String> = text.split('\0').map(str::to_string).collect();
    assert_eq!(fields.pop().as_deref(), Some(""), "NUL-terminated");
    let n: usize = fields.remove(0).parse().expect("count");
    assert_eq!(n, fields.len());
    fields
}

/// The fields the reader gives the same words.
fn reader_fields(words: &str, env: &[(String, String)]) -> Vec<String> {
    let mut cmds = script_commands(&format!("set -- {words}"));
    resolve(&mut cmds, env);
    assert_eq!(cmds.len(), 1, "{words:?}: {cmds:#?}");
    assert_eq!(cmds[0].argv[..2], ["set", "--"]);
    cmds[0].argv[2..].to_vec()
}

#[test]
fn the_reader_splits_and_expands_words_as_bin_sh_does() {
    if !crate::testkit::require("/bin/sh", std::path::Path::new("/bin/sh").exists()) {
        return;
    }
    let mut g = Gen(0x5eed_2403);
    let mut checked = 0;
    for case in 0..400 {
        let env: Vec<(String, String)> = vec![
            ("X".into(), value(&mut g)),
            ("Y".into(), value(&mut g)),
            ("E".into(), String::new()),
        ];
        let words: Vec<String> = (0..1 + g.below(4)).map(|_| word(&mut g)).collect();
        let words = words.join(" ");
        let want = shell_fields(&words, &env);
        let got = reader_fields(&words, &env);
        assert_eq!(got, want, "case {case}: words {words:?} with {env:?}");
        checked += want.len();
    }
    assert!(checked > 400, "the generator produced too few fields ({checked})");
}

/// Each kind of quoting on its own, hand-picked, so a failure names the rule that broke; every
/// case is also checked against `/bin/sh`.
#[test]
fn quoting_rules_one_by_one() {
    let env: Vec<(String, String)> = vec![("X".into(), " -k  -s ".into()), ("E".into(), String::new())];
    let cases: &[(&str, &[&str])] = &[
        // Single quotes: literal, no expansion.
        ("'$X'", &["$X"]),
        // Double quotes: expanded, not split.
        ("\"$X\"", &[" -k  -s "]),
        // Unquoted: expanded and split at blanks, leading and trailing ones dropped.
        ("$X", &["-k", "-s"]),
        ("a$X", &["a", "-k", "-s"]),
        ("$X\"\"", &["-k", "-s", ""]),
        // An empty unquoted expansion is no field; an empty quoted one is.
        ("$E", &[]),
        ("\"$E\"", &[""]),
        ("''", &[""]),
        // Backslashes: any character outside quotes; only $ ` \" \\ inside double quotes.
        ("\\$X", &["$X"]),
        ("\"\\$X\\a\"", &["$X\\a"]),
        ("\\'$E\\'", &["''"]),
        // Operators.
        ("${E:-a b}", &["a", "b"]),
        ("\"${E:-a b}\"", &["a b"]),
        ("${E-a}", &[]),
        ("${X:+on}", &["on"]),
        ("${E:+on}", &[]),
    ];
    let sh = crate::testkit::require("/bin/sh", std::path::Path::new("/bin/sh").exists());
    for (words, want) in cases {
        assert_eq!(reader_fields(words, &env), *want, "{words}");
        if sh {
            assert_eq!(shell_fields(words, &env), *want, "/bin/sh on {words}");
        }
    }
}

/// What the reader keeps as written, and why the rules can rely on it: a variable the
/// environment does not define stays a [`Part::Param`] (`variable_at` finds it, quoted or not,
/// also through the script's own `X=$OPTS`); a single-quoted `'$OPTS'` is text.
#[test]
fn unknown_variables_stay_variables_and_literal_dollars_stay_text() {
    let mut cmds = script_commands("A=$OPTS; exec curl $OPTS \"$OPTS\" '$OPTS' --x=$OPTS $A \"${OPTS}\"x");
    resolve(&mut cmds, &[]);
    let curl = cmds.iter().find(|c| c.name() == "curl").expect("curl");
    let found: Vec<Option<(String, &str, &str)>> = (0..curl.argv.len()).map(|i| curl.variable_at(i)).collect();
    assert_eq!(
        found,
        [
            None,
            Some((String::new(), "OPTS", "$OPTS")),
            Some((String::new(), "OPTS", "$OPTS")),
            None,
            Some(("--x=".into(), "OPTS", "$OPTS")),
            Some((String::new(), "OPTS", "$OPTS")),
            None,
        ],
        "{curl:#?}"
    );
    assert_eq!(curl.argv[3], "$OPTS", "the literal word as written");
}
