//! `nvcf-validate cert verify --bundle ROOTS.pem --chain CHAIN.pem --name HOST [--at RFC3339]`

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

pub fn run(_args: &Args) -> i32 {
    eprintln!("nvcf-validate cert verify: not implemented yet");
    2
}
