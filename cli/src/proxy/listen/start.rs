//! Finding and starting `--listen`'s sessions: each with its principal's offloader, an
//! upstream and a relay, within `--max-sessions`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use hyper::http::{Response, StatusCode};

use super::reply::{Reply, rpc_error};
use super::session::Session;
use super::{State, Upstream, lock};
use crate::proxy::spool::SpoolDir;
use crate::proxy::upstream::{self, Link};
use crate::proxy::{Ending, Offloader, http};

/// The session `id`, if it is open and `principal`'s: another principal's is not found, as a
/// session that never existed is not.
pub(super) fn find(state: &State, principal: &str, id: &str) -> Option<Arc<Session>> {
    lock(&state.sessions)
        .get(id)
        .filter(|s| s.principal == principal && !s.ended())
        .cloned()
}

/// Opens a session for `principal`: its offloader, an upstream, a relay.
pub(super) async fn open(state: &Arc<State>, principal: String) -> Result<Arc<Session>, Response<Reply>> {
    let session = start(state, principal, None).await?;
    lock(&state.sessions).insert(session.id.clone(), session.clone());
    Ok(session)
}

/// `principal`'s session for 2026-07-28 requests, started on its first one.
pub(super) async fn stateless_for(state: &Arc<State>, principal: String) -> Result<Arc<Session>, Response<Reply>> {
    // Held while starting, so two first requests at once start one session.
    let _starting = state.starting.lock().await;
    if let Some(session) = lock(&state.stateless).get(&principal).filter(|s| !s.ended()) {
        return Ok(session.clone());
    }
    let session = start(state, principal.clone(), Some(format!("stateless:{principal}"))).await?;
    lock(&state.stateless).insert(principal, session.clone());
    Ok(session)
}

/// Starts a session's upstream and relay: a new session id, or `stateless` (the id it is
/// logged under) for a principal's 2026-07-28 requests.
async fn start(
    state: &Arc<State>,
    principal: String,
    stateless: Option<String>,
) -> Result<Arc<Session>, Response<Reply>> {
    let max = state.listen.max_sessions;
    if state.live.fetch_add(1, Ordering::SeqCst) >= max {
        state.live.fetch_sub(1, Ordering::SeqCst);
        return Err(rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            -32000,
            &format!(
                "Service Unavailable: {max} sessions are open, the most this proxy serves at once (--max-sessions); close one (DELETE: its place is free once its upstream has stopped), or start the proxy with a larger --max-sessions"
            ),
        ));
    }
    let prepared = async {
        let offloader = offloader_for(state, &principal).await.map_err(|e| {
            rpc_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                -32603,
                &format!("Internal error: preparing {principal}'s offload directory: {e}"),
            )
        })?;
        let spool = SpoolDir::new(Path::new(&offloader.config.output_dir));
        let link: anyhow::Result<Link> = match &state.listen.upstream {
            Upstream::Command(command) => upstream::spawn(command, Some(spool)),
            Upstream::Url { url, headers } => http::connect(url, headers.clone(), Some(spool)),
        };
        let link = link.map_err(|e| {
            rpc_error(
                StatusCode::BAD_GATEWAY,
                -32603,
                &format!("Bad Gateway: starting the upstream server: {e:#}"),
            )
        })?;
        Ok((offloader, link))
    }
    .await;
    let (offloader, link) = match prepared {
        Ok(prepared) => prepared,
        Err(response) => {
            state.live.fetch_sub(1, Ordering::SeqCst);
            return Err(response);
        }
    };
    let is_stateless = stateless.is_some();
    let id = stateless.unwrap_or_else(session_id);
    let weak = Arc::downgrade(state);
    let session = Session::start(
        id,
        is_stateless,
        principal,
        offloader,
        link,
        state.listen.grace,
        move |session, ending| {
            if let Some(state) = weak.upgrade() {
                state.live.fetch_sub(1, Ordering::SeqCst);
                let (table, key) = if is_stateless {
                    (&state.stateless, &session.principal)
                } else {
                    (&state.sessions, &session.id)
                };
                let mut sessions = lock(table);
                if sessions.get(key).is_some_and(|s| std::ptr::eq(s.as_ref(), session)) {
                    sessions.remove(key);
                }
            }
            if let Ending::UpstreamDied(reason) | Ending::Refused(reason) = ending {
                eprintln!(
                    "lro proxy: session {} ({}) ended: {reason}",
                    session.id, session.principal
                );
            }
        },
    );
    Ok(session)
}

/// The offloader of `principal`'s directory (`<output_dir>/<principal>`), made and swept on
/// its first use; its descriptors name files by handle.
async fn offloader_for(state: &State, principal: &str) -> Result<Offloader, String> {
    let mut offloaders = state.offloaders.lock().await;
    if let Some(offloader) = offloaders.get(principal) {
        return Ok(offloader.clone());
    }
    let base = &state.listen.offloader;
    let mut config = base.config.clone();
    config.output_dir = Path::new(&base.config.output_dir)
        .join(principal)
        .to_string_lossy()
        .into_owned();
    let runtime = base.runtime.clone();
    let prepared = tokio::task::spawn_blocking(move || Offloader::prepare(runtime, config))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let store = state.listen.store.clone().map(|store| lro_host::mcp::Stored {
        store,
        scope: principal.to_owned(),
        // `listen::sweep_store` sweeps every principal's objects.
        sweeps: false,
    });
    let offloader = Offloader {
        handles: true,
        store,
        ..prepared
    };
    offloaders.insert(principal.to_owned(), offloader.clone());
    Ok(offloader)
}

/// A new session id: 160 random bits (two ULIDs' randomness, from the operating system's
/// generator through `rand`), as hex.
fn session_id() -> String {
    let (a, b) = (ulid::Ulid::generate(), ulid::Ulid::generate());
    format!("{:020x}{:020x}", a.random(), b.random())
}
