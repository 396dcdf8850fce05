//! Where offload files are written and listed: `std::fs` in an ordinary build; in the component,
//! `wasi:filesystem` descriptors directly. wasi-libc turns every failed stream write into a bare
//! EIO ("I/O error") while a descriptor write returns the real error code, and its `readdir`
//! costs an extra metadata call per entry.

pub(crate) use imp::{Dir, File};

#[cfg(not(all(target_os = "wasi", target_env = "p2")))]
mod imp {
    use std::fs::{self, OpenOptions};
    use std::io::{self, Write};

    pub(crate) struct Dir(String);
    pub(crate) struct File(fs::File);

    impl Dir {
        pub(crate) fn open(base: &str) -> io::Result<Dir> {
            Ok(Dir(base.to_owned()))
        }
        fn path(&self, name: &str) -> String {
            format!("{}/{name}", self.0)
        }
        pub(crate) fn create(&self, name: &str) -> io::Result<File> {
            use std::os::unix::fs::OpenOptionsExt;
            // Owner-only from the first byte, as the hosts narrow the component's files after.
            let file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(self.path(name))?;
            Ok(File(file))
        }
        pub(crate) fn exists(&self, name: &str) -> bool {
            fs::symlink_metadata(self.path(name)).is_ok()
        }
        pub(crate) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
            fs::rename(self.path(from), self.path(to))
        }
        pub(crate) fn remove(&self, name: &str) {
            let _ = fs::remove_file(self.path(name));
        }
        pub(crate) fn regular_files<T>(
            &self,
            keep: &dyn Fn(&str) -> Option<T>,
            sizes: bool,
        ) -> io::Result<Vec<(T, String, u64)>> {
            let mut files = Vec::new();
            for entry in fs::read_dir(&self.0)? {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                };
                let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                    continue;
                };
                let Some(kept) = keep(&name) else {
                    continue;
                };
                match entry.metadata() {
                    Ok(meta) if meta.is_file() => files.push((kept, name, if sizes { meta.len() } else { 0 })),
                    _ => {}
                }
            }
            Ok(files)
        }
    }

    impl File {
        pub(crate) fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
            self.0.write_all(buf)
        }
    }
}

#[cfg(all(target_os = "wasi", target_env = "p2"))]
mod imp {
    use std::io;

    use wasip2::filesystem::preopens;
    use wasip2::filesystem::types::{Descriptor, DescriptorFlags, DescriptorType, ErrorCode, OpenFlags, PathFlags};

    pub(crate) struct Dir(Descriptor);
    pub(crate) struct File {
        file: Descriptor,
        offset: u64,
    }

    impl Dir {
        /// The preopened directory mounted at `base`: the host mounts the offload directory at
        /// its own absolute path.
        pub(crate) fn open(base: &str) -> io::Result<Dir> {
            preopens::get_directories()
                .into_iter()
                .find(|(_, path)| path.trim_end_matches('/') == base)
                .map(|(dir, _)| Dir(dir))
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::NotFound,
                        "the offload directory is not open to the component",
                    )
                })
        }
        pub(crate) fn create(&self, name: &str) -> io::Result<File> {
            let file = self
                .0
                .open_at(
                    PathFlags::empty(),
                    name,
                    OpenFlags::CREATE | OpenFlags::EXCLUSIVE,
                    DescriptorFlags::WRITE,
                )
                .map_err(error)?;
            Ok(File { file, offset: 0 })
        }
        pub(crate) fn exists(&self, name: &str) -> bool {
            self.0.stat_at(PathFlags::empty(), name).is_ok()
        }
        pub(crate) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
            self.0.rename_at(from, &self.0, to).map_err(error)
        }
        pub(crate) fn remove(&self, name: &str) {
            let _ = self.0.unlink_file_at(name);
        }
        /// One `read-directory` entry per file (name and type, no metadata), and one `stat-at`
        /// per kept regular file only when `sizes` are wanted (0 otherwise): wasi-libc's
        /// `readdir` adds a `metadata-hash-at` for every entry, and each WASI call costs
        /// microseconds.
        pub(crate) fn regular_files<T>(
            &self,
            keep: &dyn Fn(&str) -> Option<T>,
            sizes: bool,
        ) -> io::Result<Vec<(T, String, u64)>> {
            // The preopen is read directly: each WASI call is a thread hand-off in the hosts
            // built on wasmtime's C API (Python), so opening it again first, as wasi-libc does,
            // would cost one more. A host that cannot read a preopen itself (jco's
            // preview2-shim answers "bad-descriptor") gets it opened again, as wasi-libc would.
            let reopened;
            let (dir, entries) = match self.0.read_directory() {
                Ok(entries) => (&self.0, entries),
                Err(_) => {
                    reopened = self
                        .0
                        .open_at(PathFlags::empty(), ".", OpenFlags::DIRECTORY, DescriptorFlags::READ)
                        .map_err(error)?;
                    (&reopened, reopened.read_directory().map_err(error)?)
                }
            };
            let mut files = Vec::new();
            loop {
                let entry = match entries.read_directory_entry() {
                    Ok(Some(entry)) => entry,
                    Ok(None) => break,
                    // An entry renamed or deleted by another writer while the directory was being
                    // read: the listing goes on with the next one.
                    Err(ErrorCode::NoEntry) => continue,
                    Err(e) => return Err(error(e)),
                };
                if entry.type_ != DescriptorType::RegularFile {
                    continue;
                }
                let Some(kept) = keep(&entry.name) else {
                    continue;
                };
                if !sizes {
                    files.push((kept, entry.name, 0));
                    continue;
                }
                match dir.stat_at(PathFlags::empty(), &entry.name) {
                    Ok(stat) if stat.type_ == DescriptorType::RegularFile => files.push((kept, entry.name, stat.size)),
                    // Renamed or deleted by another writer since it was listed.
                    Ok(_) | Err(ErrorCode::NoEntry) => {}
                    Err(e) => return Err(error(e)),
                }
            }
            Ok(files)
        }
    }

    impl File {
        pub(crate) fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
            while !buf.is_empty() {
                let n = self.file.write(buf, self.offset).map_err(error)?;
                if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "the file system wrote nothing",
                    ));
                }
                let n = usize::try_from(n).unwrap_or(buf.len()).min(buf.len());
                self.offset += n as u64;
                buf = &buf[n..];
            }
            Ok(())
        }
    }

    /// The error code as the operating system would name it.
    fn error(code: ErrorCode) -> io::Error {
        use io::ErrorKind as K;
        let (kind, text) = match code {
            ErrorCode::InsufficientSpace => (K::StorageFull, "no space left on device"),
            ErrorCode::ReadOnly => (K::ReadOnlyFilesystem, "read-only file system"),
            ErrorCode::FileTooLarge => (K::FileTooLarge, "file too large"),
            ErrorCode::Quota => (K::QuotaExceeded, "disk quota exceeded"),
            ErrorCode::Exist => (K::AlreadyExists, "file exists"),
            ErrorCode::NoEntry => (K::NotFound, "no such file or directory"),
            ErrorCode::Access => (K::PermissionDenied, "permission denied"),
            ErrorCode::NotPermitted => (K::PermissionDenied, "operation not permitted"),
            ErrorCode::Io => (K::Other, "input/output error"),
            other => return io::Error::other(format!("{other:?}")),
        };
        io::Error::new(kind, text)
    }
}
