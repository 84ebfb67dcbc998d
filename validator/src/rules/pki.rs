//! Rule family: pki. (Being written; see validator.md's rule catalog.)

use super::Rule;

pub static RULES: &[Rule] = &[];
