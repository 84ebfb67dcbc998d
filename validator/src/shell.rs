//! Command lines as a container runs them: its `command` + `args` (or a probe's or lifecycle
//! hook's `exec.command`), and the scripts it hands to `sh -c`, as simple commands. Each simple
//! command keeps its leading `NAME=value` assignments (and those of `export`/`env`) apart from its
//! words, with quotes removed and wrappers (`exec`, `env`, `nohup`, `if`, …) dropped, so a rule
//! can judge a word by the command it belongs to: `echo -insecure` prints a word, `curl -k`
//! turns verification off, `FOO=1 cmd` sets a variable.
//!
//! This is a reader, not a shell: no expansion is performed; a command substitution
//! (`$(cat /secret/token)`, backticks) stays in its word as written and its own commands are
//! read too. Depth is bounded, and the work is linear in the text.

/// One simple command.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SimpleCommand {
    /// `NAME=value` before the command, or given to `export`/`readonly`/`env` (value as written,
    /// quotes removed, substitutions kept).
    pub assigns: Vec<(String, String)>,
    /// The command and its arguments (empty for a bare `export A=1` or `A=1`).
    pub argv: Vec<String>,
    /// It was read from a shell script (`sh -c`, a script file), where the shell expands `$NAME`
    /// ([`resolve`]); an exec command's words are passed on as written.
    pub script: bool,
}

impl SimpleCommand {
    /// The command's name without its path (`/usr/bin/curl` → `curl`).
    pub fn name(&self) -> &str {
        self.argv.first().map(|w| basename(w)).unwrap_or_default()
    }

    /// Whether its arguments are only printed (`echo`, `printf`): they are text, not flags.
    pub fn prints(&self) -> bool {
        matches!(self.name(), "echo" | "printf")
    }
}

pub(crate) fn basename(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

const MAX_DEPTH: usize = 8;

/// Programs that run their `-c` argument as POSIX shell text (`sh -c SCRIPT`, `bash -lc SCRIPT`):
/// the one list of shells, read by this reader, by the router's flag reader
/// (`crate::router::read_flags`) and by the configuration-file reader (a `.bash` file is a
/// script). Sources: POSIX.1-2017 `sh` (`-c`); the manual pages of bash(1), dash(1), BusyBox
/// `ash`, zsh(1), ksh93(1) and mksh(1).
pub const SHELLS: &[&str] = &["sh", "bash", "ash", "dash", "zsh", "ksh", "mksh"];

/// Whether `program` (a path or a name) is one of the [`SHELLS`].
pub fn is_shell(program: &str) -> bool {
    SHELLS.contains(&basename(program))
}

/// The simple commands of an exec-style argv (`["sh", "-c", "script"]`, `["bao", "status",
/// "-tls-skip-verify"]`). An element holding several words or shell punctuation (`"--flag
/// value"`, `"exec router --x; sleep 1"`) is read as shell text continuing the command line.
pub(crate) fn argv_commands(argv: &[String]) -> Vec<SimpleCommand> {
    let mut raw: Vec<Vec<String>> = vec![Vec::new()];
    let mut subs: Vec<Vec<String>> = Vec::new();
    for el in argv {
        if !el.contains(|c: char| c.is_whitespace() || ";&|$`'\"".contains(c)) {
            raw.last_mut().expect("never empty").push(el.clone());
            continue;
        }
        // `sh -c SCRIPT`: the script element is a script of its own, not more words.
        let cur = raw.last().expect("never empty");
        if shell_script_follows(cur) {
            raw.last_mut().expect("never empty").push(el.clone());
            continue;
        }
        let mut cmds = Vec::new();
        lex(el, 0, &mut cmds, &mut subs);
        let mut cmds = cmds.into_iter();
        if let Some(first) = cmds.next() {
            raw.last_mut().expect("never empty").extend(first);
        }
        raw.extend(cmds);
    }
    let mut out = Vec::new();
    for words in raw.into_iter().chain(subs) {
        simple(words, 0, &mut out);
    }
    out
}

/// The simple commands of a shell script.
pub(crate) fn script_commands(text: &str) -> Vec<SimpleCommand> {
    let mut out = Vec::new();
    script_into(text, 0, &mut out);
    out
}

fn script_into(text: &str, depth: usize, out: &mut Vec<SimpleCommand>) {
    if depth > MAX_DEPTH {
        return;
    }
    let (mut cmds, mut subs) = (Vec::new(), Vec::new());
    lex(text, depth, &mut cmds, &mut subs);
    let start = out.len();
    for words in cmds.into_iter().chain(subs) {
        simple(words, depth, out);
    }
    for cmd in &mut out[start..] {
        cmd.script = true;
    }
}

/// The shell's parameter expansion in the commands read from scripts: `$NAME`, `${NAME}` (and
/// `${NAME:-…}`, `${NAME-…}`, `${NAME:=…}` when NAME is set) in words and assignment values,
/// from the script's own earlier assignments (`A=1`, `export A=1`) and then `env`, the
/// container's environment as the kubelet builds it (`router::effective_env`). A whole word that
/// is one unquoted variable splits into fields at whitespace (`curl $CURL_OPTS url` with
/// `CURL_OPTS="-k -s"`); the reader dropped the quotes, so a quoted one splits too. A variable
/// neither defines stays as written (it may come from a source the gate cannot read).
pub(crate) fn resolve(cmds: &mut [SimpleCommand], env: &[(String, String)]) {
    let mut local: Vec<(String, String)> = Vec::new();
    for cmd in cmds.iter_mut().filter(|c| c.script) {
        let lookup = |name: &str| -> Option<String> {
            local
                .iter()
                .rev()
                .chain(env.iter().rev())
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        for (_, v) in &mut cmd.assigns {
            *v = parameters(v, &lookup);
        }
        let mut argv = Vec::with_capacity(cmd.argv.len());
        for w in &cmd.argv {
            match whole_variable(w).and_then(|n| lookup(n)) {
                Some(v) => argv.extend(v.split_whitespace().map(str::to_string)),
                None => argv.push(parameters(w, &lookup)),
            }
        }
        cmd.argv = argv;
        // `A=1` alone and `export A=1` set a shell variable; `A=1 cmd` only cmd's environment.
        if cmd.argv.is_empty() {
            local.extend(cmd.assigns.iter().cloned());
        }
    }
}

/// The name of a word that is exactly one variable (`$NAME`, `${NAME}`).
pub(crate) fn whole_variable(w: &str) -> Option<&str> {
    let body = w.strip_prefix('$')?;
    let name = body.strip_prefix('{').and_then(|b| b.strip_suffix('}')).unwrap_or(body);
    is_name(name).then_some(name)
}

/// `$NAME` and `${NAME…}` in `w` replaced by their values where `lookup` knows them.
fn parameters(w: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(w.len());
    let mut rest = w;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(body) = after.strip_prefix('{') {
            if let Some(j) = body.find('}') {
                let inner = &body[..j];
                let end = inner
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(inner.len());
                let (name, op) = inner.split_at(end);
                let plain = op.is_empty() || [":-", "-", ":="].iter().any(|p| op.starts_with(p));
                match lookup(name).filter(|v| plain && is_name(name) && !(op.starts_with(':') && v.is_empty())) {
                    Some(v) => out.push_str(&v),
                    None => out.push_str(&rest[i..i + 2 + j + 1]),
                }
                rest = &body[j + 1..];
                continue;
            }
        }
        let len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..len];
        match lookup(name).filter(|_| is_name(name)) {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[i..i + 1 + len]),
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

/// `sh -c` (or `-ec`, `-euxc`, …) ends `words`: the next element is a script.
fn shell_script_follows(words: &[String]) -> bool {
    let Some(i) = words.iter().position(|w| is_shell(w)) else {
        return false;
    };
    words[i + 1..].iter().all(|w| w.starts_with('-')) && words[i + 1..].iter().any(|w| is_c_flag(w))
}

fn is_c_flag(w: &str) -> bool {
    w.len() >= 2
        && w.starts_with('-')
        && !w.starts_with("--")
        && w[1..].chars().all(|c| c.is_ascii_alphabetic())
        && w.contains('c')
}

fn is_name(s: &str) -> bool {
    let mut cs = s.chars();
    cs.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `NAME=value` → (NAME, value).
fn assignment(w: &str) -> Option<(String, String)> {
    let (n, v) = w.split_once('=')?;
    is_name(n).then(|| (n.to_string(), v.to_string()))
}

/// Turn one raw word list into simple commands: assignments apart, wrappers dropped, `sh -c`
/// scripts read.
fn simple(words: Vec<String>, depth: usize, out: &mut Vec<SimpleCommand>) {
    let mut cmd = SimpleCommand::default();
    let mut it = words.into_iter().peekable();
    loop {
        // Leading assignments.
        while let Some(a) = it.peek().and_then(|w| assignment(w)) {
            cmd.assigns.push(a);
            it.next();
        }
        let Some(first) = it.peek().cloned() else { break };
        match basename(&first) {
            "exec" | "nohup" | "command" | "builtin" | "time" | "if" | "then" | "else" | "elif" | "do" | "while"
            | "until" | "!" | "{" | "}" => {
                it.next();
            }
            "sudo" | "env" => {
                it.next();
                // Their options (`env -i`, `sudo -E`); `-u NAME` takes a value.
                while let Some(w) = it.peek().cloned() {
                    if w == "-u" || w == "--unset" {
                        it.next();
                        it.next();
                    } else if w.starts_with('-') {
                        it.next();
                    } else {
                        break;
                    }
                }
            }
            "export" | "readonly" | "declare" | "typeset" | "local" => {
                it.next();
                for w in it.by_ref() {
                    if let Some(a) = assignment(&w) {
                        cmd.assigns.push(a);
                    }
                }
                break;
            }
            _ => break,
        }
    }
    cmd.argv = it.collect();
    if cmd.argv.first().is_some_and(|w| is_shell(w)) {
        // `sh [-e] -c SCRIPT [$0 …]`: the script's commands are what runs.
        let flags = cmd.argv[1..].iter().take_while(|w| w.starts_with('-')).count();
        if cmd.argv[1..1 + flags].iter().any(|w| is_c_flag(w)) {
            if let Some(script) = cmd.argv.get(1 + flags).cloned() {
                if !cmd.assigns.is_empty() {
                    cmd.argv.truncate(1);
                    out.push(cmd);
                }
                script_into(&script, depth + 1, out);
                return;
            }
        }
    }
    if !cmd.argv.is_empty() || !cmd.assigns.is_empty() {
        out.push(cmd);
    }
}

/// Split shell text into raw word lists, one per simple command, in order; the text of each
/// command substitution is split too, into `subs`.
fn lex(text: &str, depth: usize, cmds: &mut Vec<Vec<String>>, subs: &mut Vec<Vec<String>>) {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let mut cmd: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut skip_target = false;
    let mut i = 0;
    let end_word = |word: &mut String, in_word: &mut bool, skip: &mut bool, cmd: &mut Vec<String>| {
        if *in_word {
            if *skip {
                *skip = false;
            } else {
                cmd.push(std::mem::take(word));
            }
        }
        word.clear();
        *in_word = false;
    };
    while i < n {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\r' => end_word(&mut word, &mut in_word, &mut skip_target, &mut cmd),
            '\n' | ';' | '&' | '|' | '(' | ')' => {
                end_word(&mut word, &mut in_word, &mut skip_target, &mut cmd);
                skip_target = false;
                if !cmd.is_empty() {
                    cmds.push(std::mem::take(&mut cmd));
                }
            }
            '#' if !in_word => {
                while i < n && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '\'' => {
                in_word = true;
                i += 1;
                while i < n && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < n && chars[i] != '"' {
                    match chars[i] {
                        '\\' if i + 1 < n && "\"\\$`".contains(chars[i + 1]) => {
                            word.push(chars[i + 1]);
                            i += 1;
                        }
                        '$' if chars.get(i + 1) == Some(&'(') => {
                            i = substitution(&chars, i + 1, depth, &mut word, subs);
                            continue;
                        }
                        '`' => {
                            i = backticks(&chars, i, depth, &mut word, subs);
                            continue;
                        }
                        other => word.push(other),
                    }
                    i += 1;
                }
            }
            '\\' => {
                if chars.get(i + 1) == Some(&'\n') {
                    i += 2;
                    continue;
                }
                if let Some(&next) = chars.get(i + 1) {
                    word.push(next);
                    in_word = true;
                    i += 1;
                }
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                in_word = true;
                i = substitution(&chars, i + 1, depth, &mut word, subs);
                continue;
            }
            '$' if chars.get(i + 1) == Some(&'{') => {
                in_word = true;
                while i < n && chars[i] != '}' {
                    word.push(chars[i]);
                    i += 1;
                }
                if i < n {
                    word.push('}');
                }
            }
            '`' => {
                in_word = true;
                i = backticks(&chars, i, depth, &mut word, subs);
                continue;
            }
            '<' | '>' => {
                // A redirection: `2>&1`, `>/dev/null`, `<<EOF`; its target is no argument.
                if in_word && word.chars().all(|c| c.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                } else {
                    end_word(&mut word, &mut in_word, &mut skip_target, &mut cmd);
                }
                while i + 1 < n && matches!(chars[i + 1], '<' | '>' | '&' | '-') {
                    i += 1;
                }
                skip_target = true;
            }
            other => {
                word.push(other);
                in_word = true;
            }
        }
        i += 1;
    }
    end_word(&mut word, &mut in_word, &mut skip_target, &mut cmd);
    if !cmd.is_empty() {
        cmds.push(cmd);
    }
}

/// `$( … )` starting at the `(` at `open`: its text is appended to `word` as written, its
/// commands to `subs`; returns the index after the closing `)`.
fn substitution(chars: &[char], open: usize, depth: usize, word: &mut String, subs: &mut Vec<Vec<String>>) -> usize {
    let mut level = 0usize;
    let mut j = open;
    let mut quote: Option<char> = None;
    while j < chars.len() {
        let c = chars[j];
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => level += 1,
            (None, ')') => {
                level -= 1;
                if level == 0 {
                    break;
                }
            }
            _ => {}
        }
        j += 1;
    }
    let inner: String = chars[open + 1..j.min(chars.len())].iter().collect();
    word.push_str("$(");
    word.push_str(&inner);
    word.push(')');
    if depth < MAX_DEPTH {
        let mut nested = Vec::new();
        lex(&inner, depth + 1, &mut nested, subs);
        subs.extend(nested);
    }
    (j + 1).min(chars.len())
}

/// `` `…` `` starting at the opening backtick; like `substitution`.
fn backticks(chars: &[char], open: usize, depth: usize, word: &mut String, subs: &mut Vec<Vec<String>>) -> usize {
    let mut j = open + 1;
    while j < chars.len() && chars[j] != '`' {
        j += 1;
    }
    let inner: String = chars[open + 1..j.min(chars.len())].iter().collect();
    word.push('`');
    word.push_str(&inner);
    word.push('`');
    if depth < MAX_DEPTH {
        let mut nested = Vec::new();
        lex(&inner, depth + 1, &mut nested, subs);
        subs.extend(nested);
    }
    (j + 1).min(chars.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<SimpleCommand> {
        argv_commands(&words.iter().map(|w| w.to_string()).collect::<Vec<_>>())
    }

    fn shown(cmds: &[SimpleCommand]) -> Vec<String> {
        cmds.iter()
            .map(|c| {
                let a: Vec<String> = c.assigns.iter().map(|(n, v)| format!("{n}={v}")).collect();
                format!("[{}] {}", a.join(" "), c.argv.join(" "))
            })
            .collect()
    }

    #[test]
    fn scripts_split_into_simple_commands() {
        assert_eq!(
            shown(&argv(&[
                "/bin/sh",
                "-ec",
                "VAULT_SKIP_VERIFY=true vault operator step-down; export BAO_SKIP_VERIFY=1 X; \
                 curl -fsSk https://x && wget --no-check-certificate 'https://y' | tee /tmp/o 2>&1; \
                 echo \"do not use -insecure\" # -k in a comment\n exec env -i A=1 bao status -tls-skip-verify"
            ])),
            [
                "[VAULT_SKIP_VERIFY=true] vault operator step-down",
                "[BAO_SKIP_VERIFY=1] ",
                "[] curl -fsSk https://x",
                "[] wget --no-check-certificate https://y",
                "[] tee /tmp/o",
                "[] echo do not use -insecure",
                "[A=1] bao status -tls-skip-verify",
            ]
        );
        // Command substitutions stay in their word and are read as commands too.
        assert_eq!(
            shown(&argv(&[
                "sh",
                "-c",
                "BAO_TOKEN=$(cat /secret/token) bao secrets enable pki; bao login `cat /s/t`"
            ])),
            [
                "[BAO_TOKEN=$(cat /secret/token)] bao secrets enable pki",
                "[] bao login `cat /s/t`",
                "[] cat /secret/token",
                "[] cat /s/t",
            ]
        );
        // Exec form without a shell: one command; an element with spaces continues it.
        assert_eq!(
            shown(&argv(&["router", "--a=1", "--b value", "exec x --y; sleep 1"])),
            ["[] router --a=1 --b value exec x --y", "[] sleep 1"]
        );
        assert_eq!(shown(&argv(&["server", "-dev"])), ["[] server -dev"]);
        // Nested `sh -c` and unbalanced text end without a panic.
        assert_eq!(
            shown(&script_commands("bash -c 'sh -c \"curl -k x\"'")),
            ["[] curl -k x"]
        );
        for junk in ["$(", "`", "'", "\"$(x", "a >", "${", "\\", "$((1+(2))"] {
            let _ = script_commands(junk);
            let _ = argv(&["sh", "-c", junk]);
        }
        let deep = "$(".repeat(200);
        let _ = script_commands(&deep);
    }
}
