//! Command lines as a container runs them: its `command` + `args` (or a probe's or lifecycle
//! hook's `exec.command`), and the scripts it hands to `sh -c`, as simple commands. Each simple
//! command keeps its leading `NAME=value` assignments (and those of `export`/`env`) apart from its
//! words, with quotes removed and wrappers (`exec`, `env`, `nohup`, `if`, …) dropped, so a rule
//! can judge a word by the command it belongs to: `echo -insecure` prints a word, `curl -k`
//! turns verification off, `FOO=1 cmd` sets a variable.
//!
//! Words are read as a POSIX shell reads them (POSIX.1-2017 XCU 2.2 Quoting, 2.6 Word
//! Expansions): inside single quotes every character is literal; inside double quotes `$`
//! expansions happen but their values are not split, and a backslash escapes only `$`, `` ` ``,
//! `"`, `\` and a newline; outside quotes a backslash escapes any character. Each word keeps its
//! [`Part`]s, so [`resolve`] expands `$NAME` as the shell does (a quoted `"$X"` is one field, an
//! unquoted `$X` splits at blanks, `'$X'` stays `$X`). What the reader does not evaluate — a
//! command substitution (`$(cat /secret/token)`, backticks, whose commands are read too),
//! arithmetic, special parameters, pathname expansion (the node's files are not the render's) —
//! stays in its word as written. `shell_tests.rs` checks the reader against the real `/bin/sh`
//! on generated words. Depth is bounded, and the work is linear in the text.

/// One piece of a shell word, as the shell read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Characters taken as they are: plain ones (`quoted` false), or quoted or escaped ones
    /// (`quoted`: they never start an assignment, and an empty quoted string still makes a word).
    Text { text: String, quoted: bool },
    /// A parameter expansion the reader evaluates: `$NAME`, `${NAME}`, `${NAME<op>word}` for the
    /// operators `-`, `=`, `+`, `?` (each with or without `:`): the name, the operator with its
    /// word as written (`:-word`; empty for none), the whole as written, and whether it stood in
    /// double quotes (then its value is one field, never split).
    Param {
        name: String,
        op: String,
        raw: String,
        quoted: bool,
    },
    /// An expansion the reader does not perform, as written: a command substitution (`$(…)`,
    /// backticks), arithmetic (`$((…))`), a special or positional parameter (`$1`, `$@`, `$?`),
    /// an operator it does not evaluate (`${#X}`, `${X%.*}`).
    Other { raw: String },
}

/// A word: its parts in order.
pub type Word = Vec<Part>;

/// A word's text with quotes removed and expansions as written (`"$X"y` → `$Xy`).
pub fn text(word: &[Part]) -> String {
    word.iter()
        .map(|p| match p {
            Part::Text { text, .. } => text.as_str(),
            Part::Param { raw, .. } | Part::Other { raw } => raw.as_str(),
        })
        .collect()
}

/// Append characters to a word, joining them to its last part when that is text of the same kind.
fn push_text(word: &mut Word, s: &str, quoted: bool) {
    if let Some(Part::Text { text, quoted: q }) = word.last_mut() {
        if *q == quoted {
            text.push_str(s);
            return;
        }
    }
    word.push(Part::Text {
        text: s.to_string(),
        quoted,
    });
}

/// One simple command.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// `NAME=value` before the command, or given to `export`/`readonly`/`env` (value as written,
    /// quotes removed, substitutions kept).
    pub assigns: Vec<(String, String)>,
    /// The command and its arguments (empty for a bare `export A=1` or `A=1`), quotes removed.
    pub argv: Vec<String>,
    /// It was read from a shell script (`sh -c`, a script file), where the shell expands `$NAME`
    /// ([`resolve`]); an exec command's words are passed on as written.
    pub script: bool,
    /// Each word of `argv` as the shell read it (`argv[i] == text(&words[i])`).
    pub words: Vec<Word>,
    /// Each value of `assigns` as the shell read it.
    pub assign_words: Vec<Word>,
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

    /// Word `i` when it ends in a parameter expansion the reader left as written and holds
    /// nothing else but literal text before it: (that text, the variable's name, the expansion
    /// as written). `$NAME` and `"${NAME}"` give `("", NAME, …)`, `--flag=$NAME` gives
    /// `("--flag=", NAME, …)`; `'$NAME'` (literal) and `$(cmd)` give None.
    pub fn variable_at(&self, i: usize) -> Option<(String, &str, &str)> {
        let word = self.words.get(i)?;
        let (Part::Param { name, raw, .. }, before) = word.split_last()? else {
            return None;
        };
        before
            .iter()
            .all(|p| matches!(p, Part::Text { .. }))
            .then(|| (text(before), name.as_str(), raw.as_str()))
    }
}

pub fn basename(w: &str) -> &str {
    w.rsplit('/').next().unwrap_or(w)
}

const MAX_DEPTH: usize = 8;

/// Programs that run their `-c` argument as POSIX shell text (`sh -c SCRIPT`, `bash -lc SCRIPT`):
/// the one list of shells, read by this reader, by the router's flag reader
/// (`router::read_flags`, a layer above) and by the configuration-file reader (a `.bash` file is a
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
pub fn argv_commands(argv: &[String]) -> Vec<SimpleCommand> {
    let mut raw: Vec<Vec<Word>> = vec![Vec::new()];
    let mut subs: Vec<Vec<Word>> = Vec::new();
    let literal = |el: &str| {
        vec![Part::Text {
            text: el.to_string(),
            quoted: false,
        }]
    };
    for el in argv {
        if !el.contains(|c: char| c.is_whitespace() || ";&|$`'\"".contains(c)) {
            raw.last_mut().expect("never empty").push(literal(el));
            continue;
        }
        // `sh -c SCRIPT`: the script element is a script of its own, not more words.
        let cur = raw.last().expect("never empty");
        if shell_script_follows(cur) {
            raw.last_mut().expect("never empty").push(literal(el));
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
pub fn script_commands(text: &str) -> Vec<SimpleCommand> {
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

/// The characters of the default `IFS` (space, tab, newline) at which an unquoted expansion's
/// value is split into fields.
const IFS: &[char] = &[' ', '\t', '\n'];

/// The shell's parameter expansion and field splitting in the commands read from scripts:
/// [`Part::Param`] in words and assignment values, from the script's own earlier assignments
/// (`A=1`, `export A=1`) and then `env`, the container's environment as the kubelet builds it
/// (`router::effective_env`). An unquoted expansion's value splits into fields at blanks
/// (`curl $CURL_OPTS url` with `CURL_OPTS="-k -s"`), a quoted one stays one field, an empty
/// unquoted one makes no field; an assignment's value never splits. A variable neither defines
/// stays as written (it may come from a source the gate cannot read), and so does an operator's
/// word that is not plain text.
pub fn resolve(cmds: &mut [SimpleCommand], env: &[(String, String)]) {
    // The script's own variables keep their words: one set from a variable the reader could not
    // resolve (`X=$OPTS`) stays that variable when used (`$X`).
    let mut vars = Vars { local: Vec::new(), env };
    for cmd in cmds.iter_mut().filter(|c| c.script) {
        for (i, w) in cmd.assign_words.iter_mut().enumerate() {
            let value = vars.expand(w, false).into_iter().next().unwrap_or_default();
            cmd.assigns[i].1 = text(&value);
            *w = value;
        }
        let words: Vec<Word> = cmd.words.iter().flat_map(|w| vars.expand(w, true)).collect();
        cmd.argv = words.iter().map(|w| text(w)).collect();
        cmd.words = words;
        // `A=1` alone and `export A=1` set a shell variable; `A=1 cmd` only cmd's environment.
        if cmd.argv.is_empty() {
            let names = cmd.assigns.iter().map(|(n, _)| n.clone());
            vars.local.extend(names.zip(cmd.assign_words.iter().cloned()));
        }
    }
}

/// The variables a script sees: its own (latest last), then the container's environment.
struct Vars<'a> {
    local: Vec<(String, Word)>,
    env: &'a [(String, String)],
}

impl Vars<'_> {
    fn get(&self, name: &str) -> Option<Word> {
        let local = self.local.iter().rev().find(|(n, _)| n == name).map(|(_, w)| w.clone());
        local.or_else(|| {
            self.env.iter().rev().find(|(n, _)| n == name).map(|(_, v)| {
                vec![Part::Text {
                    text: v.clone(),
                    quoted: true,
                }]
            })
        })
    }

    /// The fields one word expands to (`split`: field splitting, not done for assignments).
    fn expand(&mut self, word: &[Part], split: bool) -> Vec<Word> {
        let mut fields = Vec::new();
        let mut cur: Word = Vec::new();
        // Whether `cur` is a field even if empty: it holds a character, a quoted (even empty)
        // string, or an expansion left as written.
        let mut has = false;
        for part in word {
            let (value, splits) = match part {
                Part::Text { text, quoted } => {
                    has |= *quoted || !text.is_empty();
                    push_text(&mut cur, text, *quoted);
                    continue;
                }
                Part::Other { .. } => {
                    cur.push(part.clone());
                    has = true;
                    continue;
                }
                Part::Param { name, op, quoted, .. } => match self.parameter(name, op) {
                    None => {
                        cur.push(part.clone());
                        has = true;
                        continue;
                    }
                    Some(v) => (v, split && !*quoted),
                },
            };
            if !splits {
                has = true;
            }
            for p in value {
                match p {
                    Part::Text { text, .. } if splits => {
                        for c in text.chars() {
                            if IFS.contains(&c) {
                                if has {
                                    fields.push(std::mem::take(&mut cur));
                                    has = false;
                                }
                            } else {
                                push_text(&mut cur, c.encode_utf8(&mut [0; 4]), true);
                                has = true;
                            }
                        }
                    }
                    Part::Text { text, .. } => push_text(&mut cur, &text, true),
                    other => {
                        cur.push(other);
                        has = true;
                    }
                }
            }
        }
        if has || !split {
            fields.push(cur);
        }
        fields
    }

    /// The value of `${name<op>}` when the reader knows it: the variable's, or the operator's
    /// word when the operator picks it and it is plain text (`:=`/`=` then also set the
    /// variable). POSIX.1-2017 XCU 2.6.2.
    fn parameter(&mut self, name: &str, op: &str) -> Option<Word> {
        let v = self.get(name)?;
        let colon = op.starts_with(':');
        let rest = op.strip_prefix(':').unwrap_or(op);
        let null = colon
            && v.iter()
                .all(|p| matches!(p, Part::Text { text, .. } if text.is_empty()));
        let word = || {
            let w = &rest[1..];
            (!w.contains(['$', '`', '\\', '\'', '"'])).then(|| {
                vec![Part::Text {
                    text: w.to_string(),
                    quoted: true,
                }]
            })
        };
        match rest.chars().next() {
            None => Some(v),
            Some('-') if null => word(),
            Some('=') if null => {
                let w = word()?;
                self.local.push((name.to_string(), w.clone()));
                Some(w)
            }
            Some('-' | '=' | '?') if !null => Some(v),
            Some('+') if !null => word(),
            Some('+') => Some(Vec::new()),
            _ => None,
        }
    }
}

/// `sh -c` (or `-ec`, `-euxc`, …) ends `words`: the next element is a script.
fn shell_script_follows(words: &[Word]) -> bool {
    let words: Vec<String> = words.iter().map(|w| text(w)).collect();
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

/// `NAME=value` → (NAME, value's word): the name and `=` must be plain (unquoted) text.
fn assignment(w: &[Part]) -> Option<(String, Word)> {
    let (Part::Text { text, quoted: false }, rest) = w.split_first()? else {
        return None;
    };
    let (n, v) = text.split_once('=')?;
    if !is_name(n) {
        return None;
    }
    let mut value = Vec::new();
    if !v.is_empty() {
        value.push(Part::Text {
            text: v.to_string(),
            quoted: false,
        });
    }
    value.extend(rest.iter().cloned());
    Some((n.to_string(), value))
}

/// Turn one raw word list into simple commands: assignments apart, wrappers dropped, `sh -c`
/// scripts read.
fn simple(words: Vec<Word>, depth: usize, out: &mut Vec<SimpleCommand>) {
    let mut cmd = SimpleCommand::default();
    let mut it = words.into_iter().peekable();
    fn assign(cmd: &mut SimpleCommand, (n, v): (String, Word)) {
        cmd.assigns.push((n, text(&v)));
        cmd.assign_words.push(v);
    }
    loop {
        // Leading assignments.
        while let Some(a) = it.peek().and_then(|w| assignment(w)) {
            assign(&mut cmd, a);
            it.next();
        }
        let Some(first) = it.peek().map(|w| text(w)) else { break };
        match basename(&first) {
            "exec" | "nohup" | "command" | "builtin" | "time" | "if" | "then" | "else" | "elif" | "do" | "while"
            | "until" | "!" | "{" | "}" => {
                it.next();
            }
            "sudo" | "env" => {
                it.next();
                // Their options (`env -i`, `sudo -E`); `-u NAME` takes a value.
                while let Some(w) = it.peek().map(|w| text(w)) {
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
                        assign(&mut cmd, a);
                    }
                }
                break;
            }
            _ => break,
        }
    }
    cmd.words = it.collect();
    cmd.argv = cmd.words.iter().map(|w| text(w)).collect();
    if cmd.argv.first().is_some_and(|w| is_shell(w)) {
        // `sh [-e] -c SCRIPT [$0 …]`: the script's commands are what runs.
        let flags = cmd.argv[1..].iter().take_while(|w| w.starts_with('-')).count();
        if cmd.argv[1..1 + flags].iter().any(|w| is_c_flag(w)) {
            if let Some(script) = cmd.argv.get(1 + flags).cloned() {
                if !cmd.assigns.is_empty() {
                    cmd.argv.truncate(1);
                    cmd.words.truncate(1);
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
fn lex(script: &str, depth: usize, cmds: &mut Vec<Vec<Word>>, subs: &mut Vec<Vec<Word>>) {
    let chars: Vec<char> = script.chars().collect();
    let n = chars.len();
    let mut cmd: Vec<Word> = Vec::new();
    let mut word: Word = Vec::new();
    let mut in_word = false;
    let mut skip_target = false;
    let mut i = 0;
    let end_word = |word: &mut Word, in_word: &mut bool, skip: &mut bool, cmd: &mut Vec<Word>| {
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
    let mut buf = [0u8; 4];
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
                let start = i;
                while i < n && chars[i] != '\'' {
                    i += 1;
                }
                let s: String = chars[start..i].iter().collect();
                push_text(&mut word, &s, true);
            }
            '"' => {
                in_word = true;
                push_text(&mut word, "", true);
                i += 1;
                while i < n && chars[i] != '"' {
                    match chars[i] {
                        '\\' if chars.get(i + 1) == Some(&'\n') => i += 1,
                        '\\' if i + 1 < n && "\"\\$`".contains(chars[i + 1]) => {
                            push_text(&mut word, chars[i + 1].encode_utf8(&mut buf), true);
                            i += 1;
                        }
                        '$' => {
                            i = dollar(&chars, i, true, depth, &mut word, subs);
                            continue;
                        }
                        '`' => {
                            i = backticks(&chars, i, depth, &mut word, subs);
                            continue;
                        }
                        other => push_text(&mut word, other.encode_utf8(&mut buf), true),
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
                    push_text(&mut word, next.encode_utf8(&mut buf), true);
                    in_word = true;
                    i += 1;
                }
            }
            '$' => {
                in_word = true;
                i = dollar(&chars, i, false, depth, &mut word, subs);
                continue;
            }
            '`' => {
                in_word = true;
                i = backticks(&chars, i, depth, &mut word, subs);
                continue;
            }
            '<' | '>' => {
                // A redirection: `2>&1`, `>/dev/null`, `<<EOF`; its target is no argument.
                if in_word && text(&word).chars().all(|c| c.is_ascii_digit()) && !word.is_empty() {
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
                push_text(&mut word, other.encode_utf8(&mut buf), false);
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

/// The expansion starting at the `$` at `at` (in double quotes when `quoted`), appended to
/// `word`; returns the index after it. A `$` that starts none is the character `$`.
fn dollar(chars: &[char], at: usize, quoted: bool, depth: usize, word: &mut Word, subs: &mut Vec<Vec<Word>>) -> usize {
    let n = chars.len();
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    match chars.get(at + 1) {
        Some('(') => substitution(chars, at + 1, depth, word, subs),
        Some('{') => {
            // To the matching `}` (nested `${…}` counted).
            let mut level = 0usize;
            let mut j = at + 1;
            while j < n {
                match chars[j] {
                    '{' => level += 1,
                    '}' => {
                        level -= 1;
                        if level == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            let end = (j + 1).min(n);
            let raw: String = chars[at..end].iter().collect();
            let inner: String = chars[at + 2..j.min(n)].iter().collect();
            let len = inner.find(|c: char| !name_char(c)).unwrap_or(inner.len());
            let (name, op) = inner.split_at(len);
            let known_op = op.is_empty()
                || ["-", "=", "+", "?"]
                    .iter()
                    .any(|o| op.starts_with(o) || op.strip_prefix(':').is_some_and(|r| r.starts_with(o)));
            if j < n && is_name(name) && known_op {
                word.push(Part::Param {
                    name: name.to_string(),
                    op: op.to_string(),
                    raw,
                    quoted,
                });
            } else {
                word.push(Part::Other { raw });
            }
            end
        }
        Some(&c) if c.is_ascii_alphabetic() || c == '_' => {
            let mut j = at + 1;
            while j < n && name_char(chars[j]) {
                j += 1;
            }
            let name: String = chars[at + 1..j].iter().collect();
            word.push(Part::Param {
                raw: format!("${name}"),
                name,
                op: String::new(),
                quoted,
            });
            j
        }
        Some(&c) if c.is_ascii_digit() || "@*#?$!-".contains(c) => {
            word.push(Part::Other { raw: format!("${c}") });
            at + 2
        }
        _ => {
            push_text(word, "$", quoted);
            at + 1
        }
    }
}

/// `$( … )` starting at the `(` at `open`: its text is appended to `word` as written, its
/// commands to `subs`; returns the index after the closing `)`.
fn substitution(chars: &[char], open: usize, depth: usize, word: &mut Word, subs: &mut Vec<Vec<Word>>) -> usize {
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
    word.push(Part::Other {
        raw: format!("$({inner})"),
    });
    if depth < MAX_DEPTH {
        let mut nested = Vec::new();
        lex(&inner, depth + 1, &mut nested, subs);
        subs.extend(nested);
    }
    (j + 1).min(chars.len())
}

/// `` `…` `` starting at the opening backtick; like `substitution`.
fn backticks(chars: &[char], open: usize, depth: usize, word: &mut Word, subs: &mut Vec<Vec<Word>>) -> usize {
    let mut j = open + 1;
    while j < chars.len() && chars[j] != '`' {
        j += 1;
    }
    let inner: String = chars[open + 1..j.min(chars.len())].iter().collect();
    word.push(Part::Other {
        raw: format!("`{inner}`"),
    });
    if depth < MAX_DEPTH {
        let mut nested = Vec::new();
        lex(&inner, depth + 1, &mut nested, subs);
        subs.extend(nested);
    }
    (j + 1).min(chars.len())
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod differential;

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
