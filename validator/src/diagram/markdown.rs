//! The diagrams of a markdown report (a pull-request comment): for each environment with a
//! finding on its picture, the mermaid diagram of what has findings and its direct neighbours
//! (everything else collapsed into a count), in a `<details>` block GitHub renders.
//!
//! A budget keeps the comment readable and under GitHub's limits: a diagram of more than
//! [`MAX_NODES`] nodes or [`MAX_CHARS`] characters is replaced by the command that draws it, and
//! the section stops adding diagrams after [`MAX_TOTAL`] characters.

use super::{mermaid, model};
use crate::diagram::EnvGraph;
use std::fmt::Write;

pub const MAX_NODES: usize = 60;
pub const MAX_CHARS: usize = 12_000;
pub const MAX_TOTAL: usize = 30_000;

/// The section to append to the markdown report; empty when no finding sits on a picture.
pub fn section(envs: &[EnvGraph]) -> String {
    let mut out = String::new();
    for e in envs {
        let d = model::build(&e.graph, &e.findings);
        let on_picture = d.nodes.iter().any(|n| !n.marks.is_empty()) || d.edges.iter().any(|e| !e.marks.is_empty());
        if !on_picture {
            continue;
        }
        let (small, dropped) = d.collapsed();
        let note = if dropped > 0 {
            format!("{dropped} node(s) without findings not shown")
        } else {
            String::new()
        };
        let text = mermaid::render_with_notes(std::slice::from_ref(&small), &[note]);
        // The environment name is input: shown as code, never as markup.
        let env = e.name.replace(['`', '<', '>', '&', '\n', '\r'], "_");
        let cmd = format!("nvcf-validate graph --environment {env}");
        let body = if small.nodes.len() > MAX_NODES || text.len() > MAX_CHARS {
            format!(
                "The picture is too large for a comment ({} nodes): run `{cmd}` to draw it.\n",
                small.nodes.len()
            )
        } else {
            format!("```mermaid\n{text}```\n")
        };
        let mut block = String::new();
        let _ = write!(
            block,
            "<details open><summary>Where the findings sit: <code>{env}</code></summary>\n\n{body}\n\
             Red: error, amber: warning; dashed: referenced but absent. The whole picture: `{cmd}`.\n\n</details>\n\n"
        );
        if out.len() + block.len() > MAX_TOTAL {
            let _ = writeln!(
                out,
                "More environments have findings on their pictures than fit here: run `nvcf-validate graph`.\n"
            );
            break;
        }
        out.push_str(&block);
    }
    if out.is_empty() {
        out
    } else {
        format!("\n#### Trust and worker paths\n\n{out}")
    }
}
