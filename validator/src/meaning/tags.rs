//! Image tags by meaning: a tag either names a version or it moves. `latest`, `stable`, `main`,
//! `edge`, `lts`, `alpine`, `3` … name no version: the registry moves them to a new image
//! whenever upstream publishes, so the render no longer says what runs. No list of moving words:
//! a tag that does not have the shape of a version is moving, whatever it says.
//!
//! The default version shape: some `-`/`_`/`+`-separated part of the tag is `MAJOR.MINOR` or
//! longer (`1.27.3`, `v1.19.1`, `2.0.0-debian-12-r3`, `120.0-headless`); a bare major (`3`) moves
//! with every minor release. An organisation whose tags look otherwise (dates, commit ids) says so
//! in the policy (`settings.imageVersionTag`, a regular expression the whole tag must match).
//!
//! A version tag that marks a development build (`1.5.0-SNAPSHOT`, `1.2-dev`) is still refused:
//! those words are data below, each with where the convention comes from.

/// Words that mark a snapshot or development build inside a version tag, and their source.
pub const DEVELOPMENT_WORDS: &[(&str, &str)] = &[
    (
        "snapshot",
        "Maven SNAPSHOT versions (maven.apache.org, version ranges and snapshots)",
    ),
    ("dev", "PEP 440 .devN releases; common -dev image tags"),
    ("devel", "Debian/Fedora -devel packages, -devel image tags"),
    ("develop", "git-flow's develop branch built as a tag"),
    ("development", "branch builds"),
    ("nightly", "nightly builds (Rust, Docker Hub)"),
    ("edge", "Alpine and Docker Hub edge channels"),
    ("main", "default-branch builds"),
    ("master", "default-branch builds"),
    ("canary", "canary channels"),
    ("unstable", "Debian unstable, unstable channels"),
    ("head", "HEAD builds"),
    ("trunk", "trunk builds"),
    ("latest", "Docker's default tag"),
    ("wip", "work in progress"),
];

/// What a tag says about the image it names.
#[derive(Debug, PartialEq, Eq)]
pub enum Tag {
    /// Names one version.
    Version,
    /// Names no version: moves with every push (`latest`, `stable`, `3`).
    Moving,
    /// A version of a development build; the word that marks it.
    Development(String),
}

/// `v?N.N[.N…]`: digits, at least one dot, digits after every dot.
fn version_part(p: &str) -> bool {
    let p = p.strip_prefix(['v', 'V']).unwrap_or(p);
    let mut n = 0;
    for piece in p.split('.') {
        if piece.is_empty() || !piece.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        n += 1;
    }
    n >= 2
}

/// The meaning of `tag`. `shape`: the policy's version shape (the whole tag must match), when set;
/// otherwise the default shape above.
pub fn classify(tag: &str, shape: Option<&regex::Regex>) -> Tag {
    let t = tag.trim();
    let lower = t.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split(['-', '_', '+', '.']).collect();
    let version = match shape {
        Some(re) => re.is_match(t),
        None => t.split(['-', '_', '+']).any(version_part),
    };
    if !version {
        return Tag::Moving;
    }
    match parts.iter().find(|w| DEVELOPMENT_WORDS.iter().any(|(d, _)| d == *w)) {
        Some(w) => Tag::Development(w.to_string()),
        None => Tag::Version,
    }
}

/// A policy's version shape, compiled so the whole tag must match; bounded in size (hostile
/// policy input), linear-time matching (the `regex` crate has no backtracking).
pub fn compile_shape(pattern: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(1 << 20)
        .nest_limit(64)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => "is too large".to_string(),
            _ => "is not a regular expression".to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_that_name_no_version_move() {
        for moving in [
            "latest",
            "stable",
            "main",
            "edge",
            "lts",
            "alpine",
            "3",
            "v2",
            "current",
            "prod",
            "release",
            "1",
            "x.y",
            "1.",
            ".1",
            "1..2",
            "sha-abc1234",
            "20261201",
            "",
        ] {
            assert_eq!(classify(moving, None), Tag::Moving, "{moving}");
        }
        for version in [
            "1.27.3",
            "v1.19.1",
            "2.0.0-debian-12-r3",
            "120.0-headless",
            "1.0-devices",
            "3.1-maintenance",
            "V2.4",
            "release-1.2.3",
        ] {
            assert_eq!(classify(version, None), Tag::Version, "{version}");
        }
        assert_eq!(classify("1.5.0-SNAPSHOT", None), Tag::Development("snapshot".into()));
        assert_eq!(classify("nightly-2026.11.01", None), Tag::Development("nightly".into()));
        assert_eq!(classify("1.2-dev", None), Tag::Development("dev".into()));
    }

    #[test]
    fn the_policy_defines_the_version_shape() {
        let re = compile_shape(r"\d{8}-[0-9a-f]{7}").unwrap();
        assert_eq!(classify("20261201-abc1234", Some(&re)), Tag::Version);
        assert_eq!(
            classify("1.2.3", Some(&re)),
            Tag::Moving,
            "the whole tag must match the policy's shape"
        );
        assert_eq!(classify("x20261201-abc1234", Some(&re)), Tag::Moving);
        assert!(compile_shape("(").is_err());
        assert_eq!(compile_shape("a{1000}{1000}{1000}").unwrap_err(), "is too large");
    }
}
