//! LRO for a Rust MCP server built on rmcp (the Rust SDK), with the `rmcp` feature: wrap the
//! server's handler and serve the wrapper instead.
//!
//! ```no_run
//! # use rmcp::{ServerHandler, ServiceExt, model::ServerConfig};
//! # #[derive(Clone)] struct MyServer;
//! # impl ServerHandler for MyServer { fn get_info(&self) -> ServerConfig { ServerConfig::default() } }
//! # async fn run() -> anyhow::Result<()> {
//! let server = lro_host::rmcp::WithLro::new(MyServer)?;
//! server.serve((tokio::io::stdin(), tokio::io::stdout())).await?.waiting().await?;
//! # Ok(()) }
//! ```
//!
//! [`WithLro`] does what `lro proxy` does, from the same [`Offloader`]: `tools/list` goes
//! through the component's `rewrite_tools` (an `outputSchema` a descriptor would break is
//! dropped) and gains `lro_extract`, answered here in the sandboxed extractor; every complete
//! `tools/call` result goes through `intercept` (a large one becomes a file and a descriptor;
//! if offloading fails the result goes out as it came); the session's offloaded files are
//! listed as `lro://offload/` resources after the server's own, and read in the sandboxed
//! extractor ([`crate::mcp::resources`]); expired files are swept at start and every `ttl/2`
//! while a session runs. Everything else reaches the wrapped server unchanged.
//! Component calls run on tokio's blocking threads, never on the executor.

// Every method of `ServerHandler` is passed on, the deprecated ones (logging, legacy resource
// subscriptions) too: clients of the older protocol still use them.
#![expect(
    deprecated,
    reason = "the wrapper forwards deprecated methods its server may implement"
)]

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use ::rmcp::ErrorData as McpError;
use ::rmcp::ServerHandler;
use ::rmcp::model::*;
use ::rmcp::service::{MaybeSendFuture, NotificationContext, RequestContext, RoleServer, SubscriptionContext};

use crate::config::{self, ConfigError, Flag};
use crate::mcp::resources::{self, ReadError, SessionFiles};
use crate::mcp::{EXTRACT_TOOL, Offloader, Sweeper};
use crate::{Error, Options, Runtime, ToolCall, ToolOutcome};

/// Why [`WithLro`] could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A configuration value is wrong; the message names the key and where it came from.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The component could not be loaded, or the offload directory prepared.
    #[error(transparent)]
    Component(#[from] Error),
    /// The component's `lro_extract` definition does not parse as rmcp's `Tool` (a component
    /// and an rmcp version that do not fit together).
    #[error("the component's lro_extract definition is not an rmcp Tool: {0}")]
    ToolDefinition(String),
}

/// An rmcp server handler with LRO in front of its tools. A clone shares the offloader and its
/// sweeper and starts a session of its own: rmcp's HTTP transport makes one handler for each
/// session, and `resources/list` lists the files offloaded in that session only.
pub struct WithLro<S> {
    inner: S,
    shared: Arc<Shared>,
    files: SessionFiles,
}

impl<S: Clone> Clone for WithLro<S> {
    fn clone(&self) -> Self {
        WithLro {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
            files: SessionFiles::new(self.shared.offloader.handles),
        }
    }
}

struct Shared {
    offloader: Offloader,
    extract_tool: Tool,
    /// The periodic sweep, started by the first request (a tokio runtime is running by then),
    /// stopped when the last clone is dropped.
    sweeper: Mutex<Option<Sweeper>>,
}

impl<S: ServerHandler> WithLro<S> {
    /// Wraps `server` with the configuration the `lro` command reads without flags: the
    /// component's defaults, then the `ATLATL_PROMPT__OFFLOAD__*` environment variables
    /// (docs/CONFIGURATION.md). Files go to the default directory unless `output_dir` says
    /// otherwise. A bad value is a [`SetupError::Config`] naming the key and where it came
    /// from.
    pub fn new(server: S) -> Result<Self, SetupError> {
        Self::configured(server, None, &[])
    }

    /// Like [`WithLro::new`], with a TOML file's `[prompt.offload]` section under the
    /// environment, and `flags` (the `lro` command's, as [`Flag`]s) over both.
    pub fn configured(server: S, file: Option<&std::path::Path>, flags: &[Flag]) -> Result<Self, SetupError> {
        let offloader = off_runtime(|| {
            let runtime = Runtime::new(Options::default())?;
            let config = config::from_environment(&runtime, file, flags)?;
            Ok::<_, SetupError>(Offloader::prepare(runtime, config)?)
        })?;
        Self::with_offloader(server, offloader)
    }

    /// Wraps `server` with an offloader already prepared (its own runtime and configuration).
    pub fn with_offloader(server: S, offloader: Offloader) -> Result<Self, SetupError> {
        let extract_tool = offloader.extract_tool().map_err(SetupError::ToolDefinition)?;
        let files = SessionFiles::new(offloader.handles);
        Ok(WithLro {
            inner: server,
            shared: Arc::new(Shared {
                offloader,
                extract_tool,
                sweeper: Mutex::new(None),
            }),
            files,
        })
    }

    /// The wrapped server.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The offloader: its configuration says where files go.
    pub fn offloader(&self) -> &Offloader {
        &self.shared.offloader
    }

    fn start_sweeping(&self) {
        let mut sweeper = self
            .shared
            .sweeper
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if sweeper.is_none() {
            *sweeper = Sweeper::start(&self.shared.offloader);
        }
    }

    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Offloader) -> T + Send + 'static,
    ) -> Result<T, McpError> {
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || work(&shared.offloader))
            .await
            .map_err(|e| McpError::internal_error(format!("lro: a component call failed: {e}"), None))
    }

    /// What the component reads to tell whether the client is itself an LRO proxy: a
    /// 2026-07-28 request's `_meta`, else the client's `initialize` params.
    fn client_meta(context: &RequestContext<RoleServer>) -> Option<String> {
        if context.meta.protocol_version().is_some() {
            return serde_json::to_string(&context.meta).ok();
        }
        context
            .peer
            .peer_info()
            .and_then(|info| serde_json::to_string(&*info).ok())
    }
}

/// Runs `work` (which calls the component) on a thread of its own: the component's WASI layer
/// runs its own executor, which must not start inside a caller's (`#[tokio::main]`).
fn off_runtime<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(work)
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The server's capabilities and LRO's: `lro_extract` is a tool, the offloaded files are
/// resources.
fn with_lro(mut capabilities: ServerCapabilities) -> ServerCapabilities {
    capabilities.tools.get_or_insert_with(ToolsCapability::default);
    capabilities.resources.get_or_insert_with(ResourcesCapability::default);
    capabilities
}

/// The server's page, or none for a server without resources, to add LRO's entries to.
fn own_page<T: Default>(page: Result<T, McpError>) -> Result<T, McpError> {
    match page {
        Err(e) if e.code == ErrorCode::METHOD_NOT_FOUND => Ok(T::default()),
        page => page,
    }
}

impl<S: ServerHandler> ServerHandler for WithLro<S> {
    fn get_info(&self) -> ServerConfig {
        let mut info = self.inner.get_info();
        info.capabilities = with_lro(info.capabilities);
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        self.start_sweeping();
        let mut result = self.inner.initialize(request, context).await?;
        result.capabilities = with_lro(result.capabilities);
        Ok(result)
    }

    async fn discover(&self, context: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        self.start_sweeping();
        let mut result = self.inner.discover(context).await?;
        result.capabilities = with_lro(result.capabilities);
        Ok(result)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.start_sweeping();
        let mut page = self.inner.list_tools(request, context).await?;
        let tools = serde_json::to_string(&page.tools)
            .map_err(|e| McpError::internal_error(format!("lro: the server's tools: {e}"), None))?;
        // `lro_extract` follows the last page only.
        let last = page.next_cursor.is_none();
        let rewritten = self
            .blocking(move |offloader| {
                let mut config = offloader.config.clone();
                config.extract_tool = last;
                offloader.runtime.rewrite_tools(&config, &tools)
            })
            .await?
            .map_err(|e| McpError::internal_error(format!("lro: cannot list the tools: {e}"), None))?;
        page.tools = serde_json::from_str(&rewritten)
            .map_err(|e| McpError::internal_error(format!("lro: the rewritten tools: {e}"), None))?;
        Ok(page)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if name == EXTRACT_TOOL {
            return Some(self.shared.extract_tool.clone());
        }
        self.inner.get_tool(name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.start_sweeping();
        let arguments = serde_json::to_string(&request.arguments.clone().unwrap_or_default())
            .map_err(|e| McpError::invalid_params(format!("lro: the arguments: {e}"), None))?;
        if request.name == EXTRACT_TOOL {
            let answer = self.blocking(move |offloader| offloader.extract(&arguments)).await?;
            return Ok(CallToolResponse::Complete(answer.into_result()));
        }
        let tool = request.name.to_string();
        let meta = Self::client_meta(&context);
        let response = self.inner.call_tool(request, context).await?;
        // Errors, input requests and tasks go out as they came.
        let CallToolResponse::Complete(result) = response else {
            return Ok(response);
        };
        if result.is_error == Some(true) {
            return Ok(CallToolResponse::Complete(result));
        }
        let Ok(text) = serde_json::to_string(&result) else {
            return Ok(CallToolResponse::Complete(result));
        };
        let call = ToolCall {
            tool: tool.clone(),
            arguments,
            result: text,
            meta,
        };
        let outcome = self.blocking(move |offloader| offloader.intercept(&call)).await?;
        let replaced = match outcome {
            Ok(ToolOutcome::Unchanged(_)) => None,
            Ok(ToolOutcome::Offloaded(offloaded)) => {
                self.files.remember(&tool, &offloaded.files, offloaded.tokens);
                Some(offloaded.result)
            }
            Ok(ToolOutcome::Degraded(degraded)) => {
                eprintln!("lro: {tool}: {}", degraded.warning);
                Some(degraded.result)
            }
            Err(e) => {
                // The spec's fallback: a call never fails because offloading did.
                eprintln!("lro: {tool}: the result was sent as it came: {e}");
                None
            }
        };
        let result = match replaced.map(|text| serde_json::from_str::<CallToolResult>(&text)) {
            Some(Ok(replacement)) => replacement,
            Some(Err(e)) => {
                eprintln!("lro: {tool}: the result was sent as it came: the replacement is not a CallToolResult: {e}");
                result
            }
            None => result,
        };
        Ok(CallToolResponse::Complete(result))
    }

    fn ping(
        &self,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.ping(context)
    }

    fn negotiate_initialize(&self, request: &InitializeRequestParams) -> Result<InitializeResult, McpError> {
        self.inner.negotiate_initialize(request)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }

    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CompleteResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.complete(request, context)
    }

    fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.set_level(request, context)
    }

    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetPromptResponse, McpError>> + MaybeSendFuture + '_ {
        self.inner.get_prompt(request, context)
    }

    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListPromptsResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.list_prompts(request, context)
    }

    /// The server's resources, then (after its last page) this session's offloaded files; with
    /// a store (the `store` feature), every unexpired offload kept there, made by any replica.
    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let mut page = own_page(self.inner.list_resources(request, context).await)?;
        if page.next_cursor.is_none() {
            #[cfg(feature = "store")]
            if self.shared.offloader.store.is_some() {
                match self.blocking(Offloader::stored_resources).await? {
                    Some(Ok(stored)) => {
                        page.resources.extend(stored);
                        return Ok(page);
                    }
                    // The server's own resources are still listed, with this session's files.
                    Some(Err(e)) => {
                        eprintln!("lro: listing the offloads kept in the store: {e}; listing this session's")
                    }
                    None => {}
                }
            }
            page.resources.extend(self.files.resources());
        }
        Ok(page)
    }

    /// The server's templates, then (after its last page) `lro://offload/{file}{?from,to}`.
    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let mut page = own_page(self.inner.list_resource_templates(request, context).await)?;
        if page.next_cursor.is_none() {
            page.resource_templates.push(resources::template());
        }
        Ok(page)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if !resources::is_offload_uri(&request.uri) {
            return self.inner.read_resource(request, context).await;
        }
        self.start_sweeping();
        let uri = request.uri;
        match self.blocking(move |offloader| offloader.read_resource(&uri)).await? {
            Ok(result) => Ok(ReadResourceResponse::Complete(result)),
            Err(ReadError::InvalidUri(text)) => Err(McpError::invalid_params(text, None)),
            // rmcp makes it invalid params for a 2026-07-28 client, as that version asks.
            Err(ReadError::NotFound(text)) => Err(McpError::resource_not_found(text, None)),
            Err(ReadError::Failed(text)) => Err(McpError::internal_error(text, None)),
        }
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        self.inner.accepted_subscription_filter(requested)
    }

    fn listen(
        &self,
        context: SubscriptionContext,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.listen(context)
    }

    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.subscribe(request, context)
    }

    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.unsubscribe(request, context)
    }

    fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<CustomResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.on_custom_request(request, context)
    }

    fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_cancelled(notification, context)
    }

    fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_progress(notification, context)
    }

    fn on_initialized(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_initialized(context)
    }

    fn on_roots_list_changed(
        &self,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_roots_list_changed(context)
    }

    fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.inner.on_custom_notification(notification, context)
    }

    fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetTaskResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.get_task(request, context)
    }

    fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.update_task(request, context)
    }

    fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), McpError>> + MaybeSendFuture + '_ {
        self.inner.cancel_task(request, context)
    }

    fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListSkillsResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.list_skills(request, context)
    }

    fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<GetSkillResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.get_skill(request, context)
    }

    fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ReadResourceDirectoryResult, McpError>> + MaybeSendFuture + '_ {
        self.inner.read_resource_directory(request, context)
    }
}
