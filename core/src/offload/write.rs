//! Writing offload files: within the storage caps, atomically, all or nothing.

use std::io;

use crate::{Config, Event, custodian};

/// The size of the file `header` and `lines` make.
pub(crate) fn file_size<'a>(header: &str, lines: impl Iterator<Item = &'a str>) -> u64 {
    lines.fold(header.len() as u64 + 1, |n, l| n + l.len() as u64 + 1)
}

/// One file to write: its name in the offload directory, its header line and its record lines.
pub(crate) struct Planned<'a, L> {
    pub name: &'a str,
    pub header: &'a str,
    pub lines: L,
}

/// Writes `files` (one result: all of them or none) into the offload directory, within the
/// storage caps; returns their sizes. On failure nothing of them is left behind, and the error
/// comes with the index of the file it concerns (0 for a cap or the directory).
///
/// Each file is written in full under a hidden temporary name first (a reservation that other
/// processes' cap checks count), then renamed into place, so a reader (or a sweep) never sees a
/// partial file; then the caps are checked again, counting these files, and if the directory is
/// over a cap they are deleted again and the write fails. `now_ms` is the files' creation time,
/// which decides which files have expired and may be evicted.
pub(crate) fn write_files<'a, L>(
    config: &Config,
    files: &[Planned<'_, L>],
    now_ms: u64,
    emit: &mut dyn FnMut(Event),
) -> Result<Vec<u64>, (usize, io::Error)>
where
    L: Iterator<Item = &'a str> + Clone,
{
    if let Some(problem) = &config.dir_problem {
        return Err((0, io::Error::other(problem.clone())));
    }
    let count = u32::try_from(files.len()).unwrap_or(u32::MAX);
    let bytes: u64 = files.iter().map(|f| file_size(f.header, f.lines.clone())).sum();
    // The cheap check first: a write that cannot fit is refused before any byte is written.
    custodian::make_room(config, count, bytes, &[], now_ms, emit).map_err(|e| (0, e))?;
    let dir = crate::sink::Dir::open(config.dir_base()).map_err(|e| (0, e))?;
    let mut temporaries = Vec::with_capacity(files.len());
    let mut sizes = Vec::with_capacity(files.len());
    let clean = |dir: &crate::sink::Dir, names: &[String]| names.iter().for_each(|n| dir.remove(n));
    for (i, file) in files.iter().enumerate() {
        let tmp = format!(".{}.tmp", file.name);
        match write_temporary(&dir, &tmp, file.header, file.lines.clone()) {
            Ok(size) => {
                temporaries.push(tmp);
                sizes.push(size);
            }
            Err(e) => {
                clean(&dir, &temporaries);
                return Err((i, e));
            }
        }
    }
    for (i, (file, tmp)) in files.iter().zip(&temporaries).enumerate() {
        // rename() replaces an existing file; a ULID clash is astronomically unlikely, but
        // refusing it keeps the no-lost-data promise unconditional.
        let renamed = if dir.exists(file.name) {
            Err(io::Error::new(io::ErrorKind::AlreadyExists, "the file name is taken"))
        } else {
            dir.rename(tmp, file.name)
        };
        if let Err(e) = renamed {
            files[..i].iter().for_each(|f| dir.remove(f.name));
            clean(&dir, &temporaries[i..]);
            return Err((i, e));
        }
    }
    // The caps are checked again once the files are in place. A listing made while another
    // process renames its file may miss it (POSIX leaves that open), but never misses a file
    // renamed before the listing began: of two writes that keep their files, the one whose
    // check began later has seen the other's. So the caps hold once the writes are done.
    let names: Vec<String> = files.iter().map(|f| f.name.to_owned()).collect();
    if let Err(e) = custodian::make_room(config, 0, 0, &names, now_ms, emit) {
        names.iter().for_each(|n| dir.remove(n));
        return Err((0, e));
    }
    Ok(sizes)
}

/// Writes header and lines to `tmp`, created new (never through a planted link); removes it
/// again on failure, whose error names the operating system's reason (disk full, read-only file
/// system, file too large, ...).
fn write_temporary<'a>(
    dir: &crate::sink::Dir,
    tmp: &str,
    header: &str,
    lines: impl Iterator<Item = &'a str> + Clone,
) -> io::Result<u64> {
    let mut file = dir.create(tmp)?;
    let written = write_lines(&mut file, header, lines);
    if written.is_err() {
        dir.remove(tmp);
    }
    written
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
        // Written before it would pass a chunk, so the buffer keeps its one allocation (a line
        // longer than a chunk grows it once).
        if buf.len() + line.len() + 1 > CHUNK && !buf.is_empty() {
            file.write_all(&buf)?;
            buf.clear();
        }
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
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
            let file = Planned {
                name,
                header: "{}",
                lines: lines(),
            };
            let (_, err) = write_files(&cfg, &[file], 0, &mut |_| {}).unwrap_err();
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
