// The WASI 0.2 imports of one instance, made for it alone: the offload directory (if any)
// preopened at its own path, read-only when its calls must not write, the guest's stdout
// discarded and its stderr kept for a call's error, clocks and random. Everything runs on
// the calling thread with node:fs's synchronous calls: nothing is shared with another instance
// or with the program around it (no global of the preview2-shim is read or patched, no
// process.stdout is touched, no thread is started).
//
//   const wasi = sandbox({ dir: '/tmp/lro-1000', readOnly: false });
//   instantiate(getCoreModule, { ...wasi.imports, ...others });
//   ... a call ... wasi.stderr() ... wasi.endCall(); ... the next call ... wasi.close();
//
// Only what the lro component imports is implemented (gen/component.js lists it); the rules
// are wasmtime's where the component can tell them apart, and the preview2-shim's (0.26, which
// the lro component was run on before) otherwise:
// - a path is resolved inside its directory segment by segment, as the shim resolves it: `..`
//   above the directory, an absolute path or an absolute symlink target is `not-permitted`, a
//   relative symlink is followed within the directory (at most 40);
// - a read-only preopen refuses every write, and every open that creates, truncates or writes,
//   with `not-permitted`, as wasmtime's FsPerms::ReadOnly does;
// - files are opened O_NONBLOCK, so a FIFO planted under an LRO name cannot block the thread
//   (regular files and directories ignore the flag);
// - every descriptor a call opens is closed when the call ends, whatever the guest dropped
//   (the preopen stays: it is a path, resolved again on every use, so a directory replaced at
//   that path between two calls is the one the next call writes into).
import {
  closeSync, constants, fstatSync, lstatSync, opendirSync, openSync, readlinkSync, readSync, renameSync, statSync,
  unlinkSync, writeSync,
} from 'node:fs';
import { randomBytes, randomFillSync } from 'node:crypto';
import { join, relative, sep } from 'node:path';
import { hrtime } from 'node:process';

const symbolDispose = Symbol.dispose || Symbol.for('dispose');
const MAX_SYMLINKS = 40;
/** The most a stream read returns at once, whatever length the guest asks for. */
const READ_CHUNK = 1 << 20;
/** What check-write permits at once. */
const WRITE_BUDGET = 1n << 20n;
/** The most of the guest's stderr kept for an error message. */
const STDERR_CAP = 64 * 1024;

/** A node:fs error as a WASI error-code, as the shim maps it (its convertFsError). */
const CODES = {
  EACCES: 'access', EAGAIN: 'would-block', EWOULDBLOCK: 'would-block', EALREADY: 'already', EBADF: 'bad-descriptor',
  EBUSY: 'busy', EDEADLK: 'deadlock', EDQUOT: 'quota', EEXIST: 'exist', EFBIG: 'file-too-large',
  EILSEQ: 'illegal-byte-sequence', EINPROGRESS: 'in-progress', EINTR: 'interrupted', EINVAL: 'invalid', EIO: 'io',
  EISDIR: 'is-directory', ELOOP: 'loop', EMLINK: 'too-many-links', EMSGSIZE: 'message-size',
  ENAMETOOLONG: 'name-too-long', ENODEV: 'no-device', ENOENT: 'no-entry', ENOLCK: 'no-lock',
  ENOMEM: 'insufficient-memory', ENOSPC: 'insufficient-space', ENOTDIR: 'not-directory',
  ERR_FS_EISDIR: 'not-directory', ENOTEMPTY: 'not-empty', ENOTRECOVERABLE: 'not-recoverable',
  ENOTSUP: 'unsupported', ENOTTY: 'no-tty', ENXIO: 'no-such-device', EOVERFLOW: 'overflow', EPERM: 'not-permitted',
  EPIPE: 'pipe', EROFS: 'read-only', ESPIPE: 'invalid-seek', ETXTBSY: 'text-file-busy', EXDEV: 'cross-device',
};
function fsError(e) {
  const code = CODES[e?.code];
  if (code) return code;
  throw e; // not an OS error: a host bug, which the call reports as such
}

function lookupType(stats) {
  if (stats.isFile()) return 'regular-file';
  if (stats.isSocket()) return 'socket';
  if (stats.isSymbolicLink()) return 'symbolic-link';
  if (stats.isFIFO()) return 'fifo';
  if (stats.isDirectory()) return 'directory';
  if (stats.isCharacterDevice()) return 'character-device';
  if (stats.isBlockDevice()) return 'block-device';
  return 'unknown';
}

const NS = 1_000_000_000n;
const datetime = (ns) => ({ seconds: ns / NS, nanoseconds: Number(ns % NS) });
function stat(stats) {
  return {
    type: lookupType(stats),
    linkCount: stats.nlink,
    size: stats.size,
    dataAccessTimestamp: datetime(stats.atimeNs),
    dataModificationTimestamp: datetime(stats.mtimeNs),
    statusChangeTimestamp: datetime(stats.ctimeNs),
  };
}

/** wasi:io/error's error: what a stream's last-operation-failed carries. */
class IoError {
  #message;
  constructor(message) { this.#message = message; }
  toDebugString() { return this.#message; }
}
const failed = (e) => ({ tag: 'last-operation-failed', val: new IoError(`${e?.message ?? e}`) });

/** Nothing here ever waits: every pollable is ready. */
class Pollable {
  ready() { return true; }
  block() {}
}

/** An open file shared by its descriptor and its streams; the fd closes with the last of them. */
class Handle {
  constructor(box, fd, type) {
    this.box = box;
    this.fd = fd;
    this.type = type;
    this.refs = 1;
    box.handles.add(this);
  }
  retain() { this.refs++; return this; }
  release() {
    if (--this.refs === 0) this.close();
  }
  close() {
    if (this.fd === null) return;
    this.box.handles.delete(this);
    try { closeSync(this.fd); } catch { /* already gone */ }
    this.fd = null;
  }
  /** Where a positional read or write goes: pipes and the like have no position. */
  at(position) { return this.type === 'regular-file' ? position : null; }
}

class InputStream {
  #handle;
  #position;
  constructor(handle, position) {
    this.#handle = handle;
    this.#position = position;
  }
  read(len) {
    const handle = this.#handle;
    if (!handle || handle.fd === null) throw { tag: 'closed' };
    const buffer = Buffer.allocUnsafe(Math.min(Number(len), READ_CHUNK));
    if (buffer.length === 0) return new Uint8Array(0);
    let n;
    try {
      n = readSync(handle.fd, buffer, 0, buffer.length, handle.at(this.#position));
    } catch (e) {
      if (e.code === 'EAGAIN') return new Uint8Array(0);
      throw failed(e);
    }
    if (n === 0) throw { tag: 'closed' };
    this.#position += n;
    return new Uint8Array(buffer.buffer, buffer.byteOffset, n);
  }
  blockingRead(len) { return this.read(len); }
  skip(len) { return BigInt(this.read(len).length); }
  blockingSkip(len) { return this.skip(len); }
  subscribe() { return new Pollable(); }
  [symbolDispose]() {
    this.#handle?.release();
    this.#handle = null;
  }
}

class OutputStream {
  #sink;
  #dispose;
  /** sink(bytes) takes all the bytes or throws; dispose() runs when the guest drops the stream. */
  constructor(sink, dispose = () => {}) {
    this.#sink = sink;
    this.#dispose = dispose;
  }
  checkWrite() { return WRITE_BUDGET; }
  write(bytes) {
    if (!this.#sink) throw { tag: 'closed' };
    try {
      this.#sink(bytes);
    } catch (e) {
      throw failed(e);
    }
  }
  blockingWriteAndFlush(bytes) { this.write(bytes); }
  flush() {}
  blockingFlush() {}
  subscribe() { return new Pollable(); }
  [symbolDispose]() {
    const dispose = this.#dispose;
    this.#sink = null;
    this.#dispose = null;
    dispose?.();
  }
}

/** Writes all of `bytes` to a handle from `position` (null: the file's own offset); returns the count. */
function writeAll(handle, bytes, position) {
  let done = 0;
  while (done < bytes.length) {
    done += writeSync(handle.fd, bytes, done, bytes.length - done, position === null ? null : position + done);
  }
  return done;
}

class DirectoryEntryStream {
  #dir;
  #box;
  constructor(box, dir) {
    this.#box = box;
    this.#dir = dir;
    box.dirs.add(dir);
  }
  readDirectoryEntry() {
    if (!this.#dir) return undefined;
    let entry;
    try {
      entry = this.#dir.readSync();
    } catch (e) {
      throw fsError(e);
    }
    if (entry === null) {
      this[symbolDispose]();
      return undefined;
    }
    return { name: entry.name, type: lookupType(entry) };
  }
  [symbolDispose]() {
    const dir = this.#dir;
    if (!dir) return;
    this.#dir = null;
    this.#box.dirs.delete(dir);
    try { dir.closeSync(); } catch { /* already closed */ }
  }
}

class Descriptor {
  #box;
  #handle; // null for the preopen
  #path; // the host path: the preopen's directory, or the file opened
  #flags;

  constructor(box, handle, path, flags) {
    this.#box = box;
    this.#handle = handle;
    this.#path = path;
    this.#flags = flags;
  }

  #writable() {
    if (this.#box.readOnly) throw 'not-permitted';
  }

  #file() {
    if (!this.#handle || this.#handle.fd === null) throw 'bad-descriptor';
    return this.#handle;
  }

  /**
   * A guest path under this directory as a host path: the shim's resolution (its #getFullPath),
   * segment by segment, following relative symlinks inside the directory only.
   */
  #resolve(subpath, followFinal) {
    subpath = subpath.replace(/\/\/+/g, '/');
    if (subpath.startsWith('/')) throw 'not-permitted';
    const trailingSlash = subpath.endsWith('/');
    const segments = [];
    for (const segment of subpath.split('/')) {
      if (segment === '' || segment === '.') continue;
      if (segment === '..') {
        if (segments.pop() === undefined) throw 'not-permitted';
      } else {
        segments.push(segment);
      }
    }
    // The shim canonicalised the directory again on every call; its path here is canonical
    // already (lro.js preopens the canonical path; a directory opened inside was resolved by
    // this function), and is not re-resolved while the call runs.
    const base = this.#path;
    let current = base;
    let pending = segments;
    let followed = 0;
    while (pending.length > 0) {
      const segment = pending.shift();
      const candidate = join(current, segment);
      let stats;
      try {
        stats = lstatSync(candidate);
      } catch (e) {
        if (e.code === 'ENOENT') {
          const unresolved = join(candidate, ...pending);
          return trailingSlash ? `${unresolved}/` : unresolved;
        }
        throw fsError(e);
      }
      const final = pending.length === 0;
      if (!stats.isSymbolicLink() || (final && !followFinal && !trailingSlash)) {
        current = candidate;
        continue;
      }
      if (++followed > MAX_SYMLINKS) throw 'loop';
      let target;
      try {
        target = readlinkSync(candidate);
      } catch (e) {
        throw fsError(e);
      }
      if (target.startsWith('/')) throw 'not-permitted';
      const rel = relative(base, current);
      const resolved = rel ? rel.split(sep) : [];
      for (const part of target.split('/')) {
        if (part === '' || part === '.') continue;
        if (part === '..') {
          if (resolved.pop() === undefined) throw 'not-permitted';
        } else {
          resolved.push(part);
        }
      }
      pending = [...resolved, ...pending];
      current = base;
    }
    return trailingSlash && current !== base ? `${current}/` : current;
  }

  openAt(pathFlags, path, openFlags, flags) {
    // wasmtime refuses create, exclusive, truncate and write on a read-only preopen.
    if (this.#box.readOnly && (openFlags.create || openFlags.exclusive || openFlags.truncate || flags.write)) {
      throw 'not-permitted';
    }
    const full = this.#resolve(path, pathFlags.symlinkFollow);
    let mode = constants.O_NONBLOCK;
    if (openFlags.create) mode |= constants.O_CREAT;
    if (openFlags.directory) mode |= constants.O_DIRECTORY;
    if (openFlags.exclusive) mode |= constants.O_EXCL;
    if (openFlags.truncate) mode |= constants.O_TRUNC;
    if (flags.read && flags.write) mode |= constants.O_RDWR;
    else if (flags.write) mode |= constants.O_WRONLY;
    else mode |= constants.O_RDONLY;
    if (!pathFlags.symlinkFollow) mode |= constants.O_NOFOLLOW;
    // As wasmtime (and the shim): no synchronous-write modes. `mutateDirectory` is ignored, as
    // wasmtime ignores it (wasi-libc sets it on every directory open).
    if (flags.requestedWriteSync || flags.fileIntegritySync || flags.dataIntegritySync) throw 'unsupported';
    let fd;
    try {
      // Owner-only from the first byte: the component's files are never group- or
      // other-accessible, whatever the umask (docs/SECURITY.md).
      fd = openSync(full.endsWith('/') ? full.slice(0, -1) : full, mode, 0o600);
    } catch (e) {
      if (e.code === 'ERR_INVALID_ARG_VALUE') throw 'invalid'; // a NUL in the path
      throw fsError(e);
    }
    let type;
    try {
      type = lookupType(fstatSync(fd));
    } catch (e) {
      closeSync(fd);
      throw fsError(e);
    }
    if ((type === 'directory' && flags.write) || (full.endsWith('/') && type !== 'directory')) {
      closeSync(fd);
      throw type === 'directory' ? 'is-directory' : 'not-directory';
    }
    return new Descriptor(this.#box, new Handle(this.#box, fd, type), full, flags);
  }

  readViaStream(offset) {
    if (!this.#handle) throw 'is-directory';
    return new InputStream(this.#file().retain(), Number(offset));
  }

  writeViaStream(offset) {
    this.#writable();
    if (!this.#handle) throw 'is-directory';
    const handle = this.#file().retain();
    let position = Number(offset);
    return new OutputStream((bytes) => {
      if (handle.fd === null) throw new Error('the file was closed');
      position += writeAll(handle, bytes, handle.at(position));
    }, () => handle.release());
  }

  appendViaStream() {
    this.#writable();
    return this.writeViaStream(this.stat().size);
  }

  write(buffer, offset) {
    this.#writable();
    const handle = this.#file();
    try {
      return BigInt(writeAll(handle, buffer, handle.at(Number(offset))));
    } catch (e) {
      throw fsError(e);
    }
  }

  read(length, offset) {
    const handle = this.#file();
    const buffer = Buffer.allocUnsafe(Math.min(Number(length), READ_CHUNK));
    let n;
    try {
      n = readSync(handle.fd, buffer, 0, buffer.length, handle.at(Number(offset)));
    } catch (e) {
      throw fsError(e);
    }
    return [new Uint8Array(buffer.buffer, buffer.byteOffset, n), n === 0];
  }

  getFlags() { return this.#flags; }

  getType() {
    if (!this.#handle) return 'directory';
    return this.#handle.type;
  }

  stat() {
    if (!this.#handle) throw 'invalid'; // as the shim: the preopen has no stat
    try {
      return stat(fstatSync(this.#file().fd, { bigint: true }));
    } catch (e) {
      throw typeof e === 'string' ? e : fsError(e);
    }
  }

  statAt(pathFlags, path) {
    const full = this.#resolve(path, pathFlags.symlinkFollow);
    try {
      return stat((pathFlags.symlinkFollow ? statSync : lstatSync)(full, { bigint: true }));
    } catch (e) {
      throw fsError(e);
    }
  }

  metadataHash() {
    if (!this.#handle) return { upper: 0n, lower: 0n }; // as the shim
    try {
      const stats = fstatSync(this.#file().fd, { bigint: true });
      return { upper: stats.mtimeNs, lower: stats.ino };
    } catch (e) {
      throw typeof e === 'string' ? e : fsError(e);
    }
  }

  metadataHashAt(pathFlags, path) {
    const full = this.#resolve(path, pathFlags.symlinkFollow);
    try {
      const stats = (pathFlags.symlinkFollow ? statSync : lstatSync)(full, { bigint: true });
      return { upper: stats.mtimeNs, lower: stats.ino };
    } catch (e) {
      throw fsError(e);
    }
  }

  readDirectory() {
    if (this.#handle && this.#handle.type !== 'directory') throw 'not-directory';
    try {
      return new DirectoryEntryStream(this.#box, opendirSync(this.#path));
    } catch (e) {
      throw fsError(e);
    }
  }

  renameAt(oldPath, newDescriptor, newPath) {
    this.#writable();
    const from = this.#resolve(oldPath, false);
    const to = newDescriptor.#resolve(newPath, false);
    try {
      renameSync(from, to);
    } catch (e) {
      throw fsError(e);
    }
  }

  unlinkFileAt(path) {
    this.#writable();
    const full = this.#resolve(path, false);
    if (full.endsWith('/')) {
      let isDir = false;
      try { isDir = statSync(full).isDirectory(); } catch { /* absent */ }
      throw isDir ? 'is-directory' : 'not-directory';
    }
    try {
      unlinkSync(full);
    } catch (e) {
      throw fsError(e);
    }
  }

  isSameObject(other) { return other === this; }

  [symbolDispose]() {
    this.#handle?.release();
    this.#handle = null;
  }
}

/**
 * The WASI imports of one instance. dir: the host directory preopened (at its own path), or
 * null for none; readOnly: every write to it refused. `imports` holds the wasi:* entries (less
 * wasi:cli/environment, exit and stdin, which the caller sets); `stderr()` is what the guest
 * wrote there during the current call (at most 64 KiB); `endCall()` closes what the call left
 * open and forgets its stderr; `close()` closes what is open.
 */
export function sandbox({ dir = null, readOnly = true } = {}) {
  const box = { readOnly, handles: new Set(), dirs: new Set() };
  let stderr = '';
  let decoder = null;
  const stdoutStream = new OutputStream(() => {}); // the host's stdout is not the guest's
  const stderrStream = new OutputStream((bytes) => {
    decoder ??= new TextDecoder();
    if (stderr.length < STDERR_CAP) stderr += decoder.decode(bytes, { stream: true });
  });
  const entries = dir ? [[new Descriptor(box, null, dir, { read: true, mutateDirectory: !readOnly }), dir]] : [];
  let seed = null; // the instance's insecure seed, made when first asked for
  const close = () => {
    for (const handle of [...box.handles]) handle.close();
    for (const d of box.dirs) {
      try { d.closeSync(); } catch { /* already closed */ }
    }
    box.dirs.clear();
  };
  return {
    imports: {
      'wasi:cli/stdout': { getStdout: () => stdoutStream },
      'wasi:cli/stderr': { getStderr: () => stderrStream },
      // No terminal, as wasmtime's WasiCtxBuilder::new().
      'wasi:cli/terminal-input': { TerminalInput: class TerminalInput {} },
      'wasi:cli/terminal-output': { TerminalOutput: class TerminalOutput {} },
      'wasi:cli/terminal-stdin': { getTerminalStdin: () => undefined },
      'wasi:cli/terminal-stdout': { getTerminalStdout: () => undefined },
      'wasi:cli/terminal-stderr': { getTerminalStderr: () => undefined },
      'wasi:clocks/monotonic-clock': { now: () => hrtime.bigint(), resolution: () => 1n },
      'wasi:clocks/wall-clock': {
        now: () => {
          const ms = Date.now();
          return { seconds: BigInt(Math.floor(ms / 1000)), nanoseconds: (ms % 1000) * 1e6 };
        },
        resolution: () => ({ seconds: 0n, nanoseconds: 1e6 }),
      },
      'wasi:filesystem/preopens': { getDirectories: () => entries },
      'wasi:filesystem/types': { Descriptor, DirectoryEntryStream },
      'wasi:io/error': { Error: IoError },
      'wasi:io/poll': { Pollable, poll: (list) => new Uint32Array(list.map((_, i) => i)) },
      'wasi:io/streams': { InputStream, OutputStream },
      'wasi:random/insecure-seed': { insecureSeed: () => (seed ??= [randomU64(), randomU64()]) },
      'wasi:random/random': { getRandomU64: randomU64, getRandomBytes: (len) => new Uint8Array(randomBytes(Number(len))) },
    },
    stderr: () => stderr,
    endCall() {
      close();
      stderr = '';
      decoder = null;
    },
    close,
  };
}

/** Random u64s from the system's CSPRNG, drawn 256 at a time (one call costs as much as 256); each is used once. */
const pool = new BigUint64Array(256);
let drawn = pool.length;
function randomU64() {
  if (drawn === pool.length) {
    randomFillSync(pool);
    drawn = 0;
  }
  const value = pool[drawn];
  pool[drawn++] = 0n;
  return value;
}
