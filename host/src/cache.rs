//! Keeps the compiled component on disk between processes: compiling takes about a second,
//! loading a precompiled artifact well under a millisecond.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::Error;

/// Loads the component for `engine`, through the cache in `dir` when one is usable.
pub(crate) fn load(engine: &Engine, bytes: &[u8], dir: Option<&Path>) -> Result<Component, Error> {
    let compile = || Component::new(engine, bytes).map_err(|e| Error::Load(format!("{e:#}")));
    let Some(dir) = dir.filter(|d| private_dir(d)) else {
        return compile();
    };

    // Artifacts load only into an engine with the same settings and wasmtime version.
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let path = dir.join(format!("lro-{:016x}.cwasm", hasher.finish()));

    if path.is_file() {
        // SAFETY: deserialising trusts the file to be wasmtime's own output. It sits in a
        // directory only this user can write (checked by `private_dir`) under a name derived
        // from the component and engine, and was renamed into place only once fully written.
        if let Ok(component) = unsafe { Component::deserialize_file(engine, &path) } {
            return Ok(component);
        }
    }
    let Ok(compiled) = engine.precompile_component(bytes) else {
        return compile();
    };
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("lro"),
        std::process::id()
    ));
    if std::fs::write(&tmp, &compiled)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .is_err()
    {
        let _ = std::fs::remove_file(&tmp);
    }
    // SAFETY: `compiled` was produced by this engine a moment ago.
    unsafe { Component::deserialize(engine, &compiled) }.or_else(|_| compile())
}

/// Creates `dir` (mode 0700) if needed; true only if it is a directory this user owns and no
/// one else can write to.
fn private_dir(dir: &Path) -> bool {
    if !dir.exists()
        && std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .is_err()
    {
        return false;
    }
    let Ok(meta) = std::fs::metadata(dir) else { return false };
    meta.is_dir() && crate::dir::writable_by_others(&meta).is_none()
}
