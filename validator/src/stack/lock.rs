//! `charts.lock.yaml`: the sha256 of every pinned upstream chart artifact.
//!
//! ```yaml
//! charts:
//!   - release: cert-manager
//!     chart: cert-manager
//!     repository: oci://quay.io/jetstack/charts
//!     version: v1.19.1
//!     appVersion: v1.19.1          # optional
//!     sha256: <64 lowercase hex>
//! ```

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::path::Path;

pub const LOCK_FILE: &str = "charts.lock.yaml";

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChartLock {
    #[serde(default)]
    pub charts: Vec<LockEntry>,
    /// Repository-relative path of the lock file, when one was read.
    #[serde(skip)]
    pub file: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockEntry {
    pub release: String,
    pub chart: String,
    pub repository: String,
    pub version: String,
    /// The application version the artifact ships (its Chart.yaml `appVersion`), when recorded:
    /// tests hold the images and tools that must agree with it to this value.
    #[serde(default, rename = "appVersion")]
    pub app_version: Option<String>,
    pub sha256: String,
}

impl ChartLock {
    /// Read the lock beside the entry state; a missing file is an empty lock (the pinning rule
    /// then reports every remote chart), a malformed one is an error.
    pub fn load(root: &Path) -> Result<ChartLock> {
        ChartLock::load_named(root, LOCK_FILE)
    }

    /// Like `load`, for a lock file the policy names (`settings.lockFile`).
    pub fn load_named(root: &Path, name: &str) -> Result<ChartLock> {
        let path = root.join(name);
        if !path.exists() {
            return Ok(ChartLock::default());
        }
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let mut lock = Self::parse(&text, &path.display().to_string())?;
        lock.file = Some(name.to_string());
        Ok(lock)
    }

    /// Parse lock text; `display` names the file in messages. Read with the reader manifests use
    /// (`yaml::located`: anchors and merge keys apply, a key written twice is refused: a second
    /// `sha256:` would silently pin another artifact), one document; no value is echoed whole.
    pub fn parse(text: &str, display: &str) -> Result<ChartLock> {
        let hint = "expected `charts:` entries with release, chart, repository, version, sha256";
        let doc = crate::yaml::located(text).map_err(|e| {
            anyhow::anyhow!(
                "{display}: not a valid chart lock ({hint}): {}",
                crate::redact::error_text(&format!("{e:#}"))
            )
        })?;
        let lock: ChartLock = doc.typed(display).map_err(|e| anyhow::anyhow!("{e:#} ({hint})"))?;
        for (i, e) in lock.charts.iter().enumerate() {
            let bad = e.sha256.len() != 64
                || !e
                    .sha256
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
            if bad {
                let at = match doc.line(&format!("/charts/{i}/sha256")) {
                    Some(l) => format!("{display}:{l}"),
                    None => display.to_string(),
                };
                // The value is never shown: a key pasted here must not reach a log.
                bail!(
                    "{at}: release {}: sha256 must be 64 lowercase hex characters (`sha256sum` of the chart tarball), got {} characters{}",
                    crate::redact::config_value(&e.release),
                    e.sha256.chars().count(),
                    if e.sha256.len() == 64 { " that are not all lowercase hex" } else { "" }
                );
            }
        }
        Ok(lock)
    }

    pub fn for_release(&self, release: &str) -> Option<&LockEntry> {
        self.charts.iter().find(|e| e.release == release)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0d2b6ec4e2a0f1c1b0e6a9a1b4f4c1b7e4c0a8d2a1f3e5b7c9d1e3f5a7b9c1d3";

    fn entry(release: &str, sha: &str) -> String {
        format!("  - {{release: {release}, chart: c, repository: oci://r, version: 1.0.0, sha256: \"{sha}\"}}\n")
    }

    #[test]
    fn reads_entries_with_anchors_and_merge_keys() {
        let lock = ChartLock::parse(
            &format!(
                "charts:\n{}  - <<: *base\n    release: b\n    appVersion: v2\n",
                entry("a", SHA).replacen("- {", "- &base {", 1)
            ),
            "charts.lock.yaml",
        )
        .unwrap();
        assert_eq!(lock.charts.len(), 2);
        let b = lock.for_release("b").unwrap();
        assert_eq!(
            (b.chart.as_str(), b.repository.as_str(), b.sha256.as_str()),
            ("c", "oci://r", SHA)
        );
        assert_eq!(b.app_version.as_deref(), Some("v2"));
        assert!(lock.for_release("z").is_none());
        assert!(ChartLock::parse("", "l").unwrap().charts.is_empty());
    }

    #[test]
    fn bad_digests_and_duplicate_keys_are_refused_at_their_line_without_echo() {
        for sha in ["", "abc", &SHA.to_uppercase(), &format!("{}g", &SHA[..63])] {
            let e =
                ChartLock::parse(&format!("charts:\n{}{}", entry("a", SHA), entry("b", sha)), "l.yaml").unwrap_err();
            let e = format!("{e:#}");
            assert!(
                e.starts_with("l.yaml:3: release b: sha256 must be 64 lowercase hex characters"),
                "{e}"
            );
            assert!(sha.is_empty() || !e.contains(sha), "{e}");
        }
        let key = format!("-----BEGIN PRIVATE KEY-----{}", "Q".repeat(5000));
        let e = format!(
            "{:#}",
            ChartLock::parse(&format!("charts:\n{}", entry("a", &key)), "l.yaml").unwrap_err()
        );
        assert!(!e.contains("QQQ") && !e.contains("BEGIN") && e.len() < 300, "{e}");
        assert!(e.contains("got 5027 characters"), "{e}");
        let e = format!(
            "{:#}",
            ChartLock::parse(&format!("charts:\n{}", entry(&key, "x")), "l.yaml").unwrap_err()
        );
        assert!(!e.contains("QQQ") && e.len() < 400, "{e}");
        let e = ChartLock::parse(
            &format!("charts:\n  - release: a\n    chart: c\n    repository: oci://r\n    version: 1.0.0\n    sha256: {SHA}\n    sha256: {}\n", "f".repeat(64)),
            "l.yaml",
        )
        .unwrap_err();
        assert!(
            format!("{e:#}").contains("key `sha256` is written twice in one mapping (lines 6 and 7)"),
            "{e:#}"
        );
        let e = ChartLock::parse("charts:\n  - {release: a}\n", "l.yaml").unwrap_err();
        assert!(
            format!("{e:#}").starts_with("l.yaml:2: `charts[0]`: missing field `chart`"),
            "{e:#}"
        );
        assert!(ChartLock::parse("charts: []\n---\ncharts: []\n", "l.yaml").is_err());
    }

    #[test]
    fn load_named_reads_the_named_file_and_a_missing_one_is_empty() {
        let d = tempfile::tempdir().unwrap();
        assert!(ChartLock::load(d.path()).unwrap().file.is_none());
        std::fs::create_dir(d.path().join("locks")).unwrap();
        std::fs::write(d.path().join("locks/x.yaml"), format!("charts:\n{}", entry("a", SHA))).unwrap();
        let lock = ChartLock::load_named(d.path(), "locks/x.yaml").unwrap();
        assert_eq!(lock.file.as_deref(), Some("locks/x.yaml"));
        assert_eq!(lock.charts.len(), 1);
    }
}
