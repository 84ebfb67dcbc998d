//! The one place that knows how YAML is read.
//!
//! Rendered manifests are read as Kubernetes tooling reads them: helm and kubectl convert YAML to
//! JSON with `sigs.k8s.io/yaml`, which decodes with Go's `gopkg.in/yaml.v2` (a port of libyaml)
//! and marshals the result with `encoding/json`. We parse with libyaml itself (`events`, through
//! `unsafe-libyaml-norway`, already the parser under `serde_norway`) and build the JSON value with
//! yaml.v2's rules (`resolve`): YAML 1.1 scalars (`yes`/`no`/`on`/`off`, `0755` octal, `0x`, `0b`,
//! `1_000`, `.5`), merge keys (`<<: *base`, `<<: {…}`, `<<: [*a, *b]`) applied in yaml.v2's order,
//! later duplicate keys overriding earlier ones (yaml.v2's non-strict decoding, which helm uses),
//! timestamps kept as strings, `!!binary` decoded, map keys turned into strings as
//! `sigs.k8s.io/yaml` does, and values JSON cannot hold (`.inf`, `.nan`, a sequence as a key)
//! refused as helm refuses them.
//!
//! Documents come from the parser's own document stream — content on the `---` line and documents
//! whose lines end in CR, NEL, U+2028 or U+2029 are read like any other — and every line break
//! libyaml accepts is a line break for locations (`line_starts`). Work is bounded while parsing:
//! nesting deeper than `MAX_DEPTH` and alias expansion beyond a budget stop the parse at once.
//!
//! The policy and the chart lock are read with the same reader (`located`), one document each, with
//! the line of every node kept by its JSON pointer for messages, and a key written twice in one
//! mapping refused with both lines (yaml.v2's strict decoding): in a file that says what the gate
//! allows, a second `waivers:` silently replacing the first is a change no reviewer sees.
//! `helmfile build` output is read with `spanned_documents` (each document with its byte span,
//! so the `#  Source:` comment that leads it can be read without splitting the text by hand).

mod events;
pub mod resolve;

use anyhow::{anyhow, bail, Result};
use events::{Kind, Parser, Style};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Deepest nesting of sequences and mappings accepted (real manifests stay under 30).
pub const MAX_DEPTH: usize = 256;
/// Largest input accepted, in bytes: one text, or every file of one `--manifests` run (or of one
/// environment's render) together. Enforced while reading (`read_bounded`), so a larger stream
/// is refused after `MAX_INPUT` bytes, never read whole.
pub const MAX_INPUT: usize = 512 << 20;
/// Largest single document accepted, in bytes of its text, enforced event by event while parsing.
/// The API server takes request bodies of at most 3 MiB and etcd stores objects of at most
/// 1.5 MiB: no object a cluster accepts comes near.
pub const MAX_DOCUMENT: usize = 8 << 20;
/// Nodes that aliases may add beyond the nodes written in the text (billion-laughs guard).
const ALIAS_BUDGET: usize = 1_000_000;
/// Bytes of strings that aliases may add (an anchored 1 MB string aliased a thousand times).
const ALIAS_BYTES: usize = 64 << 20;

/// One YAML document of a multi-document stream, with the 1-based line where its content starts.
#[derive(Debug, Clone)]
pub struct Doc {
    pub value: Value,
    pub line: usize,
    /// Index of the document within its stream (empty documents are counted too).
    pub index: usize,
    /// For a `…List` document: the 1-based line of each element of its `items`.
    pub item_lines: Vec<usize>,
}

/// Every document of a YAML stream as the API server would receive it. Empty documents (only
/// comments, or `null`) are counted in `index` but not returned.
pub fn documents(text: &str) -> Result<Vec<Doc>> {
    check_input_size(text)?;
    read_stream(text, 0, false)
}

fn check_input_size(text: &str) -> Result<()> {
    if text.len() > MAX_INPUT {
        bail!(
            "YAML input of {} bytes is larger than the {} MiB limit",
            text.len(),
            MAX_INPUT >> 20
        );
    }
    Ok(())
}

/// The documents of `text`; its line 1 is line `line_base + 1` of the file it was cut from.
/// `first_only` reads as yaml.v2's `Unmarshal` does: the stream's first document, nothing after.
fn read_stream(text: &str, line_base: usize, first_only: bool) -> Result<Vec<Doc>> {
    Ok(read_stream_with(text, line_base, first_only, false)?
        .into_iter()
        .map(|(d, _)| d)
        .collect())
}

/// `read_stream`; with `config`, also each document's node lines by JSON pointer, and a key
/// written twice in one mapping refused (configuration files: `located`).
fn read_stream_with(
    text: &str,
    line_base: usize,
    first_only: bool,
    config: bool,
) -> Result<Vec<(Doc, HashMap<String, usize>)>> {
    // libyaml skips a byte order mark at the start of any line; Go's port (yaml.v2: helm,
    // kubectl) only at the start of its input and reads a later one as text (`\u{feff}# c` is then
    // a plain scalar, not a comment). Found by the fuzzer's differential oracle.
    if let Some((at, _)) = text.match_indices('\u{feff}').find(|(i, _)| *i != 0) {
        let line = line_starts(text).partition_point(|&s| s <= at) + line_base;
        bail!(
            "line {line}: a byte order mark (U+FEFF) after the start of the text, which Go's YAML parser (helm, \
             kubectl) reads as text and libyaml skips; remove it"
        );
    }
    let mut b = Builder::new(text, line_base, config);
    let mut docs = Vec::new();
    let mut index = 0usize;
    loop {
        let ev = b.next()?;
        match ev.kind {
            Kind::StreamStart => {}
            Kind::StreamEnd => break,
            Kind::DocumentStart => {
                let mut item_lines = Vec::new();
                let (first, value, _) = b.document(ev.start, index, (!config).then_some(&mut item_lines))?;
                let line = first.line + 1 + line_base;
                let lines = b.lines.as_mut().map(std::mem::take).unwrap_or_default();
                if !value.is_null() {
                    // Any document with a top-level `items` is a list to the API clients.
                    let is_list = value.get("items").is_some();
                    docs.push((
                        Doc {
                            value,
                            line,
                            index,
                            item_lines: if is_list { item_lines } else { Vec::new() },
                        },
                        lines,
                    ));
                }
                index += 1;
                if first_only {
                    break;
                }
            }
            other => bail!("unexpected YAML event {other:?}"),
        }
    }
    Ok(docs)
}

/// One YAML document of a configuration file (the policy, the chart lock), read as `value` reads
/// it (anchors, merge keys, YAML 1.1 scalars), with the line of every node written in the text.
#[derive(Debug, Clone)]
pub struct Located {
    pub value: Value,
    lines: HashMap<String, usize>,
}

impl Located {
    /// The 1-based line of the node at `pointer` (RFC 6901: `/waivers/0`, `/settings/lockFile`;
    /// a mapping entry's line is its key's). A node that came from an alias or a merge has no line
    /// of its own: the line of the nearest enclosing node written in the text.
    pub fn line(&self, pointer: &str) -> Option<usize> {
        let mut p = pointer;
        loop {
            if let Some(&l) = self.lines.get(p) {
                return Some(l);
            }
            p = &p[..p.rfind('/')?];
        }
    }
}

impl Located {
    /// The document as a `T`. A field that does not deserialise is named by its path and line
    /// (`validator-policy.yaml:12: `settings.gatewayApi.version`: …`); the deserialiser's message,
    /// which may quote the offending value, is shown only through `redact::error_text`. An empty
    /// document reads as an empty mapping; any other document that is not a mapping is refused.
    pub fn typed<T: DeserializeOwned>(&self, display: &str) -> Result<T> {
        let value = match &self.value {
            Value::Null => Value::Object(Map::new()),
            v @ Value::Object(_) => v.clone(),
            _ => bail!("{display}: not a mapping at the top level"),
        };
        serde_path_to_error::deserialize(value).map_err(|e| {
            let mut pointer = String::new();
            for seg in e.path().iter() {
                match seg {
                    serde_path_to_error::Segment::Seq { index } => pointer.push_str(&format!("/{index}")),
                    serde_path_to_error::Segment::Map { key } => {
                        pointer.push('/');
                        pointer.push_str(&pointer_segment(key));
                    }
                    _ => {}
                }
            }
            let at = match self.line(&pointer) {
                Some(l) => format!("{display}:{l}"),
                None => display.to_string(),
            };
            let path = e.path().to_string();
            let inner = crate::redact::error_text(e.inner());
            let hint = if inner.contains("expected a string") && !inner.contains("invalid type: string") {
                " (quote the value: YAML reads 1.30 as the number 1.3, yes as true)"
            } else {
                ""
            };
            if path == "." {
                anyhow!("{at}: {inner}{hint}")
            } else {
                anyhow!("{at}: `{}`: {inner}{hint}", crate::redact::cap(&path, 80))
            }
        })
    }
}

/// `key` as one JSON pointer segment (RFC 6901: `~` → `~0`, `/` → `~1`).
pub fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Read a configuration file of exactly one document (none: `null`) with the lines of its nodes.
/// A key written twice in one mapping is an error naming both lines (merged keys are not
/// duplicates: a key written beside `<<` overrides the merged one, as in every YAML reader).
pub fn located(text: &str) -> Result<Located> {
    check_input_size(text)?;
    let mut docs = read_stream_with(text, 0, false, true)?;
    match docs.len() {
        0 => Ok(Located {
            value: Value::Null,
            lines: HashMap::new(),
        }),
        1 => {
            let (doc, lines) = docs.remove(0);
            Ok(Located {
                value: doc.value,
                lines,
            })
        }
        n => bail!("expected one YAML document, found {n}"),
    }
}

/// One document of a YAML stream with where it lies in the text, empty documents included.
#[derive(Debug, Clone)]
pub struct SpannedDoc {
    /// `Value::Null` for a document with no content (only comments, or nothing after `---`).
    pub value: Value,
    /// Byte range of the document: from the end of the previous document (or the start of the
    /// text) to the end of this one, so its `---` line and the comments after it are inside.
    pub span: std::ops::Range<usize>,
    /// Byte range of what comes before the document's content: its `---` line and the comments
    /// (or blank lines) between it and the first node. Nothing here can be part of a scalar.
    pub head: std::ops::Range<usize>,
}

/// Every document of a YAML stream, as the parser delimits them (the same stream `documents`
/// reads), with its byte span; empty documents are returned too. Lets a caller read the comments
/// that lead a document (e.g. `helmfile build`'s `#  Source:` line) without splitting text itself.
pub fn spanned_documents(text: &str) -> Result<Vec<SpannedDoc>> {
    check_input_size(text)?;
    let mut b = Builder::new(text, 0, false);
    let mut docs = Vec::new();
    let mut prev_end = 0usize;
    loop {
        let ev = b.next()?;
        match ev.kind {
            Kind::StreamStart => {}
            Kind::StreamEnd => break,
            Kind::DocumentStart => {
                let (first, value, end) = b.document(ev.start, docs.len(), None)?;
                let content = first.index.clamp(prev_end, text.len());
                let end = end.index.clamp(content, text.len());
                docs.push(SpannedDoc {
                    value,
                    span: prev_end..end,
                    head: prev_end..content,
                });
                prev_end = end;
            }
            other => bail!("unexpected YAML event {other:?}"),
        }
    }
    Ok(docs)
}

/// Whether a line (without its line break) is a YAML document marker: `---` or `...` at column
/// 0, followed by nothing, a space or a tab (libyaml's rule; `--- {a: 1}`, `---\t`, `--- # c`
/// are markers, `---x` and ` ---` are not). A UTF-8 byte order mark may precede it.
pub fn is_document_marker(line: &str) -> bool {
    let l = line.strip_prefix('\u{feff}').unwrap_or(line);
    (l.starts_with("---") || l.starts_with("...")) && matches!(l.as_bytes().get(3), None | Some(b' ' | b'\t'))
}

/// Read a whole text from `r`, refusing it once it holds more than `limit` bytes (the rest is
/// never read, and the buffer never grows past `limit`). `what` names the input in messages.
pub fn read_bounded(mut r: impl std::io::Read, limit: usize, what: &str) -> Result<String> {
    let mut buf: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => bail!("cannot read {what}: {e}"),
        };
        if buf.len() + n > limit {
            return Err(too_large(what, limit));
        }
        if buf.capacity() < buf.len() + n {
            let want = (buf.capacity() * 2).max(buf.len() + n).min(limit);
            buf.reserve_exact(want - buf.len());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buf).map_err(|e| {
        anyhow!(
            "{what} is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// The refusal of an input larger than what is left of the limit (`limit` bytes).
pub fn too_large(what: &str, limit: usize) -> anyhow::Error {
    anyhow!(
        "{what}: more than {} of input; the limit is {} MiB for all input of one run together (nothing was \
         validated; split the input, or leave out what is not meant to be applied)",
        human_bytes(limit),
        MAX_INPUT >> 20
    )
}

fn human_bytes(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

/// The documents of rendered manifests (helm output, `--manifests`), refused where helm would
/// read other documents than a YAML parser does. helm reads rendered manifests by cutting the
/// text at its regex `(?:^|\s*\n)---\s*` (`releaseutil.SplitManifests`, after trimming the text
/// and each piece of white space) and reading each piece with `sigs.k8s.io/yaml`, which takes
/// the piece's first YAML document and ignores the rest (each piece reaches the API server followed
/// by the line break helm writes after it in the release manifest). A YAML parser reads the whole
/// stream.
/// Both readings are made here and must give the same documents, in the same order, with the same
/// content (empty documents skipped on both sides); otherwise the text is refused with the line
/// where they part. Cases: `---x` lines (a new piece for helm, text for YAML), `...` ends and
/// `---` after a CR, NEL or U+2028 break (more documents for YAML than helm reads), a `%YAML`
/// directive cut off from its document, leading non-ASCII white space trimmed away by helm.
pub fn manifest_documents(text: &str) -> Result<Vec<Doc>> {
    check_input_size(text)?;
    for (i, line) in text.split('\n').enumerate() {
        let line = if i == 0 {
            line.strip_prefix('\u{feff}').unwrap_or(line)
        } else {
            line
        };
        if let Some(rest) = line.strip_prefix("---") {
            if rest.chars().next().is_some_and(|c| !c.is_whitespace()) {
                bail!(
                    "line {}: `{}` starts a new document for helm (which splits at every line beginning with ---) \
                     but not for YAML parsers; put `---` on a line of its own",
                    i + 1,
                    crate::redact::excerpt(line, 60)
                );
            }
        }
    }
    let yaml = documents(text)?;
    let starts = line_starts(text);
    let line_of = |offset: usize| starts.partition_point(|&s| s <= offset);
    const HOW: &str = "helm cuts rendered manifests at every line that starts with `---` and reads only the first \
                       YAML document of each piece";
    const FIX: &str = "write each document after a `---` line of its own, with LF line ends, and no `...` or \
                       `%` directives";
    // helm's reading, piece by piece, compared as it is read (never a second copy of every
    // document): a piece helm cannot read is refused first, then the first document read
    // differently, then a count that differs.
    let mut helm = 0usize;
    let mut differs: Option<usize> = None;
    let mut extra_helm_line: Option<usize> = None;
    for (offset, piece) in helm_pieces(text) {
        let line = line_of(offset);
        // helm installs each piece followed by a line break (`---\n# Source: …\n<piece>\n`), so a
        // block scalar at its end keeps its final newline.
        let docs = read_stream(&format!("{piece}\n"), line - 1, true).map_err(|e| {
            anyhow!(
                "helm cannot read the manifest that starts at line {line} (helm cuts rendered output at lines \
                 starting with `---` and reads each piece on its own): {e}"
            )
        })?;
        for h in docs {
            match yaml.get(helm) {
                Some(y) if y.value == h.value => {}
                Some(_) => {
                    differs.get_or_insert(helm);
                }
                None => {
                    extra_helm_line.get_or_insert(h.line);
                }
            }
            helm += 1;
        }
    }
    if let Some(i) = differs {
        bail!(
            "line {}: helm reads document {} differently from a YAML parser ({HOW}); {FIX}",
            yaml[i].line,
            i + 1
        );
    }
    if let Some(y) = yaml.get(helm) {
        bail!(
            "line {}: a YAML parser reads a document here that helm does not see ({HOW}: {} documents for \
             YAML, {helm} for helm); {FIX}",
            y.line,
            yaml.len(),
        );
    }
    if let Some(line) = extra_helm_line {
        bail!(
            "line {line}: helm reads a document here that a YAML parser does not ({HOW}: {} documents for YAML, \
             {helm} for helm); {FIX}",
            yaml.len(),
        );
    }
    Ok(yaml)
}

/// The pieces helm reads rendered manifests in (`releaseutil.SplitManifests`): the text trimmed
/// of white space (Go's `strings.TrimSpace`, the same set as Rust's `str::trim`), cut at every
/// match of `(?:^|\s*\n)---\s*` (leftmost first, `\s` being ASCII `[\t\n\f\r ]`), empty pieces
/// dropped, each trimmed again. Each with its byte offset in `text`.
pub fn helm_pieces(text: &str) -> Vec<(usize, &str)> {
    // helm's chart loader drops a leading byte order mark before anything else reads a file.
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let text_after_bom = &text[bom..];
    let base = bom + text_after_bom.len() - text_after_bom.trim_start().len();
    let t = text_after_bom.trim();
    let b = t.as_bytes();
    let ws = |c: u8| matches!(c, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ');
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut from = 0;
    loop {
        let (start, mut end) = if from == 0 && b.starts_with(b"---") {
            (0, 3)
        } else {
            // The next `\n---`; the match starts where the white space run before it starts.
            let Some(q) = find(&b[from..], b"\n---").map(|q| q + from) else {
                break;
            };
            let mut p = q;
            while p > from && ws(b[p - 1]) {
                p -= 1;
            }
            (p, q + 4)
        };
        while end < b.len() && ws(b[end]) {
            end += 1;
        }
        cuts.push((start, end));
        from = end;
    }
    let mut pieces = Vec::new();
    let mut beg = 0;
    for &(s, e) in &cuts {
        pieces.push((beg, s));
        beg = e;
    }
    pieces.push((beg, b.len()));
    pieces
        .into_iter()
        .filter(|&(s, e)| e > s)
        .filter_map(|(s, e)| {
            let p = &t[s..e];
            let lead = p.len() - p.trim_start().len();
            let p = p.trim();
            (!p.is_empty()).then_some((base + s + lead, p))
        })
        .collect()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Byte offsets where lines start, counting every line break libyaml accepts: LF, CR, CRLF,
/// NEL (U+0085), LS (U+2028) and PS (U+2029). Line `n` (1-based) starts at `starts[n - 1]`.
pub fn line_starts(text: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut starts = vec![0];
    let mut i = 0;
    while i < b.len() {
        let brk = match b[i] {
            b'\n' => 1,
            b'\r' if b.get(i + 1) == Some(&b'\n') => 2,
            b'\r' => 1,
            0xC2 if b.get(i + 1) == Some(&0x85) => 2,
            0xE2 if b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0xA8 | 0xA9)) => 3,
            _ => 0,
        };
        if brk > 0 {
            i += brk;
            starts.push(i);
        } else {
            i += 1;
        }
    }
    starts
}

/// The lines of a text split at every YAML line break (without the break).
pub fn lines(text: &str) -> Vec<&str> {
    let starts = line_starts(text);
    let mut out = Vec::with_capacity(starts.len());
    for (n, &s) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(text.len());
        out.push(strip_break(&text[s..end]));
    }
    if out.last() == Some(&"") && text.len() == *starts.last().unwrap_or(&0) && starts.len() > 1 {
        out.pop();
    }
    out
}

fn strip_break(l: &str) -> &str {
    for br in ["\r\n", "\n", "\r", "\u{85}", "\u{2028}", "\u{2029}"] {
        if let Some(s) = l.strip_suffix(br) {
            return s;
        }
    }
    l
}

struct Builder<'a> {
    parser: Parser<'a>,
    /// The text being parsed (to look at a scalar's source).
    text: &'a str,
    /// Each anchor's value with the nodes and string bytes it holds.
    anchors: HashMap<String, (Value, usize, usize)>,
    nodes: usize,
    alias_nodes: usize,
    /// Bytes of scalars and keys written in the text, and added by aliases.
    bytes: usize,
    alias_bytes: usize,
    depth: usize,
    /// Flow collections open around the current node.
    flow_depth: usize,
    /// Where the current document starts (for `MAX_DOCUMENT`).
    doc_start: Option<events::Mark>,
    /// Added to every reported line (a piece of a larger text).
    line_base: usize,
    /// For configuration files (`located`): the line of every node by JSON pointer; duplicate keys
    /// are refused.
    lines: Option<HashMap<String, usize>>,
    /// JSON pointer of the node being built (kept only with `lines`).
    path: String,
}

/// One key of a mapping while it is read: a plain key, or a merge (`<<`) of these values.
enum Entry {
    Key(String, Value),
    Merge(Value, usize),
}

impl<'a> Builder<'a> {
    fn new(text: &'a str, line_base: usize, config: bool) -> Builder<'a> {
        Builder {
            parser: Parser::new(text.as_bytes()),
            text,
            anchors: HashMap::new(),
            nodes: 0,
            alias_nodes: 0,
            bytes: 0,
            alias_bytes: 0,
            depth: 0,
            flow_depth: 0,
            doc_start: None,
            line_base,
            lines: config.then(HashMap::new),
            path: String::new(),
        }
    }

    /// The document after its `DocumentStart` (at `start`; `index` names it in messages): anchors
    /// start afresh and the `MAX_DOCUMENT` limit applies while it is parsed. Returns where its
    /// first node starts, its value, and where its `DocumentEnd` starts.
    fn document(
        &mut self,
        start: events::Mark,
        index: usize,
        item_lines: Option<&mut Vec<usize>>,
    ) -> Result<(events::Mark, Value, events::Mark)> {
        self.anchors.clear();
        self.doc_start = Some(start);
        let first = self.next()?;
        let first_mark = first.start;
        let value = self.node(first, item_lines)?;
        let end = self.next()?;
        self.doc_start = None;
        if !matches!(end.kind, Kind::DocumentEnd) {
            bail!("YAML document {index}: unexpected {:?} at its end", end.kind);
        }
        Ok((first_mark, value, end.start))
    }

    fn next(&mut self) -> Result<events::Event> {
        match self.parser.next_event() {
            Some(Ok(e)) => {
                if let Some(s) = self.doc_start {
                    if e.end.index.saturating_sub(s.index) > MAX_DOCUMENT {
                        bail!(
                            "the YAML document that starts at line {} is larger than the {} MiB limit for one \
                             document (no object the API server accepts comes near it)",
                            s.line + 1 + self.line_base,
                            MAX_DOCUMENT >> 20
                        );
                    }
                }
                Ok(e)
            }
            Some(Err(e)) => Err(anyhow!(
                "{} at line {} column {}",
                e.problem,
                e.mark.line + 1 + self.line_base,
                e.mark.column + 1
            )),
            None => Err(anyhow!("YAML stream ended early")),
        }
    }

    /// Build the node that starts with `ev`. `item_lines` collects the lines of the elements of a
    /// top-level `items` sequence (only for the document root).
    fn node(&mut self, ev: events::Event, item_lines: Option<&mut Vec<usize>>) -> Result<Value> {
        // Each kind is built in its own function, so a nesting level costs the stack frame of one
        // of them, not of all (256 levels must fit a 2 MiB thread stack in a debug build).
        let line = ev.start.line + 1 + self.line_base;
        if let Some(lines) = &mut self.lines {
            lines.entry(self.path.clone()).or_insert(line);
        }
        self.nodes += 1;
        let before = (self.nodes + self.alias_nodes, self.bytes + self.alias_bytes);
        let (value, anchor) = match ev.kind {
            Kind::Alias(name) => return self.alias(&name, line, ev.start.column + 1),
            Kind::Scalar {
                value,
                style,
                tag,
                anchor,
            } => (
                self.scalar(&value, style, tag.as_deref(), (ev.start, ev.end), line)?,
                anchor,
            ),
            Kind::SequenceStart { anchor, tag, flow } => (self.sequence(tag.as_deref(), flow, line)?, anchor),
            Kind::MappingStart { anchor, tag, flow } => (self.mapping(tag.as_deref(), flow, line, item_lines)?, anchor),
            other => return Err(unexpected(&other, line)),
        };
        if let Some(a) = anchor {
            let n = self.nodes + self.alias_nodes - before.0 + 1;
            let bytes = self.bytes + self.alias_bytes - before.1;
            self.anchors.insert(a, (value.clone(), n, bytes));
        }
        Ok(value)
    }

    #[inline(never)]
    fn alias(&mut self, name: &str, line: usize, col: usize) -> Result<Value> {
        let Some((v, n, bytes)) = self.anchors.get(name) else {
            bail!(
                "unknown anchor `{}` at line {line} column {col}",
                crate::redact::excerpt(name, 60)
            );
        };
        self.alias_nodes += n;
        self.alias_bytes += bytes;
        if self.alias_nodes > ALIAS_BUDGET + self.nodes {
            bail!("aliases at line {line} expand to more than {ALIAS_BUDGET} nodes");
        }
        if self.alias_bytes > ALIAS_BYTES {
            bail!(
                "aliases at line {line} expand to more than {} MiB of strings",
                ALIAS_BYTES >> 20
            );
        }
        Ok(v.clone())
    }

    #[inline(never)]
    fn scalar(
        &mut self,
        value: &str,
        style: Style,
        tag: Option<&str>,
        (start, end): (events::Mark, events::Mark),
        line: usize,
    ) -> Result<Value> {
        self.bytes += value.len();
        self.check_flow_plain(value, style, line)?;
        self.check_escapes(style, start, end, line)?;
        resolve::scalar(value, style == Style::Plain, tag)
            .map_err(|e| anyhow!("{e} at line {line} column {}", start.column + 1))
    }

    #[inline(never)]
    fn sequence(&mut self, tag: Option<&str>, flow: bool, line: usize) -> Result<Value> {
        self.enter(line)?;
        self.flow_depth += flow as usize;
        check_collection_tag(tag, "tag:yaml.org,2002:seq", line)?;
        let mut items = Vec::new();
        loop {
            let e = self.next()?;
            if matches!(e.kind, Kind::SequenceEnd) {
                break;
            }
            let len = self.path.len();
            if self.lines.is_some() {
                self.path.push_str(&format!("/{}", items.len()));
            }
            items.push(self.node(e, None)?);
            self.path.truncate(len);
        }
        self.depth -= 1;
        self.flow_depth -= flow as usize;
        items.shrink_to_fit();
        Ok(Value::Array(items))
    }

    #[inline(never)]
    fn mapping(
        &mut self,
        tag: Option<&str>,
        flow: bool,
        line: usize,
        mut item_lines: Option<&mut Vec<usize>>,
    ) -> Result<Value> {
        self.enter(line)?;
        self.flow_depth += flow as usize;
        check_collection_tag(tag, "tag:yaml.org,2002:map", line)?;
        let mut entries = Vec::new();
        // Keys written in this mapping and their lines (configuration files only).
        let mut seen: HashMap<String, usize> = HashMap::new();
        loop {
            let k = self.next()?;
            if matches!(k.kind, Kind::MappingEnd) {
                break;
            }
            let kline = k.start.line + 1 + self.line_base;
            let merge = matches!(&k.kind, Kind::Scalar { value, style: Style::Plain, tag: None, .. } if value == "<<")
                || matches!(&k.kind, Kind::Scalar { tag: Some(t), .. } if t == "tag:yaml.org,2002:merge");
            let key = match &k.kind {
                Kind::Scalar {
                    value,
                    style,
                    tag,
                    anchor: None,
                } if !merge => self.key(value, *style, tag.as_deref(), (k.start, k.end), kline)?,
                _ => {
                    let key = self.node(k, None)?;
                    resolve::key_string(&key)
                }
            };
            let v = self.next()?;
            let len = self.path.len();
            if self.lines.is_some() {
                self.config_key(&mut seen, merge, &key, kline)?;
            }
            if merge {
                let v = self.node(v, None);
                self.path.truncate(len);
                entries.push(Entry::Merge(v?, kline));
                continue;
            }
            let key = key.map_err(|e| anyhow!("{e} at line {kline}"))?;
            let value = if key == "items" {
                match (item_lines.as_deref_mut(), &v.kind) {
                    (Some(lines), Kind::SequenceStart { .. }) => self.items(v, lines)?,
                    _ => self.node(v, None)?,
                }
            } else {
                self.node(v, None)?
            };
            self.path.truncate(len);
            entries.push(Entry::Key(key, value));
        }
        self.depth -= 1;
        self.flow_depth -= flow as usize;
        Ok(Value::Object(merge_entries(entries)?))
    }

    /// In a configuration file: refuse a key written twice in one mapping, and enter the key's
    /// place in the JSON pointer of the node being built (the caller truncates it after).
    #[inline(never)]
    fn config_key(
        &mut self,
        seen: &mut HashMap<String, usize>,
        merge: bool,
        key: &std::result::Result<String, String>,
        kline: usize,
    ) -> Result<()> {
        let written = if merge {
            "<<".to_string()
        } else {
            key.as_ref().map_err(|e| anyhow!("{e} at line {kline}"))?.clone()
        };
        if let Some(first) = seen.insert(written.clone(), kline) {
            bail!(
                "key `{}` is written twice in one mapping (lines {first} and {kline}); keep one, so the file says \
                 one thing",
                crate::redact::excerpt(&written, 60)
            );
        }
        self.path.push('/');
        self.path.push_str(&pointer_segment(&written));
        if let Some(lines) = &mut self.lines {
            lines.insert(self.path.clone(), kline);
        }
        Ok(())
    }

    /// A plain mapping key (not a merge, no anchor) as `sigs.k8s.io/yaml` turns it into a string.
    #[inline(never)]
    fn key(
        &mut self,
        value: &str,
        style: Style,
        tag: Option<&str>,
        (start, end): (events::Mark, events::Mark),
        line: usize,
    ) -> Result<std::result::Result<String, String>> {
        self.nodes += 1;
        self.bytes += value.len();
        self.check_flow_plain(value, style, line)?;
        self.check_escapes(style, start, end, line)?;
        Ok(resolve::scalar_key(value, style == Style::Plain, tag))
    }

    /// The root's `items` sequence, remembering where each element starts.
    fn items(&mut self, start: events::Event, lines: &mut Vec<usize>) -> Result<Value> {
        let line = start.start.line + 1 + self.line_base;
        let Kind::SequenceStart { anchor, tag, flow } = start.kind else {
            unreachable!("items() is called on a sequence start")
        };
        if anchor.is_some() {
            // Rare enough to read the simple way (no per-item lines).
            return self.node(
                events::Event {
                    kind: Kind::SequenceStart { anchor, tag, flow },
                    start: start.start,
                    end: start.end,
                },
                None,
            );
        }
        self.nodes += 1;
        self.enter(line)?;
        self.flow_depth += flow as usize;
        check_collection_tag(tag.as_deref(), "tag:yaml.org,2002:seq", line)?;
        let mut items = Vec::new();
        loop {
            let e = self.next()?;
            if matches!(e.kind, Kind::SequenceEnd) {
                break;
            }
            lines.push(e.start.line + 1 + self.line_base);
            items.push(self.node(e, None)?);
        }
        self.depth -= 1;
        self.flow_depth -= flow as usize;
        items.shrink_to_fit();
        Ok(Value::Array(items))
    }

    /// libyaml (0.2.2 on) lets a plain scalar in a flow collection hold `?`; Go's port (yaml.v2:
    /// helm, kubectl) ends the scalar there and reads a key indicator, so `{a: b?c}` is an error
    /// for helm and `b?c` for libyaml. Found by the fuzzer's differential oracle.
    fn check_flow_plain(&self, value: &str, style: Style, line: usize) -> Result<()> {
        if self.flow_depth > 0 && style == Style::Plain && value.contains('?') {
            bail!(
                "line {line}: a `?` inside a plain value of a flow collection (`{{…}}`, `[…]`), which Go's YAML \
                 parser (helm, kubectl) reads as the start of a key and libyaml as text; quote the value"
            );
        }
        Ok(())
    }

    /// libyaml (YAML 1.2) reads `\/` in a double-quoted scalar as `/`; Go's yaml.v2 (YAML 1.1:
    /// helm, kubectl) refuses it as an unknown escape. Found by the fuzzer's differential oracle.
    /// (The reverse, `\'`, is read by Go and refused by libyaml: refused here too.)
    fn check_escapes(&self, style: Style, start: events::Mark, end: events::Mark, line: usize) -> Result<()> {
        if style != Style::Double {
            return Ok(());
        }
        let raw = self.text.as_bytes().get(start.index..end.index).unwrap_or_default();
        let mut i = 0;
        while i < raw.len() {
            if raw[i] == b'\\' {
                if raw.get(i + 1) == Some(&b'/') {
                    bail!(
                        "line {line}: `\\/` in a double-quoted value, an escape Go's YAML parser (helm, kubectl) \
                         refuses and libyaml reads as `/`; write `/`"
                    );
                }
                i += 2;
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    fn enter(&mut self, line: usize) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            bail!("YAML nested deeper than {MAX_DEPTH} levels at line {line}");
        }
        Ok(())
    }
}

#[cold]
fn unexpected(kind: &Kind, line: usize) -> anyhow::Error {
    anyhow!("unexpected YAML event {kind:?} at line {line}")
}

fn check_collection_tag(tag: Option<&str>, expected: &str, line: usize) -> Result<()> {
    match tag {
        None | Some("!") => Ok(()),
        Some(t) if t == expected => Ok(()),
        // yaml.v2 ignores other tags on collections.
        Some(t) if !t.starts_with("tag:yaml.org,2002:") => Ok(()),
        Some(t) => bail!("a collection tagged {} at line {line}", crate::redact::excerpt(t, 60)),
    }
}

/// yaml.v2's non-strict mapping decode: entries are applied in order, each key overriding an
/// earlier one; a merge applies the merged mapping's keys at its position, and a sequence of
/// mappings is applied from its last element to its first (so earlier elements win).
fn merge_entries(entries: Vec<Entry>) -> Result<Map<String, Value>> {
    // Sized for its keys: a rendered stack holds every mapping it parses until the run ends.
    let mut out = Map::with_capacity(entries.len());
    for e in entries {
        match e {
            Entry::Key(k, v) => {
                out.insert(k, v);
            }
            Entry::Merge(Value::Object(m), _) => out.extend(m),
            Entry::Merge(Value::Array(items), line) => {
                for item in items.into_iter().rev() {
                    match item {
                        Value::Object(m) => out.extend(m),
                        _ => bail!("map merge requires map or sequence of maps as the value (line {line})"),
                    }
                }
            }
            Entry::Merge(_, line) => bail!("map merge requires map or sequence of maps as the value (line {line})"),
        }
    }
    Ok(out)
}

/// Parse one YAML document into any deserialisable type.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T> {
    if text.len() > MAX_INPUT {
        bail!("YAML input of {} bytes is larger than the limit", text.len());
    }
    let de = serde_norway::Deserializer::from_str(text);
    T::deserialize(de).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Parse one YAML document into a JSON value, as Kubernetes tooling reads it (see the module
/// documentation). An empty document is `null`; more than one document is an error.
pub fn value(text: &str) -> Result<Value> {
    let mut docs = documents(text)?;
    match docs.len() {
        0 => Ok(Value::Null),
        1 => Ok(docs.remove(0).value),
        n => bail!("expected one YAML document, found {n}"),
    }
}

/// Serialise to YAML text.
pub fn to_string<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_norway::to_string(v).map_err(|e| anyhow::anyhow!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn splits_documents_with_lines() {
        let text = "# c\n---\na: 1\n---\n\n# only comment\n---\nb:\n  c: 2\n";
        let docs = documents(text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].line, 3);
        assert_eq!(docs[1].line, 8);
        assert_eq!(docs[1].value["b"]["c"], 2);
        assert_eq!(docs[1].index, 2);
    }

    #[test]
    fn malformed_yaml_is_an_error_with_position() {
        let err = documents("a: [1, 2\n").unwrap_err();
        assert!(format!("{err:#}").contains("line"), "{err:#}");
    }

    #[test]
    fn content_on_the_marker_line_is_a_document() {
        let docs = documents("--- {kind: Pod, a: 1}\n--- {kind: Pod, a: 2}\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].value["a"], 2);
        assert_eq!(docs[1].line, 2);
    }

    #[test]
    fn every_yaml_line_break_separates_documents_and_lines() {
        for br in ["\r", "\r\n", "\u{85}", "\u{2028}", "\u{2029}"] {
            let text = format!("a: 1{br}---{br}# c{br}kind: Pod{br}b: [x]{br}");
            let docs = documents(&text).unwrap();
            assert_eq!(docs.len(), 2, "{br:?}");
            assert_eq!(docs[1].value, json!({"kind": "Pod", "b": ["x"]}), "{br:?}");
            assert_eq!(docs[1].line, 4, "{br:?}");
            assert_eq!(lines(&text).len(), 5, "{br:?}");
            assert_eq!(lines(&text)[3], "kind: Pod", "{br:?}");
        }
    }

    #[test]
    fn every_document_reader_enforces_the_document_limit() {
        // `helmfile build` output is read with `spanned_documents`: the per-document limit holds
        // there as in `documents`, and a document under it after a large one is still read.
        let big = format!("# Source: a\nk: \"{}\"\n---\nb: 1\n", "x".repeat(MAX_DOCUMENT));
        let e = spanned_documents(&big).unwrap_err().to_string();
        assert!(e.contains("larger than the 8 MiB limit for one document"), "{e}");
        assert!(documents(&big).is_err());
        let ok = format!("k: \"{}\"\n---\nb: 1\n", "x".repeat(MAX_DOCUMENT / 2));
        let docs = spanned_documents(&ok).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].value, json!({"b": 1}));
    }

    #[test]
    fn merge_keys_are_applied_in_yaml_v2_order() {
        let v = value("base: &b {image: x, args: [--quic-insecure]}\nc:\n  - <<: *b\n    name: c\n  - <<: {image: y}\n    image: z\n").unwrap();
        assert_eq!(
            v["c"][0],
            json!({"image": "x", "args": ["--quic-insecure"], "name": "c"})
        );
        assert_eq!(v["c"][1]["image"], "z");
        let v = value("a: &a {x: 1, q: 1}\nb: &b {x: 2, z: 2}\nc: {<<: [*a, *b], w: 0}\n").unwrap();
        assert_eq!(v["c"], json!({"x": 1, "z": 2, "q": 1, "w": 0}));
        assert!(value("a: {<<: 3}\n").is_err());
        // A quoted `<<` is an ordinary key.
        assert_eq!(value("a: {'<<': {x: 1}}\n").unwrap()["a"]["<<"]["x"], 1);
    }

    #[test]
    fn yaml_1_1_scalars() {
        let v = value("a: yes\nb: off\nc: 0755\nd: 0x1F\ne: 1_000\nf: 'yes'\ng: ~\nh: 2001-12-14\ni: 1.0\nj: .5\nk: +12\nl: 0b101\n").unwrap();
        assert_eq!(
            v,
            json!({"a": true, "b": false, "c": 493, "d": 31, "e": 1000, "f": "yes", "g": null,
                   "h": "2001-12-14", "i": 1, "j": 0.5, "k": 12, "l": 5})
        );
        assert_eq!(
            value("{yes: 1, 2: b, 1.5: c}\n").unwrap(),
            json!({"true": 1, "2": "b", "1.5": "c"})
        );
        assert!(value("a: .inf\n").is_err());
        assert!(value("? [a]\n: b\n").is_err());
    }

    #[test]
    fn later_duplicate_keys_win_as_in_yaml_v2() {
        assert_eq!(value("a: 1\na: 2\n").unwrap(), json!({"a": 2}));
    }

    #[test]
    fn deep_nesting_stops_while_parsing() {
        let deep = "[".repeat(200_000);
        let start = std::time::Instant::now();
        let err = documents(&deep).unwrap_err();
        assert!(format!("{err}").contains("nested deeper"), "{err}");
        // Not a timing assertion on speed, a guard against parsing the whole input first.
        assert!(start.elapsed() < std::time::Duration::from_secs(30));
        let deep = (0..300).map(|i| format!("{}a:\n", "  ".repeat(i))).collect::<String>();
        assert!(documents(&deep).is_err());
    }

    #[test]
    fn alias_expansion_is_bounded() {
        let mut t = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            t.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let err = documents(&t).unwrap_err();
        assert!(format!("{err}").contains("expand"), "{err}");
    }

    #[test]
    fn helm_only_document_boundaries_are_refused() {
        let err = manifest_documents("a: 1\n---b: 2\n").unwrap_err();
        assert!(format!("{err}").contains("line 2"), "{err}");
        assert!(manifest_documents("a: 1\n----\n").is_err());
        assert_eq!(manifest_documents("a: 1\n---  \nb: 2\n--- {c: 3}\n").unwrap().len(), 3);
        // Only a line start counts.
        assert_eq!(manifest_documents("a: x---y\n").unwrap().len(), 1);
    }

    #[test]
    fn helm_pieces_follow_split_manifests() {
        fn texts(t: &str) -> Vec<&str> {
            helm_pieces(t).into_iter().map(|(_, p)| p).collect()
        }
        assert_eq!(texts("a: 1\n---\nb: 2\n"), ["a: 1", "b: 2"]);
        assert_eq!(texts("---\na: 1\n  \n---  \t\n\nb: 2"), ["a: 1", "b: 2"]);
        // `\s*` after `---` eats the newline: a second `---` right after is text of the next piece.
        assert_eq!(texts("---\n---\na"), ["---\na"]);
        assert_eq!(texts("a: 1\n---b: 2"), ["a: 1", "b: 2"]);
        assert_eq!(texts("a: 1\r---\rb: 2"), ["a: 1\r---\rb: 2"]);
        assert_eq!(texts("--- {a: 1}\n--- |\n  x\n"), ["{a: 1}", "|\n  x"]);
        assert!(texts(" \n\t").is_empty());
        let t = "x: 0\n---\n  a: 1\n";
        let (off, p) = helm_pieces(t)[1];
        assert_eq!((&t[off..off + p.len()], p), ("a: 1", "a: 1"));
    }

    #[test]
    fn manifests_helm_and_yaml_read_alike_are_accepted() {
        for t in [
            "a: 1\n---\nb: 2\n",
            "---\t{a: 0}\n---\t\na: 1\n--- # c\nb: 2\n--- {c: 3}\n",
            "a: |\n  x\n  ---\n---\n# only a comment\n---\nb: &x 1\nc: *x\n",
            "a: 1\r\n---\r\nb: 2\r\n",
            "\u{feff}a: 1\n---\nb: 2\n",
            "a: 1\n...\n---\nb: 2\n",
        ] {
            let docs = manifest_documents(t).unwrap_or_else(|e| panic!("{t:?}: {e}"));
            assert_eq!(docs.len(), documents(t).unwrap().len(), "{t:?}");
        }
        let docs = manifest_documents("x: 0\n---\n\n\nkind: Pod\n").unwrap();
        assert_eq!(docs[1].line, 5);
    }

    #[test]
    fn manifests_helm_and_yaml_read_differently_are_refused() {
        for (t, line) in [
            // `...` ends the first document: helm reads only it and ignores the rest, which YAML
            // refuses (a document after `...` needs its own `---`).
            ("a: 1\n...\nkind: Pod\n", 3),
            // ... or reads as a second document.
            ("a: 1\n...\r---\rkind: Pod\n", 4),
            // CR line ends: one piece for helm, two documents for YAML.
            ("a: 1\r---\rkind: Pod\r", 3),
            ("a: 1\u{2028}---\u{2028}kind: Pod\n", 3),
            // The directive is cut off from its document by helm's splitter.
            ("%YAML 1.1\n---\na: 1\n", 1),
            // helm trims a leading NBSP that YAML keeps in the key.
            ("\u{a0}a: 1\n", 1),
            // A byte order mark after the start: Go reads `\u{feff}# c` as text, libyaml as a comment.
            ("a: 1\n\u{feff}# c\nb: 2\n", 2),
            ("a: 1\n---\n\u{feff}b: 2\n", 3),
            // `?` in a plain value of a flow collection: text for libyaml, a key for Go.
            ("a: {b: x?y}\n", 1),
            ("items: [a, b?c]\n", 1),
            ("a:\n  - {k: v,\n     b?: 1}\n", 3),
            // helm drops a leading BOM, then trims the NBSP after it; YAML keeps the NBSP.
            ("\u{feff}\u{a0}c: 1\n", 1),
            ("\u{feff}---x: 1\n---\na: 1\n", 1),
            // `\/`: an escape for libyaml, an error for Go.
            ("a: \"x\\/y\"\n", 1),
            ("a: {\"k\\/\": 1}\n", 1),
            // An empty first document hides the second from helm.
            ("~\r---\rkind: Pod\r", 3),
        ] {
            let err = format!("{:#}", manifest_documents(t).unwrap_err());
            assert!(err.contains(&format!("line {line}")), "{t:?}: {err}");
        }
    }

    #[test]
    fn document_markers_are_every_form_libyaml_accepts() {
        for l in [
            "---",
            "--- ",
            "---\t",
            "--- # c",
            "--- {a: 1}",
            "...",
            "... # end",
            "\u{feff}---",
        ] {
            assert!(is_document_marker(l), "{l:?}");
        }
        for l in ["---x", " ---", "----", "..x", "-- -", "a: ---"] {
            assert!(!is_document_marker(l), "{l:?}");
        }
    }

    #[test]
    fn a_document_over_the_size_limit_stops_the_parse() {
        let big = format!("a: 1\n---\nitems:\n- \"{}\"\n- x\n", "x".repeat(MAX_DOCUMENT));
        let err = format!("{}", documents(&big).unwrap_err());
        assert!(
            err.contains("starts at line 2") && err.contains("MiB limit for one document"),
            "{err}"
        );
        // The limit is per document: two documents of two thirds of it each are read.
        let part = format!("---\nitems:\n- \"{}\"\n", "x".repeat(MAX_DOCUMENT / 3 * 2));
        assert_eq!(documents(&part.repeat(2)).unwrap().len(), 2);
    }

    #[test]
    fn reading_stops_at_the_limit() {
        struct Endless(u64);
        impl std::io::Read for Endless {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                buf.fill(b'a');
                self.0 += buf.len() as u64;
                Ok(buf.len())
            }
        }
        let mut src = Endless(0);
        let err = read_bounded(&mut src, 1000, "standard input").unwrap_err();
        assert!(format!("{err}").contains("more than 1000 bytes"), "{err}");
        assert!(src.0 < 100_000, "read {} bytes", src.0);
        assert_eq!(read_bounded(&b"a: 1\n"[..], 1000, "x").unwrap(), "a: 1\n");
        assert!(read_bounded(&b"\xff"[..], 1000, "x").is_err());
    }

    #[test]
    fn aliased_strings_are_bounded_by_bytes() {
        let t = format!("a: &a \"{}\"\nb: [{}]\n", "x".repeat(1 << 20), "*a, ".repeat(100));
        let err = format!("{}", documents(&t).unwrap_err());
        assert!(err.contains("MiB of strings"), "{err}");
    }

    #[test]
    fn errors_never_echo_key_material() {
        let key = format!("-----BEGIN RSA PRIVATE KEY-----MIIEowIBAAKCAQEA{}", "Qx9".repeat(1700));
        for t in [
            format!("a: !!int {key}\n"),
            format!("a: *{}\n", "MIIEowIBAAKCAQEAx9Q".repeat(300)),
            format!("a: !!{} [1]\n", "MIIEowIBAAKCAQEAx9Q".repeat(300)),
            format!("a: 1\n---{key}\n"),
        ] {
            let err = format!("{:#}", manifest_documents(&t).unwrap_err());
            assert!(!err.contains("MIIE") && !err.contains("BEGIN"), "{err}");
            assert!(err.len() < 600, "{}", err.len());
        }
    }

    #[test]
    fn list_items_keep_their_lines() {
        let docs = documents("kind: List\nitems:\n- kind: A\n  x: 1\n- kind: B\n").unwrap();
        assert_eq!(docs[0].item_lines, vec![3, 5]);
    }

    #[test]
    fn spanned_documents_keep_leading_comments_and_empty_documents() {
        // Byte offsets, not characters: the `é` before counts two bytes.
        let text =
            "---\n#  Source: /a/é\n\nx: |-\n  a\n  ---\n  #  Source: no\n---\n# only\n---\n#  Source: /b\nz: 1\n";
        let docs = spanned_documents(text).unwrap();
        assert_eq!(docs.len(), 3);
        assert_eq!(&text[docs[0].head.clone()], "---\n#  Source: /a/é\n\n");
        assert_eq!(docs[0].value["x"], "a\n---\n#  Source: no");
        assert!(text[docs[0].span.clone()].ends_with("#  Source: no\n"));
        assert!(docs[1].value.is_null());
        assert!(text[docs[1].span.clone()].contains("# only"));
        assert_eq!(&text[docs[2].head.clone()], "---\n#  Source: /b\n");
        assert_eq!(docs[2].value["z"], 1);
        assert_eq!(docs[2].span.end, text.len());
        // The same documents as `documents` reads (empty ones aside).
        let plain = documents(text).unwrap();
        let non_empty: Vec<_> = docs.iter().filter(|d| !d.value.is_null()).map(|d| &d.value).collect();
        assert_eq!(plain.iter().map(|d| &d.value).collect::<Vec<_>>(), non_empty);
    }

    #[test]
    fn located_keeps_lines_by_pointer_and_refuses_duplicate_keys() {
        let text = "# c\na: 1\nb:\n  - x\n  - {k/1: v, t~: w}\nc: &c\n  d: 1\ne:\n  <<: *c\n  f: 2\n";
        let doc = located(text).unwrap();
        assert_eq!(doc.value["e"], json!({"d": 1, "f": 2}));
        for (ptr, line) in [
            ("", 2),
            ("/a", 2),
            ("/b", 3),
            ("/b/0", 4),
            ("/b/1", 5),
            ("/b/1/k~11", 5),
            ("/b/1/t~0", 5),
            ("/c/d", 7),
            ("/e/f", 10),
            // Merged from an alias: the line of the enclosing mapping entry.
            ("/e/d", 8),
            ("/b/7", 3),
        ] {
            assert_eq!(doc.line(ptr), Some(line), "{ptr}");
        }
        assert_eq!(doc.line("/nope"), Some(2), "the root's line");
        assert_eq!(pointer_segment("a/b~c"), "a~1b~0c");
        let e = located("a: 1\nb:\n  x: 1\n  x: 2\n").unwrap_err();
        assert!(
            format!("{e}").contains("key `x` is written twice in one mapping (lines 3 and 4)"),
            "{e}"
        );
        // Keys that resolve alike are the same key (`yes` and `true` are both true).
        assert!(located("yes: 1\n'true': 2\n").is_err());
        assert!(
            located("a: {<<: {x: 1}, <<: {y: 2}}\n").is_err(),
            "two merges in one mapping"
        );
        // A key beside a merge overrides the merged one: not a duplicate.
        assert_eq!(located("b: &b {x: 1}\na: {<<: *b, x: 2}\n").unwrap().value["a"]["x"], 2);
        // Manifests keep yaml.v2's later-key-wins.
        assert_eq!(value("x: 1\nx: 2\n").unwrap()["x"], 2);
        assert!(located("a: 1\n---\nb: 2\n").is_err());
        assert!(located("").unwrap().value.is_null());
        assert!(located("# only a comment\n").unwrap().value.is_null());
    }

    #[test]
    fn typed_names_the_path_and_line_of_a_bad_field() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct T {
            #[serde(default)]
            list: Vec<Item>,
            #[serde(default)]
            v: Option<String>,
        }
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Item {
            num: u32,
        }
        let doc = located("list:\n- num: 1\n- num: x\n").unwrap();
        let e = doc.typed::<T>("f.yaml").unwrap_err();
        assert_eq!(
            format!("{e}"),
            "f.yaml:3: `list[1].num`: invalid type: string \"x\", expected u32"
        );
        let e = located("v: 1.30\n").unwrap().typed::<T>("f.yaml").unwrap_err();
        assert!(
            format!("{e}")
                .starts_with("f.yaml:1: `v`: invalid type: floating point `1.3`, expected a string (quote the value"),
            "{e}"
        );
        let e = located("w: 1\n").unwrap().typed::<T>("f.yaml").unwrap_err();
        assert!(format!("{e}").starts_with("f.yaml:1: `w`: unknown field `w`"), "{e}");
        let e = located("- 1\n").unwrap().typed::<T>("f.yaml").unwrap_err();
        assert_eq!(format!("{e}"), "f.yaml: not a mapping at the top level");
        let e = located("list: 1\n").unwrap().typed::<T>("f.yaml").unwrap_err();
        assert!(
            format!("{e}").starts_with("f.yaml:1: `list`: invalid type: integer `1`"),
            "{e}"
        );
        let long = "Q".repeat(300);
        let e = located(&format!("list: [{{num: \"{long}\"}}]\n"))
            .unwrap()
            .typed::<T>("f.yaml")
            .unwrap_err();
        assert!(!format!("{e}").contains("QQQQ"), "{e}");
        assert!(
            located("").unwrap().typed::<T>("f.yaml").unwrap().list.is_empty(),
            "empty: an empty mapping"
        );
    }
}
