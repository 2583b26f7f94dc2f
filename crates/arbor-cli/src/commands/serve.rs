//! `arbor serve [--addr ADDR] [--allow-writes] [--open]`: every session of
//! the store in a browser (`arbor-serve`), until Ctrl-C.

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{bail, Context as _, Result};

use arbor_serve::{ServeOptions, Server, Writes};

use crate::shared::session::Globals;
use crate::shared::visible::say;

/// The address `arbor serve` listens on unless told otherwise.
const DEFAULT_ADDR: &str = "127.0.0.1:4280";

/// Serve every session in a browser: the list, search across sessions, each session's page, live as sessions grow.
///
/// Bound to 127.0.0.1 by default. On any other address every request needs a token, printed once
/// when the server starts as the URL to open (see docs/cli.md for the risks). Read-only unless
/// --allow-writes.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to listen: IP:PORT or localhost:PORT (port 0: any free port). Any address but a
    /// loopback one needs the token.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_ADDR)]
    addr: String,
    /// Let the pages edit labels and session names (each write takes the session's write lock).
    #[arg(long)]
    allow_writes: bool,
    /// Open the list in the desktop's browser (xdg-open, or open on macOS).
    #[arg(long)]
    open: bool,
}

/// `addr` as one socket address (a name such as `localhost` is looked up).
fn address(addr: &str) -> Result<SocketAddr> {
    if let Ok(a) = addr.parse() {
        return Ok(a);
    }
    let mut found = addr.to_socket_addrs().with_context(|| format!("--addr {addr}: not IP:PORT"))?;
    match found.next() {
        Some(a) => Ok(a),
        None => bail!("--addr {addr}: names no address"),
    }
}

pub fn run(args: Args, g: &Globals, _out: &mut dyn Write) -> Result<ExitCode> {
    let addr = address(&args.addr)?;
    let sessions = g.sessions()?.clone();
    let mut options = ServeOptions::new(addr, g.options()?);
    if args.allow_writes {
        options = options.writes(Writes::Allowed);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let served = runtime.block_on(async move {
        let location = sessions.location();
        let server = Server::bind(sessions, options).await?;
        let url = server.url();
        let mode = if args.allow_writes { "labels and names can be edited" } else { "read-only" };
        if server.needs_token() {
            say!("arbor: serving the sessions of {location} on {} ({mode})", server.local_addr());
            // The one time the token is shown: the URL carries it.
            say!("arbor: anyone who has this URL can read every session: open {url}");
        } else {
            say!("arbor: serving the sessions of {location} at {url} ({mode}); Ctrl-C stops");
        }
        if args.open {
            open_browser(&url);
        }
        server
            .run(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok::<_, anyhow::Error>(())
    });
    // Stopped: the pages still open and their followers are not waited for.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Opens `url` in the desktop's browser, without waiting for it.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    match Command::new(opener).arg(url).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn() {
        // Reaped when it ends, so that it leaves no zombie behind.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(e) => say!("arbor: cannot open a browser ({opener}: {e}); open the URL above"),
    }
}
