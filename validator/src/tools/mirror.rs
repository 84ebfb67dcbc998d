//! Air-gapped renders of states with OCI charts.
//!
//! helmfile pulls OCI charts (`helm pull oci://… --version V --destination D --untar`) while it
//! merely loads a state, so without registry access it cannot even tell us the values of such a
//! release. With `--chart-mirror DIR`, helmfile is given a small `helm` front that serves those
//! pulls from the mirror's `<chart>-<version>.tgz` and hands every other command to the real
//! helm. It only lets helmfile load the state; what is rendered is still the mirror tarball after
//! its sha256 matched the lock (see `helmfile::plan`).

use super::Tools;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The tarball of `chart` at `version` in the mirror (`<chart>-<version>.tgz`, with or without a
/// leading `v` on the version).
pub fn tarball(dir: &Path, chart: &str, version: &str) -> Option<PathBuf> {
    let bare = version.trim_start_matches('v');
    [
        format!("{chart}-{version}.tgz"),
        format!("{chart}-{bare}.tgz"),
        format!("{chart}-v{bare}.tgz"),
    ]
    .into_iter()
    .map(|n| dir.join(n))
    .find(|p| p.is_file())
}

fn shq(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// Write the `helm` front into `work` and return tools that use it.
pub fn front(tools: &Tools, mirror: &Path, work: &Path) -> Result<Tools> {
    use std::os::unix::fs::PermissionsExt;
    let path = work.join("helm");
    let script = format!(
        r#"#!/bin/sh
# Written by nvcf-validate for one run: serves `helm pull oci://...` from the chart mirror.
REAL_HELM={real}
MIRROR={mirror}
oci=""
if [ "$1" = pull ]; then
  for a in "$@"; do case "$a" in oci://*) oci="$a" ;; esac; done
fi
[ -n "$oci" ] || exec "$REAL_HELM" "$@"
version=""; dest="."; untar=0; untardir="."
shift
while [ $# -gt 0 ]; do
  case "$1" in
    --version) version="$2"; shift ;;
    --version=*) version="${{1#*=}}" ;;
    -d|--destination) dest="$2"; shift ;;
    --destination=*) dest="${{1#*=}}" ;;
    --untar) untar=1 ;;
    --untardir) untardir="$2"; shift ;;
    --untardir=*) untardir="${{1#*=}}" ;;
  esac
  shift
done
chart="${{oci##*/}}"; chart="${{chart%%:*}}"
bare="${{version#v}}"
for f in "$MIRROR/$chart-$version.tgz" "$MIRROR/$chart-$bare.tgz" "$MIRROR/$chart-v$bare.tgz"; do
  if [ -f "$f" ]; then
    if [ "$untar" = 1 ]; then
      mkdir -p "$dest/$untardir" && exec tar -xzf "$f" -C "$dest/$untardir"
    fi
    mkdir -p "$dest" && exec cp "$f" "$dest/"
  fi
done
echo "nvcf-validate: $oci $version is not in the chart mirror $MIRROR" >&2
exit 1
"#,
        real = shq(&tools.helm),
        mirror = shq(mirror),
    );
    std::fs::write(&path, script).with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(Tools {
        helmfile: tools.helmfile.clone(),
        helm: path,
    })
}
