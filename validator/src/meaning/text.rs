//! Whether a reason a person wrote says something.

/// A reason says something when it holds at least one letter or digit (of any script). A reason
/// made only of white space, punctuation, or invisible and format characters (zero-width spaces
/// U+200B, word joiners U+2060, byte order marks U+FEFF, bidi controls) says nothing: `trim()`
/// does not remove those, so `"\u{200b}"` looked like a reason.
pub fn says_something(reason: &str) -> bool {
    reason.chars().any(char::is_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_and_format_characters_are_not_words() {
        for empty in [
            "",
            " ",
            "\t\n",
            "\u{200b}",
            "\u{200b}\u{200c}\u{200d}",
            "\u{2060}",
            "\u{feff}",
            "\u{202e}\u{202c}",
            "\u{00a0}\u{3000}",
            "\u{180e}",
            "...",
            "-",
            "\u{00ad}",
        ] {
            assert!(!says_something(empty), "{empty:?}");
        }
        for words in ["r", "upstream has no digest yet", "\u{200b}x", "ticket 42", "上游", "7"] {
            assert!(says_something(words), "{words:?}");
        }
    }
}
