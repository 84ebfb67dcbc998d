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

    /// Parse lock text; `display` names the file in messages.
    pub fn parse(text: &str, display: &str) -> Result<ChartLock> {
        let lock: ChartLock = crate::yaml::from_str(text)
            .with_context(|| format!("{display}: not a valid chart lock (expected `charts:` entries with release, chart, repository, version, sha256)"))?;
        for e in &lock.charts {
            if e.sha256.len() != 64
                || !e
                    .sha256
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
            {
                bail!(
                    "{display}: release {}: sha256 must be 64 lowercase hex characters, got {:?}",
                    e.release,
                    e.sha256
                );
            }
        }
        Ok(lock)
    }

    pub fn for_release(&self, release: &str) -> Option<&LockEntry> {
        self.charts.iter().find(|e| e.release == release)
    }
}
