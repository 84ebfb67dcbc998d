//! `nvcf-validate probe tls|quic ADDR --server-name NAME --bundle FILE`

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// TLS over TCP with ALPN h2.
    Tls(ProbeArgs),
    /// QUIC.
    Quic(ProbeArgs),
}

#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// host:port
    pub addr: String,
    #[arg(long)]
    pub server_name: String,
    #[arg(long)]
    pub bundle: String,
}

pub fn run(_args: &Args) -> i32 {
    eprintln!("nvcf-validate probe: not implemented yet");
    2
}
