//! Listeners that only count who connects: a loopback TCP port (the seal's proxy, or an address a
//! hook should or should not reach) and a Unix socket standing in for a container runtime's
//! daemon. Each connection is counted, read briefly and closed.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Serve connections from `incoming` on a thread, counting each in the returned counter.
fn count<S: Read + Send + 'static>(
    incoming: impl Iterator<Item = std::io::Result<S>> + Send + 'static,
    set_timeout: fn(&S),
) -> Arc<AtomicUsize> {
    let n = Arc::new(AtomicUsize::new(0));
    let n2 = n.clone();
    std::thread::spawn(move || {
        for mut c in incoming.flatten() {
            n2.fetch_add(1, Ordering::SeqCst);
            set_timeout(&c);
            let _ = c.read(&mut [0u8; 512]);
        }
    });
    n
}

const BRIEF: Option<std::time::Duration> = Some(std::time::Duration::from_millis(50));

/// A TCP listener on loopback that counts every connection.
pub fn tcp() -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let n = count(
        std::iter::from_fn(move || Some(l.accept().map(|(s, _)| s))),
        |c: &std::net::TcpStream| {
            let _ = c.set_read_timeout(BRIEF);
        },
    );
    (addr, n)
}

/// A fake container-runtime daemon: a Unix listener at `dir/daemon.sock` that counts every
/// connection.
pub fn unix_socket(dir: &Path) -> (PathBuf, Arc<AtomicUsize>) {
    let path = dir.join("daemon.sock");
    let l = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let n = count(
        std::iter::from_fn(move || Some(l.accept().map(|(s, _)| s))),
        |c: &std::os::unix::net::UnixStream| {
            let _ = c.set_read_timeout(BRIEF);
        },
    );
    (path, n)
}
