//! Escaping shared by the text formats. Every value in a report can come from hostile input
//! (object names, values, file names), so each format escapes for its strictest consumer:
//! XML 1.0 for JUnit, GitHub-flavoured Markdown (inside tables) for the PR comment.

/// A character XML 1.0 cannot carry at all, not even as a character reference.
fn xml_forbidden(c: char) -> bool {
    let u = c as u32;
    (u < 0x20 && !matches!(c, '\t' | '\n' | '\r')) || u == 0xFFFE || u == 0xFFFF
}

/// Forbidden characters stay visible as `[U+XXXX]` instead of silently disappearing.
fn push_forbidden(o: &mut String, c: char) {
    o.push_str(&format!("[U+{:04X}]", c as u32));
}

/// XML character data: `&`, `<`, `>` escaped, CR kept as `&#13;` (a raw CR would be read as
/// LF), characters XML 1.0 forbids replaced by `[U+XXXX]`.
pub fn xml_text(s: &str) -> String {
    xml_escape(s, false)
}

/// An XML attribute value (double-quoted): also `"` and `'`, and TAB/LF/CR as references, which
/// attribute-value normalisation would otherwise turn into spaces.
pub fn xml_attr(s: &str) -> String {
    xml_escape(s, true)
}

fn xml_escape(s: &str, attribute: bool) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '\r' => o.push_str("&#13;"),
            '"' if attribute => o.push_str("&quot;"),
            '\'' if attribute => o.push_str("&apos;"),
            '\t' if attribute => o.push_str("&#9;"),
            '\n' if attribute => o.push_str("&#10;"),
            c if xml_forbidden(c) => push_forbidden(&mut o, c),
            c => o.push(c),
        }
    }
    o
}

/// Text in a GFM table cell: HTML special characters as entities (nothing becomes a tag),
/// Markdown punctuation backslash-escaped (nothing becomes emphasis, a link or a heading), `|`
/// escaped (it would end the cell), line breaks as `<br>` (a raw CR or LF would end the row).
pub fn md_cell(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                o.push_str("<br>");
            }
            '\n' => o.push_str("<br>"),
            '\0' => o.push('\u{FFFD}'),
            // Inline Markdown in a cell: emphasis, code, links, strikethrough, math; `|` ends the cell.
            '\\' | '`' | '*' | '_' | '[' | ']' | '~' | '|' | '$' => {
                o.push('\\');
                o.push(c);
            }
            c if c.is_control() => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// A GFM code span inside a table cell: fenced with one backtick more than the longest run in
/// the value (padded with spaces when the value starts or ends with a backtick), `|` escaped
/// (GFM splits cells before it parses code spans), CR and LF shown as ␍ and ␊.
pub fn md_code(s: &str) -> String {
    let body: String = s
        .chars()
        .map(|c| match c {
            '\r' => '␍',
            '\n' => '␊',
            '\0' => '\u{FFFD}',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect::<String>()
        .replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest + 1);
    let pad = if body.starts_with('`') || body.ends_with('`') || body.starts_with(' ') && body.ends_with(' ') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// At most `max` characters of `s`, with `…` when cut.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_keeps_cr_and_drops_nothing_silently() {
        assert_eq!(
            xml_text("a\rb\u{FFFF}c\u{1}<&>"),
            "a&#13;b[U+FFFF]c[U+0001]&lt;&amp;&gt;"
        );
        assert_eq!(xml_attr("x\"\n\t'\u{FFFE}"), "x&quot;&#10;&#9;&apos;[U+FFFE]");
    }

    #[test]
    fn markdown_cells_cannot_break_rows_or_make_html() {
        assert_eq!(md_cell("a|b\r\nc\rd\ne"), "a\\|b<br>c<br>d<br>e");
        assert_eq!(md_cell("<script>x&y</script>"), "&lt;script&gt;x&amp;y&lt;/script&gt;");
        assert_eq!(
            md_cell("(<name>-<hash>) *a* `b`"),
            "(&lt;name&gt;-&lt;hash&gt;) \\*a\\* \\`b\\`"
        );
    }

    #[test]
    fn code_spans_outlast_backtick_runs() {
        assert_eq!(md_code("plain"), "`plain`");
        assert_eq!(md_code("a`b"), "``a`b``");
        assert_eq!(md_code("``x"), "``` ``x ```");
        assert_eq!(md_code("a|b\nc"), "`a\\|b␊c`");
    }

    #[test]
    fn clip_counts_characters() {
        assert_eq!(clip("üüü", 2), "üü…");
        assert_eq!(clip("ab", 2), "ab");
    }
}
