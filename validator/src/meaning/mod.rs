//! What values mean, decided by parsing them, never by text prefixes or name lists: hosts and
//! loopback (`host`), private key material in any encoding (`keys`), image tags that name a
//! version (`tags`), and whether a human reason says anything (`text`).
//!
//! The lowest layer: it depends on nothing of the crate, so the YAML reader's redaction, the
//! policy loader and the rules share one answer to each question.

pub mod host;
pub mod keys;
pub mod tags;
pub mod text;
