//! Writing offload files: within the storage caps, atomically, all or nothing.

use std::io;

use crate::{Config, Event};

/// The size of the file `header` and `lines` make.
pub(crate) fn file_size<'a>(header: &str, lines: impl Iterator<Item = &'a str>) -> u64 {
    lines.fold(header.len() as u64 + 1, |n, l| n + l.len() as u64 + 1)
}

/// Checks that `files` new files of `bytes` in all may be written: the host found the directory
/// usable, and the storage caps leave room once the oldest files are evicted.
pub(crate) fn prepare_write(config: &Config, files: u32, bytes: u64, emit: &mut dyn FnMut(Event)) -> io::Result<()> {
    if let Some(problem) = &config.dir_problem {
        return Err(io::Error::other(problem.clone()));
    }
    crate::custodian::make_room(config, files, bytes, emit)
}

/// Writes header and lines to a hidden temporary name, then renames it into place, so a reader
/// (or a sweep) never sees a partial file. Returns the file size. Used for every offload file.
/// On failure nothing is left behind, and the error names the operating system's reason (disk
/// full, read-only file system, file too large, ...).
pub(crate) fn write_atomically<'a>(
    config: &Config,
    name: &str,
    header: &str,
    lines: impl Iterator<Item = &'a str> + Clone,
) -> io::Result<u64> {
    let base = config.dir_base();
    let tmp = format!(".{name}.tmp");
    let mut file = crate::sink::Dir::open(base)?.create(&tmp)?;
    let result = write_lines(&mut file, header, lines).and_then(|bytes| {
        // rename() replaces an existing file; a ULID clash is astronomically unlikely, but
        // refusing it keeps the no-lost-data promise unconditional.
        if file.dir().exists(name) {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "the file name is taken"));
        }
        file.dir().rename(&tmp, name)?;
        Ok(bytes)
    });
    if result.is_err() {
        file.dir().remove(&tmp);
    }
    result
}

/// Writes the file's text in chunks of at most about 1 MiB; returns its size. Each write is a
/// WASI call, and in the hosts built on wasmtime's C API (Python) every WASI call is handed to
/// a thread pool and back (about 0.1 ms here), so chunks are large: one write up to 1 MiB (500
/// full-detail records), about 37 at 50,000 records instead of 147 with 256 KiB chunks. The buffer
/// is only as large as the file when the file is smaller, so small calls need no more memory.
fn write_lines<'a>(
    file: &mut crate::sink::File,
    header: &str,
    lines: impl Iterator<Item = &'a str> + Clone,
) -> io::Result<u64> {
    const CHUNK: usize = 1024 * 1024;
    let bytes = file_size(header, lines.clone());
    let mut buf = Vec::with_capacity(usize::try_from(bytes).map_or(CHUNK, |b| b.min(CHUNK)));
    buf.extend_from_slice(header.as_bytes());
    buf.push(b'\n');
    for line in lines {
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        if buf.len() >= CHUNK {
            file.write_all(&buf)?;
            buf.clear();
        }
    }
    file.write_all(&buf)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::offload::tests::config;

    /// A symlink or directory planted at the name a file is about to take, or at its temporary
    /// name, is never replaced or written through, and nothing is left behind.
    #[test]
    fn a_link_or_directory_planted_at_the_name_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path(), 10);
        let outside = dir.path().join("outside");
        fs::write(&outside, "keep").unwrap();
        let name = "atlatl-recall-01JDEF7X2K0000000000000000.jsonl";
        let plant = |at: &str, link: bool| {
            let path = dir.path().join(at);
            if link {
                std::os::unix::fs::symlink(&outside, &path).unwrap();
            } else {
                fs::create_dir(&path).unwrap();
            }
            path
        };
        let lines = || ["{\"id\":\"a\"}"].into_iter();
        for (at, link) in [
            (name.to_owned(), true),
            (name.to_owned(), false),
            (format!(".{name}.tmp"), true),
        ] {
            let planted = plant(&at, link);
            let err = write_atomically(&cfg, name, "{}", lines()).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::AlreadyExists, "{at}: {err}");
            assert_eq!(fs::read_to_string(&outside).unwrap(), "keep");
            let mut left: Vec<String> = fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            left.sort();
            let mut expected = vec![at.clone(), "outside".to_owned()];
            expected.sort();
            assert_eq!(left, expected, "only what was planted is there");
            if link {
                fs::remove_file(&planted).unwrap();
            } else {
                fs::remove_dir(&planted).unwrap();
            }
        }
    }
}
