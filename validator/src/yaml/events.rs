//! A safe event stream over libyaml (`unsafe-libyaml-norway`, the maintained fork of the Rust
//! translation of libyaml that `serde_norway` itself parses with). Go's `gopkg.in/yaml.v2`, which
//! helm and kubectl read manifests with (through `sigs.k8s.io/yaml`), is a port of the same libyaml
//! scanner and parser, so both sides agree on tokens, document boundaries and line breaks (CR, LF,
//! CRLF, NEL, U+2028, U+2029). All `unsafe` of the crate's YAML reading is in this file.

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use unsafe_libyaml_norway as unsafe_sys;

/// A position in the input: 0-based byte index, 0-based line and column (libyaml's counting,
/// which increments the line on every break it accepts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mark {
    pub index: usize,
    pub line: usize,
    pub column: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    /// Single-quoted.
    Quoted,
    /// Double-quoted (escapes apply).
    Double,
    Block,
}

#[derive(Debug)]
pub enum Kind {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias(String),
    Scalar {
        value: String,
        style: Style,
        tag: Option<String>,
        anchor: Option<String>,
    },
    SequenceStart {
        tag: Option<String>,
        anchor: Option<String>,
        /// Flow style (`[a, b]`) rather than block.
        flow: bool,
    },
    SequenceEnd,
    MappingStart {
        tag: Option<String>,
        anchor: Option<String>,
        /// Flow style (`{a: b}`) rather than block.
        flow: bool,
    },
    MappingEnd,
}

#[derive(Debug)]
pub struct Event {
    pub kind: Kind,
    pub start: Mark,
    /// Where the event's text ends (the byte after it).
    pub end: Mark,
}

/// libyaml's complaint: what and where (0-based line as libyaml counts).
#[derive(Debug, Clone)]
pub struct ParseError {
    pub problem: String,
    pub mark: Mark,
}

pub struct Parser<'a> {
    sys: Box<MaybeUninit<unsafe_sys::yaml_parser_t>>,
    done: bool,
    _input: PhantomData<&'a [u8]>,
}

impl<'a> Parser<'a> {
    pub fn new(input: &'a [u8]) -> Parser<'a> {
        let mut p = Box::new(MaybeUninit::<unsafe_sys::yaml_parser_t>::uninit());
        // SAFETY: libyaml initialises the struct in place; the input outlives the parser ('a), and
        // the parser is deleted exactly once in Drop.
        unsafe {
            let raw = p.as_mut_ptr();
            if unsafe_sys::yaml_parser_initialize(raw).fail {
                // Only fails on allocation failure, which aborts in Rust anyway.
                std::process::abort();
            }
            unsafe_sys::yaml_parser_set_encoding(raw, unsafe_sys::YAML_UTF8_ENCODING);
            unsafe_sys::yaml_parser_set_input_string(raw, input.as_ptr(), input.len() as _);
        }
        Parser {
            sys: p,
            done: false,
            _input: PhantomData,
        }
    }

    /// The next event; `None` after the stream ended or an error was returned.
    pub fn next_event(&mut self) -> Option<Result<Event, ParseError>> {
        if self.done {
            return None;
        }
        let mut ev = MaybeUninit::<unsafe_sys::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised in `new`; on success the event is initialised and
        // deleted below after its strings were copied out.
        unsafe {
            let raw = self.sys.as_mut_ptr();
            if unsafe_sys::yaml_parser_parse(raw, ev.as_mut_ptr()).fail {
                self.done = true;
                let pr: &unsafe_sys::yaml_parser_t = &*raw;
                let problem = cstr(pr.problem as *const u8).unwrap_or_else(|| "invalid YAML".into());
                let context = cstr(pr.context as *const u8);
                let m = pr.problem_mark;
                let problem = match context {
                    Some(c) => format!("{c}: {problem}"),
                    None => problem,
                };
                return Some(Err(ParseError { problem, mark: mark(m) }));
            }
            let e = ev.as_mut_ptr();
            let start = mark((*e).start_mark);
            let end = mark((*e).end_mark);
            let kind = match (*e).type_ {
                unsafe_sys::YAML_STREAM_START_EVENT => Kind::StreamStart,
                unsafe_sys::YAML_STREAM_END_EVENT => {
                    self.done = true;
                    Kind::StreamEnd
                }
                unsafe_sys::YAML_DOCUMENT_START_EVENT => Kind::DocumentStart,
                unsafe_sys::YAML_DOCUMENT_END_EVENT => Kind::DocumentEnd,
                unsafe_sys::YAML_ALIAS_EVENT => Kind::Alias(cstr((*e).data.alias.anchor).unwrap_or_default()),
                unsafe_sys::YAML_SCALAR_EVENT => {
                    let s = (*e).data.scalar;
                    let bytes = std::slice::from_raw_parts(s.value, s.length as usize);
                    Kind::Scalar {
                        value: String::from_utf8_lossy(bytes).into_owned(),
                        style: match s.style {
                            unsafe_sys::YAML_PLAIN_SCALAR_STYLE => Style::Plain,
                            unsafe_sys::YAML_LITERAL_SCALAR_STYLE | unsafe_sys::YAML_FOLDED_SCALAR_STYLE => {
                                Style::Block
                            }
                            unsafe_sys::YAML_DOUBLE_QUOTED_SCALAR_STYLE => Style::Double,
                            _ => Style::Quoted,
                        },
                        tag: cstr(s.tag),
                        anchor: cstr(s.anchor),
                    }
                }
                unsafe_sys::YAML_SEQUENCE_START_EVENT => Kind::SequenceStart {
                    tag: cstr((*e).data.sequence_start.tag),
                    anchor: cstr((*e).data.sequence_start.anchor),
                    flow: (*e).data.sequence_start.style == unsafe_sys::YAML_FLOW_SEQUENCE_STYLE,
                },
                unsafe_sys::YAML_SEQUENCE_END_EVENT => Kind::SequenceEnd,
                unsafe_sys::YAML_MAPPING_START_EVENT => Kind::MappingStart {
                    tag: cstr((*e).data.mapping_start.tag),
                    anchor: cstr((*e).data.mapping_start.anchor),
                    flow: (*e).data.mapping_start.style == unsafe_sys::YAML_FLOW_MAPPING_STYLE,
                },
                unsafe_sys::YAML_MAPPING_END_EVENT => Kind::MappingEnd,
                _ => {
                    unsafe_sys::yaml_event_delete(e);
                    self.done = true;
                    return Some(Err(ParseError {
                        problem: "unexpected YAML event".into(),
                        mark: start,
                    }));
                }
            };
            unsafe_sys::yaml_event_delete(e);
            Some(Ok(Event { kind, start, end }))
        }
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`, deleted once.
        unsafe { unsafe_sys::yaml_parser_delete(self.sys.as_mut_ptr()) }
    }
}

fn mark(m: unsafe_sys::yaml_mark_t) -> Mark {
    Mark {
        index: m.index as usize,
        line: m.line as usize,
        column: m.column as usize,
    }
}

/// Copy a NUL-terminated libyaml string (None for a null pointer).
unsafe fn cstr(p: *const u8) -> Option<String> {
    if p.is_null() {
        return None;
    }
    let s = std::ffi::CStr::from_ptr(p as *const std::ffi::c_char);
    Some(String::from_utf8_lossy(s.to_bytes()).into_owned())
}
