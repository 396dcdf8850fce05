"""The `[prompt.offload]` configuration gathered the way the `lro` command gathers it
(host/src/config.rs, docs/CONFIGURATION.md): a TOML file's text, the `ATLATL_PROMPT__OFFLOAD__*`
environment variables and values given in code. The component layers them over a base
(`configuration.load`): arguments beat the environment, which beats the file, which beats the
base. Its errors are the command's, word for word: nothing here knows a key."""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional

from ._convert import dumps
from ._errors import LroError

# What every configuration variable's name starts with; the key follows in capitals. `ATLATL_`
# because LRO was specified for atlatl, a memory server, and keeps its names.
ENV_PREFIX = "ATLATL_PROMPT__OFFLOAD__"


def env_var(key: str) -> str:
    """The environment variable of a key: `ATLATL_PROMPT__OFFLOAD__` and the key in capitals."""
    return f"{ENV_PREFIX}{key.upper()}"


def _file(path: Any) -> dict:
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError as e:
        raise LroError("invalid-config", f"config file {name}: {e.strerror} (os error {e.errno})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LroError("invalid-config", f"config file {name}: not UTF-8 ({e.reason} at byte {e.start})") from None
    return {"name": name, "text": text}


def _plain(value: Any) -> Any:
    """Paths as the strings they stand for, so that `output_dir=Path(...)` works."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def layers(*, config_file: Any = None, environ: Optional[Mapping[str, str]] = None,
           arguments: Optional[Mapping[str, Any]] = None, where: str = "the arguments") -> dict:
    """The WIT `config-layers`: the file (if any), the configuration variables of `environ`
    (`os.environ` when None) and `arguments` as JSON. `where` names the arguments in errors."""
    environ = os.environ if environ is None else environ
    try:
        text = dumps(_plain(dict(arguments or {})), where)
    except LroError as e:
        raise LroError("invalid-config", e.message) from None
    return {
        "file": None if config_file is None else _file(config_file),
        "environment": [{"name": k, "value": v} for k, v in environ.items() if k.startswith(ENV_PREFIX)],
        "settings": [],
        "arguments": {"name": where, "text": text},
    }
