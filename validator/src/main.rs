//! The command line. Parsing only; the work lives in the library.

use clap::{Parser, Subcommand};
use nvcf_validate::commands;

#[derive(Parser)]
#[command(name = "nvcf-validate", version, about = "Render gate for the NVCF control-plane Helmfile stack")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print the nvcf-trust-bundle-v1 fingerprint of a PEM bundle.
    Fingerprint(commands::fingerprint::Args),
    /// Certificate commands.
    Cert(commands::cert::Args),
    /// Live, fail-closed handshake checks against a deployed router.
    Probe(commands::probe::Args),
}

fn main() {
    let cli = Cli::parse();
    let code = match &cli.command {
        Cmd::Fingerprint(a) => commands::fingerprint::run(a),
        Cmd::Cert(a) => commands::cert::run(a),
        Cmd::Probe(a) => commands::probe::run(a),
    };
    std::process::exit(code);
}
