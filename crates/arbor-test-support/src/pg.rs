//! A real PostgreSQL server for the tests: the one `ARBOR_TEST_PG` names
//! (`.ci/run` starts a throwaway cluster and exports its URL), with a fresh
//! database per test, or a private throwaway cluster of the test's own
//! (`.ci/pg-cluster`) for the tests that stop and restart the server.
//!
//! Without `ARBOR_TEST_PG` the server tests skip with one line on stderr,
//! unless `ARBOR_TEST_PG_REQUIRED` is set (CI), where they fail instead.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use postgres::{Client, NoTls};

/// The variable naming the test server.
pub const SERVER_ENV: &str = "ARBOR_TEST_PG";
/// Set when a missing server is a failure, not a skip.
pub const REQUIRED_ENV: &str = "ARBOR_TEST_PG_REQUIRED";

/// The URL of the test server, or `None` (after one line on stderr saying
/// the test is skipped). Panics when the server is required.
pub fn server(test: &str) -> Option<String> {
    match std::env::var(SERVER_ENV) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os(REQUIRED_ENV).is_none(),
                "{test}: {REQUIRED_ENV} is set but {SERVER_ENV} names no PostgreSQL server"
            );
            eprintln!("{test}: skipped: no PostgreSQL server (set {SERVER_ENV} to a connection URL)");
            None
        }
    }
}

/// `url` with its database replaced by `db`.
pub fn with_database(url: &str, db: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (path, query) = match rest.split_once('?') {
                Some((p, q)) => (p, format!("?{q}")),
                None => (rest, String::new()),
            };
            let host = path.split_once('/').map_or(path, |(h, _)| h);
            format!("{scheme}://{host}/{db}{query}")
        }
        None => format!("{url} dbname={db}"),
    }
}

/// A database of its own on the test server, dropped at the end.
#[derive(Debug)]
pub struct TestDb {
    admin_url: String,
    name: String,
    /// Its connection URL.
    pub url: String,
}

static COUNTER: AtomicUsize = AtomicUsize::new(0);

impl TestDb {
    /// A new, empty database for `test` (`None`: no server, the test is skipped).
    pub fn new(test: &str) -> Option<TestDb> {
        let admin_url = server(test)?;
        let tag: String = test
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' })
            .take(30)
            .collect();
        let name = format!("arbor_t_{tag}_{}_{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        let mut admin = connect(&admin_url);
        admin
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .unwrap_or_else(|e| panic!("{test}: cannot create a test database: {e}"));
        let url = with_database(&admin_url, &name);
        Some(TestDb { admin_url, name, url })
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A direct connection to this database (for checking rows).
    pub fn client(&self) -> Client {
        connect(&self.url)
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Ok(mut admin) = Client::connect(&self.admin_url, NoTls) {
            let _ = admin.batch_execute(&format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name));
        }
    }
}

fn connect(url: &str) -> Client {
    Client::connect(url, NoTls).unwrap_or_else(|e| panic!("cannot connect to the test server {url}: {e}"))
}

/// A private throwaway cluster (`.ci/pg-cluster` in a temporary folder),
/// stopped at the end: for tests that stop the server under a writer.
#[derive(Debug)]
pub struct Cluster {
    dir: tempfile_dir::Dir,
    /// What `start` was given after the folder (to start it again the same way).
    options: Vec<String>,
    /// Its connection URL.
    pub url: String,
}

impl Cluster {
    /// Starts a cluster for `test`, when the tests have a server at all
    /// (the binaries are the same; `None`: skipped).
    pub fn start(test: &str) -> Option<Cluster> {
        server(test)?;
        Some(Cluster::start_with(vec!["--no-fsync".into()]))
    }

    fn start_with(options: Vec<String>) -> Cluster {
        let dir = tempfile_dir::Dir::new();
        let mut args = vec!["start".to_owned(), dir.path().to_string_lossy().into_owned()];
        args.extend(options.iter().cloned());
        let url = run_script(&args.iter().map(String::as_str).collect::<Vec<_>>());
        Cluster { dir, options, url: url.trim().to_owned() }
    }

    /// The folder of the cluster (its sockets, its data).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops the server: `fast`, or `immediate` (a crash: no shutdown checkpoint).
    pub fn stop(&self, mode: &str) {
        run_script(&["stop", &self.dir.path().to_string_lossy(), mode]);
    }

    /// Starts the stopped server again.
    pub fn restart(&self) {
        let mut args = vec!["start".to_owned(), self.dir.path().to_string_lossy().into_owned()];
        args.extend(self.options.iter().cloned());
        run_script(&args.iter().map(String::as_str).collect::<Vec<_>>());
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(script()).args(["stop", &self.dir.path().to_string_lossy(), "immediate"]).output();
    }
}

/// A private cluster that takes TCP connections on 127.0.0.1 over TLS only,
/// with a certificate authority made for it (`.ci/pg-cluster start --tls`).
#[derive(Debug)]
pub struct TlsCluster {
    /// The cluster; its `url` is the TCP one (`postgres://arbor@127.0.0.1:PORT/postgres`).
    pub cluster: Cluster,
    /// The port it listens on.
    pub port: u16,
    /// The certificate files: `ca.crt` (the CA that signed the server's
    /// certificate, issued for `localhost` only), `other-ca.crt` (a CA that
    /// signed nothing here), `client.crt`/`client.key` (the role `certuser`,
    /// signed by the CA; the key 0600).
    pub certs: PathBuf,
    _certs_dir: tempfile_dir::Dir,
}

impl TlsCluster {
    /// Starts one for `test` (`None`: no server for the tests, skipped).
    pub fn start(test: &str) -> Option<TlsCluster> {
        server(test)?;
        let certs_dir = tempfile_dir::Dir::new();
        let certs = certs_dir.path().to_owned();
        make_certificates(&certs);
        let port = free_port();
        let cluster = Cluster::start_with(vec![
            "--no-fsync".into(),
            "--tls".into(),
            certs.to_string_lossy().into_owned(),
            port.to_string(),
        ]);
        Some(TlsCluster { cluster, port, certs, _certs_dir: certs_dir })
    }

    /// A client over the unix socket (no TLS), for setting up roles.
    pub fn admin(&self) -> Client {
        let host = self.cluster.dir().to_string_lossy().replace('/', "%2F");
        connect(&format!("postgres://arbor@{host}:{}/postgres", self.port))
    }
}

/// A port on 127.0.0.1 that nothing listens on right now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("no free port: {e}"));
    l.local_addr().map(|a| a.port()).unwrap_or_else(|e| panic!("no free port: {e}"))
}

/// Writes a CA, the server's certificate (for `localhost`) and key, a client
/// certificate for `certuser`, and an unrelated CA into `dir`.
fn make_certificates(dir: &Path) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let fail = |e: rcgen::Error| -> ! { panic!("making test certificates: {e}") };
    let ca = |name: &str| {
        let mut p = CertificateParams::new(vec![]).unwrap_or_else(|e| fail(e));
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().unwrap_or_else(|e| fail(e));
        let cert = p.self_signed(&key).unwrap_or_else(|e| fail(e));
        (cert, key)
    };
    let (ca_cert, ca_key) = ca("Arbor test CA");
    let (other, _) = ca("Another CA");
    let signed = |names: Vec<String>, cn: &str| {
        let mut p = CertificateParams::new(names).unwrap_or_else(|e| fail(e));
        p.distinguished_name.push(DnType::CommonName, cn);
        let key = KeyPair::generate().unwrap_or_else(|e| fail(e));
        let cert = p.signed_by(&key, &ca_cert, &ca_key).unwrap_or_else(|e| fail(e));
        (cert.pem(), key.serialize_pem())
    };
    let (server_crt, server_key) = signed(vec!["localhost".into()], "localhost");
    let (client_crt, client_key) = signed(vec![], "certuser");
    let write = |name: &str, text: &str, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    };
    write("ca.crt", &ca_cert.pem(), 0o644);
    write("other-ca.crt", &other.pem(), 0o644);
    write("server.crt", &server_crt, 0o644);
    write("server.key", &server_key, 0o600);
    write("client.crt", &client_crt, 0o644);
    write("client.key", &client_key, 0o600);
}

/// The unix socket file a socket URL (`postgres://u@%2Fdir[:port]/db`) names.
pub fn socket_of(url: &str) -> Option<PathBuf> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?']).next()?;
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (hostport, 5432u16),
    };
    let dir = host.replace("%2F", "/").replace("%2f", "/");
    dir.starts_with('/').then(|| Path::new(&dir).join(format!(".s.PGSQL.{port}")))
}

/// Where a [`CutProxy`] cuts the next connection that reaches that point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Nowhere: every byte goes through.
    Never = 0,
    /// Right after the server acknowledged a COMMIT, before the client
    /// hears of it: the write is committed, its acknowledgement lost.
    AfterCommit = 1,
    /// Right before the client's COMMIT reaches the server: nothing is committed.
    BeforeCommit = 2,
}

/// A TCP proxy on 127.0.0.1 to a server's unix socket that cuts one
/// connection, once armed, at the point [`Cut`] names (both directions
/// closed, as a dropped network would). Its threads end with the test process.
#[derive(Debug)]
pub struct CutProxy {
    /// The port it listens on.
    pub port: u16,
    armed: std::sync::Arc<std::sync::atomic::AtomicU8>,
    cuts: std::sync::Arc<AtomicUsize>,
}

impl CutProxy {
    /// Starts a proxy to the unix socket file `upstream`.
    pub fn start(upstream: &Path) -> CutProxy {
        use std::sync::atomic::AtomicU8;
        use std::sync::Arc;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("proxy: {e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_else(|e| panic!("proxy: {e}"));
        let armed = Arc::new(AtomicU8::new(Cut::Never as u8));
        let cuts = Arc::new(AtomicUsize::new(0));
        let (a, n, up) = (armed.clone(), cuts.clone(), upstream.to_owned());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = std::os::unix::net::UnixStream::connect(&up) else { continue };
                proxy_pair(client, server, a.clone(), n.clone());
            }
        });
        CutProxy { port, armed, cuts }
    }

    /// Cuts the next connection that reaches `cut` (then passes everything again).
    pub fn arm(&self, cut: Cut) {
        self.armed.store(cut as u8, Ordering::SeqCst);
    }

    /// How many connections it has cut.
    pub fn cuts(&self) -> usize {
        self.cuts.load(Ordering::SeqCst)
    }

    /// A URL of database `db` through the proxy.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://arbor@127.0.0.1:{}/{db}?sslmode=disable", self.port)
    }
}

/// The simple-query message `COMMIT` and the server's `CommandComplete` for it.
const COMMIT_QUERY: &[u8] = b"Q\0\0\0\x0bCOMMIT\0";
const COMMIT_DONE: &[u8] = b"C\0\0\0\x0bCOMMIT\0";

fn proxy_pair(
    client: std::net::TcpStream,
    server: std::os::unix::net::UnixStream,
    armed: std::sync::Arc<std::sync::atomic::AtomicU8>,
    cuts: std::sync::Arc<AtomicUsize>,
) {
    use std::io::{Read, Write};
    use std::net::Shutdown;
    let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else { return };
    let (Ok(c3), Ok(s3)) = (client.try_clone(), server.try_clone()) else { return };
    let both = std::sync::Arc::new((c3, s3));
    let cut = move |b: &(std::net::TcpStream, std::os::unix::net::UnixStream)| {
        let _ = b.0.shutdown(Shutdown::Both);
        let _ = b.1.shutdown(Shutdown::Both);
    };
    let (b1, b2) = (both.clone(), both);
    let (a1, n1, a2, n2) = (armed.clone(), cuts.clone(), armed, cuts);
    let contains = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
    std::thread::spawn(move || {
        let (mut from, mut to) = (client, server);
        let mut buf = vec![0u8; 64 << 10];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            if contains(&buf[..n], COMMIT_QUERY)
                && a1.compare_exchange(Cut::BeforeCommit as u8, 0, Ordering::SeqCst, Ordering::SeqCst).is_ok()
            {
                n1.fetch_add(1, Ordering::SeqCst);
                cut(&b1);
                return;
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
    std::thread::spawn(move || {
        let (mut from, mut to) = (s2, c2);
        let mut buf = vec![0u8; 64 << 10];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            if contains(&buf[..n], COMMIT_DONE)
                && a2.compare_exchange(Cut::AfterCommit as u8, 0, Ordering::SeqCst, Ordering::SeqCst).is_ok()
            {
                n2.fetch_add(1, Ordering::SeqCst);
                cut(&b2);
                return;
            }
            if to.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

/// `.ci/pg-cluster` of this repository.
pub fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/pg-cluster")
}

fn run_script(args: &[&str]) -> String {
    let out = Command::new(script()).args(args).output().unwrap_or_else(|e| panic!("running .ci/pg-cluster: {e}"));
    assert!(
        out.status.success(),
        ".ci/pg-cluster {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A short temporary folder (a unix socket path has ~100 bytes), removed at the end.
mod tempfile_dir {
    use std::path::{Path, PathBuf};

    #[derive(Debug)]
    pub struct Dir(PathBuf);

    impl Dir {
        pub fn new() -> Dir {
            let base = Path::new("/tmp");
            for n in 0.. {
                let p = base.join(format!("arbor-pg-{}-{n}", std::process::id()));
                if std::fs::create_dir(&p).is_ok() {
                    return Dir(p);
                }
            }
            unreachable!()
        }

        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn databases_are_swapped_in_urls() {
        assert_eq!(with_database("postgres://a@%2Ftmp%2Fx/postgres", "t1"), "postgres://a@%2Ftmp%2Fx/t1");
        assert_eq!(with_database("postgres://a@h:5/db?sslmode=disable", "t"), "postgres://a@h:5/t?sslmode=disable");
        assert_eq!(with_database("postgres://a@h", "t"), "postgres://a@h/t");
        assert_eq!(with_database("host=/tmp user=a", "t"), "host=/tmp user=a dbname=t");
    }

    #[test]
    fn socket_urls_name_their_socket_file() {
        assert_eq!(socket_of("postgres://a@%2Ftmp%2Fx/db"), Some(PathBuf::from("/tmp/x/.s.PGSQL.5432")));
        assert_eq!(socket_of("postgres://a@%2Ftmp%2Fx:6000/db"), Some(PathBuf::from("/tmp/x/.s.PGSQL.6000")));
        assert_eq!(socket_of("postgres://a@localhost/db"), None);
    }
}
