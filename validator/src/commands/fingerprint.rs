//! `nvcf-validate fingerprint FILE|-`

#[derive(Debug, clap::Args)]
pub struct Args {
    /// PEM bundle file, or `-` for standard input.
    pub file: String,
}

pub fn run(_args: &Args) -> i32 {
    eprintln!("nvcf-validate fingerprint: not implemented yet");
    2
}
