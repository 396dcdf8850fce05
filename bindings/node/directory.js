// The offload directory, as docs/HOSTS.md asks every host to treat it: the default directory
// when none is given, checked, created private, canonicalised (host duty 1), and new files
// narrowed to 0600 (host duty 4).
import {
  accessSync, closeSync, constants, existsSync, fchmodSync, fstatSync, mkdirSync, openSync, realpathSync, statSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { getSystemErrorMap } from 'node:util';
import { LroError } from './convert.js';

/**
 * The directory an empty or omitted `output_dir` means: `lro-{effective uid}` in `$TMPDIR`, or in
 * `/tmp` when that is unset or empty, as every lro host resolves it (docs/HOSTS.md); not
 * `os.tmpdir()`, which also reads TMP and TEMP. It is then prepared like any other.
 */
export function defaultOutputDir() {
  return join(process.env.TMPDIR || '/tmp', `lro-${process.geteuid()}`);
}

/** A caller's `output_dir` made absolute: "" is the default directory. */
export function absoluteDir(given) {
  return given === '' ? defaultOutputDir() : resolve(given);
}

/** An OS error as Rust's io::Error prints it ("No such file or directory (os error 2)"), so the
 * three hosts word directory problems alike (they can reach the shared cases' expected files). */
export function osError(e) {
  const text = typeof e?.errno === 'number' ? getSystemErrorMap().get(e.errno)?.[1] : undefined;
  return text ? `${text[0].toUpperCase()}${text.slice(1)} (os error ${-e.errno})` : `${e?.message ?? e}`;
}

/**
 * Makes `output_dir` (as the caller gave it; "" is the default directory) an existing, canonical
 * directory that only this user can write to (docs/HOSTS.md, host duty 1), or throws an LroError of kind `directory` saying why it cannot
 * be used. Returns the path and whether its mode has any write bit (without one it is preopened
 * read-only, even for root). `create`: make it 0700 when missing (offload and intercept).
 *
 * A directory owned by another user, or open to group or others in any way (read, write or
 * search), is refused: another local user could read what is offloaded there, open a file while
 * it is being written, or plant files and links in it. The messages are the Rust host's
 * (host/src/dir.rs, `prepare_dir`).
 */
export function prepareDir(given, create) {
  const absolute = absoluteDir(given);
  const fail = (reason) => new LroError('directory', `offload directory ${given === '' ? absolute : given}: ${reason}`);
  if (create && !existsSync(absolute)) {
    try {
      mkdirSync(absolute, { recursive: true, mode: 0o700 });
    } catch (e) {
      throw fail(`cannot create it: ${osError(e)}`);
    }
  }
  let canonical, stat;
  try {
    canonical = realpathSync(absolute);
    stat = statSync(canonical);
  } catch (e) {
    throw fail(osError(e));
  }
  if (!stat.isDirectory()) throw fail('not a directory');
  const me = process.geteuid();
  if (stat.uid !== me) throw fail(`owned by uid ${stat.uid}, not by this user (uid ${me}); refusing to use it`);
  const open = notPrivateMode(stat.mode);
  if (open) throw fail(open);
  // The shim never opens a preopen (it joins the guest's paths onto it), so a directory that
  // cannot be opened would show up later as a failed read or write: find out here, as the Rust
  // host does when it preopens.
  try {
    closeSync(openSync(canonical, constants.O_RDONLY | constants.O_DIRECTORY));
  } catch (e) {
    throw fail(`cannot open it: ${osError(e)}`);
  }
  // A write to a read-only file system would reach the guest as a bare I/O error: name it here.
  // access(W_OK) reports EROFS even for root, for whom a mode without write bits is no barrier.
  if (create) {
    try {
      accessSync(canonical, constants.W_OK);
    } catch (e) {
      if (e.code === 'EROFS') throw fail('on a read-only file system');
    }
  }
  return { dir: canonical, writable: (stat.mode & 0o222) !== 0 };
}

/**
 * Why a directory of mode `mode` is open to group or others (the most open access first), or
 * undefined. A file the component creates is 0600 from the start here (wasi.js), but in the other
 * hosts it has the umask's mode until narrowed; in a directory no one else can enter, no one else
 * can open it either way.
 */
export function notPrivateMode(mode) {
  const kinds = [
    [0o002, 'writable', 'everyone'], [0o020, 'writable', 'its group'],
    [0o004, 'readable', 'everyone'], [0o040, 'readable', 'its group'],
    [0o001, 'searchable', 'everyone'], [0o010, 'searchable', 'its group'],
  ];
  const found = kinds.find(([bit]) => mode & bit);
  if (!found) return undefined;
  return `${found[1]} by ${found[2]} (mode ${(mode & 0o7777).toString(8)}); refusing to use it: make it 0700`;
}

/**
 * WASI cannot set modes: a file the call created is narrowed to 0600 (host duty 4). Through a
 * descriptor opened without following a symlink (a link planted at the name must not redirect
 * the chmod to a file outside) and without blocking (a FIFO planted there must not hang us).
 */
export function ownerOnly(paths) {
  for (const path of paths) {
    let fd;
    try {
      fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch {
      continue; // gone already (swept), or replaced by a link: nothing of ours to protect
    }
    try {
      if (fstatSync(fd).isFile()) fchmodSync(fd, 0o600);
    } catch {
      // As the Rust host: a file we cannot narrow is left as the umask made it; the call's
      // result is still right.
    } finally {
      closeSync(fd);
    }
  }
}
