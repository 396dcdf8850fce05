//! An MCP server and an MCP client from rmcp (the Rust SDK), wired to `lro_cli::proxy` in
//! process over in-memory pipes: what a user's client and server would do, with no network.
#![expect(
    deprecated,
    reason = "roots and logging are deprecated by SEP-2577, yet clients of the older protocol use them"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lro_cli::proxy::{self, Ending, Offloader, upstream};
use rmcp::model::*;
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient, RoleServer, ServerHandler, ServiceExt,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The records `rows` returns: the data a file must hold exactly.
pub fn rows(n: u64) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"id": i, "title": format!("row {i}"), "score": (i as f64) / 8.0, "tags": ["a", "b"]}))
            .collect(),
    )
}

/// The upstream server. `legacy` makes it speak only the `initialize` handshake (as the
/// reference servers do), else it also answers 2026-07-28 discovery.
#[derive(Clone)]
pub struct Upstream {
    pub legacy: bool,
    /// Set when a call of `hang` was cancelled by the client.
    pub cancelled: Arc<AtomicBool>,
    /// Also list a tool named `lro_extract`.
    pub clash: bool,
    /// Ends the server's side of the pipe: what a crashing child looks like.
    pub kill: Arc<tokio::sync::Notify>,
}

impl Upstream {
    pub fn new(legacy: bool) -> Self {
        Upstream {
            legacy,
            cancelled: Arc::new(AtomicBool::new(false)),
            clash: false,
            kill: Arc::new(tokio::sync::Notify::new()),
        }
    }
}

fn tool(name: &'static str, description: &'static str, output_schema: bool) -> Tool {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let mut tool = Tool::new(name, description, Arc::new(schema.as_object().unwrap().clone()));
    if output_schema {
        tool.output_schema = Some(Arc::new(json!({"type": "object"}).as_object().unwrap().clone()));
    }
    tool
}

impl ServerHandler for Upstream {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("upstream", "1.0"))
    }

    async fn discover(&self, _context: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        if self.legacy {
            return Err(ErrorData::method_not_found::<DiscoverRequestMethod>());
        }
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![
            tool("rows", "n records as JSON text, with structured content", true),
            tool("fail", "an error result", false),
            tool("image", "an image", false),
            tool("hang", "reports progress, then waits to be cancelled", false),
            tool("roots", "asks the client for its roots", false),
            tool("exit", "the server process dies", false),
            tool("caps", "the client capabilities the server sees", false),
        ];
        if self.clash {
            tools.push(tool("lro_extract", "a clash", false));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let n = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("n"))
            .and_then(Value::as_u64)
            .unwrap_or(3);
        let result = match request.name.as_ref() {
            "rows" => {
                let data = rows(n);
                let mut result = CallToolResult::success(vec![ContentBlock::text(data.to_string())]);
                result.structured_content = Some(json!({"items": data}));
                result
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("x".repeat(20_000))]),
            "image" => CallToolResult::success(vec![ContentBlock::image("iVBORw0KGgo".repeat(2000), "image/png")]),
            "hang" => {
                if let Some(token) = context.meta.get_progress_token() {
                    let _ = context
                        .peer
                        .notify_progress(ProgressNotificationParam::new(token, 1.0))
                        .await;
                }
                context.ct.cancelled().await;
                self.cancelled.store(true, Ordering::SeqCst);
                CallToolResult::success(vec![ContentBlock::text("cancelled")])
            }
            "roots" => {
                let roots = context
                    .peer
                    .send_request(ServerRequest::ListRootsRequest(ListRootsRequest::default()))
                    .await
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                CallToolResult::success(vec![ContentBlock::text(format!("{roots:?}"))])
            }
            "exit" => {
                self.kill.notify_one();
                tokio::time::sleep(Duration::from_secs(60)).await;
                CallToolResult::success(vec![ContentBlock::text("never")])
            }
            "caps" => {
                let caps = context
                    .client_capabilities()
                    .map(|c| serde_json::to_string(&c).unwrap_or_default());
                CallToolResult::success(vec![ContentBlock::text(caps.unwrap_or_default())])
            }
            _ => return Err(ErrorData::invalid_params("no such tool", None)),
        };
        Ok(CallToolResponse::Complete(result))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![Resource::new(
            "mem://notes",
            "notes",
        )]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        Ok(ReadResourceResult::new(vec![ResourceContents::text("the notes", request.uri)]).into())
    }
}

/// The client: records progress, answers `roots/list`.
#[derive(Clone)]
pub struct Client {
    pub version: ProtocolVersion,
    pub seen: mpsc::UnboundedSender<String>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.roots = Some(RootsCapabilities::default());
        ClientConfig::new(capabilities, Implementation::new("client", "1.0"))
            .with_protocol_version(self.version.clone())
    }

    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(vec![Root::new("file:///projects")]))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let _ = self.seen.send(format!("progress {}", params.progress));
    }
}

/// A client connected through the proxy to `upstream`.
pub struct Wired {
    pub client: RunningService<RoleClient, Client>,
    pub seen: mpsc::UnboundedReceiver<String>,
    pub ending: tokio::task::JoinHandle<Ending>,
}

/// The client's protocol generation.
#[derive(Clone, Copy, Debug)]
pub enum Generation {
    Legacy,
    Modern,
}

fn lifecycle(generation: Generation) -> (ProtocolVersion, ClientLifecycleMode) {
    match generation {
        Generation::Legacy => (ProtocolVersion::V_2025_11_25, ClientLifecycleMode::Initialize),
        Generation::Modern => (
            ProtocolVersion::V_2026_07_28,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    }
}

/// The proxy, serving in process between `upstream` and a new client.
pub async fn wire(upstream: Upstream, offloader: Offloader, generation: Generation) -> Wired {
    let (server_end, proxy_up) = tokio::io::duplex(1 << 16);
    let kill = upstream.kill.clone();
    tokio::spawn(async move {
        if let Ok(server) = upstream.serve(server_end).await {
            let ct = server.cancellation_token();
            tokio::spawn(async move {
                kill.notified().await;
                ct.cancel();
            });
            let _ = server.waiting().await;
        }
    });
    let (up_read, up_write) = tokio::io::split(proxy_up);
    connect(upstream::stream(up_read, up_write, None, None), offloader, generation).await
}

/// The proxy, serving in process between the streamable HTTP server at `url` and a new client.
pub async fn wire_http(url: &str, offloader: Offloader, generation: Generation) -> Wired {
    let link = proxy::http::connect(url, Default::default(), None).expect("a valid URL");
    connect(link, offloader, generation).await
}

async fn connect(link: upstream::Link, offloader: Offloader, generation: Generation) -> Wired {
    let (proxy_down, client_end) = tokio::io::duplex(1 << 16);
    let (down_read, down_write) = tokio::io::split(proxy_down);
    let ending = tokio::spawn(proxy::serve(
        offloader,
        link,
        down_read,
        down_write,
        proxy::DEFAULT_GRACE,
    ));
    let (seen_tx, seen) = mpsc::unbounded_channel();
    let (version, mode) = lifecycle(generation);
    let client = Client { version, seen: seen_tx }
        .serve_with_lifecycle(client_end, mode)
        .await
        .expect("the client connects through the proxy");
    Wired { client, seen, ending }
}

/// A client connected straight to `upstream`: what the proxy must look like, where it does not
/// offload.
pub async fn direct(upstream: Upstream, generation: Generation) -> RunningService<RoleClient, Client> {
    let (server_end, client_end) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(server) = upstream.serve(server_end).await {
            let _ = server.waiting().await;
        }
    });
    let (seen_tx, _seen) = mpsc::unbounded_channel();
    let (version, mode) = lifecycle(generation);
    Client { version, seen: seen_tx }
        .serve_with_lifecycle(client_end, mode)
        .await
        .expect("the client connects")
}

/// Calls `tool` with `arguments`, as a user's client does.
pub async fn call(
    client: &RunningService<RoleClient, Client>,
    tool: &'static str,
    arguments: Value,
) -> Result<CallToolResult, rmcp::ServiceError> {
    let params = CallToolRequestParams::new(tool).with_arguments(arguments.as_object().unwrap().clone());
    client.peer().call_tool(params).await
}

/// The text of a result's first content block.
pub fn text(result: &CallToolResult) -> String {
    result.content[0].as_text().expect("a text block").text.clone()
}

/// `upstream` as rmcp's streamable HTTP server, on a loopback port, until `stop`.
pub struct HttpUpstream {
    pub url: String,
    addr: std::net::SocketAddr,
    upstream: Upstream,
    accept: Option<tokio::task::JoinHandle<()>>,
}

impl HttpUpstream {
    pub async fn start(upstream: Upstream) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        Self::serve(upstream, listener, addr)
    }

    fn serve(upstream: Upstream, listener: tokio::net::TcpListener, addr: std::net::SocketAddr) -> Self {
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        };
        let handler = upstream.clone();
        let service: StreamableHttpService<Upstream, LocalSessionManager> = StreamableHttpService::new(
            move || Ok(handler.clone()),
            Default::default(),
            StreamableHttpServerConfig::default(),
        );
        let accept = tokio::spawn(async move {
            // Connections are tasks of this one, so stopping it drops every open connection too:
            // what a server that went away looks like to its clients.
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                let service = service.clone();
                connections.spawn(async move {
                    let hyper_service = hyper::service::service_fn(move |request| {
                        let mut service = service.clone();
                        async move { tower_service::Service::call(&mut service, request).await }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), hyper_service)
                        .await;
                });
            }
        });
        HttpUpstream {
            url: format!("http://{addr}/mcp"),
            addr,
            upstream,
            accept: Some(accept),
        }
    }

    /// The server goes away: its port refuses connections and its sessions are forgotten.
    pub async fn stop(&mut self) {
        if let Some(accept) = self.accept.take() {
            accept.abort();
            let _ = accept.await;
        }
    }

    /// A new server on the same port, which knows none of the old sessions.
    pub async fn restart(mut self) -> Self {
        self.stop().await;
        let listener = tokio::net::TcpListener::bind(self.addr).await.unwrap();
        Self::serve(self.upstream.clone(), listener, self.addr)
    }
}
