//! Offloads kept in a shared object store (S3 and every S3-compatible store), so that any
//! replica of a server can answer for any offload (docs/REMOTE.md, "The store").
//!
//! The component keeps writing into its sandboxed directory; the host then writes each new file
//! through to the store ([`Store::put`]), reads a file back into the directory when a call names
//! one that is not there ([`Store::fetch`]), and deletes expired objects ([`Store::sweep`]). The
//! directory is a cache, bounded by [`Store::new`]'s `cache_bytes`: the files used least
//! recently go first, and only files that are in the store.
//!
//! Every method blocks: the store's requests run on a thread of their own (a tokio runtime
//! that lives as long as the [`Store`]), so call them where a component call is made, on a
//! blocking thread, never on an async executor.

use std::collections::HashMap;
use std::future::Future;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, RetryConfig, WriteMultipart};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod cache;
mod client;
use cache::Cache;
use client::Connector;

/// Files above this go up as a multipart upload, in parts of this size.
pub const PART_BYTES: usize = 8 << 20;
/// How much of an object the sweep reads first to find its header line; then, when the line is
/// longer, as much as the local sweep reads of a file ([`MAX_HEADER_BYTES`]).
const HEAD_BYTES: u64 = 4096;
/// The most of a header line the local sweep reads (lro-core's custodian).
const MAX_HEADER_BYTES: u64 = 1 << 20;

/// What went wrong with the store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// `--store`'s URL is not one this build can use; the message says what was expected.
    #[error("{0}")]
    Url(String),
    /// The environment names no credentials for S3; the message says which variables to set.
    #[error("{0}")]
    Credentials(String),
    /// A request to the store failed (it is down, refused the request, or timed out).
    #[error("the store {url}: {message}")]
    Unavailable {
        /// The store, as given.
        url: String,
        /// What failed.
        message: String,
    },
    /// A local file could not be read or written.
    #[error("{}: {message}", .path.display())]
    Local {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        message: String,
    },
}

/// An object store and the local directory that caches it.
pub struct Store {
    url: String,
    inner: Arc<AmazonS3>,
    prefix: Key,
    runtime: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    cache: Mutex<Cache>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("url", &self.url).finish_non_exhaustive()
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The URL forms `--store` takes.
pub fn is_store_url(url: &str) -> bool {
    url.contains("://")
}

impl Store {
    /// The store `url` names (`s3://BUCKET[/PREFIX]`), reached with the standard `AWS_*`
    /// variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_REGION`, `AWS_ALLOW_HTTP`, ...), with a local cache of at most `cache_bytes` in
    /// `cache_files` files (below the offload directory's `max_files`, so that cached files
    /// never keep a new offload from being written). No request is made: [`Store::check`]
    /// makes one.
    pub fn new(url: &str, cache_bytes: u64, cache_files: usize) -> Result<Store, StoreError> {
        Self::with_env(url, cache_bytes, cache_files, std::env::vars())
    }

    /// [`Store::new`] with the variables of `env` instead of the process's.
    pub fn with_env(
        url: &str,
        cache_bytes: u64,
        cache_files: usize,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Store, StoreError> {
        let (bucket, prefix) = parse_url(url)?;
        let env: HashMap<String, String> = env.into_iter().filter(|(k, _)| k.starts_with("AWS_")).collect();
        credentials(url, &env)?;
        let mut builder = AmazonS3Builder::new();
        for (key, value) in &env {
            if let Ok(key) = key.to_ascii_lowercase().parse() {
                builder = builder.with_config(key, value);
            }
        }
        // A store that is down degrades an offload; the tool's caller waits for that, so the
        // retries are few and short (object_store's defaults wait up to three minutes).
        let retry = RetryConfig {
            max_retries: 2,
            retry_timeout: Duration::from_secs(10),
            ..RetryConfig::default()
        };
        let inner = builder
            .with_bucket_name(bucket)
            .with_retry(retry)
            .with_http_connector(Connector)
            .build()
            .map_err(|e| StoreError::Url(format!("--store {url}: {e}")))?;
        let (runtime, stop) = spawn_runtime().map_err(|e| StoreError::Unavailable {
            url: url.to_owned(),
            message: format!("starting its thread: {e}"),
        })?;
        Ok(Store {
            url: url.to_owned(),
            inner: Arc::new(inner),
            prefix: Key::from(prefix),
            runtime,
            stop: Some(stop),
            cache: Mutex::new(Cache::new(cache_bytes, cache_files)),
        })
    }

    /// The URL the store was made from.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Lists one key of the prefix: an error says why the store cannot be used (the bucket is
    /// missing, the credentials are refused, it cannot be reached).
    pub fn check(&self) -> Result<(), StoreError> {
        let (inner, prefix) = (self.inner.clone(), self.prefix.clone());
        self.run(async move {
            let mut listing = inner.list(Some(&prefix));
            listing.next().await.transpose().map(|_| ())
        })
    }

    /// Writes the local file `path` to the store as `scope/NAME` (multipart above
    /// [`PART_BYTES`]), and records it in the cache.
    pub fn put(&self, scope: &str, path: &Path) -> Result<(), StoreError> {
        let key = self.key(scope, path)?;
        let local = |e: std::io::Error| StoreError::Local {
            path: path.to_owned(),
            message: e.to_string(),
        };
        let mut file = std::fs::File::open(path).map_err(local)?;
        let size = file.metadata().map_err(local)?.len();
        let inner = self.inner.clone();
        if size <= PART_BYTES as u64 {
            let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
            file.read_to_end(&mut bytes).map_err(local)?;
            self.run(async move { inner.put(&key, PutPayload::from(bytes)).await.map(|_| ()) })?;
        } else {
            let read_path = path.to_owned();
            let outcome = self.run(async move {
                let upload = inner.put_multipart(&key).await?;
                let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_BYTES);
                let mut buffer = vec![0; PART_BYTES];
                // As in `fetch`: the disk's time off the store's thread.
                let mut file = tokio::fs::File::from_std(file);
                let written: object_store::Result<std::io::Result<()>> = async {
                    loop {
                        let n = match file.read(&mut buffer).await {
                            Ok(0) => return Ok(Ok(())),
                            Ok(n) => n,
                            Err(e) => return Ok(Err(e)),
                        };
                        writer.wait_for_capacity(2).await?;
                        writer.write(&buffer[..n]);
                    }
                }
                .await;
                // An upload left incomplete is kept (and billed) by S3 until a lifecycle rule
                // clears it: abort it on every way out but success (`finish` aborts its own).
                match written {
                    Ok(Ok(())) => writer.finish().await.map(|_| Ok(())),
                    Ok(Err(e)) => writer.abort().await.map(|()| Err(e)),
                    Err(e) => {
                        let _ = writer.abort().await;
                        Err(e)
                    }
                }
            })?;
            outcome.map_err(|e| StoreError::Local {
                path: read_path,
                message: e.to_string(),
            })?;
        }
        self.used(path, size);
        Ok(())
    }

    /// Makes sure the file `dir/name` is there, reading `scope/name` from the store when it is
    /// not: false when the store has no such object either. `prefix` is the offload files'
    /// (`config.prefix`), for the name of the partial file.
    pub fn fetch(&self, scope: &str, dir: &Path, name: &str, prefix: &str) -> Result<bool, StoreError> {
        let path = dir.join(name);
        if std::fs::metadata(&path).is_ok() {
            self.cache
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .touch(&path);
            return Ok(true);
        }
        let key = self.key(scope, &path)?;
        // Written as a temporary of the component's naming (`.{prefix}-{op}-{ULID}.jsonl.tmp`,
        // a fresh ULID, so two fetches at once never share one), then renamed into place: a
        // reader never sees half an object, no handle names it, the caps count it, and the
        // sweep deletes one left by a process that died while fetching.
        let partial = dir.join(format!(".{prefix}-fetch-{}.jsonl.tmp", ulid::Ulid::generate()));
        let inner = self.inner.clone();
        let target = partial.clone();
        let fetched = self.run(async move {
            let got = match inner.get(&key).await {
                Ok(got) => got,
                Err(object_store::Error::NotFound { .. }) => return Ok(Ok(None)),
                Err(e) => return Err(e),
            };
            let mut stream = got.into_stream();
            // tokio's file: the disk's time is not taken from the thread every store request
            // of the process runs on.
            let mut file = match private_file(&target) {
                Ok(file) => tokio::fs::File::from_std(file),
                Err(e) => return Ok(Err(e)),
            };
            let mut size = 0u64;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                size += chunk.len() as u64;
                if let Err(e) = file.write_all(&chunk).await {
                    return Ok(Err(e));
                }
            }
            // Written out before the rename puts it in place.
            if let Err(e) = file.flush().await {
                return Ok(Err(e));
            }
            Ok(Ok(Some(size)))
        });
        let outcome = match fetched {
            Ok(Ok(Some(size))) => std::fs::rename(&partial, &path).map(|()| Some(size)),
            Ok(Ok(None)) => Ok(None),
            Ok(Err(e)) => Err(e),
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                return Err(e);
            }
        };
        match outcome {
            Ok(Some(size)) => {
                self.used(&path, size);
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                Err(StoreError::Local {
                    path,
                    message: e.to_string(),
                })
            }
        }
    }

    /// Deletes `scope/NAME` for each of `paths`' file names, as far as it can (an offload whose
    /// write-through failed half way).
    pub fn delete(&self, scope: &str, paths: &[String]) {
        for path in paths {
            if let Ok(key) = self.key(scope, Path::new(path)) {
                let inner = self.inner.clone();
                let _ = self.run(async move { inner.delete(&key).await });
            }
        }
    }

    /// The offload objects under `scope`: each file name, its size in bytes, and when it was
    /// last modified (ms since the Unix epoch).
    pub fn list(&self, scope: &str) -> Result<Vec<(String, u64, u64)>, StoreError> {
        let (inner, prefix) = (self.inner.clone(), self.scope_key(scope));
        let scope_prefix = prefix.clone();
        let objects = self.run(async move {
            let mut objects = Vec::new();
            let mut listing = inner.list(Some(&prefix));
            while let Some(meta) = listing.next().await {
                // A key object_store cannot parse is no offload of ours: skipped.
                let Ok(meta) = meta else { continue };
                let Some(name) = meta
                    .location
                    .prefix_match(&scope_prefix)
                    .and_then(|mut parts| parts.next().filter(|_| parts.next().is_none()))
                else {
                    continue;
                };
                let modified = u64::try_from(meta.last_modified.timestamp_millis()).unwrap_or(0);
                objects.push((name.as_ref().to_owned(), meta.size, modified));
            }
            Ok(objects)
        })?;
        Ok(objects)
    }

    /// Deletes the offload objects `depth` folders below `scope` (0: the scope's own; 1 with
    /// scope `""`: every principal's, as `lro proxy --listen` keeps them) that have expired at
    /// `now_ms`, by the rule the sweep applies to local files
    /// ([`lro_core::custodian::stored_expiry`]): an object whose last modification plus
    /// `ttl_ms` is still ahead is not read at all; any other has its header read. Returns how
    /// many were deleted. Several replicas may sweep at once: deleting a missing key succeeds.
    pub fn sweep(&self, scope: &str, depth: usize, prefix: &str, ttl_ms: u64, now_ms: u64) -> Result<u32, StoreError> {
        let (inner, base) = (self.inner.clone(), self.scope_key(scope));
        let base_parts = base.parts().count();
        let (prefix, url) = (prefix.to_owned(), self.url.clone());
        self.run(async move {
            let mut listing = inner.list(Some(&base));
            let (mut candidates, mut listed, mut failed) = (Vec::new(), false, None);
            while let Some(meta) = listing.next().await {
                // One key object_store cannot parse (S3 allows `//`, `..`, control
                // characters), or one object that cannot be read, must not stop the sweep of
                // all the others: each is skipped and the last such error reported.
                let meta = match meta {
                    Ok(meta) => meta,
                    Err(e) => {
                        failed = Some(e);
                        continue;
                    }
                };
                listed = true;
                // Offloads lie exactly `depth` folders below the scope; anything deeper or
                // shallower is another writer's.
                if meta.location.parts().count() != base_parts + depth + 1 {
                    continue;
                }
                let modified = u64::try_from(meta.last_modified.timestamp_millis()).unwrap_or(0);
                if modified.saturating_add(ttl_ms) <= now_ms && meta.size > 0 {
                    candidates.push((meta.location, modified, meta.size));
                }
            }
            let mut deleted = 0;
            for (key, modified, size) in candidates {
                let Some(name) = key.filename().map(str::to_owned) else {
                    continue;
                };
                if lro_core::custodian::stored_expiry(&prefix, &name, b"", modified, ttl_ms).is_none() {
                    continue;
                }
                let head = match read_header(&*inner, &key, size).await {
                    Ok(head) => head,
                    Err(object_store::Error::NotFound { .. }) => continue,
                    Err(e) => {
                        failed = Some(e);
                        continue;
                    }
                };
                let expiry = lro_core::custodian::stored_expiry(&prefix, &name, &head, modified, ttl_ms);
                if expiry.is_some_and(|at| at <= now_ms) {
                    match inner.delete(&key).await {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => deleted += 1,
                        Err(e) => failed = Some(e),
                    }
                }
            }
            match failed {
                Some(e) if !listed => Err(e),
                Some(e) => {
                    eprintln!("lro: sweeping {url}: skipped an object: {}", describe(&e));
                    Ok(deleted)
                }
                None => Ok(deleted),
            }
        })
    }

    /// The key of `path`'s file name under `scope`.
    fn key(&self, scope: &str, path: &Path) -> Result<Key, StoreError> {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| StoreError::Local {
                path: path.to_owned(),
                message: "not a file name the store can hold".to_owned(),
            })?;
        Ok(self.scope_key(scope).join(name))
    }

    fn scope_key(&self, scope: &str) -> Key {
        scope
            .split('/')
            .filter(|p| !p.is_empty())
            .fold(self.prefix.clone(), |key, part| key.join(part))
    }

    fn used(&self, path: &Path, size: u64) {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .used(path, size);
    }

    /// Runs `request` on the store's thread and waits for it.
    fn run<T: Send + 'static>(
        &self,
        request: impl Future<Output = object_store::Result<T>> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (send, receive) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = send.send(request.await);
        });
        let unavailable = |message: String| StoreError::Unavailable {
            url: self.url.clone(),
            message,
        };
        match receive.recv() {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => {
                // The whole error (request URLs, the store's reply, which may name accounts)
                // is for the operator; a client is told what kind of failure it was.
                eprintln!("lro: the store {}: {}", self.url, describe(&e));
                Err(unavailable(category(&e).to_owned()))
            }
            Err(_) => Err(unavailable("its thread has stopped".to_owned())),
        }
    }
}

/// The first line of the object `key` (of `size` bytes), as far as the local sweep would read.
async fn read_header(store: &dyn ObjectStore, key: &Key, size: u64) -> object_store::Result<Vec<u8>> {
    let head = store.get_range(key, 0..HEAD_BYTES.min(size)).await?;
    if head.contains(&b'\n') || size <= HEAD_BYTES {
        return Ok(head.to_vec());
    }
    Ok(store.get_range(key, 0..MAX_HEADER_BYTES.min(size)).await?.to_vec())
}

/// An object_store error as one line: the request's error and what caused it, without the
/// retry machinery's repetition.
fn describe(error: &object_store::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// What kind of failure `error` was, in words a client may be shown.
fn category(error: &object_store::Error) -> &'static str {
    let text = describe(error);
    let has = |words: &[&str]| words.iter().any(|w| text.contains(w));
    if has(&["Connection refused", "tcp connect error", "dns error", "Connect"]) {
        "it could not be reached"
    } else if has(&["timed out", "Timeout", "deadline"]) {
        "it did not answer in time"
    } else if has(&[
        "AccessDenied",
        "Forbidden",
        "403",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
    ]) {
        "it refused the credentials"
    } else if has(&["NoSuchBucket"]) {
        "the bucket does not exist"
    } else {
        "a request to it failed"
    }
}

/// A new file only its owner can read, for a fetched object.
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// The bucket and prefix of `s3://BUCKET[/PREFIX]`.
fn parse_url(url: &str) -> Result<(String, String), StoreError> {
    let wrong = |why: &str| {
        StoreError::Url(format!(
            "--store {url}: {why}; expected s3://BUCKET or s3://BUCKET/PREFIX"
        ))
    };
    let rest = url.strip_prefix("s3://").ok_or_else(|| wrong("not an s3:// URL"))?;
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    // S3's bucket naming rules: 3 to 63 lowercase letters, digits, dots and hyphens.
    let valid = (3..=63).contains(&bucket.len())
        && bucket
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && bucket.starts_with(|c: char| c.is_ascii_alphanumeric())
        && bucket.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !valid {
        return Err(wrong(&format!(
            "the bucket name {bucket:?} is not a valid one (3 to 63 lowercase letters, digits, dots and hyphens)"
        )));
    }
    let parts: Vec<&str> = prefix.split('/').filter(|p| !p.is_empty()).collect();
    if parts
        .iter()
        .any(|p| *p == "." || *p == ".." || p.contains(['?', '#', '\\']))
    {
        return Err(wrong(&format!("the prefix {prefix:?} has a part a key cannot have")));
    }
    Ok((bucket.to_owned(), parts.join("/")))
}

/// Refuses an environment that gives no credentials: object_store would otherwise ask the
/// cloud's instance metadata service, and a store on another machine would answer every
/// request with an error only once the first tool result is offloaded.
fn credentials(url: &str, env: &HashMap<String, String>) -> Result<(), StoreError> {
    let set = |k: &str| env.get(k).is_some_and(|v| !v.is_empty());
    let missing = match (set("AWS_ACCESS_KEY_ID"), set("AWS_SECRET_ACCESS_KEY")) {
        (true, true) => return Ok(()),
        (true, false) => "AWS_SECRET_ACCESS_KEY is not set (AWS_ACCESS_KEY_ID is)",
        (false, true) => "AWS_ACCESS_KEY_ID is not set (AWS_SECRET_ACCESS_KEY is)",
        (false, false) => "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
    };
    let other = [
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ];
    if other.iter().any(|k| set(k)) || env.get("AWS_SKIP_SIGNATURE").is_some_and(|v| v == "true") {
        return Ok(());
    }
    Err(StoreError::Credentials(format!(
        "--store {url}: {missing} (or AWS_WEB_IDENTITY_TOKEN_FILE, or AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, or AWS_SKIP_SIGNATURE=true for a public bucket)"
    )))
}

/// A current-thread tokio runtime on a thread of its own, running until `stop` is sent or
/// dropped.
fn spawn_runtime() -> std::io::Result<(tokio::runtime::Handle, tokio::sync::oneshot::Sender<()>)> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let handle = runtime.handle().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("lro-store".to_owned())
        .spawn(move || {
            let _ = runtime.block_on(stopped);
        })?;
    Ok((handle, stop))
}

#[cfg(test)]
mod tests;
