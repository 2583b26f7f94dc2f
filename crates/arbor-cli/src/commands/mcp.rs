//! `arbor mcp`: the sessions served to agents over the Model Context
//! Protocol (`arbor-mcp`): on stdio, or with `--http ADDR` on streamable
//! HTTP. This module only parses, builds the backend and the server, and
//! runs it (docs/mcp.md).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};

use arbor_mcp::{ArborMcp, Options};
use arbor_tree::paths;
use tokio_util::sync::CancellationToken;

use crate::shared::session::Globals;
use crate::shared::visible::say;

/// Serve every session to agents over MCP: search, list, contexts, trees, entries, diffs (stdio, or --http).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Serve streamable HTTP on ADDR (HOST:PORT; port 0 picks a free one) at /mcp instead of stdio.
    /// A loopback address needs no token; any other gets one, printed once on stderr.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Offer the write tools (label_entry, set_session_name); read-only without it.
    #[arg(long)]
    allow_writes: bool,
    /// The sessions root (default: $ARBOR_SESSIONS_DIR, else $PI_CODING_AGENT_DIR/sessions, else ~/.pi/agent/sessions).
    #[arg(long, value_name = "DIR")]
    sessions_dir: Option<PathBuf>,
}

pub fn run(args: Args, g: &Globals, _out: &mut dyn Write) -> Result<ExitCode> {
    let sessions = g.sessions_in(args.sessions_dir.as_deref())?;
    let open = sessions.session_options().with_index_dir(paths::index_dir());
    let mut options = Options::new(open);
    if args.allow_writes {
        options = options.allow_writes();
    }
    let addr = args.http.as_deref().map(address).transpose()?;
    let rt =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;
    rt.block_on(async move {
        let server = ArborMcp::new(sessions, options);
        match addr {
            None => arbor_mcp::serve_stdio(server).await.context("serving MCP on stdio"),
            Some(addr) => serve_http(server, addr).await,
        }
    })?;
    // Blocking work of a call a client left behind is not waited for.
    rt.shutdown_background();
    Ok(ExitCode::SUCCESS)
}

/// `HOST:PORT` as an address (`localhost` is 127.0.0.1).
fn address(s: &str) -> Result<SocketAddr> {
    let s = s.trim();
    let with_ip = match s.strip_prefix("localhost:") {
        Some(port) => format!("127.0.0.1:{port}"),
        None => s.to_owned(),
    };
    with_ip.parse().with_context(|| format!("--http {s:?}: give an address as HOST:PORT, e.g. 127.0.0.1:8765"))
}

/// Serves on `addr` until Ctrl-C or SIGTERM: with a token off loopback.
async fn serve_http(server: ArborMcp, addr: SocketAddr) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
    let bound = listener.local_addr()?;
    let token = (!arbor_mcp::http::is_loopback(&bound)).then(arbor_mcp::http::new_token);
    let url = format!("http://{bound}{}", arbor_mcp::http::ENDPOINT);
    match &token {
        None => say!("arbor mcp: serving {} on {url}", server.location()),
        Some(t) => {
            say!("arbor mcp: serving {} on {url}, reachable from other machines", server.location());
            say!("arbor mcp: every request needs the header `Authorization: Bearer {t}` (shown only now)");
        }
    }
    if bound.ip().is_unspecified() && token.is_none() {
        bail!("refusing to serve {bound} without a token");
    }
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        stop.cancel();
    });
    arbor_mcp::http::serve(server, listener, token, cancel).await.context("serving MCP over HTTP")
}

/// Ctrl-C, or SIGTERM on Unix.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(t) => t,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_with_localhost_as_loopback() {
        assert_eq!(address("localhost:0").ok(), "127.0.0.1:0".parse().ok());
        assert!(address("[::1]:80").is_ok());
        let e = address("nowhere").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("HOST:PORT"), "{e}");
    }
}
