//! Stack loading from helmfile: see mod.rs.
