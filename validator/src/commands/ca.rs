//! `nvcf-validate ca init|intermediate`: the operator's own CA for managed PKI (docs/pki.md).
//!
//! - `ca init --out DIR` creates an offline root (ECDSA P-384) and an intermediate it signs:
//!   `root.pem` (public: the environment's `pki.trustBundleFile`, so the bundle workers receive is
//!   known before the first apply), `root.key` (keep it offline; needed only to sign the next
//!   intermediate) and `intermediate.pem` (the intermediate certificate and its key: the one-time
//!   import into OpenBao's intermediate mount through the bootstrap Secret).
//! - `ca intermediate --root-cert F --root-key F --out DIR` signs a new intermediate with an
//!   existing root (intermediate rotation).
//!
//! Files are created, never overwritten (exit 2 when one exists); key files are mode 0600.
//! Exit 0 on success (the root's `nvcf-trust-bundle-v1` fingerprint on stdout), 2 otherwise.

use crate::pki;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use std::io::Write;
use std::path::{Path, PathBuf};
use time::{Duration, OffsetDateTime};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Create an offline root and an intermediate it signs (root.pem, root.key, intermediate.pem).
    Init(InitArgs),
    /// Sign a new intermediate with an existing root (intermediate.pem).
    Intermediate(IntermediateArgs),
}

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Directory for the new files (created if missing; existing files are never overwritten).
    #[arg(long)]
    pub out: PathBuf,
    /// Common name of the root.
    #[arg(long, default_value = "NVCF Root CA")]
    pub root_cn: String,
    /// Common name of the intermediate.
    #[arg(long, default_value = "NVCF OpenBao Intermediate CA")]
    pub intermediate_cn: String,
    /// Root lifetime in days.
    #[arg(long, default_value_t = 3650)]
    pub root_days: u32,
    /// Intermediate lifetime in days (at most the root's).
    #[arg(long, default_value_t = 1825)]
    pub intermediate_days: u32,
}

#[derive(Debug, clap::Args)]
pub struct IntermediateArgs {
    /// The root certificate (PEM).
    #[arg(long)]
    pub root_cert: PathBuf,
    /// The root's private key (PEM, PKCS#8).
    #[arg(long)]
    pub root_key: PathBuf,
    /// Directory for intermediate.pem.
    #[arg(long)]
    pub out: PathBuf,
    /// Common name of the intermediate.
    #[arg(long, default_value = "NVCF OpenBao Intermediate CA")]
    pub cn: String,
    /// Lifetime in days.
    #[arg(long, default_value_t = 1825)]
    pub days: u32,
}

/// Longest lifetime accepted (days): a bound on what an argument can ask for.
const MAX_DAYS: u32 = 36500;

pub fn run(args: &Args) -> i32 {
    let r = match &args.command {
        Command::Init(a) => init(a),
        Command::Intermediate(a) => intermediate(a),
    };
    match r {
        Ok(msg) => {
            println!("{msg}");
            0
        }
        Err(e) => {
            eprintln!("nvcf-validate ca: {e}");
            2
        }
    }
}

fn ca_params(cn: &str, days: u32, path_len: Option<u8>) -> Result<CertificateParams, String> {
    if days == 0 || days > MAX_DAYS {
        return Err(format!("a lifetime of {days} days is out of range (1..={MAX_DAYS})"));
    }
    let mut p = CertificateParams::default();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.is_ca = IsCa::Ca(match path_len {
        Some(n) => BasicConstraints::Constrained(n),
        None => BasicConstraints::Unconstrained,
    });
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    // An hour back: clocks of the cluster that first sees it may lag.
    let now = OffsetDateTime::now_utc();
    p.not_before = now - Duration::hours(1);
    p.not_after = now + Duration::days(days as i64);
    Ok(p)
}

fn new_key() -> Result<KeyPair, String> {
    KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).map_err(|e| format!("cannot generate a key: {e}"))
}

/// Create `dir/name` with `content`; refuse an existing file; 0600 when `secret`.
fn create(dir: &Path, name: &str, content: &str, secret: bool) -> Result<PathBuf, String> {
    let path = dir.join(name);
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(if secret { 0o600 } else { 0o644 });
    }
    let mut f = o.open(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            format!("{}: exists; never overwritten (choose another --out)", path.display())
        } else {
            format!("{}: cannot create: {e}", path.display())
        }
    })?;
    f.write_all(content.as_bytes())
        .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
    Ok(path)
}

fn check_free(dir: &Path, names: &[&str]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    for n in names {
        let p = dir.join(n);
        if p.exists() {
            return Err(format!(
                "{}: exists; never overwritten (choose another --out)",
                p.display()
            ));
        }
    }
    Ok(())
}

fn sign_intermediate(cn: &str, days: u32, issuer: &Issuer<'_, KeyPair>, root_not_after: i64) -> Result<String, String> {
    let mut p = ca_params(cn, days, Some(0))?;
    if p.not_after.unix_timestamp() > root_not_after {
        return Err(format!(
            "the intermediate would outlive its root (root expires {}); choose fewer days",
            pki::rfc3339(root_not_after)
        ));
    }
    p.use_authority_key_identifier_extension = true;
    let key = new_key()?;
    let cert = p
        .signed_by(&key, issuer)
        .map_err(|e| format!("cannot sign the intermediate: {e}"))?;
    Ok(format!("{}{}", cert.pem(), key.serialize_pem()))
}

fn init(a: &InitArgs) -> Result<String, String> {
    check_free(&a.out, &["root.pem", "root.key", "intermediate.pem"])?;
    if a.intermediate_days > a.root_days {
        return Err("--intermediate-days exceeds --root-days".into());
    }
    let root_params = ca_params(&a.root_cn, a.root_days, Some(1))?;
    let root_key = new_key()?;
    let root = root_params
        .self_signed(&root_key)
        .map_err(|e| format!("cannot create the root: {e}"))?;
    let root_not_after = root_params.not_after.unix_timestamp();
    let issuer = Issuer::new(root_params, root_key);
    let int = sign_intermediate(&a.intermediate_cn, a.intermediate_days, &issuer, root_not_after)?;
    let fp = pki::fingerprint::bundle_fingerprint(root.pem().as_bytes()).map_err(|e| e.to_string())?;
    let root_pem = create(&a.out, "root.pem", &root.pem(), false)?;
    let root_key = create(&a.out, "root.key", &issuer_key_pem(&issuer), true)?;
    let int_pem = create(&a.out, "intermediate.pem", &int, true)?;
    Ok(format!(
        "{fp}\n# {} : the public root (pki.trustBundleFile; commit it)\n# {} : the root's key (move it offline; never commit it)\n# {} : the intermediate and its key (the one-time OpenBao import; delete after the first provisioning)",
        root_pem.display(),
        root_key.display(),
        int_pem.display()
    ))
}

fn issuer_key_pem(issuer: &Issuer<'_, KeyPair>) -> String {
    issuer.key().serialize_pem()
}

fn intermediate(a: &IntermediateArgs) -> Result<String, String> {
    check_free(&a.out, &["intermediate.pem"])?;
    let read = |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: cannot read: {e}", p.display()));
    let cert_pem = read(&a.root_cert)?;
    let key_pem = read(&a.root_key)?;
    let ders = pki::parse_bundle(cert_pem.as_bytes()).map_err(|e| format!("{}: {e}", a.root_cert.display()))?;
    let [der] = ders.as_slice() else {
        return Err(format!(
            "{}: expected exactly one certificate (the root)",
            a.root_cert.display()
        ));
    };
    let info = pki::describe(der.as_ref()).map_err(|e| format!("{}: {e}", a.root_cert.display()))?;
    if !info.is_ca {
        return Err(format!("{}: {} is not a CA", a.root_cert.display(), info.label()));
    }
    // Never echo the key file's content, whatever is wrong with it.
    let key = KeyPair::from_pem(&key_pem).map_err(|_| format!("{}: not a PEM private key", a.root_key.display()))?;
    if key.public_key_raw() != public_key_raw(der.as_ref())?.as_slice() {
        return Err(format!(
            "{} does not belong to {} ({})",
            a.root_key.display(),
            a.root_cert.display(),
            info.label()
        ));
    }
    let issuer = Issuer::from_ca_cert_der(der, key).map_err(|e| format!("{}: {e}", a.root_cert.display()))?;
    let int = sign_intermediate(&a.cn, a.days, &issuer, info.not_after)?;
    let p = create(&a.out, "intermediate.pem", &int, true)?;
    let fp = pki::fingerprint::bundle_fingerprint(cert_pem.as_bytes()).map_err(|e| e.to_string())?;
    Ok(format!(
        "{fp}\n# {} : the new intermediate and its key, signed by {} (import it as in docs/pki-lifecycle.md)",
        p.display(),
        info.label()
    ))
}

fn public_key_raw(cert_der: &[u8]) -> Result<Vec<u8>, String> {
    let (_, c) = x509_parser::parse_x509_certificate(cert_der).map_err(|e| e.to_string())?;
    Ok(c.public_key().subject_public_key.data.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::verify::{roots_store, verify_anchor};

    #[test]
    fn init_makes_a_root_and_an_intermediate_that_verify_and_never_overwrites() {
        let dir = tempfile::TempDir::new().unwrap();
        let out = dir.path().join("ca");
        let a = InitArgs {
            out: out.clone(),
            root_cn: "Test Root".into(),
            intermediate_cn: "Test Int".into(),
            root_days: 30,
            intermediate_days: 10,
        };
        let msg = init(&a).unwrap();
        let root = std::fs::read_to_string(out.join("root.pem")).unwrap();
        assert!(msg.starts_with(&pki::fingerprint::bundle_fingerprint(root.as_bytes()).unwrap()));
        assert!(!root.contains("PRIVATE KEY"));
        let int = std::fs::read_to_string(out.join("intermediate.pem")).unwrap();
        assert!(int.contains("PRIVATE KEY"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(out.join("root.key")).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "root.key readable by others");
        }
        // A leaf signed by the intermediate verifies to the root with serverAuth.
        let int_cert = pki::parse_bundle(&int.as_bytes()[..int.find("-----BEGIN PRIVATE KEY").unwrap()]).unwrap();
        let int_info = pki::describe(int_cert[0].as_ref()).unwrap();
        assert!(int_info.is_ca);
        let key = KeyPair::from_pem(&int[int.find("-----BEGIN PRIVATE KEY").unwrap()..]).unwrap();
        let issuer = Issuer::from_ca_cert_der(&int_cert[0], key).unwrap();
        let mut lp = CertificateParams::new(vec!["a.example.com".to_string()]).unwrap();
        lp.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let lk = KeyPair::generate().unwrap();
        let leaf = lp.signed_by(&lk, &issuer).unwrap();
        let chain = vec![leaf.der().clone(), int_cert[0].clone()];
        let roots = roots_store(root.as_bytes()).unwrap();
        assert_eq!(verify_anchor(&roots, &chain, OffsetDateTime::now_utc()), Ok(()));
        // Again into the same directory: refused, nothing overwritten.
        let e = init(&a).unwrap_err();
        assert!(e.contains("never overwritten"), "{e}");
        assert_eq!(std::fs::read_to_string(out.join("root.pem")).unwrap(), root);
        // A second intermediate from the same root verifies too; a wrong key is refused.
        let next = dir.path().join("next");
        let ia = IntermediateArgs {
            root_cert: out.join("root.pem"),
            root_key: out.join("root.key"),
            out: next.clone(),
            cn: "Test Int 2".into(),
            days: 5,
        };
        intermediate(&ia).unwrap();
        let int2 = std::fs::read_to_string(next.join("intermediate.pem")).unwrap();
        let c2 = pki::parse_bundle(&int2.as_bytes()[..int2.find("-----BEGIN PRIVATE KEY").unwrap()]).unwrap();
        assert_eq!(pki::describe(c2[0].as_ref()).unwrap().issuer, "CN=Test Root");
        let other = dir.path().join("other");
        init(&InitArgs {
            out: other.clone(),
            ..a
        })
        .unwrap();
        let e = intermediate(&IntermediateArgs {
            root_key: other.join("root.key"),
            out: dir.path().join("x"),
            ..ia
        })
        .unwrap_err();
        assert!(e.contains("does not belong to"), "{e}");
        assert!(!e.contains("PRIVATE"), "{e}");
    }

    #[test]
    fn lifetimes_are_bounded() {
        let dir = tempfile::TempDir::new().unwrap();
        let a = InitArgs {
            out: dir.path().into(),
            root_cn: "R".into(),
            intermediate_cn: "I".into(),
            root_days: MAX_DAYS + 1,
            intermediate_days: 1,
        };
        assert!(init(&a).unwrap_err().contains("out of range"));
        let a = InitArgs {
            root_days: 5,
            intermediate_days: 6,
            ..a
        };
        assert!(init(&a).unwrap_err().contains("exceeds"));
    }
}
