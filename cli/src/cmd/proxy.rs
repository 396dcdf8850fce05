//! `lro proxy`: runs `lro_cli::proxy` on stdin/stdout in front of a child process or an HTTP
//! endpoint. stdout carries only protocol; everything the proxy says goes to stderr.

use std::time::Duration;

use anyhow::{Context, bail};
use lro_cli::proxy::{self, Ending, Offloader, http, listen, spool, upstream};
use lro_host::config::STORE_VAR;
use lro_host::store::{Store, is_store_url};
use reqwest::header::HeaderMap;

use crate::flags::{Cli, ProxyArgs};

pub fn run(cli: &Cli, args: &ProxyArgs) -> anyhow::Result<()> {
    let runtime = crate::runtime(cli)?;
    let mut flags = args.flags();
    if let (Some(store), Some(dir)) = (&args.store, &args.config.output_dir)
        && !is_store_url(store)
        && store != dir
    {
        bail!(
            "--store {store} and --output-dir {dir} name two directories; a local store is the offload directory, give one"
        );
    }
    let (file, file_store) = crate::config_file(args.config.config.as_deref())?;
    let store = store_url(args, file_store);
    if args.store.is_none()
        && let Some(dir) = store.as_ref().filter(|s| !is_store_url(s))
    {
        // Below the flags, which are applied last-wins: --output-dir overrides the variable.
        flags.insert(
            0,
            lro_host::config::Flag {
                key: "output_dir",
                name: if std::env::var(STORE_VAR).is_ok_and(|v| !v.is_empty()) {
                    STORE_VAR
                } else {
                    "the config file's store"
                },
                value: dir.clone(),
            },
        );
    }
    let config = crate::writing_config_of(&runtime, file, &flags)?;
    let offloader = Offloader::prepare(runtime, config).context("preparing the offload directory")?;
    let mut headers = HeaderMap::new();
    for text in &args.headers {
        let (name, value) = http::parse_header(text)?;
        headers.append(name, value);
    }
    let grace = match args.grace {
        None => proxy::DEFAULT_GRACE,
        Some(seconds) if seconds.is_finite() && (0.0..=86_400.0).contains(&seconds) => Duration::from_secs_f64(seconds),
        Some(seconds) => bail!("--grace must be a number of seconds from 0 to 86400, got {seconds:?}"),
    };
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    if let Some(address) = &args.listen {
        return listen(&tokio, args, address, offloader, headers, grace, store);
    }
    // Large messages go to disk as they are read, in the directory the component reads.
    let spool = spool::SpoolDir::new(std::path::Path::new(&offloader.config.output_dir));
    let ending = tokio.block_on(async {
        let mut link = match &args.url {
            Some(url) => http::connect(url, headers, Some(spool))?,
            None => upstream::spawn(&args.command, Some(spool))?,
        };
        let stopper = link.stopper.take();
        tokio::select! {
            ending = proxy::serve(offloader, link, tokio::io::stdin(), tokio::io::stdout(), grace) => anyhow::Ok(ending),
            // A client that stops its server with a signal (as the MCP SDKs do after closing its
            // input) must not leave the server the proxy started running without it.
            signal = stop_signal() => {
                if let Some(stopper) = stopper {
                    stopper.stop().await;
                }
                anyhow::Ok(Ending::Signalled(signal))
            }
        }
    })?;
    // Reading stdin blocks a thread that cannot be cancelled: leave without waiting for it.
    let code = match ending {
        Ending::ClientClosed => 0,
        Ending::Abandoned(count) => {
            eprintln!(
                "lro proxy: the client closed its input; {count} request(s) were not answered within --grace {} s and were failed",
                grace.as_secs_f64()
            );
            1
        }
        Ending::UpstreamDied(reason) => {
            eprintln!("lro proxy: {reason}; stopping");
            1
        }
        Ending::Refused(reason) => {
            eprintln!("lro proxy: {reason}");
            2
        }
        Ending::Signalled(signal) => {
            eprintln!("lro proxy: stopped by signal {signal}, and its upstream server with it");
            // The shell's convention for a process a signal ended.
            128 + signal
        }
    };
    std::process::exit(code)
}

/// `--listen`: serves until a signal, then stops every session's upstream.
fn listen(
    tokio: &tokio::runtime::Runtime,
    args: &ProxyArgs,
    text: &str,
    offloader: Offloader,
    headers: HeaderMap,
    grace: Duration,
    store: Option<String>,
) -> anyhow::Result<()> {
    let address = listen::auth::listen_address(text)?;
    let tokens = args.tokens.as_deref().map(listen::auth::Tokens::read).transpose()?;
    listen::auth::check_exposure(address, tokens.is_some(), text)?;
    let max_sessions = match args.max_sessions {
        None => 32,
        Some(n) if (1..=10_000).contains(&n) => n,
        Some(n) => bail!("--max-sessions must be from 1 to 10000, got {n}"),
    };
    let idle = match args.idle {
        None => Duration::from_secs(600),
        Some(s) if (1..=86_400 * 7).contains(&s) => Duration::from_secs(s),
        Some(s) => bail!("--idle must be a number of seconds from 1 to 604800, got {s}"),
    };
    let upstream = match &args.url {
        Some(url) => {
            // Checked now, not at the first session.
            http::connect_check(url)?;
            listen::Upstream::Url {
                url: url.clone(),
                headers,
            }
        }
        None if args.command.is_empty() => bail!("no upstream command given"),
        None => listen::Upstream::Command(args.command.clone()),
    };
    let store = match store.filter(|s| is_store_url(s)) {
        None if args.cache_mb.is_some() => bail!("--cache-mb is for an s3:// --store, and none is given"),
        None => None,
        Some(url) => {
            let cache_mb = match args.cache_mb {
                None => 512,
                Some(mb) if (1..=1 << 30).contains(&mb) => mb,
                Some(mb) => bail!("--cache-mb must be from 1 to 1073741824, got {mb}"),
            };
            // Cached files leave room for a result's files (at most four sections) under
            // the directory's max_files, which counts them.
            let files = match offloader.config.max_files {
                0 => usize::MAX,
                n => usize::try_from(n).unwrap_or(usize::MAX).saturating_sub(8).max(1),
            };
            // And half of max_bytes, for the same reason.
            let bytes = match offloader.config.max_bytes {
                0 => cache_mb << 20,
                n => (cache_mb << 20).min(n / 2),
            };
            let store = Store::new(&url, bytes, files)?;
            // Checked now so that a misconfigured store is seen at once; a store that is down
            // at start may come back, so the proxy serves anyway (each offload then degrades).
            if let Err(e) = store.check() {
                eprintln!("lro proxy: warning: {e}; offloads degrade until it answers");
            }
            Some(std::sync::Arc::new(store))
        }
    };
    let principals = tokens.as_ref().map(listen::auth::Tokens::len);
    let signal = tokio.block_on(async {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("--listen {text}: cannot listen there"))?;
        let bound = listener.local_addr().context("reading the address listened on")?;
        match principals {
            Some(n) => eprintln!("lro proxy: serving MCP at http://{bound}/mcp for {n} principal(s) of --tokens"),
            None => eprintln!("lro proxy: serving MCP at http://{bound}/mcp (loopback only, no --tokens)"),
        }
        if let Some(store) = &store {
            eprintln!("lro proxy: keeping offloads in {}", store.url());
        }
        let setup = listen::Listen {
            offloader,
            store,
            upstream,
            tokens,
            max_sessions,
            idle,
            grace,
        };
        anyhow::Ok(listen::run(listener, setup, stop_signal()).await)
    })?;
    eprintln!("lro proxy: stopped by signal {signal}, and every session's upstream server with it");
    std::process::exit(128 + signal)
}

/// `--store`, else the variable [`STORE_VAR`], else the configuration file's `store` key
/// (`file`), for `--listen`.
fn store_url(args: &ProxyArgs, file: Option<String>) -> Option<String> {
    args.listen.as_ref()?;
    args.store
        .clone()
        .or_else(|| std::env::var(STORE_VAR).ok())
        .or(file)
        .filter(|v| !v.is_empty())
}

/// The first of SIGTERM, SIGINT and SIGHUP to arrive, by number; never, if none can be watched.
async fn stop_signal() -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    let watch = |kind: SignalKind| signal(kind).ok();
    let (mut term, mut int, mut hup) = (
        watch(SignalKind::terminate()),
        watch(SignalKind::interrupt()),
        watch(SignalKind::hangup()),
    );
    async fn next(signal: Option<&mut tokio::signal::unix::Signal>) {
        match signal {
            Some(signal) => {
                signal.recv().await;
            }
            None => std::future::pending().await,
        }
    }
    tokio::select! {
        () = next(term.as_mut()) => SignalKind::terminate().as_raw_value(),
        () = next(int.as_mut()) => SignalKind::interrupt().as_raw_value(),
        () = next(hup.as_mut()) => SignalKind::hangup().as_raw_value(),
    }
}
