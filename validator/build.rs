//! Builds the Kubernetes JSON schemas of the supported minors into the binary (issue #28), so a
//! copy of `nvcf-validate` validates a stack anywhere, without `.tools/schemas`.
//!
//! Which minors and their sha256: `KUBE_SCHEMA_EMBED` and `KUBE_SCHEMA_SHA256_<major>_<minor>` in
//! `ci/tools.lock`. The files come from `.tools/schemas/kubernetes/` (installed and checked by
//! `ci/setup`); a missing file or a sha256 that differs fails the build, naming the fix. Each is
//! deflate-compressed into `OUT_DIR`, and `embedded_schemas.rs` lists them for `schema::builtin`.

use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest
        .parent()
        .expect("the crate lives in the repository")
        .to_path_buf();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let lock_path = root.join("ci/tools.lock");
    println!("cargo:rerun-if-changed={}", lock_path.display());
    let lock = std::fs::read_to_string(&lock_path)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", lock_path.display())));
    let value = |key: &str| -> Option<String> {
        lock.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(|v| v.trim().trim_matches('"').to_string())
    };
    let versions = value("KUBE_SCHEMA_EMBED").unwrap_or_else(|| fail("ci/tools.lock has no KUBE_SCHEMA_EMBED"));
    let dir = root.join(".tools/schemas/kubernetes");
    let mut list = String::from("/// (Kubernetes minor, deflate-compressed `_definitions.json`, its length).\n");
    list.push_str("pub static EMBEDDED: &[(&str, &[u8], usize)] = &[\n");
    for v in versions.split_whitespace() {
        let key = format!("KUBE_SCHEMA_SHA256_{}", v.replace('.', "_"));
        let want = value(&key).unwrap_or_else(|| fail(&format!("ci/tools.lock has no {key}")));
        let file = dir.join(format!("v{v}")).join("_definitions.json");
        println!("cargo:rerun-if-changed={}", file.display());
        let data = std::fs::read(&file).unwrap_or_else(|e| {
            fail(&format!(
                "the Kubernetes {v} schemas this binary embeds are not installed ({}: {e}); run ./ci/setup first",
                file.display()
            ))
        });
        let got = hex(&Sha256::digest(&data));
        if got != want {
            fail(&format!(
                "{}: sha256 {got}, but ci/tools.lock pins {want} ({key}); run ./ci/setup to reinstall the schemas",
                file.display()
            ));
        }
        let name = format!("kubernetes-v{v}.json.deflate");
        write_deflated(&out.join(&name), &data);
        list.push_str(&format!(
            "    ({v:?}, include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{name}\")), {}),\n",
            data.len()
        ));
    }
    list.push_str("];\n");
    std::fs::write(out.join("embedded_schemas.rs"), list).expect("writing embedded_schemas.rs");
}

fn write_deflated(path: &Path, data: &[u8]) {
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(data).expect("deflate");
    std::fs::write(path, enc.finish().expect("deflate")).expect("writing a compressed schema");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn fail(msg: &str) -> ! {
    eprintln!("nvcf-validate build: {msg}");
    std::process::exit(1)
}
