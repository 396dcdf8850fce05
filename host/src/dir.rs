//! The offload directory: resolved, created private, checked and canonicalised before a call
//! mounts it; new files narrowed to their owner after.

use std::path::{Path, PathBuf};

use wasmtime_wasi::FsPerms;

use crate::{Config, Error};

/// How a call mounts its checked directory: the permissions, and which directory it is (a kept
/// instance holds its directory open, so one replaced at the same path must not reuse it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mount {
    /// Mounted without write access.
    pub read_only: bool,
    /// The directory's device and inode numbers when it was checked.
    pub identity: (u64, u64),
}

impl Mount {
    /// The permissions wasmtime-wasi mounts it with.
    pub fn perms(self) -> FsPerms {
        if self.read_only {
            FsPerms::ReadOnly
        } else {
            FsPerms::ReadWrite
        }
    }
}

/// [`prepare_dir`] for a call that writes: an unusable directory is not an error but a
/// `dir-problem` in the config, so the component degrades the result instead of failing it;
/// nothing is mounted then.
pub(crate) fn writable_dir(config: &Config) -> (Config, Option<Mount>) {
    match prepare_dir(config, true) {
        Ok((config, mount)) => (config, Some(mount)),
        Err(e) => {
            let problem = match e {
                Error::Directory { path, message } => format!("offload directory {}: {message}", path.display()),
                other => other.to_string(),
            };
            let config = Config {
                dir_problem: Some(problem),
                // The component checks that the path is absolute before it degrades.
                ..absolute_dir(config)
            };
            (config, None)
        }
    }
}

/// The directory used when `output_dir` is empty: `lro-{uid}` in `$TMPDIR`, or in `/tmp` when
/// that is unset or empty. The spec says the temporary directory itself; a private subdirectory
/// keeps the component's sandbox (which is exactly this directory) away from everyone else's
/// files. Every lro host resolves an empty `output_dir` to this same place (docs/HOSTS.md), by
/// this rule rather than its language's own idea of the temporary directory, which differ.
pub fn default_output_dir() -> PathBuf {
    let tmp = std::env::var_os("TMPDIR")
        .filter(|t| !t.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    tmp.join(format!("lro-{}", rustix::process::geteuid().as_raw()))
}

/// `output_dir` as given, or [`default_output_dir`] when it is empty.
fn resolved(output_dir: &str) -> PathBuf {
    if output_dir.is_empty() {
        default_output_dir()
    } else {
        PathBuf::from(output_dir)
    }
}

/// The config with `output_dir` absolute ([`default_output_dir`] when it is empty), for the
/// calls that check the config but open no file (`recipes`, `rewrite_tools`) and for a directory
/// found unusable: nothing is created or checked. A path that cannot be made absolute UTF-8
/// becomes `/`, which the component accepts and no call opens.
pub(crate) fn absolute_dir(config: &Config) -> Config {
    let output_dir = std::path::absolute(resolved(&config.output_dir))
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned))
        .filter(|d| d.starts_with('/'))
        .unwrap_or_else(|| "/".to_owned());
    Config {
        output_dir,
        ..config.clone()
    }
}

/// Makes `config.output_dir` (or [`default_output_dir`] when it is empty) an existing, absolute,
/// canonical directory that only this user can write to; returns the config with that path (so
/// descriptors carry real host paths) and how to mount it: read-only when its mode has no write
/// bit at all, so a directory made read-only is honoured even for root. A directory owned by
/// another user, or open to group or others in any way, is refused: another local user could
/// read what is offloaded there, open a file while it is being written, or plant files and
/// links in it.
pub(crate) fn prepare_dir(config: &Config, create: bool) -> Result<(Config, Mount), Error> {
    let given = resolved(&config.output_dir);
    let err = |message: String| Error::Directory {
        path: given.clone(),
        message,
    };
    let absolute = std::path::absolute(&given).map_err(|e| err(format!("cannot make it absolute: {e}")))?;
    if create && !absolute.exists() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&absolute)
            .map_err(|e| err(format!("cannot create it: {e}")))?;
    }
    let canonical = absolute.canonicalize().map_err(|e| err(format!("{e}")))?;
    let meta = std::fs::metadata(&canonical).map_err(|e| err(format!("{e}")))?;
    if !meta.is_dir() {
        return Err(err("not a directory".into()));
    }
    if let Some(problem) = not_private(&meta) {
        return Err(err(problem));
    }
    let dir = canonical
        .to_str()
        .ok_or_else(|| err("the path is not valid UTF-8".into()))?
        .to_owned();
    // wasmtime-wasi reports a write to a read-only file system as a bare I/O error: name it here.
    if create
        && rustix::fs::statvfs(&canonical).is_ok_and(|st| st.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY))
    {
        return Err(err("on a read-only file system".into()));
    }
    use std::os::unix::fs::MetadataExt;
    let mount = Mount {
        read_only: meta.permissions().readonly(),
        identity: (meta.dev(), meta.ino()),
    };
    Ok((
        Config {
            output_dir: dir,
            ..config.clone()
        },
        mount,
    ))
}

/// Why a directory is not this user's alone: owned by another user, or open to group or others
/// in any way (read, write or search): a file the component creates exists, under its
/// temporary name, with the mode the umask gives before the host narrows it to 0600, and in a
/// directory no one else can enter no one else can open it. The offload directory is checked
/// with it; the compiled-component cache with `writable_by_others` only (it holds no secrets).
pub(crate) fn not_private(meta: &std::fs::Metadata) -> Option<String> {
    not_owned(meta).or_else(|| {
        use std::os::unix::fs::MetadataExt;
        let mode = meta.mode();
        let (what, who) = match mode {
            _ if mode & 0o002 != 0 => ("writable", "everyone"),
            _ if mode & 0o020 != 0 => ("writable", "its group"),
            _ if mode & 0o004 != 0 => ("readable", "everyone"),
            _ if mode & 0o040 != 0 => ("readable", "its group"),
            _ if mode & 0o001 != 0 => ("searchable", "everyone"),
            _ if mode & 0o010 != 0 => ("searchable", "its group"),
            _ => return None,
        };
        Some(format!(
            "{what} by {who} (mode {:o}); refusing to use it: make it 0700",
            mode & 0o7777
        ))
    })
}

/// Why a directory others could plant files in is not safe to load compiled code from: owned
/// by another user, or writable by group or others.
pub(crate) fn writable_by_others(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    not_owned(meta).or_else(|| {
        let mode = meta.mode();
        (mode & 0o022 != 0).then(|| {
            let who = if mode & 0o002 != 0 { "everyone" } else { "its group" };
            format!(
                "writable by {who} (mode {:o}); refusing to use it: make it 0700",
                mode & 0o7777
            )
        })
    })
}

fn not_owned(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    (meta.uid() != me).then(|| {
        format!(
            "owned by uid {}, not by this user (uid {me}); refusing to use it",
            meta.uid()
        )
    })
}

/// WASI cannot set file modes, so the host narrows a new file to 0600 once it is renamed into
/// place. The change goes through a descriptor opened without following a symlink (and without
/// blocking on a FIFO), so a link planted at the name cannot redirect it to another file.
pub(crate) fn owner_only(path: &Path) {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let Ok(fd) = rustix::fs::open(path, flags, Mode::empty()) else {
        return;
    };
    if rustix::fs::fstat(&fd).is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_file()) {
        let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o600));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
    }

    /// A symlink planted at a new file's name is not followed: the file it points to keeps its
    /// mode. A FIFO is not opened for writing or waited on.
    #[test]
    fn narrowing_a_new_file_never_follows_a_link_or_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("victim");
        std::fs::write(&outside, "x").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).unwrap();
        let link = dir.path().join("atlatl-recall-01JDEF7X2K0000000000000000.jsonl");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        owner_only(&link);
        assert_eq!(mode(&outside), 0o644);

        let file = dir.path().join("atlatl-recall-01JDEF7X2K0000000000000001.jsonl");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        owner_only(&file);
        assert_eq!(mode(&file), 0o600);

        let fifo = dir.path().join("atlatl-recall-01JDEF7X2K0000000000000002.jsonl");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        owner_only(&fifo);
        assert_eq!(mode(&fifo), 0o644, "only regular files are narrowed");
    }
}
