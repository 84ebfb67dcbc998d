//! `nvcf-validate fingerprint FILE|-`: print the `nvcf-trust-bundle-v1` fingerprint of a PEM
//! bundle (`sha256:<hex>`). Exit 0 on success, 2 when the input cannot be read or is not a bundle
//! of certificates (the message names the file and the block, never its content).

use crate::pki;
use std::io::Read;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// PEM bundle file, or `-` for standard input.
    pub file: String,
}

/// Read a file argument, `-` meaning standard input. The error names the input.
pub(crate) fn read_input(file: &str) -> Result<Vec<u8>, String> {
    if file == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|e| format!("standard input: cannot read: {e}"))?;
        Ok(buf)
    } else {
        std::fs::read(file).map_err(|e| format!("{file}: cannot read: {e}"))
    }
}

pub(crate) fn display_name(file: &str) -> &str {
    if file == "-" {
        "standard input"
    } else {
        file
    }
}

pub fn run(args: &Args) -> i32 {
    let pem = match read_input(&args.file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("nvcf-validate fingerprint: {e}");
            return 2;
        }
    };
    match pki::fingerprint::bundle_fingerprint(&pem) {
        Ok(fp) => {
            println!("{fp}");
            0
        }
        Err(e) => {
            eprintln!("nvcf-validate fingerprint: {}: {e}", display_name(&args.file));
            2
        }
    }
}
