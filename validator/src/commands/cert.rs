//! `nvcf-validate cert verify --bundle ROOTS.pem --chain CHAIN.pem --name HOST [--at RFC3339]`
//!
//! Verifies a server chain for a name against exactly the given roots, with the verifier workers
//! use (rustls/webpki). Exit 0 verified (one-line summary on stdout), 1 refused (the webpki reason
//! and what to change on stderr), 2 unreadable input (files, PEM, name, time).

use super::fingerprint::{display_name, read_input};
use crate::pki::verify::verify_server;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Verify a server chain for a name against exactly the given roots, as a worker would.
    Verify(VerifyArgs),
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    #[arg(long)]
    pub bundle: String,
    #[arg(long)]
    pub chain: String,
    #[arg(long)]
    pub name: String,
    #[arg(long)]
    pub at: Option<String>,
}

pub fn run(args: &Args) -> i32 {
    match &args.command {
        Command::Verify(v) => verify(v),
    }
}

fn verify(args: &VerifyArgs) -> i32 {
    const P: &str = "nvcf-validate cert verify";
    if args.bundle == "-" && args.chain == "-" {
        eprintln!("{P}: --bundle and --chain cannot both be standard input");
        return 2;
    }
    let at = match &args.at {
        None => OffsetDateTime::now_utc(),
        Some(s) => match OffsetDateTime::parse(s, &Rfc3339) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{P}: --at `{s}` is not an RFC 3339 time (e.g. 2026-11-29T12:00:00Z): {e}");
                return 2;
            }
        },
    };
    let (roots, chain) = match (read_input(&args.bundle), read_input(&args.chain)) {
        (Ok(r), Ok(c)) => (r, c),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{P}: {e}");
            return 2;
        }
    };
    match verify_server(&roots, &chain, &args.name, at) {
        Ok(v) => {
            println!("{v}");
            0
        }
        Err(r) if r.is_input_error() => {
            // The message says which input (roots bundle / chain / name); add the file.
            let file = match r.reason {
                "UnreadableBundle" => format!("{}: ", display_name(&args.bundle)),
                "UnreadableChain" => format!("{}: ", display_name(&args.chain)),
                _ => String::new(),
            };
            eprintln!("{P}: {file}{}", r.message);
            2
        }
        Err(r) => {
            eprintln!(
                "refused: {} is not valid for `{}`: {r}",
                display_name(&args.chain),
                args.name
            );
            1
        }
    }
}
