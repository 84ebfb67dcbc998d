//! Scalars and keys as `gopkg.in/yaml.v2` resolves them when decoding into `interface{}`, and as
//! `sigs.k8s.io/yaml` then turns them into JSON (what helm and kubectl send to the API server).

use serde_json::{Number, Value};

const STR: &str = "tag:yaml.org,2002:str";
const INT: &str = "tag:yaml.org,2002:int";
const FLOAT: &str = "tag:yaml.org,2002:float";
const BOOL: &str = "tag:yaml.org,2002:bool";
const BINARY: &str = "tag:yaml.org,2002:binary";
const TIMESTAMP: &str = "tag:yaml.org,2002:timestamp";

/// What yaml.v2 decodes a scalar to, before JSON.
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
}

/// The JSON value of a scalar. `plain` is true for an unquoted flow scalar (the only style whose
/// type is inferred); `tag` is the resolved tag, if the text gave one.
pub fn scalar(text: &str, plain: bool, tag: Option<&str>) -> Result<Value, String> {
    let s = decode(text, plain, tag)?;
    to_json(s)
}

fn decode(text: &str, plain: bool, tag: Option<&str>) -> Result<Scalar, String> {
    let tag = match tag {
        None if !plain => return Ok(Scalar::Str(text.to_string())),
        None => "",
        // The non-specific tag `!` is not one yaml.v2 resolves: the text stays a string (`! 12`
        // is "12", a bare `!` is ""). Found by the fuzzer's differential oracle.
        Some("!") => return Ok(Scalar::Str(text.to_string())),
        Some(t) => t,
    };
    if tag == BINARY {
        return decode_binary(text).map(Scalar::Str);
    }
    let resolvable = matches!(tag, "" | STR | BOOL | INT | FLOAT | TIMESTAMP);
    if !resolvable {
        // yaml.v2 keeps the text of scalars with tags it does not know.
        return Ok(Scalar::Str(text.to_string()));
    }
    let r = resolve(text, tag);
    // Explicit tags must agree with what the text resolves to (a float tag accepts an int).
    match (tag, &r) {
        ("", _) | (STR, _) | (TIMESTAMP, Scalar::Str(_)) => Ok(r),
        (INT, Scalar::Int(_) | Scalar::Uint(_)) | (BOOL, Scalar::Bool(_)) | (FLOAT, Scalar::Float(_)) => Ok(r),
        (FLOAT, Scalar::Int(i)) => Ok(Scalar::Float(*i as f64)),
        (FLOAT, Scalar::Uint(u)) => Ok(Scalar::Float(*u as f64)),
        _ => Err(format!(
            "cannot decode `{}` as {}",
            short(text),
            tag.trim_start_matches("tag:yaml.org,2002:")
        )),
    }
}

/// A scalar quoted in an error: capped, and never key or token material (`redact::excerpt`).
fn short(s: &str) -> String {
    crate::redact::excerpt(s, 40)
}

fn resolve(text: &str, tag: &str) -> Scalar {
    if tag == STR {
        return Scalar::Str(text.to_string());
    }
    let hint = match text.as_bytes().first() {
        None => b'M',
        Some(b'+' | b'-') => b'S',
        Some(b'0'..=b'9') => b'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' | b'<') => b'M',
        Some(b'.') => b'.',
        _ => 0,
    };
    if hint == 0 {
        return Scalar::Str(text.to_string());
    }
    if let Some(s) = lookup(text) {
        return s;
    }
    match hint {
        b'.' => {
            if let Some(f) = go_parse_float(text) {
                return Scalar::Float(f);
            }
        }
        b'D' | b'S' => {
            let plain: String = text.chars().filter(|&c| c != '_').collect();
            if let Some(i) = go_parse_int(&plain) {
                return Scalar::Int(i);
            }
            if let Some(u) = go_parse_uint(&plain) {
                return Scalar::Uint(u);
            }
            if yaml_style_float(&plain) {
                if let Some(f) = go_parse_float(&plain) {
                    return Scalar::Float(f);
                }
            }
            if let Some(rest) = plain.strip_prefix("0b") {
                if let Ok(i) = i64::from_str_radix(rest, 2) {
                    return Scalar::Int(i);
                }
                if let Ok(u) = u64::from_str_radix(rest, 2) {
                    return Scalar::Uint(u);
                }
            } else if let Some(rest) = plain.strip_prefix("-0b") {
                if let Ok(i) = i64::from_str_radix(&format!("-{rest}"), 2) {
                    return Scalar::Int(i);
                }
            }
        }
        _ => {}
    }
    Scalar::Str(text.to_string())
}

/// yaml.v2's table of YAML 1.1 words.
fn lookup(text: &str) -> Option<Scalar> {
    Some(match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => Scalar::Bool(true),
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => Scalar::Bool(false),
        "" | "~" | "null" | "Null" | "NULL" => Scalar::Null,
        ".nan" | ".NaN" | ".NAN" => Scalar::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Scalar::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Scalar::Float(f64::NEG_INFINITY),
        _ => return None,
    })
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let s = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - s
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseUint(s, 0, 64)`: `0x`, `0o`, `0b` and leading-`0` octal prefixes, no sign.
fn go_parse_uint(s: &str) -> Option<u64> {
    let (digits, radix) = if let Some(r) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (r, 16)
    } else if let Some(r) = s.strip_prefix("0o").or_else(|| s.strip_prefix("0O")) {
        (r, 8)
    } else if let Some(r) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        (r, 2)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let u = go_parse_uint(rest)?;
    if neg {
        if u <= i64::MAX as u64 + 1 {
            Some((u as i128).wrapping_neg() as i64)
        } else {
            None
        }
    } else {
        i64::try_from(u).ok()
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for the decimal forms YAML can reach here; out of range is
/// an error, as in Go.
fn go_parse_float(s: &str) -> Option<f64> {
    let lower = s.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, "inf" | "infinity" | "nan") {
        return match (body, lower.starts_with('-')) {
            ("nan", _) => Some(f64::NAN),
            (_, true) => Some(f64::NEG_INFINITY),
            _ => Some(f64::INFINITY),
        };
    }
    if !s
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some(f)
}

fn decode_binary(text: &str) -> Result<String, String> {
    // Go's base64.StdEncoding ignores CR and LF only.
    let clean: Vec<u8> = text.bytes().filter(|&b| b != b'\n' && b != b'\r').collect();
    let bytes = base64_std(&clean).ok_or_else(|| "!!binary value contains invalid base64 data".to_string())?;
    Ok(go_lossy_utf8(&bytes))
}

/// Bytes as Go's `encoding/json` writes a string holding them: every byte that does not start a
/// valid UTF-8 sequence becomes one U+FFFD (Rust's `from_utf8_lossy` folds a broken sequence into
/// one; the fuzzer's oracle found the difference on a `!!binary` key).
fn go_lossy_utf8(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (good, rest) = bytes.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).expect("valid up to here"));
                out.push('\u{fffd}');
                bytes = &rest[1..];
            }
        }
    }
}

fn base64_std(input: &[u8]) -> Option<Vec<u8>> {
    if input.len() % 4 != 0 {
        return None;
    }
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        })
    };
    let mut out = Vec::with_capacity(input.len() / 4 * 3);
    let chunks = input.len() / 4;
    for (n, c) in input.chunks(4).enumerate() {
        let last = n + 1 == chunks;
        let pad = c.iter().rev().take_while(|&&b| b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut acc = 0u32;
        for &b in &c[..4 - pad] {
            acc = (acc << 6) | val(b)?;
        }
        acc <<= 6 * pad as u32;
        let bytes = [(acc >> 16) as u8, (acc >> 8) as u8, acc as u8];
        // Go rejects non-zero trailing bits in padded input only in strict mode; StdEncoding is lenient.
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

/// The JSON a scalar becomes once `encoding/json` marshals it and the API server decodes it: a
/// float with an integral value below 1e21 is printed without a fraction and read back as an
/// integer. NaN and infinities cannot be marshalled: helm and kubectl fail on them.
fn to_json(s: Scalar) -> Result<Value, String> {
    Ok(match s {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::Number(i.into()),
        Scalar::Uint(u) => Value::Number(u.into()),
        Scalar::Str(s) => Value::String(s),
        Scalar::Float(f) => {
            if !f.is_finite() {
                return Err("infinity or NaN cannot be converted to JSON (helm and kubectl refuse it)".into());
            }
            if f.fract() == 0.0 && f.abs() < 1e21 && !(f == 0.0 && f.is_sign_negative()) {
                if f >= i64::MIN as f64 && f < i64::MAX as f64 {
                    Value::Number((f as i64).into())
                } else if f >= 0.0 && f < u64::MAX as f64 {
                    Value::Number((f as u64).into())
                } else {
                    Value::Number(Number::from_f64(f).expect("finite"))
                }
            } else {
                Value::Number(Number::from_f64(f).expect("finite"))
            }
        }
    })
}

/// A scalar mapping key as `sigs.k8s.io/yaml` turns it into a JSON object key (from the decoded
/// scalar: a float key keeps its float formatting, `1e10` → `1e+10`).
pub fn scalar_key(text: &str, plain: bool, tag: Option<&str>) -> Result<String, String> {
    match decode(text, plain, tag)? {
        Scalar::Str(s) => Ok(s),
        Scalar::Bool(b) => Ok(b.to_string()),
        Scalar::Int(i) => Ok(i.to_string()),
        Scalar::Uint(u) => Err(format!("unsupported map key {u} (larger than int64)")),
        Scalar::Float(f) => Ok(go_format_float32_g(f)),
        Scalar::Null => Err("unsupported map key null".into()),
    }
}

/// A mapping key as `sigs.k8s.io/yaml` turns it into a JSON object key.
pub fn key_string(key: &Value) -> Result<String, String> {
    match key {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) if n.is_i64() => Ok(n.to_string()),
        Value::Number(n) if n.is_u64() => Err(format!("unsupported map key {n} (larger than int64)")),
        Value::Number(n) => Ok(go_format_float32_g(n.as_f64().unwrap_or_default())),
        Value::Null => Err("unsupported map key null".into()),
        _ => Err("a sequence or mapping cannot be a map key".into()),
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`.
fn go_format_float32_g(f: f64) -> String {
    let f = f as f32;
    if f.is_infinite() {
        return if f > 0.0 { ".inf".into() } else { "-.inf".into() };
    }
    if f.is_nan() {
        return ".nan".into();
    }
    let e = format!("{f:e}"); // shortest digits: d[.ddd]e[-]x
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    // Go's shortest 'g' uses an exponent when it is below -4 or at least 6.
    if !(-4..6).contains(&exp) {
        return go_exp(mant, exp);
    }
    format!("{f}")
}

fn go_exp(mant: &str, exp: i32) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", exp.abs())
}

/// `encoding/json`'s text of a float64 (used to compare with helm's `toJson`, which prints every
/// number it read through `fromYaml` as a float64).
pub fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let e = format!("{f:e}");
        let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        // encoding/json trims `e-07` to `e-7` but keeps two digits for positive exponents.
        if exp < 0 {
            format!("{mant}e{sign}{}", exp.abs())
        } else {
            format!("{mant}e{sign}{:02}", exp.abs())
        }
    } else {
        format!("{f}")
    }
}

/// A value as helm's `fromYaml | toJson` prints it (Go's `encoding/json` over what
/// `sigs.k8s.io/yaml` decoded into `interface{}`): object keys sorted, every number a float64,
/// `<`, `>`, `&`, U+2028 and U+2029 escaped. The differential test compares this, byte for byte,
/// with the real helm's output.
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(v, &mut out);
    out
}

fn write_go_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_json_float(n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => write_go_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_string(k, out);
                out.push(':');
                write_go_json(&m[k], out);
            }
            out.push('}');
        }
    }
}

fn write_go_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_number_forms() {
        assert_eq!(go_parse_int("0755"), Some(493));
        assert_eq!(go_parse_int("08"), None);
        assert!(yaml_style_float("08"));
        assert_eq!(go_parse_int("-0x10"), Some(-16));
        assert_eq!(go_parse_int("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(go_parse_uint("18446744073709551615"), Some(u64::MAX));
        assert_eq!(resolve("1e400", ""), Scalar::Str("1e400".into()));
        assert_eq!(resolve("08", ""), Scalar::Float(8.0));
        assert_eq!(scalar("1_0", true, None).unwrap(), Value::from(10));
        assert_eq!(go_json_float(1e21), "1e+21");
        assert_eq!(go_json_float(1.5e-7), "1.5e-7");
        assert_eq!(go_json_float(100.0), "100");
        assert_eq!(go_format_float32_g(1.5), "1.5");
        assert_eq!(go_format_float32_g(1e10), "1e+10");
    }

    #[test]
    fn the_non_specific_tag_keeps_text() {
        assert_eq!(scalar("12", true, Some("!")).unwrap(), Value::from("12"));
        assert_eq!(scalar("", true, Some("!")).unwrap(), Value::from(""));
        assert_eq!(scalar_key("yes", true, Some("!")).unwrap(), "yes");
    }

    #[test]
    fn binary_is_decoded() {
        // Go replaces every invalid byte, not every broken sequence.
        assert_eq!(go_lossy_utf8(b"a\xe2\x80b\xff"), "a\u{fffd}\u{fffd}b\u{fffd}");
        assert_eq!(go_lossy_utf8("é".as_bytes()), "é");
        assert_eq!(scalar("aGVs\nbG8=", false, Some(BINARY)).unwrap(), Value::from("hello"));
        assert!(scalar("a b", false, Some(BINARY)).is_err());
    }
}
