//! The compiled component and its calls: a fresh or kept store per call, one preopened
//! directory, and the time and memory limits.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, ResourceLimiter, Store, Trap};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::bindings;
use crate::dir::{Mount, absolute_dir, owner_only, prepare_dir, writable_dir};
use crate::{
    COMPONENT, ComponentError, Config, ConfigLayers, Detail, Error, Event, EventSink, ExtractRequest, ExtractResult,
    Options, Outcome, Recipe, Request, ResultFile, SweepReport, ToolCall, ToolOutcome, cache,
};

/// How often the epoch ticks; deadlines are counted in these ticks.
const TICK: Duration = Duration::from_millis(10);

/// The most argument text a call may carry and still run in a kept instance: a kept instance's
/// memory stays as large as the largest call it ran made it.
const KEEP_MAX_BYTES: usize = 1 << 20;

struct State {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: Limiter,
    events: Option<EventSink>,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

// bindgen emits an empty Host trait for the types-only interface; the linker requires it.
impl bindings::lro::component::types::Host for State {}

impl bindings::lro::component::events::Host for State {
    fn emit(&mut self, event: Event) {
        if let Some(sink) = &self.events {
            sink(&event);
        }
    }
}

/// Caps linear memory and remembers whether the cap was hit, so that the abort that follows a
/// refused allocation is reported as a memory limit rather than as a bare trap.
struct Limiter {
    memory: usize,
    hit: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = desired <= self.memory;
        self.hit |= !allowed;
        Ok(allowed)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 20)
    }
}

/// What a kept instance was made for: a call reuses it only when all of this matches.
#[derive(Clone, PartialEq, Eq)]
struct KeptKey {
    /// The preopened directory's path and how it was mounted (permissions and identity).
    dir: Option<(String, Mount)>,
    /// The memory limit its limiter enforces.
    memory: usize,
}

/// A store and instance kept between calls that run no user filter (docs/HOSTS.md, step 2).
struct Kept {
    key: KeptKey,
    store: Store<State>,
    lro: bindings::Lro,
    stderr: MemoryOutputPipe,
}

/// The compiled component, ready to run calls. Cheap to clone; clones share the compiled code
/// and the kept instances ([`Options::kept_instances`]).
#[derive(Clone)]
pub struct Runtime {
    engine: Engine,
    pre: bindings::LroPre<State>,
    options: Options,
    /// Least recently used first. A call takes its instance out, so two calls never share one.
    kept: Arc<Mutex<Vec<Kept>>>,
    /// Dropped with the last clone, which stops the epoch ticker thread.
    _ticker: Arc<Ticker>,
}

struct Ticker(Arc<AtomicBool>);

impl Drop for Ticker {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Runtime {
    /// Compiles (or loads from the cache) the embedded component.
    pub fn new(options: Options) -> Result<Self, Error> {
        Self::from_bytes(COMPONENT, options)
    }

    /// Compiles (or loads from the cache) a component given as bytes.
    pub fn from_bytes(bytes: &[u8], options: Options) -> Result<Self, Error> {
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        if std::env::var_os("LRO_PERF_MAP").is_some() {
            // Names the component's compiled functions for `perf report` (/tmp/perf-PID.map).
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let engine = Engine::new(&config).map_err(|e| Error::Load(format!("{e:#}")))?;
        let component = cache::load(&engine, bytes, options.cache_dir.as_deref())?;
        let mut linker: Linker<State> = Linker::new(&engine);
        let load = |e: wasmtime::Error| Error::Load(format!("{e:#}"));
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(load)?;
        bindings::Lro::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s).map_err(load)?;
        let pre = bindings::LroPre::new(linker.instantiate_pre(&component).map_err(load)?).map_err(load)?;

        let stop = Arc::new(AtomicBool::new(false));
        let (weak, flag) = (engine.weak(), stop.clone());
        std::thread::Builder::new()
            .name("lro-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    match weak.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })
            .map_err(|e| Error::Load(format!("starting the epoch thread: {e}")))?;
        Ok(Runtime {
            engine,
            pre,
            options,
            kept: Arc::default(),
            _ticker: Arc::new(Ticker(stop)),
        })
    }

    /// The same compiled component with other limits or event sink. It keeps instances of its own,
    /// since a kept instance delivers events to the sink it was made with.
    pub fn with_options(&self, options: Options) -> Self {
        Runtime {
            options,
            kept: Arc::default(),
            ..self.clone()
        }
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Estimates the result set and returns it inline, offloaded or degraded
    /// (`interceptor.offload`). `config.output_dir` is created (mode 0700) if it does not exist. A
    /// directory that cannot be used (see [`Runtime::intercept`]) degrades the result, as any
    /// failed write does: it never fails the call.
    pub fn offload(&self, config: &Config, request: &Request) -> Result<Outcome, Error> {
        caller_config(config)?;
        let (config, mount) = writable_dir(config);
        let text = |t: &Option<String>| t.as_ref().map_or(0, String::len);
        let keep = small(request.records.len() + text(&request.query) + text(&request.text));
        let outcome = self.call(&config, mount, self.io_limits(), keep, |store, lro| {
            lro.lro_component_interceptor().call_offload(store, &config, request)
        })?;
        if let Outcome::Offloaded(offloaded) = &outcome {
            owner_only(Path::new(&offloaded.path));
        }
        Ok(outcome)
    }

    /// Intercepts any tool's `CallToolResult` and says what to forward (`interceptor.intercept`).
    /// `config.output_dir` is created (mode 0700) if it does not exist. When it cannot be used (not a
    /// directory, owned by another user, writable by group or others, cannot be created or
    /// opened), nothing is written and the result degrades to the truncated inline fallback with
    /// an `offload-write-failed` event naming the reason: a failed write never fails the call.
    pub fn intercept(&self, config: &Config, call: &ToolCall) -> Result<ToolOutcome, Error> {
        caller_config(config)?;
        let (config, mount) = writable_dir(config);
        let meta = call.meta.as_ref().map_or(0, String::len);
        let keep = small(call.tool.len() + call.arguments.len() + call.result.len() + meta);
        let outcome = self.call(&config, mount, self.io_limits(), keep, |store, lro| {
            lro.lro_component_interceptor().call_intercept(store, &config, call)
        })?;
        if let ToolOutcome::Offloaded(offloaded) = &outcome {
            for file in &offloaded.files {
                owner_only(Path::new(file));
            }
        }
        Ok(outcome)
    }

    /// [`Runtime::intercept`] for a result held in a file of `config.output_dir` rather than in
    /// memory (`interceptor.intercept-file`): the result is `source`'s byte range, read once
    /// into the component, and `call.result` is ignored. The file stays the caller's.
    pub fn intercept_file(&self, config: &Config, call: &ToolCall, source: &ResultFile) -> Result<ToolOutcome, Error> {
        caller_config(config)?;
        let (config, mount) = writable_dir(config);
        // As for `intercept`: an instance is kept only after a small call, since it keeps the
        // memory the call grew it to.
        let length = usize::try_from(source.length).unwrap_or(usize::MAX);
        let meta = call.meta.as_ref().map_or(0, String::len);
        let keep = small(
            call.tool
                .len()
                .saturating_add(call.arguments.len())
                .saturating_add(length)
                .saturating_add(meta),
        );
        let outcome = self.call(&config, mount, self.io_limits(), keep, |store, lro| {
            lro.lro_component_interceptor()
                .call_intercept_file(store, &config, call, source)
        })?;
        if let ToolOutcome::Offloaded(offloaded) = &outcome {
            for file in &offloaded.files {
                owner_only(Path::new(file));
            }
        }
        Ok(outcome)
    }

    /// [`Runtime::intercept`] (or [`Runtime::intercept_file`], with `source`) for a result whose
    /// files cannot be kept, for the host's own `problem` (`config.dir-problem`): the component
    /// writes nothing and answers with the spec's fallback and an `offload-write-failed` event
    /// naming `problem`. The directory is still mounted when it can be, for `source`.
    #[cfg(feature = "store")]
    pub(crate) fn intercept_refused(
        &self,
        config: &Config,
        call: &ToolCall,
        source: Option<&ResultFile>,
        problem: String,
    ) -> Result<ToolOutcome, Error> {
        caller_config(config)?;
        let (config, mount) = writable_dir(config);
        let config = Config {
            dir_problem: Some(config.dir_problem.unwrap_or(problem)),
            ..config
        };
        self.call(&config, mount, self.io_limits(), false, |store, lro| match source {
            Some(source) => lro
                .lro_component_interceptor()
                .call_intercept_file(store, &config, call, source),
            None => lro.lro_component_interceptor().call_intercept(store, &config, call),
        })
    }

    /// Deletes expired files in `config.output_dir` (`custodian.sweep`); `now_ms` is the current time.
    pub fn sweep(&self, config: &Config, now_ms: u64) -> Result<SweepReport, Error> {
        caller_config(config)?;
        let (config, mount) = prepare_dir(config, false)?;
        self.call(&config, Some(mount), self.io_limits(), true, |store, lro| {
            lro.lro_component_custodian().call_sweep(store, &config, now_ms)
        })
    }

    /// Rewrites a `tools/list` result's `tools` array (JSON text) for a server whose results go
    /// through [`Runtime::intercept`] (`interceptor.rewrite-tools`): no `outputSchema` on tools
    /// whose results may be offloaded, and `lro_extract` appended when `config.extract_tool`.
    pub fn rewrite_tools(&self, config: &Config, tools: &str) -> Result<String, Error> {
        caller_config(config)?;
        let (config, tools) = (absolute_dir(config), tools.to_owned());
        self.call_without_files(small(tools.len()), |store, lro| {
            lro.lro_component_interceptor()
                .call_rewrite_tools(store, &config, &tools)
        })
    }

    /// The `lro_extract` tool's definition as `tools/list` lists it, JSON text
    /// (`extractor.tool-definition`).
    pub fn tool_definition(&self) -> Result<String, Error> {
        self.call_without_files(true, |store, lro| {
            Ok(Ok(lro.lro_component_extractor().call_tool_definition(store)?))
        })
    }

    /// Runs `lro_extract` from a `tools/call` request's `arguments` (JSON text), as
    /// [`Runtime::extract`] does (`extractor.call-tool`).
    pub fn call_tool(&self, config: &Config, arguments: &str) -> Result<ExtractResult, Error> {
        caller_config(config)?;
        let (config, mount) = read_only_dir(config)?;
        let arguments = arguments.to_owned();
        self.call(&config, Some(mount), self.filter_limits(), false, |store, lro| {
            lro.lro_component_extractor().call_call_tool(store, &config, &arguments)
        })
    }

    /// Runs a recipe or a jq filter over an offloaded file (`extractor.extract`, the
    /// `lro_extract` tool). The offload directory is mounted read-only for it, under the filter
    /// limits ([`Options::filter_deadline`], [`Options::filter_memory`]).
    pub fn extract(&self, config: &Config, request: &ExtractRequest) -> Result<ExtractResult, Error> {
        caller_config(config)?;
        let (config, mount) = read_only_dir(config)?;
        self.call(&config, Some(mount), self.filter_limits(), false, |store, lro| {
            lro.lro_component_extractor().call_extract(store, &config, request)
        })
    }

    /// Runs a jq filter over JSON text (`extractor.query`), with no file access, under the
    /// filter limits.
    pub fn query(
        &self,
        filter: &str,
        input: &str,
        slurp: bool,
        raw: bool,
        limit: Option<u32>,
    ) -> Result<ExtractResult, Error> {
        // bindgen types the `json` alias as `&String`.
        let input = input.to_owned();
        self.run(None, self.filter_limits(), false, |store, lro| {
            lro.lro_component_extractor()
                .call_query(store, filter, &input, slurp, raw, limit)
        })
    }

    /// The ten recipes for `detail`, with `file` in the shell commands (`interceptor.recipes`).
    pub fn recipes(&self, config: &Config, detail: Detail, file: Option<&str>) -> Result<Vec<Recipe>, Error> {
        caller_config(config)?;
        let config = absolute_dir(config);
        self.call_without_files(true, |store, lro| {
            lro.lro_component_interceptor()
                .call_recipes(store, &config, detail, file)
        })
    }

    /// The default of every config field (`configuration.defaults`): the spec's
    /// `[prompt.offload]` defaults, with an empty `output_dir` (the host's default directory,
    /// [`default_output_dir`](crate::default_output_dir)). Layer a user's configuration over it
    /// with [`Runtime::load_config`], or [`config::load`](crate::config::load) which gathers the
    /// layers as the `lro` command does.
    pub fn defaults(&self) -> Result<Config, Error> {
        self.run(None, Self::standard_limits(), true, |store, lro| {
            Ok(Ok(lro.lro_component_configuration().call_defaults(store)?))
        })
    }

    /// `base` with a user's `layers` applied in order (`configuration.load`): the keys, their
    /// types and every message are the component's. A bad value or an unknown key is
    /// [`ComponentError::InvalidConfig`](crate::ComponentError) naming it and where it came from.
    pub fn load_config(&self, base: &Config, layers: &ConfigLayers) -> Result<Config, Error> {
        self.run(None, Self::standard_limits(), true, |store, lro| {
            lro.lro_component_configuration().call_load(store, base, layers)
        })
    }

    /// The standard limits, for the calls that read configuration: a caller's tiny deadline must
    /// not fail them.
    fn standard_limits() -> Limits {
        let standard = Options::default();
        Limits {
            deadline: standard.deadline,
            memory: standard.memory,
        }
    }

    /// The component's token estimate of `text` (`interceptor.estimate`).
    pub fn estimate(&self, text: &str) -> Result<u32, Error> {
        self.call_without_files(small(text.len()), |store, lro| {
            Ok(Ok(lro.lro_component_interceptor().call_estimate(store, text)?))
        })
    }

    fn call_without_files<T>(
        &self,
        keep: bool,
        f: impl FnOnce(&mut Store<State>, &bindings::Lro) -> wasmtime::Result<Result<T, ComponentError>>,
    ) -> Result<T, Error> {
        self.run(None, self.io_limits(), keep, f)
    }

    fn io_limits(&self) -> Limits {
        Limits {
            deadline: self.options.deadline,
            memory: self.options.memory,
        }
    }

    fn filter_limits(&self) -> Limits {
        Limits {
            deadline: self.options.filter_deadline,
            memory: self.options.filter_memory,
        }
    }

    /// Runs `f` with `config.output_dir` mounted as `mount` says, or with no directory when
    /// `mount` is None (a directory found unusable: the component degrades without it).
    fn call<T>(
        &self,
        config: &Config,
        mount: Option<Mount>,
        limits: Limits,
        keep: bool,
        f: impl FnOnce(&mut Store<State>, &bindings::Lro) -> wasmtime::Result<Result<T, ComponentError>>,
    ) -> Result<T, Error> {
        self.run(mount.map(|m| (config.output_dir.clone(), m)), limits, keep, f)
    }

    /// Runs `f` in an instance with `dir` preopened at its own path: a kept one made for the same
    /// directory and memory limit when `keep` allows it, else a fresh one, which is kept after
    /// the call when `keep` (a trap drops it).
    fn run<T>(
        &self,
        dir: Option<(String, Mount)>,
        limits: Limits,
        keep: bool,
        f: impl FnOnce(&mut Store<State>, &bindings::Lro) -> wasmtime::Result<Result<T, ComponentError>>,
    ) -> Result<T, Error> {
        let key = KeptKey {
            dir,
            memory: limits.memory,
        };
        let keep = keep && self.options.kept_instances > 0;
        let (mut store, stderr, lro) = match keep.then(|| self.take_kept(&key)).flatten() {
            Some(kept) => (kept.store, kept.stderr, Some(kept.lro)),
            None => {
                let (store, stderr) = self.new_store(key.dir.as_ref(), limits)?;
                (store, stderr, None)
            }
        };
        // Only the bytes this call writes name its trap; earlier calls returned without trapping.
        let stderr_from = if lro.is_some() { stderr.contents().len() } else { 0 };
        store.data_mut().limiter.hit = false;
        let ticks = limits.deadline.as_millis().div_ceil(TICK.as_millis()).max(1);
        store.set_epoch_deadline(u64::try_from(ticks).unwrap_or(u64::MAX));

        let result = match lro {
            Some(lro) => Ok(lro),
            None => self.pre.instantiate(&mut store),
        }
        .and_then(|lro| f(&mut store, &lro).map(|value| (lro, value)));
        match result {
            Ok((lro, value)) => {
                if keep {
                    self.put_kept(Kept {
                        key,
                        store,
                        lro,
                        stderr,
                    });
                }
                value.map_err(Error::Component)
            }
            Err(error) => {
                let guest = stderr.contents();
                let guest = guest.get(stderr_from..).unwrap_or_default();
                Err(trap_error(error, limits, store.data().limiter.hit, guest))
            }
        }
    }

    /// A new store with `dir` preopened at its own absolute path (so descriptor paths are real
    /// paths) and the guest's stderr kept for error messages.
    fn new_store(
        &self,
        dir: Option<&(String, Mount)>,
        limits: Limits,
    ) -> Result<(Store<State>, MemoryOutputPipe), Error> {
        let mut wasi = WasiCtxBuilder::new();
        // Calls are synchronous: file I/O may block this thread instead of being handed to a
        // blocking-thread pool and waited for (two context switches per WASI call). Set before
        // the preopen: the preopened directory takes the setting when it is added (descriptors
        // opened later take the context's).
        wasi.allow_blocking_current_thread(true);
        if let Some((path, mount)) = dir {
            wasi.preopened_dir(path, path, mount.perms())
                .map_err(|e| Error::Directory {
                    path: PathBuf::from(path),
                    message: format!("cannot open it: {e:#}"),
                })?;
        }
        // The guest's stderr (a panic message) is kept and put into the error; its stdout goes
        // nowhere, so a host speaking MCP over stdio can never have its stream corrupted.
        let stderr = MemoryOutputPipe::new(64 * 1024);
        wasi.stderr(stderr.clone());
        let state = State {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limiter: Limiter {
                memory: limits.memory,
                hit: false,
            },
            events: self.options.events.clone(),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.epoch_deadline_trap();
        Ok((store, stderr))
    }

    /// The most recently kept instance made for `key`, taken out of the pool.
    fn take_kept(&self, key: &KeptKey) -> Option<Kept> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let i = kept.iter().rposition(|k| k.key == *key)?;
        Some(kept.remove(i))
    }

    /// Keeps `instance`, dropping the least recently used beyond [`Options::kept_instances`].
    fn put_kept(&self, instance: Kept) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.push(instance);
        let excess = kept.len().saturating_sub(self.options.kept_instances);
        let dropped: Vec<Kept> = kept.drain(..excess).collect();
        // A store's memory is unmapped outside the lock.
        drop(kept);
        drop(dropped);
    }
}

/// [`prepare_dir`] for the filter calls, which only read: the directory is mounted read-only
/// whatever its mode.
fn read_only_dir(config: &Config) -> Result<(Config, Mount), Error> {
    let (config, mount) = prepare_dir(config, false)?;
    Ok((
        config,
        Mount {
            read_only: true,
            ..mount
        },
    ))
}

/// Whether arguments of `bytes` bytes are small enough for a kept instance.
fn small(bytes: usize) -> bool {
    bytes <= KEEP_MAX_BYTES
}

/// `config.dir_problem` is the host's to set (docs/HOSTS.md, step 1): every host refuses it from a
/// caller, with the same message.
fn caller_config(config: &Config) -> Result<(), Error> {
    match config.dir_problem {
        None => Ok(()),
        Some(_) => Err(Error::Component(ComponentError::InvalidConfig(
            "config.dir_problem: set by the host, never by callers".into(),
        ))),
    }
}

/// The time and memory a call may use.
#[derive(Clone, Copy)]
struct Limits {
    deadline: Duration,
    memory: usize,
}

fn trap_error(error: wasmtime::Error, limits: Limits, memory_hit: bool, stderr: &[u8]) -> Error {
    if memory_hit {
        return Error::MemoryLimit(limits.memory);
    }
    match error.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => return Error::Timeout(limits.deadline),
        Some(Trap::StackOverflow) => return Error::StackOverflow,
        _ => {}
    }
    let text = format!("{error:#}");
    if shadow_stack_overflow(&text) {
        return Error::StackOverflow;
    }
    let guest = String::from_utf8_lossy(stderr).trim().to_owned();
    if guest.is_empty() {
        Error::Trap(format!("{error:#}"))
    } else {
        Error::Trap(format!("{error:#}; the component said: {guest}"))
    }
}

/// Deep recursion in the guest usually exhausts its shadow stack (in linear memory, placed first),
/// not wasm's own call stack: the stack pointer wraps below address 0 and the next access faults
/// near 4 GiB. Wasmtime reports that as an out-of-bounds access, so recognise it by the address.
fn shadow_stack_overflow(trap: &str) -> bool {
    const MARK: &str = "memory fault at wasm address 0x";
    trap.find(MARK).is_some_and(|i| {
        let hex: String = trap[i + MARK.len()..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect();
        u64::from_str_radix(&hex, 16).is_ok_and(|address| address >= 0xFFFF_0000)
    })
}

#[cfg(test)]
mod tests;
