"""The offload directory (docs/HOSTS.md, step 1 and 4): resolved, created private, checked and
canonicalised before a call mounts it; new files narrowed to their owner after."""

from __future__ import annotations

import logging
import os
import stat
from typing import Any, Optional

from ._errors import bad

log = logging.getLogger("lro")


def default_output_dir() -> str:
    """Where an empty `output_dir` points: `lro-{effective uid}` in `$TMPDIR`, or in `/tmp` when
    that is unset or empty, as every lro host resolves it (docs/HOSTS.md). Not created here: a
    call that writes creates it, private, like any other offload directory."""
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", f"lro-{os.geteuid()}")


def resolved(output_dir: str) -> str:
    """`output_dir` as given, or `default_output_dir()` when it is empty."""
    return output_dir or default_output_dir()


def absolute(output_dir: str) -> str:
    """An absolute path for a call that does not mount the directory, or that degrades without
    it: the component only ever receives an absolute `output_dir`."""
    return os.path.abspath(resolved(output_dir))


class Unusable(Exception):
    """The offload directory cannot be used; `reason` says why, naming it."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def os_reason(e: OSError) -> str:
    return f"{e.strerror} (os error {e.errno})"  # as Rust prints an io::Error


def not_private(st: os.stat_result) -> Optional[str]:
    """Why a directory is not this user's alone (owned by another user, or open to group or
    others in any way: read, write or search), or None. A file the component creates exists
    with the mode the umask gives until the host narrows it to 0600; in a directory no one else
    can enter, no one else can open it. The offload directory is checked with it; the
    compiled-component cache with `writable_by_others` only (it holds no secrets). The
    messages are the Rust host's (host/src/dir.rs)."""
    me = os.geteuid()
    if st.st_uid != me:
        return f"owned by uid {st.st_uid}, not by this user (uid {me}); refusing to use it"
    mode = st.st_mode
    for bit, what, who in (
        (0o002, "writable", "everyone"),
        (0o020, "writable", "its group"),
        (0o004, "readable", "everyone"),
        (0o040, "readable", "its group"),
        (0o001, "searchable", "everyone"),
        (0o010, "searchable", "its group"),
    ):
        if mode & bit:
            return f"{what} by {who} (mode {mode & 0o7777:o}); refusing to use it: make it 0700"
    return None


def writable_by_others(st: os.stat_result) -> Optional[str]:
    """Why a directory others could plant files in is not safe to load compiled code from
    (owned by another user, or writable by group or others), or None."""
    me = os.geteuid()
    if st.st_uid != me:
        return f"owned by uid {st.st_uid}, not by this user (uid {me}); refusing to use it"
    if st.st_mode & 0o022:
        who = "everyone" if st.st_mode & 0o002 else "its group"
        return f"writable by {who} (mode {st.st_mode & 0o7777:o}); refusing to use it: make it 0700"
    return None


def prepare_dir(output_dir: Any, create: bool) -> tuple:
    """The canonical absolute path of the offload directory (`default_output_dir()` when
    `output_dir` is empty), created 0700 if missing (when `create`), whether to mount it
    writable (not when its mode has no write bit at all), and its identity `(st_dev, st_ino)`,
    which tells a directory replaced at the same path from the one a kept store has open. Raises Unusable when it is not a
    directory, cannot be created or opened, is owned by another user, or is open to group or
    others in any way: another local user could then read what is offloaded there, open a file
    while it is being written, or plant files and links in it."""
    if not isinstance(output_dir, str):
        raise bad("config.output_dir", "a string", output_dir)
    given = resolved(output_dir)

    def unusable(why: str) -> Unusable:
        return Unusable(f"offload directory {given}: {why}")

    absolute_path = os.path.abspath(given)
    opened = _open_dir(absolute_path, create)
    if opened is not None:
        canonical, st, read_only_fs = opened
        problem = not_private(st) or ("on a read-only file system" if read_only_fs else None)
        if problem is not None:
            raise unusable(problem)
        return canonical, bool(st.st_mode & 0o222), (st.st_dev, st.st_ino)
    # It does not open as a directory (or the kernel's name for it is unavailable): the way
    # below finds and words the problem, creating the directory first when it is missing.
    problem = None
    try:
        if create and not os.path.exists(absolute_path):
            try:
                makedirs_private(absolute_path)
            except OSError as e:
                problem = f"cannot create it: {os_reason(e)}"
        if problem is None:
            canonical = os.path.realpath(absolute_path, strict=True)
            st = os.stat(canonical)
    except OSError as e:
        problem = os_reason(e)
    if problem is None:
        if not stat.S_ISDIR(st.st_mode):
            problem = "not a directory"
        else:
            problem = not_private(st) or _openable(canonical)
    # wasmtime reports a write to a read-only file system as a bare I/O error: name it here.
    if problem is None and create and os.statvfs(canonical).f_flag & os.ST_RDONLY:
        problem = "on a read-only file system"
    if problem is not None:
        raise unusable(problem)
    return canonical, bool(st.st_mode & 0o222), (st.st_dev, st.st_ino)


def _open_dir(path: str, create: bool) -> Optional[tuple]:
    """`(canonical path, stat, on a read-only file system)` of the directory at `path` when it
    opens as one, from one descriptor: its canonical path is the kernel's name for it
    (/proc/self/fd), which is what `realpath` finds by an lstat of every component (15 us a call
    here, half of the whole check). None when it does not open, or when that name is missing or
    unusable (no /proc, a directory deleted meanwhile)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        canonical = os.readlink(f"/proc/self/fd/{fd}")
        read_only_fs = create and bool(os.fstatvfs(fd).f_flag & os.ST_RDONLY)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not canonical.startswith("/") or canonical.endswith(" (deleted)"):
        return None
    return canonical, st, read_only_fs


def _openable(dir: str) -> Optional[str]:
    """Why wasmtime could not open `dir` for its preopen (it says only that it failed), or None."""
    try:
        os.close(os.open(dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
    except OSError as e:
        return f"cannot open it: {os_reason(e)}"
    return None


def makedirs_private(path: str) -> None:
    """`path` and its missing parents, each created with mode 0700."""
    parent = os.path.dirname(path)
    if parent != path and not os.path.exists(parent):
        makedirs_private(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass


def owner_only(dir: str, path: str) -> None:
    """chmod 0600 a file the call wrote (WASI cannot set modes). Through a descriptor opened
    without following a symlink or blocking on a FIFO, and only if it is a regular file, so
    a link or FIFO planted at the name cannot redirect the change to anything else."""
    if os.path.dirname(path) != dir:
        return  # the component writes only directly inside the directory
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return  # gone again (evicted, swept), or replaced by a link: nothing of ours to narrow
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, 0o600)
    except OSError as e:
        log.warning("lro: cannot chmod 0600 %s: %s", path, e)
    finally:
        os.close(fd)
