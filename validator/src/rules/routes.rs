//! Rule family: routes. (Being written; see validator.md's rule catalog.)

use super::Rule;

pub static RULES: &[Rule] = &[];
