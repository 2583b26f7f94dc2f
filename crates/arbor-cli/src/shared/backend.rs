//! The one place that knows which backends hold sessions: local files under
//! a sessions root (`arbor_catalog::FileSessions`, with the catalog in
//! Arbor's cache directory) or a PostgreSQL server (`arbor_pg::PgStore`,
//! from `--store`/`ARBOR_STORE`). Everything else holds a `dyn Sessions`
//! and runs the same code whichever it is (`cargo xtask tidy` refuses
//! `arbor_pg` in any other file of the CLI). A third backend is one more
//! arm in [`open`].

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Result};

use arbor_catalog::{Background, CatalogOptions, FileSessions};
use arbor_pg::{LocalCopies, PgEnv};
use arbor_tree::paths;
use arbor_tree::sessions::Sessions;

use crate::shared::background;
use crate::shared::visible::say;

/// `push`, `pull` and `unlock` work on a server as such: they name it.
pub use arbor_pg::{Live, PgStore as Server, Pushed, Transfer};

/// `cache clear`: the derived data of local files (catalogs, search
/// filters, tree indexes) removed from Arbor's cache directory.
pub use arbor_catalog::clear_cache;

/// The sessions the global `--store` names (`None`: local files), under
/// `sessions_dir` for local files (default: [`paths::sessions_root`]).
pub fn open(store: Option<&str>, sessions_dir: Option<&Path>) -> Result<Arc<dyn Sessions>> {
    Ok(match store {
        Some(url) => {
            if sessions_dir.is_some() {
                bail!("--sessions-dir names a local folder; with --store the sessions are on the server");
            }
            Arc::new(connect(url)?)
        }
        None => {
            let root = sessions_dir.map_or_else(paths::sessions_root, Path::to_owned);
            let cache = paths::cache_dir();
            let catalog =
                CatalogOptions::default().with_cache_dir(cache.clone()).with_background(builder(&root, cache));
            Arc::new(FileSessions::new(root).with_catalog(catalog))
        }
    })
}

/// Large filter builds left to `arbor cache build` in the background
/// ([`background`]), when the catalog is kept in a cache directory.
fn builder(root: &Path, cache: Option<std::path::PathBuf>) -> Option<Background> {
    let (above, cache) = (background::above()?, cache?);
    let root = std::path::absolute(root).unwrap_or_else(|_| root.to_owned());
    Some(Background { above, start: Arc::new(move || background::start(&root, &cache)) })
}

/// The server at `url` (`push --to`, `pull --from`), else the one `--store`
/// names; an error naming `what` without either.
pub fn server(url: Option<&str>, store: Option<&str>, what: &str) -> Result<Server> {
    match url.or(store) {
        Some(u) => connect(u),
        None => bail!("{what} needs a server: give --store postgres://… or set ARBOR_STORE"),
    }
}

/// Connects to the server at `url` as libpq would: the rest of the
/// connection (host, user, password, TLS) from this process's `PG*`
/// environment, `~/.pgpass` and `pg_service.conf` (CLI policy).
fn connect(url: &str) -> Result<Server> {
    let server = Server::connect_with(url, &PgEnv::from_process())?;
    if let Some(copies) = local_copies()? {
        server.keep_local_copies(copies);
    }
    Ok(server)
}

/// Where local copies of large sessions read from a server are kept:
/// `<cache>/copies`, within `$ARBOR_STORE_COPIES_MB` megabytes (default
/// 2048; 0 keeps none). None without a cache directory.
fn local_copies() -> Result<Option<LocalCopies>> {
    let Some(cache) = paths::cache_dir() else { return Ok(None) };
    let mut copies = LocalCopies::new(cache.join("copies"));
    if let Some(v) = std::env::var_os(COPIES_ENV) {
        let mb: u64 = v
            .to_str()
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| anyhow::anyhow!("{COPIES_ENV}={} is not a number of megabytes", v.to_string_lossy()))?;
        if mb == 0 {
            return Ok(None);
        }
        copies.budget = mb.saturating_mul(1 << 20);
    }
    Ok(Some(copies))
}

/// The budget of local copies of sessions read from a server, in megabytes.
const COPIES_ENV: &str = "ARBOR_STORE_COPIES_MB";

/// Prints the backend's warnings to stderr, one line each.
pub fn warn(sessions: &dyn Sessions) {
    for w in sessions.take_warnings() {
        say!("arbor: warning: {w}");
    }
}
