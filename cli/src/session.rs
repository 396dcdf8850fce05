//! An MCP client session (rmcp's client) with `lro ARGS` as a child process on its stdio: how
//! `lro demo` and `lro bench` meet the proxy, as a user's MCP client does.

use std::process::Stdio;

use anyhow::{Context, bail};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

pub type Client = RunningService<RoleClient, ()>;

pub struct Session {
    pub client: Client,
    /// Killed when the session is dropped.
    _child: tokio::process::Child,
}

/// Starts `lro ARGS` (this very binary) and connects to it.
pub async fn connect(args: &[String]) -> anyhow::Result<Session> {
    let exe = std::env::current_exe().context("finding the lro binary")?;
    let mut child = tokio::process::Command::new(&exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {} {}", exe.display(), args.join(" ")))?;
    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
        bail!("the child's pipes were not made");
    };
    let client = ()
        .serve((stdout, stdin))
        .await
        .with_context(|| format!("an MCP session with lro {}", args.join(" ")))?;
    Ok(Session { client, _child: child })
}

impl Session {
    /// The child's process id (for reading its memory use), while it runs.
    pub fn pid(&self) -> Option<u32> {
        self._child.id()
    }

    /// Calls `tool` with `arguments` (a JSON object).
    pub async fn call(&self, tool: &'static str, arguments: Value) -> anyhow::Result<CallToolResult> {
        let arguments = match arguments {
            Value::Object(map) => map,
            _ => bail!("{tool}: arguments must be an object"),
        };
        let params = CallToolRequestParams::new(tool).with_arguments(arguments);
        self.client
            .peer()
            .call_tool(params)
            .await
            .with_context(|| format!("tools/call {tool}"))
    }
}

/// The text of a result's first content block (empty when it has none).
pub fn text(result: &CallToolResult) -> &str {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map_or("", |t| t.text.as_str())
}

/// This binary's path, as text for a command line.
pub fn exe() -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("finding the lro binary")?;
    exe.to_str()
        .map(str::to_owned)
        .context("the lro binary's path must be UTF-8")
}
