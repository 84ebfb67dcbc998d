//! helmfile's dump of a failed command (`PATH:`, `ARGS: 0: /path/helm (26 bytes) …`,
//! `COMBINED OUTPUT:`) made one line (`helm template umb charts/umb --namespace apps exited with
//! status 1:`) and the command's own error, and a Go panic its `panic:` line and the function it
//! happened in; `tools::tail` applies it before keeping the last lines, and `stack::failure`
//! reads the condensed words.

/// helmfile's dump of a failed command and Go panics, made readable (see the module docs). Text
/// that is neither passes through unchanged, but for the sealed kubeconfig's permission warnings.
pub fn condense(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if l.trim_start().starts_with("WARNING: Kubernetes configuration file is") {
            i += 1;
            continue;
        }
        if l.starts_with("panic: ") {
            i = panic_block(&lines, i, &mut out);
            continue;
        }
        if let Some(at) = l
            .find("command \"")
            .filter(|_| l.trim_end().ends_with("exited with non-zero status:"))
        {
            i = command_block(&lines, i, &l[..at], &mut out);
            continue;
        }
        out.push(l.to_string());
        i += 1;
    }
    out.join("\n")
}

/// `panic: …` and the goroutine dump after it: the panic line and the function it happened in
/// (the first frame of the dump).
fn panic_block(lines: &[&str], start: usize, out: &mut Vec<String>) -> usize {
    let mut i = start + 1;
    let mut frame: Option<String> = None;
    while let Some(l) = lines.get(i) {
        let l = l.trim_end();
        let call = !l.starts_with('\t') && l.ends_with(')');
        let dump = l.is_empty()
            || l.starts_with('\t')
            || l.starts_with("goroutine ")
            || l.starts_with("[signal ")
            || l.starts_with("created by ")
            || call;
        if !dump {
            break;
        }
        if frame.is_none() && call && !l.starts_with('[') {
            frame = l.rfind('(').map(|p| l[..p].to_string()).filter(|f| !f.is_empty());
        }
        i += 1;
    }
    out.push(format!(
        "helmfile crashed: {}{}",
        crate::redact::cap(lines[start].trim(), 300),
        frame
            .map(|f| format!(" (in {})", crate::redact::cap(&f, 200)))
            .unwrap_or_default()
    ));
    i
}

/// helmfile's `<prefix>command "X" exited with non-zero status:` block: one line with the command
/// and its arguments, then what it printed on stderr (else its combined output).
fn command_block(lines: &[&str], start: usize, prefix: &str, out: &mut Vec<String>) -> usize {
    let mut sections: Vec<(String, Vec<String>)> = Vec::new();
    let mut i = start + 1;
    while i < lines.len() {
        let l = lines[i];
        let t = l.trim();
        let header = ["PATH:", "ARGS:", "ERROR:", "EXIT STATUS", "STDERR:", "COMBINED OUTPUT:"]
            .iter()
            .find(|h| t == **h);
        match header {
            Some(h) => sections.push((h.to_string(), Vec::new())),
            None if t.is_empty() => {}
            None if l.starts_with(' ') && !sections.is_empty() => {
                if let Some(s) = sections.last_mut() {
                    s.1.push(t.to_string());
                }
            }
            None => break,
        }
        i += 1;
    }
    let section = |name: &str| {
        sections
            .iter()
            .find(|(h, _)| h == name)
            .map(|(_, b)| b.clone())
            .unwrap_or_default()
    };
    let args: Vec<String> = section("ARGS:").iter().map(|a| arg_value(a)).collect();
    let status = section("EXIT STATUS")
        .first()
        .cloned()
        .unwrap_or_else(|| "non-zero".into());
    out.push(format!("{prefix}{} exited with status {status}:", command_line(&args)));
    let mut said = section("STDERR:");
    if said.iter().all(|l| l.trim().is_empty()) {
        said = section("COMBINED OUTPUT:");
    }
    for l in said
        .iter()
        .filter(|l| !l.starts_with("WARNING: Kubernetes configuration file is"))
    {
        out.push(format!("  {l}"));
    }
    i
}

/// `3: charts/c (8 bytes)` → `charts/c`.
fn arg_value(line: &str) -> String {
    let v = line.split_once(": ").map(|(_, v)| v).unwrap_or(line);
    match v.rfind(" (") {
        Some(p) if v.ends_with(" bytes)") => v[..p].to_string(),
        _ => v.to_string(),
    }
}

/// The command as one line: the program's name (not its path), its arguments with temporary paths
/// left out, each capped, userinfo of URLs hidden.
fn command_line(args: &[String]) -> String {
    const SKIP_VALUE: &[&str] = &[
        "--output-dir",
        "--destination",
        "--values",
        "-f",
        "--kubeconfig",
        "--post-renderer",
    ];
    let mut words: Vec<String> = Vec::new();
    let mut it = args.iter();
    if let Some(prog) = it.next() {
        words.push(prog.rsplit('/').next().unwrap_or(prog).to_string());
    }
    let mut skip_next = false;
    for a in it {
        if skip_next {
            skip_next = false;
            continue;
        }
        if SKIP_VALUE.contains(&a.as_str()) {
            skip_next = true;
            continue;
        }
        if words.len() >= 12 {
            words.push("…".into());
            break;
        }
        words.push(crate::redact::cap(&crate::redact::redact_userinfo(a), 120));
    }
    words.join(" ")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// helmfile's dump of a failed `helm template` (also read by `stack::failure`'s tests).
    pub(crate) const DUMP: &str = "Templating release=umb, chart=charts/umb\nin ./helmfile.yaml: command \"/work/.tools/bin/helm\" exited with non-zero status:\n\nPATH:\n  /work/.tools/bin/helm\n\nARGS:\n  0: /work/.tools/bin/helm (26 bytes)\n  1: template (8 bytes)\n  2: umb (3 bytes)\n  3: charts/umb (10 bytes)\n  4: --namespace (11 bytes)\n  5: apps (4 bytes)\n  6: --output-dir (12 bytes)\n  7: /tmp/out/helmfile-d4c69a5a-umb (30 bytes)\n  8: https://user:secret@charts.example.com/x (34 bytes)\n\nERROR:\n  exit status 1\n\nEXIT STATUS\n  1\n\nSTDERR:\n  WARNING: Kubernetes configuration file is group-readable. This is insecure. Location: /tmp/k\n  Error: An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: redis\n\nCOMBINED OUTPUT:\n  Error: An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: redis";

    #[test]
    fn condenses_helmfiles_argument_dump() {
        let c = condense(DUMP);
        assert!(
            c.contains("in ./helmfile.yaml: helm template umb charts/umb --namespace apps https://***@charts.example.com/x exited with status 1:"),
            "{c}"
        );
        assert_eq!(c.matches("found in Chart.yaml").count(), 1, "{c}");
        for gone in [
            "(26 bytes)",
            "0: ",
            "PATH:",
            "ARGS:",
            "COMBINED OUTPUT",
            "/tmp/out",
            "secret",
            "WARNING: Kube",
        ] {
            assert!(!c.contains(gone), "`{gone}` left in:\n{c}");
        }
        // Text that is no dump passes through.
        assert_eq!(condense("a\n  b: 1\n"), "a\n  b: 1");
    }

    #[test]
    fn condenses_a_go_panic_to_its_line_and_function() {
        let p = "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x10 pc=0x27af4ef]\n\ngoroutine 24 [running]:\ngithub.com/helmfile/helmfile/pkg/remote.HttpFileExists({0xc000a22750, 0x2c})\n\t/home/runner/work/helmfile/helmfile/pkg/remote/remote.go:508 +0x4f\ngithub.com/helmfile/helmfile/pkg/remote.(*HttpGetter).Get(0xc00093e1e8, {0x0?, 0x0?})\n\t/home/runner/work/helmfile/helmfile/pkg/remote/remote.go:413 +0xf4\ncreated by github.com/helmfile/helmfile/pkg/state.(*HelmState).scatterGather in goroutine 11\n\t/home/runner/work/helmfile/helmfile/pkg/state/state_run.go:32 +0x71\n";
        let c = condense(p);
        assert_eq!(
            c,
            "helmfile crashed: panic: runtime error: invalid memory address or nil pointer dereference (in github.com/helmfile/helmfile/pkg/remote.HttpFileExists)"
        );
    }
}
