//! The upstream server as two channels: messages to send, and events back (its messages, a
//! request it could not answer, its death). A child process over stdio and a streamable HTTP
//! endpoint (`super::http`) both look like this to the relay.

use std::process::Stdio;
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use super::spool::{self, Incoming, SpoolDir};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What comes back from the upstream.
#[derive(Debug)]
pub enum UpEvent {
    /// One JSON-RPC message (a line, without its newline).
    Message(Vec<u8>),
    /// One JSON-RPC message too large to hold twice, in a file (`super::spool`).
    Spooled(super::spool::Spooled),
    /// The request with this id (its JSON text) cannot be answered; fail it with this reason.
    /// The upstream may still answer others (HTTP: the next request tries again).
    Failed { id: String, reason: String },
    /// The upstream is gone for good (a child that exited): fail everything, then stop.
    Died(String),
}

/// A connected upstream.
pub struct Link {
    /// Messages to the upstream, one JSON-RPC message each (no newline). Dropping it starts
    /// the upstream's shutdown. Bounded: an upstream that stops reading slows the relay down
    /// instead of growing it.
    pub send: mpsc::Sender<Vec<u8>>,
    /// Messages and failures from the upstream. Bounded: while the client does not read, the
    /// upstream's output is not read either, so a flood of notifications waits in the pipe.
    pub events: mpsc::Receiver<UpEvent>,
    /// Ends when the upstream is shut down (a child has exited or been killed).
    pub finished: JoinHandle<()>,
    /// For a child process: stops it at once, when the proxy itself is told to stop.
    pub stopper: Option<Stopper>,
}

/// Stops the upstream child at once: what the proxy does when it is told to stop (SIGTERM,
/// SIGINT, SIGHUP), so that no server is left running without its proxy.
pub struct Stopper {
    now: tokio::sync::oneshot::Sender<()>,
    done: tokio::sync::oneshot::Receiver<()>,
}

impl Stopper {
    /// Sends the child SIGTERM, then SIGKILL if it has not exited after [`EXIT_GRACE`], and
    /// returns once it is gone.
    pub async fn stop(self) {
        let _ = self.now.send(());
        let _ = self.done.await;
    }
}

/// How many messages each channel between the relay and a connection holds: enough to keep
/// both sides busy, few enough that memory stays flat when one side stops reading.
pub const CHANNEL: usize = 64;

/// How long a child gets to exit after its stdin closes, and again after SIGTERM, before it is
/// killed (MCP's stdio shutdown: close the input, wait, SIGTERM, wait, SIGKILL).
pub const EXIT_GRACE: Duration = Duration::from_secs(2);

/// Starts `command` with piped stdin and stdout (stderr is the proxy's own, so the server's
/// logs reach the client's log as they would directly) and links to it.
pub fn spawn(command: &[String], spool: Option<SpoolDir>) -> anyhow::Result<Link> {
    let (program, args) = command.split_first().context("no upstream command given")?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting the upstream server `{program}`"))?;
    let stdin = child.stdin.take().context("the child's stdin")?;
    let stdout = child.stdout.take().context("the child's stdout")?;
    Ok(stream(stdout, stdin, Some(child), spool))
}

/// Links to a server that speaks MCP's stdio framing (one JSON-RPC message per line) over
/// `reader` and `writer`; `child`, when given, is the process behind them. Lines have no length
/// limit: a large result is the reason the proxy exists. Lines over `spool::SPOOL_AT` bytes are
/// written to a file in `spool` as they are read, when it is given.
pub fn stream<R, W>(reader: R, writer: W, child: Option<Child>, spool: Option<SpoolDir>) -> Link
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (send, mut outgoing) = mpsc::channel::<Vec<u8>>(CHANNEL);
    let (events_tx, events) = mpsc::channel(CHANNEL);
    let (exited_tx, exited_rx) = tokio::sync::watch::channel(None::<String>);

    // The child is watched by one task: it reports the exit status to the reader (so a death
    // names it) and kills the child when the writer side is done.
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (now_tx, now_rx) = tokio::sync::oneshot::channel::<()>();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let stopper = child.is_some().then(|| Stopper {
        now: now_tx,
        done: done_rx,
    });
    let watcher = tokio::spawn(async move {
        watch_child(child, exited_tx, stop_rx, now_rx).await;
        drop(done_tx);
    });

    let writer_task = tokio::spawn(async move {
        let mut writer = writer;
        while let Some(mut message) = outgoing.recv().await {
            message.push(b'\n');
            if writer.write_all(&message).await.is_err() || writer.flush().await.is_err() {
                // The reader sees the end and reports the death.
                break;
            }
        }
        let _ = writer.shutdown().await;
        drop(writer);
        let _ = stop_tx.send(());
    });

    let reader_events = events_tx;
    tokio::spawn(async move {
        // Large reads: a spooled message goes to disk a quarter MiB at a time.
        let mut reader = BufReader::with_capacity(256 * 1024, reader);
        let end = loop {
            let event = match spool::read_message(&mut reader, spool.as_ref()).await {
                Ok(None) => break None,
                Ok(Some(Incoming::Line(line))) if line.is_empty() => continue,
                Ok(Some(incoming)) => UpEvent::from(incoming),
                Err(e) => break Some(e.to_string()),
            };
            if reader_events.send(event).await.is_err() {
                return;
            }
        };
        let reason = death_reason(exited_rx, end).await;
        let _ = reader_events.send(UpEvent::Died(reason)).await;
    });

    let finished = tokio::spawn(async move {
        let _ = writer_task.await;
        let _ = watcher.await;
    });
    Link {
        send,
        events,
        finished,
        stopper,
    }
}

async fn watch_child(
    child: Option<Child>,
    exited: tokio::sync::watch::Sender<Option<String>>,
    stop: tokio::sync::oneshot::Receiver<()>,
    mut now: tokio::sync::oneshot::Receiver<()>,
) {
    let Some(mut child) = child else {
        let _ = stop.await;
        return;
    };
    tokio::select! {
        status = child.wait() => {
            let text = match status {
                Ok(status) => format!("the upstream server exited ({status})"),
                Err(e) => format!("the upstream server could not be waited for: {e}"),
            };
            let _ = exited.send(Some(text));
        }
        _ = stop => {
            // Our side is done: the closed stdin asks the server to exit; a server that does
            // not within the grace, or when the proxy is told to stop meanwhile, is terminated.
            let exited = tokio::select! {
                _ = child.wait() => true,
                () = tokio::time::sleep(EXIT_GRACE) => false,
                Ok(()) = &mut now => false,
            };
            if !exited {
                terminate(&mut child).await;
            }
        }
        // Only a Stopper's send: a Stopper dropped unused changes nothing.
        Ok(()) = &mut now => terminate(&mut child).await,
    }
}

/// SIGTERM, then SIGKILL after [`EXIT_GRACE`]. The child is not reaped before it has exited, so
/// its id cannot have been given to another process.
async fn terminate(child: &mut Child) {
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
}

/// Why the upstream's output ended: its exit status when it exited (waiting briefly, since
/// the pipe closes a moment before the process is reaped), else the read error or end.
async fn death_reason(mut exited: tokio::sync::watch::Receiver<Option<String>>, read_error: Option<String>) -> String {
    let waited = tokio::time::timeout(Duration::from_millis(500), exited.wait_for(Option::is_some)).await;
    if let Ok(Ok(status)) = waited
        && let Some(status) = status.as_ref()
    {
        return status.clone();
    }
    match read_error {
        Some(e) => format!("reading from the upstream server failed: {e}"),
        None => "the upstream server closed its output".to_owned(),
    }
}

/// The line read into `line`, without surrounding whitespace, moved out rather than copied: a
/// large result is not held twice, and the buffer does not keep a large message's capacity
/// for the rest of the session.
pub(super) fn take_trimmed(line: &mut Vec<u8>) -> Vec<u8> {
    let end = line.len() - line.iter().rev().take_while(|b| b.is_ascii_whitespace()).count();
    line.truncate(end);
    let start = line.iter().take_while(|b| b.is_ascii_whitespace()).count();
    if start > 0 {
        line.drain(..start);
    }
    std::mem::take(line)
}
