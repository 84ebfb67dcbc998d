//! A chart's files, read where helm reads them: a chart directory or a chart archive, and every
//! subchart inside, the vendored archives under `charts/` included (what `helm dependency build`
//! writes and helm renders). One reader for every question the gate asks of a chart's own text
//! (`lookup` calls, `.Release.IsUpgrade`, `.Capabilities.APIVersions`), so none of them misses a
//! subchart because it is compressed.
//!
//! Helm's rule (`pkg/chart/v2/loader/load.go` `LoadFiles`, the same for v3 charts): within a
//! chart, `charts/<name>` is a subchart unless `<name>` starts with `_` or `.`; one ending in
//! `.tgz` is a gzip-compressed tar archive (`LoadArchive`), read in memory, whose members drop their
//! first path component (the chart's own directory); anything else is a directory. A gzip stream
//! is read to its last member, as Go's `gzip.Reader` does.
//!
//! Everything read is bounded ([`Limits`]): entries, bytes (files' contents and each archive's
//! decompressed stream, nested ones counted again), one file's size (helm refuses a chart with a
//! file over 5 MiB), and how deep archives nest. What exceeds a bound or cannot be read stops the
//! reading with an [`Unread`] saying what and where, never a silent skip: the callers count such a
//! chart as one that may hold what they look for. Nothing is unpacked to disk. Files helm skips
//! (`.helmignore`d ones) are read too, which can only add to what is found.

use flate2::read::MultiGzDecoder;
use std::cell::Cell;
use std::fmt;
use std::io::{self, Read};
use std::ops::ControlFlow;
use std::path::Path;
use Unread::Unreadable;

/// The bounds of one chart's reading, its subcharts included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Entries visited (files, directories, archive members), across every nested archive.
    pub files: usize,
    /// Bytes read: files' contents and every archive's decompressed stream.
    pub bytes: u64,
    /// The largest one file: helm refuses a chart holding a larger one.
    pub file_bytes: u64,
    /// Archives within archives: a chart archive is at depth 1, a subchart archive it vendors at 2.
    pub depth: usize,
}

/// The bounds the gate reads charts within: helm's own for one file (5 MiB) and well above what
/// helm loads of one archive (100 MiB decompressed).
pub const LIMITS: Limits = Limits {
    files: 10_000,
    bytes: 256 << 20,
    file_bytes: 5 << 20,
    depth: 8,
};

/// Why a chart was not read to its end. `path` is the place inside the chart (`/`-separated,
/// empty for the chart itself); no content is ever quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    TooManyFiles { limit: usize },
    TooManyBytes { limit: u64 },
    FileTooLarge { path: String, limit: u64 },
    TooDeep { path: String, limit: usize },
    Unreadable { path: String, why: &'static str },
}

impl fmt::Display for Unread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |p: &str| {
            if p.is_empty() {
                "the chart".to_string()
            } else {
                format!("`{p}`")
            }
        };
        match self {
            Unread::TooManyFiles { limit } => write!(f, "a chart of more than {limit} files"),
            Unread::TooManyBytes { limit } => write!(f, "a chart of more than {} MiB", limit >> 20),
            Unread::FileTooLarge { path, limit } => {
                write!(f, "{} is larger than {} MiB", at(path), limit >> 20)
            }
            Unread::TooDeep { path, limit } => {
                write!(f, "{} nests chart archives more than {limit} deep", at(path))
            }
            Unread::Unreadable { path, why } => write!(f, "{} {why}", at(path)),
        }
    }
}

/// Every file of the chart at `chart` (a directory, or a chart archive `.tgz`), subcharts
/// included, handed to `visit` as (its path inside the chart, its bytes) in a stable order until
/// `visit` breaks. A file of a subchart archive is named after the archive:
/// `charts/sub-1.0.0.tgz/templates/x.yaml`.
pub fn read_chart(
    chart: &Path,
    limits: Limits,
    visit: &mut dyn FnMut(&str, &[u8]) -> ControlFlow<()>,
) -> Result<(), Unread> {
    let r = Reader {
        limits,
        entries: Cell::new(0),
        left: Cell::new(limits.bytes),
        over: Cell::new(false),
    };
    let flow = if std::fs::metadata(chart).is_ok_and(|m| m.is_dir()) {
        r.directory(chart, visit)
    } else {
        let mut file = std::fs::File::open(chart).map_err(|_| Unreadable {
            path: String::new(),
            why: "cannot be opened",
        })?;
        r.archive(&mut file, "", 1, visit)
    };
    flow.map(|_| ())
}

/// Whether `path` (inside a chart, `/`-separated) is a subchart archive helm loads:
/// `charts/<name>.tgz`, in the chart or in a subchart directory `charts/<dir>/…`, no `<name>` or
/// `<dir>` starting with `_` or `.`.
pub fn is_subchart_archive(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.len() >= 2
        && parts.len() % 2 == 0
        && parts
            .chunks(2)
            .all(|p| p[0] == "charts" && !p[1].starts_with(['_', '.']) && !p[1].is_empty())
        && parts.last().is_some_and(|n| n.ends_with(".tgz"))
}

struct Reader {
    limits: Limits,
    entries: Cell<usize>,
    /// Bytes left of `limits.bytes`, shared by every stream being read.
    left: Cell<u64>,
    /// Set when a stream ran past `left`: the error that follows is [`Unread::TooManyBytes`].
    over: Cell<bool>,
}

/// A reader whose bytes count against [`Reader::left`]; past it, every read fails.
struct Budgeted<'a, R> {
    inner: R,
    left: &'a Cell<u64>,
    over: &'a Cell<bool>,
}

impl<R: Read> Read for Budgeted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        match self.left.get().checked_sub(n as u64) {
            Some(left) => {
                self.left.set(left);
                Ok(n)
            }
            None => {
                self.over.set(true);
                Err(io::Error::other("over the byte bound"))
            }
        }
    }
}

type Flow = Result<ControlFlow<()>, Unread>;

impl Reader {
    fn count(&self) -> Result<(), Unread> {
        self.entries.set(self.entries.get() + 1);
        if self.entries.get() > self.limits.files {
            return Err(Unread::TooManyFiles {
                limit: self.limits.files,
            });
        }
        Ok(())
    }

    /// What a failed read of `path` means: the byte bound, or an unreadable file.
    fn failed(&self, path: &str, why: &'static str) -> Unread {
        if self.over.get() {
            Unread::TooManyBytes {
                limit: self.limits.bytes,
            }
        } else {
            Unreadable {
                path: path.to_string(),
                why,
            }
        }
    }

    /// One file's bytes from `from`, at most `limits.file_bytes` (more is [`Unread::FileTooLarge`]).
    fn contents(&self, from: &mut dyn Read, path: &str) -> Result<Vec<u8>, Unread> {
        let cap = self.limits.file_bytes;
        let mut bytes = Vec::new();
        let mut counted = Budgeted {
            inner: from.take(cap.saturating_add(1)),
            left: &self.left,
            over: &self.over,
        };
        counted
            .read_to_end(&mut bytes)
            .map_err(|_| self.failed(path, "cannot be read"))?;
        if bytes.len() as u64 > cap {
            return Err(Unread::FileTooLarge {
                path: path.to_string(),
                limit: cap,
            });
        }
        Ok(bytes)
    }

    fn directory(&self, dir: &Path, visit: &mut dyn FnMut(&str, &[u8]) -> ControlFlow<()>) -> Flow {
        for e in walkdir::WalkDir::new(dir).follow_links(true).sort_by_file_name() {
            self.count()?;
            let e = e.map_err(|e| {
                let path = e.path().and_then(|p| p.strip_prefix(dir).ok());
                Unreadable {
                    path: path.map(inner_name).unwrap_or_default(),
                    why: "cannot be read (a broken or looping symbolic link, or no permission)",
                }
            })?;
            let path = inner_name(e.path().strip_prefix(dir).unwrap_or(e.path()));
            if e.file_type().is_dir() {
                continue;
            }
            if !e.file_type().is_file() {
                // Never opened: a FIFO would block. Helm refuses such a chart.
                return Err(Unreadable {
                    path,
                    why: "is not a regular file",
                });
            }
            // Helm refuses a chart holding a file over its bound, a vendored archive included.
            if e.metadata().is_ok_and(|m| m.len() > self.limits.file_bytes) {
                return Err(Unread::FileTooLarge {
                    path,
                    limit: self.limits.file_bytes,
                });
            }
            let opened = std::fs::File::open(e.path());
            let mut file = opened.map_err(|_| Unreadable {
                path: path.clone(),
                why: "cannot be opened",
            })?;
            if is_subchart_archive(&path) {
                if let ControlFlow::Break(()) = self.archive(&mut file, &path, 1, visit)? {
                    return Ok(ControlFlow::Break(()));
                }
                continue;
            }
            let bytes = self.contents(&mut file, &path)?;
            if let ControlFlow::Break(()) = visit(&path, &bytes) {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// The chart archive read from `from`, at `at` inside the top chart (empty for the top chart
    /// itself), `depth` archives deep.
    fn archive(
        &self,
        from: &mut dyn Read,
        at: &str,
        depth: usize,
        visit: &mut dyn FnMut(&str, &[u8]) -> ControlFlow<()>,
    ) -> Flow {
        if depth > self.limits.depth {
            return Err(Unread::TooDeep {
                path: at.to_string(),
                limit: self.limits.depth,
            });
        }
        // The compressed bytes are not counted again: a vendored archive's are those of the file
        // holding it (bounded like any file, above), a chart archive's are smaller than what they
        // unpack to, which is counted.
        let not_an_archive = "is not a gzip-compressed tar archive";
        let unpacked = Budgeted {
            inner: MultiGzDecoder::new(from),
            left: &self.left,
            over: &self.over,
        };
        let mut tar = tar::Archive::new(unpacked);
        let entries = tar.entries().map_err(|_| self.failed(at, not_an_archive))?;
        let mut any = false;
        for entry in entries {
            self.count()?;
            let mut entry = entry.map_err(|_| self.failed(at, not_an_archive))?;
            let kind = entry.header().entry_type();
            if kind.is_dir() || kind.is_pax_global_extensions() {
                continue;
            }
            any = true;
            let name = member_name(&entry.path_bytes());
            let path = if at.is_empty() {
                name.clone()
            } else {
                format!("{at}/{name}")
            };
            if entry.size() > self.limits.file_bytes {
                return Err(Unread::FileTooLarge {
                    path,
                    limit: self.limits.file_bytes,
                });
            }
            if is_subchart_archive(&name) {
                if let ControlFlow::Break(()) = self.archive(&mut entry, &path, depth + 1, visit)? {
                    return Ok(ControlFlow::Break(()));
                }
                continue;
            }
            let bytes = self.contents(&mut entry, &path)?;
            if let ControlFlow::Break(()) = visit(&path, &bytes) {
                return Ok(ControlFlow::Break(()));
            }
        }
        if !any {
            // Helm refuses an archive without files (an empty stream is one).
            return Err(self.failed(at, not_an_archive));
        }
        Ok(ControlFlow::Continue(()))
    }
}

/// `/`-separated path of a directory entry inside its chart.
fn inner_name(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// An archive member's path inside its chart, as helm names it: `\` taken as the separator when
/// the name holds one, the first component (the chart's directory) dropped, `.` and empty
/// components dropped. A name of one component stays itself (helm refuses such an archive).
fn member_name(raw: &[u8]) -> String {
    let name = String::from_utf8_lossy(raw);
    let sep = if name.contains('\\') { '\\' } else { '/' };
    let parts: Vec<&str> = name.split(sep).collect();
    let rest = if parts.len() > 1 { &parts[1..] } else { &parts[..] };
    rest.iter()
        .filter(|p| !p.is_empty() && **p != ".")
        .copied()
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::seeded::Gen;
    use flate2::{write::GzEncoder, Compression};
    use std::io::Write;

    /// A gzip-compressed tar archive of `files` (each path as written, the chart's directory first).
    pub(crate) fn tgz(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
        for (name, data) in files {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    fn write(p: &Path, bytes: &[u8]) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    /// Every (path, text) `read_chart` hands over, and how it ended.
    fn all(chart: &Path, limits: Limits) -> (Vec<(String, String)>, Result<(), Unread>) {
        let mut seen = Vec::new();
        let end = read_chart(chart, limits, &mut |p, b| {
            seen.push((p.to_string(), String::from_utf8_lossy(b).into_owned()));
            ControlFlow::Continue(())
        });
        (seen, end)
    }

    /// `Reader::archive` over `bytes` within `limits`: how it ended, what it handed over, and how
    /// many of the compressed bytes it took from its source.
    fn archive(bytes: &[u8], limits: Limits) -> (Flow, Vec<String>, usize) {
        struct Counting<'a>(&'a [u8], usize);
        impl Read for Counting<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.read(buf)?;
                self.1 += n;
                Ok(n)
            }
        }
        let r = Reader {
            limits,
            entries: Cell::new(0),
            left: Cell::new(limits.bytes),
            over: Cell::new(false),
        };
        let mut src = Counting(bytes, 0);
        let mut seen = Vec::new();
        let end = r.archive(&mut src, "", 1, &mut |p, _| {
            seen.push(p.to_string());
            ControlFlow::Continue(())
        });
        (end, seen, src.1)
    }

    const SUB: &[(&str, &[u8])] = &[
        ("sub/Chart.yaml", b"apiVersion: v2\nname: sub\nversion: 1.0.0\n"),
        ("sub/templates/cm.yaml", b"{{ lookup \"v1\" \"Secret\" \"a\" \"b\" }}\n"),
    ];

    #[test]
    fn a_chart_directory_is_read_with_its_subcharts_where_helm_loads_them() {
        let d = tempfile::tempdir().unwrap();
        let c = d.path();
        write(&c.join("Chart.yaml"), b"apiVersion: v2\nname: top\nversion: 0.1.0\n");
        write(&c.join("templates/a.yaml"), b"a");
        // What helm leaves out (.helmignore) is read all the same: more is read, never less.
        write(&c.join(".helmignore"), b"ignored.yaml\n");
        write(&c.join("templates/ignored.yaml"), b"i");
        // A subchart directory that vendors an archive itself, and an archive beside it.
        write(&c.join("charts/dir/templates/b.yaml"), b"b");
        write(&c.join("charts/dir/charts/sub-1.0.0.tgz"), &tgz(SUB));
        write(&c.join("charts/sub-1.0.0.tgz"), &tgz(SUB));
        // Not subcharts to helm: read as the bytes they are, never unpacked.
        let not_a_subchart = tgz(&[("x/templates/hidden.yaml", b"hidden")]);
        for p in [
            "charts/_skip.tgz",
            "charts/.skip.tgz",
            "charts/sub.tar.gz",
            "files/sub.tgz",
        ] {
            write(&c.join(p), &not_a_subchart);
        }
        let (seen, end) = all(c, LIMITS);
        assert_eq!(end, Ok(()));
        let paths: Vec<&str> = seen.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                ".helmignore",
                "Chart.yaml",
                "charts/.skip.tgz",
                "charts/_skip.tgz",
                "charts/dir/charts/sub-1.0.0.tgz/Chart.yaml",
                "charts/dir/charts/sub-1.0.0.tgz/templates/cm.yaml",
                "charts/dir/templates/b.yaml",
                "charts/sub-1.0.0.tgz/Chart.yaml",
                "charts/sub-1.0.0.tgz/templates/cm.yaml",
                "charts/sub.tar.gz",
                "files/sub.tgz",
                "templates/a.yaml",
                "templates/ignored.yaml",
            ]
        );
        assert!(seen[5].1.contains("lookup"), "{seen:?}");
        assert!(!seen.iter().any(|(_, t)| t.contains("hidden")), "{seen:?}");
    }

    #[test]
    fn a_chart_archive_is_read_as_helm_names_its_members() {
        let d = tempfile::tempdir().unwrap();
        let top = tgz(&[
            ("top/Chart.yaml", b"apiVersion: v2\nname: top\nversion: 0.1.0\n"),
            ("top/charts/sub-1.0.0.tgz", &tgz(SUB)),
            ("top/./templates//a.yaml", b"a"),
        ]);
        write(&d.path().join("top-0.1.0.tgz"), &top);
        let (seen, end) = all(&d.path().join("top-0.1.0.tgz"), LIMITS);
        assert_eq!(end, Ok(()));
        let paths: Vec<&str> = seen.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "Chart.yaml",
                "charts/sub-1.0.0.tgz/Chart.yaml",
                "charts/sub-1.0.0.tgz/templates/cm.yaml",
                "templates/a.yaml"
            ]
        );
        // Concatenated gzip members are one stream (Go's gzip.Reader reads them all).
        let raw = {
            let mut b = tar::Builder::new(Vec::new());
            let mut h = tar::Header::new_gnu();
            h.set_size(1);
            b.append_data(&mut h, "top/templates/a.yaml", &b"a"[..]).unwrap();
            b.into_inner().unwrap()
        };
        let mut two = Vec::new();
        for part in [&raw[..700], &raw[700..]] {
            let mut e = GzEncoder::new(Vec::new(), Compression::fast());
            e.write_all(part).unwrap();
            two.extend(e.finish().unwrap());
        }
        let (end, seen, _) = archive(&two, LIMITS);
        assert_eq!(
            (end, seen),
            (Ok(ControlFlow::Continue(())), vec!["templates/a.yaml".to_string()])
        );
    }

    #[test]
    fn a_symlinked_file_is_read_through_its_link() {
        let d = tempfile::tempdir().unwrap();
        write(&d.path().join("elsewhere/t.yaml"), b"{{ lookup }}");
        let c = d.path().join("chart");
        std::fs::create_dir_all(c.join("templates")).unwrap();
        std::os::unix::fs::symlink(d.path().join("elsewhere/t.yaml"), c.join("templates/t.yaml")).unwrap();
        std::os::unix::fs::symlink(d.path().join("nowhere"), c.join("templates/broken.yaml")).unwrap();
        let (seen, end) = all(&c, LIMITS);
        // The broken link comes first (sorted) and stops the reading: helm refuses the chart too.
        assert!(
            matches!(&end, Err(Unreadable { path, .. }) if path == "templates/broken.yaml"),
            "{end:?}"
        );
        assert!(seen.is_empty(), "{seen:?}");
        std::fs::remove_file(c.join("templates/broken.yaml")).unwrap();
        let (seen, end) = all(&c, LIMITS);
        assert_eq!(end, Ok(()));
        assert_eq!(seen, [("templates/t.yaml".to_string(), "{{ lookup }}".to_string())]);
    }

    #[test]
    fn what_cannot_be_read_stops_the_reading_and_says_where() {
        let d = tempfile::tempdir().unwrap();
        let c = d.path();
        write(&c.join("charts/sub-1.0.0.tgz"), b"not gzip");
        let (_, end) = all(c, LIMITS);
        assert_eq!(
            end,
            Err(Unreadable {
                path: "charts/sub-1.0.0.tgz".into(),
                why: "is not a gzip-compressed tar archive"
            })
        );
        assert_eq!(
            end.unwrap_err().to_string(),
            "`charts/sub-1.0.0.tgz` is not a gzip-compressed tar archive"
        );
        std::fs::remove_file(c.join("charts/sub-1.0.0.tgz")).unwrap();
        // A FIFO is never opened (it would block): helm refuses a chart holding one.
        let fifo = std::ffi::CString::new(c.join("templates.fifo").to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let (_, end) = all(c, LIMITS);
        assert!(
            matches!(&end, Err(Unreadable { path, .. }) if path == "templates.fifo"),
            "{end:?}"
        );
        // A chart path that does not exist, an empty file, an archive of directories only.
        assert!(all(&c.join("absent"), LIMITS).1.is_err());
        write(&c.join("empty.tgz"), b"");
        assert!(all(&c.join("empty.tgz"), LIMITS).1.is_err());
        assert!(archive(&tgz(&[]), LIMITS).0.is_err());
    }

    /// An archive bomb: a small gzip stream that unpacks to far more than the byte bound. The
    /// reading stops at the bound, having taken a small part of the compressed stream, and the
    /// file after the bomb is never handed over.
    #[test]
    fn an_archive_bomb_stops_at_the_byte_bound() {
        const MIB: usize = 1 << 20;
        let zeros = {
            let mut e = GzEncoder::new(Vec::new(), Compression::best());
            e.write_all(&vec![0; MIB]).unwrap();
            e.finish().unwrap()
        };
        let gz = |bytes: &[u8]| {
            let mut e = GzEncoder::new(Vec::new(), Compression::fast());
            e.write_all(bytes).unwrap();
            e.finish().unwrap()
        };
        let mut h = tar::Header::new_gnu();
        h.set_path("top/templates/big.yaml").unwrap();
        h.set_size(256 * MIB as u64);
        h.set_cksum();
        let after = {
            let mut b = tar::Builder::new(Vec::new());
            let mut h = tar::Header::new_gnu();
            h.set_size(6);
            b.append_data(&mut h, "top/templates/after.yaml", &b"lookup"[..])
                .unwrap();
            b.into_inner().unwrap()
        };
        let mut bomb = gz(h.as_bytes());
        for _ in 0..256 {
            bomb.extend_from_slice(&zeros);
        }
        bomb.extend(gz(&after));
        assert!(bomb.len() < 512 << 10, "{}", bomb.len());
        let limits = Limits {
            bytes: 8 * MIB as u64,
            file_bytes: 1 << 30,
            ..LIMITS
        };
        let (end, seen, taken) = archive(&bomb, limits);
        assert_eq!(end, Err(Unread::TooManyBytes { limit: 8 * MIB as u64 }));
        assert!(seen.is_empty(), "{seen:?}");
        assert!(
            taken < bomb.len() / 4,
            "took {taken} of {} compressed bytes",
            bomb.len()
        );
        // One file over the file bound is refused by its size before it is read.
        let limits = Limits {
            file_bytes: MIB as u64,
            ..LIMITS
        };
        let (end, _, taken) = archive(&bomb, limits);
        assert_eq!(
            end,
            Err(Unread::FileTooLarge {
                path: "templates/big.yaml".into(),
                limit: MIB as u64
            })
        );
        assert!(
            taken < bomb.len() / 4,
            "took {taken} of {} compressed bytes",
            bomb.len()
        );
    }

    /// Chart archives nested 12 deep: the reading stops at the depth bound, naming where, and the
    /// innermost template is never handed over.
    #[test]
    fn nesting_past_the_depth_bound_stops_the_reading() {
        let mut inner = tgz(&[("c/templates/deep.yaml", b"lookup")]);
        for _ in 0..11 {
            inner = tgz(&[("c/Chart.yaml", b"name: c"), ("c/charts/c.tgz", &inner)]);
        }
        let (end, seen, _) = archive(&inner, LIMITS);
        let deep = ["charts/c.tgz"; 8].join("/");
        assert_eq!(end, Err(Unread::TooDeep { path: deep, limit: 8 }));
        assert_eq!(seen.len(), 8, "every level's Chart.yaml above the bound: {seen:?}");
        assert!(!seen.iter().any(|p| p.ends_with("deep.yaml")), "{seen:?}");
        // Within the bound it is read to its end.
        let (end, seen, _) = archive(&inner, Limits { depth: 12, ..LIMITS });
        assert_eq!(end, Ok(ControlFlow::Continue(())));
        assert!(
            seen.last().is_some_and(|p| p.ends_with("templates/deep.yaml")),
            "{seen:?}"
        );
    }

    #[test]
    fn more_files_than_the_bound_stop_the_reading() {
        let names: Vec<String> = (0..50).map(|i| format!("c/templates/{i:02}.yaml")).collect();
        let files: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
        let limits = Limits { files: 10, ..LIMITS };
        let (end, seen, _) = archive(&tgz(&files), limits);
        assert_eq!(end, Err(Unread::TooManyFiles { limit: 10 }));
        assert_eq!(seen.len(), 10);
        // A directory counts its entries the same way.
        let d = tempfile::tempdir().unwrap();
        for n in &names {
            write(&d.path().join(n), b"x");
        }
        let (seen, end) = all(d.path(), limits);
        assert_eq!(end, Err(Unread::TooManyFiles { limit: 10 }));
        assert!(seen.len() < 10, "{}", seen.len());
    }

    #[test]
    fn subchart_archives_are_where_helm_loads_them() {
        for p in ["charts/a.tgz", "charts/a/charts/b-1.0.0.tgz", "charts/a-1.0.0.tgz"] {
            assert!(is_subchart_archive(p), "{p}");
        }
        for p in [
            "a.tgz",
            "charts/_a.tgz",
            "charts/.a.tgz",
            "charts/a.tar.gz",
            "charts/a/b.tgz",
            "charts/_a/charts/b.tgz",
            "templates/charts/a.tgz",
            "charts/a/templates/b.tgz",
            "charts//a.tgz",
        ] {
            assert!(!is_subchart_archive(p), "{p}");
        }
    }

    /// Arbitrary bytes, and valid archives with bytes changed, as a chart archive: never a panic,
    /// never more handed over than the bounds allow.
    #[test]
    fn arbitrary_bytes_as_an_archive_are_read_within_the_bounds() {
        let valid = tgz(&[
            ("top/Chart.yaml", b"name: top"),
            ("top/charts/sub-1.0.0.tgz", &tgz(SUB)),
            ("top/templates/a.yaml", b"a"),
        ]);
        let raw = {
            let mut b = tar::Builder::new(Vec::new());
            for (n, d) in SUB {
                let mut h = tar::Header::new_gnu();
                h.set_size(d.len() as u64);
                b.append_data(&mut h, n, *d).unwrap();
            }
            b.into_inner().unwrap()
        };
        let limits = Limits {
            files: 20,
            bytes: 64 << 10,
            file_bytes: 16 << 10,
            depth: 3,
        };
        let mut g = Gen(0x5eed_c4a7);
        for case in 0..2000 {
            let mut bytes = match case % 3 {
                0 => valid.clone(),
                1 => {
                    let mut e = GzEncoder::new(Vec::new(), Compression::fast());
                    e.write_all(&raw).unwrap();
                    e.finish().unwrap()
                }
                _ => (0..g.below(2048)).map(|_| g.below(256) as u8).collect(),
            };
            if case % 3 != 2 {
                for _ in 0..1 + g.below(4) {
                    let at = g.below(bytes.len());
                    bytes[at] = g.below(256) as u8;
                }
                if g.below(4) == 0 {
                    bytes.truncate(g.below(bytes.len()));
                }
            }
            let r = Reader {
                limits,
                entries: Cell::new(0),
                left: Cell::new(limits.bytes),
                over: Cell::new(false),
            };
            let (mut files, mut handed) = (0, 0);
            let _ = r.archive(&mut &bytes[..], "", 1, &mut |_, b| {
                files += 1;
                handed += b.len() as u64;
                ControlFlow::Continue(())
            });
            assert!(files <= limits.files && handed <= limits.bytes, "case {case}");
            assert!(r.entries.get() <= limits.files + 1, "case {case}");
        }
    }
}
