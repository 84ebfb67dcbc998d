//! Sub-commands other than `check`/`rules`/`explain` (which live in `main.rs` and `engine`).
//! Each exposes a clap `Args` type and `run(&Args) -> i32` (the process exit code: 0 ok,
//! 1 refused, 2 could not validate).

pub mod ca;
pub mod cert;
pub mod fingerprint;
pub mod graph;
pub mod probe;
pub mod probe_profile;
pub mod profile;
pub mod readiness;
