//! What the gate may echo from its input. Every finding message passes through [`message`] in the
//! sink, and parse errors of outside input through [`error_text`]: URL userinfo is replaced by
//! `***`, quoted values are capped, and the whole text is bounded, so a password in a URL, a key
//! pasted into the wrong field or a 10 MB value never reaches a report, a log or a SARIF upload.

/// Longest value echoed whole (characters).
pub const MAX_VALUE: usize = 120;
/// Longest message echoed whole (characters).
pub const MAX_MESSAGE: usize = 2000;

/// `s` cut to `max` characters, saying how long it was.
pub fn cap(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let head: String = s.chars().take(max).collect();
    format!("{head}… ({n} characters)")
}

/// Replace the userinfo of every `scheme://user:password@host` in `s` with `***`.
pub fn redact_userinfo(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c == '`' || c == '\'' || c == '"' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("***");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Cap every `` `…` `` and `"…"` quoted value of `s` at [`MAX_VALUE`] characters.
fn cap_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_MESSAGE * 2));
    let mut rest = s;
    while let Some(open) = rest.find(['`', '"']) {
        let q = rest.as_bytes()[open] as char;
        out.push_str(&rest[..=open]);
        let after = &rest[open + 1..];
        match after.find(q) {
            Some(close) => {
                out.push_str(&cap(&after[..close], MAX_VALUE));
                out.push(q);
                rest = &after[close + 1..];
            }
            None => {
                out.push_str(&cap(after, MAX_VALUE));
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// A finding message as it may be shown: userinfo redacted, quoted values and the whole capped.
pub fn message(s: &str) -> String {
    cap(&cap_quoted(&redact_userinfo(s)), MAX_MESSAGE)
}

/// A parse error of outside input (policy, state) as it may be shown: parser messages quote the
/// offending value, which may be a secret pasted into the wrong field, so quoted values longer
/// than 40 characters are replaced by their length and the whole is bounded.
pub fn error_text(e: &dyn std::fmt::Display) -> String {
    let s = redact_userinfo(&e.to_string());
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(open) = rest.find(['`', '"']) {
        let q = rest.as_bytes()[open] as char;
        out.push_str(&rest[..=open]);
        let after = &rest[open + 1..];
        let close = after.find(q).unwrap_or(after.len());
        let v = &after[..close];
        if v.chars().count() > 40 {
            out.push_str(&format!("<{} characters, not shown>", v.chars().count()));
        } else {
            out.push_str(v);
        }
        if close < after.len() {
            out.push(q);
            rest = &after[close + 1..];
        } else {
            rest = "";
        }
    }
    out.push_str(rest);
    cap(&out, 400)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_redacted_and_the_rest_kept() {
        assert_eq!(
            redact_userinfo("BAO_ADDR=http://root:s3cret@openbao.nvcf:8200/v1 and https://a@b/c?x=y@z"),
            "BAO_ADDR=http://***@openbao.nvcf:8200/v1 and https://***@b/c?x=y@z"
        );
        assert_eq!(redact_userinfo("http://openbao:8200"), "http://openbao:8200");
        assert_eq!(redact_userinfo("`http://u:p@h`"), "`http://***@h`");
        assert_eq!(redact_userinfo("no url here"), "no url here");
    }

    #[test]
    fn long_values_and_messages_are_capped() {
        let long = "a".repeat(10_000);
        let m = message(&format!("sets `X={long}`: plain"));
        assert!(m.len() < 200, "{m}");
        assert!(m.contains("(10002 characters)"), "{m}");
        assert!(m.ends_with("`: plain"), "{m}");
        let m = message(&"b".repeat(5000));
        assert!(m.chars().count() < MAX_MESSAGE + 40, "{}", m.len());
        assert_eq!(message("short `v` and \"w\""), "short `v` and \"w\"");
    }

    #[test]
    fn parse_errors_do_not_echo_long_values() {
        let key = format!("-----BEGIN PRIVATE KEY-----{}", "Q".repeat(300));
        let e = format!("invalid type: string \"{key}\", expected u32 at line 1");
        let shown = error_text(&e);
        assert!(!shown.contains("QQQQ"), "{shown}");
        assert!(shown.contains("<327 characters, not shown>"), "{shown}");
        assert_eq!(error_text(&"unknown field `foo`"), "unknown field `foo`");
    }
}
