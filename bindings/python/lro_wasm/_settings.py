"""The `[prompt.offload]` configuration read the way the `lro` command reads it
(host/src/config.rs, docs/CONFIGURATION.md): a TOML file, the `ATLATL_PROMPT__OFFLOAD__*`
environment variables and values given in code, layered over the defaults. Arguments beat the
environment, which beats the file, which beats the defaults. A bad value is an `invalid-config`
LroError naming the key and where it came from, in the same words as the command's."""

from __future__ import annotations

import copy
import json
import os
import re
import tomllib
from typing import Any, Mapping, Optional

from ._errors import LroError

# The keys of `[prompt.offload]` besides the `tools` tables, in the command's order.
KEYS = ("enabled", "threshold_tokens", "ttl_seconds", "output_dir", "prefix", "descriptor",
        "schema_version", "extract_tool", "recipes", "max_bytes", "max_files")
TOOL_KEYS = ("enabled", "threshold_tokens", "sections", "inline_keys")
# Old names, each with the spec's name that replaced it (the same table as the command's).
RENAMED = {"threshold": "threshold_tokens", "ttl": "ttl_seconds", "dir": "output_dir", "native": "extract_tool"}

U32, U64 = (1 << 32) - 1, (1 << 64) - 1
NUMBERS = {"threshold_tokens": U32, "ttl_seconds": U64, "max_bytes": U64, "max_files": U32}
BOOLEANS = ("enabled", "extract_tool")
CHOICES = {"descriptor": ("full", "bare"), "recipes": ("v2", "v1")}
# Rust's `u64::from_str` after `trim()`: an optional `+` and digits, nothing else (no `_`).
WHOLE = re.compile(r"\+?[0-9]+")


def env_var(key: str) -> str:
    """The environment variable of a key: `ATLATL_PROMPT__OFFLOAD__` and the key in capitals."""
    return f"ATLATL_PROMPT__OFFLOAD__{key.upper()}"


def shown(value: Any) -> str:
    """A value as an error message quotes it: TOML's notation, which is JSON's for strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {shown(v)}" for k, v in value.items()) + " }"
    if value is None:
        return "nothing"
    return str(value)


def invalid(key: str, source: str, message: str) -> LroError:
    return LroError("invalid-config", f"prompt.offload.{key} (from {source}): {message}")


def unknown(key: str, where: str) -> LroError:
    hint = f" (now {RENAMED[key]})" if key in RENAMED else ""
    return LroError("invalid-config", f"unknown key prompt.offload.{key} in {where}{hint}; known keys: {', '.join(KEYS)}")


def typed(key: str, value: Any, source: str) -> Any:
    """A typed value (TOML, or Python in code) checked for `key`."""
    if key in BOOLEANS:
        if isinstance(value, bool):
            return value
        raise invalid(key, source, f"expected true or false, got {shown(value)}")
    if key in NUMBERS:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= NUMBERS[key]:
            return value
        raise invalid(key, source, f"expected a whole number from 0 to {NUMBERS[key]}, got {shown(value)}")
    if key == "output_dir" and isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise invalid(key, source, f"expected a string, got {shown(value)}")
    return choice(key, value, source)


def text(key: str, value: str, source: str) -> Any:
    """An environment variable's text, parsed for `key` as the command parses it."""
    if key in BOOLEANS:
        if value.lower() == "true" or value == "1":
            return True
        if value.lower() == "false" or value == "0":
            return False
        raise invalid(key, source, f"expected true or false, got {shown(value)}")
    if key in NUMBERS:
        digits = value.strip()
        if WHOLE.fullmatch(digits) and int(digits) <= NUMBERS[key]:
            return int(digits)
        raise invalid(key, source, f"expected a whole number from 0 to {NUMBERS[key]}, got {shown(value)}")
    return choice(key, value, source)


def choice(key: str, value: str, source: str) -> str:
    if key in CHOICES and value not in CHOICES[key]:
        first, second = CHOICES[key]
        raise invalid(key, source, f'expected "{first}" or "{second}", got {shown(value)}')
    return value


def tool_value(name: str, key: str, value: Any, source: str) -> Any:
    """One setting of a `[prompt.offload.tools.NAME]` table; None (in code) leaves it unset."""
    where = f"tools.{name}.{key}"
    if key not in TOOL_KEYS:
        raise invalid(where, source, f"unknown key; known keys: {', '.join(TOOL_KEYS)}")
    if value is None:
        return None
    if key == "enabled":
        if isinstance(value, bool):
            return value
        raise invalid(where, source, f"expected true or false, got {shown(value)}")
    if key == "threshold_tokens":
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= U32:
            return value
        raise invalid(where, source, f"expected a whole number from 0 to {U32}, got {shown(value)}")
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise invalid(where, source, f"expected a list of strings, got {shown(value)}")


def set_tool(config: dict, name: str, table: Any, source: str) -> None:
    """Layers one tool's settings over what the lower layers set for the same tool name."""
    if not isinstance(table, Mapping):
        raise invalid(f"tools.{name}", source, f"expected a table, got {shown(table)}")
    settings = {key: tool_value(name, key, value, source) for key, value in table.items() if key != "name"}
    for tool in config["tools"]:
        if tool["name"] == name:
            tool.update(settings)
            return
    config["tools"].append({"name": name, **dict.fromkeys(TOOL_KEYS), **settings})


def apply_file(config: dict, path: Any) -> None:
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            table = tomllib.load(f)
    except OSError as e:
        raise LroError("invalid-config", f"config file {name}: {e.strerror} (os error {e.errno})") from None
    except tomllib.TOMLDecodeError as e:
        raise LroError("invalid-config", f"config file {name}: {e}") from None
    prompt = table.get("prompt")
    # As the command: sections other than [prompt.offload] belong to other programs.
    offload = prompt.get("offload") if isinstance(prompt, dict) else None
    if offload is None:
        return
    if not isinstance(offload, dict):
        raise LroError("invalid-config", f"config file {name}: [prompt.offload] must be a table")
    for key, value in offload.items():
        if key == "tools":
            if not isinstance(value, dict):
                raise LroError("invalid-config", f"config file {name}: [prompt.offload.tools] must be a table")
            for tool, settings in value.items():
                set_tool(config, tool, settings, name)
        elif key in KEYS:
            config[key] = typed(key, value, name)
        else:
            raise unknown(key, name)


def apply_environment(config: dict, environ: Mapping[str, str]) -> None:
    for key in KEYS:
        var = env_var(key)
        if var in environ:
            config[key] = text(key, environ[var], var)
    # A variable under an old name would otherwise be ignored without a word.
    for old, new in RENAMED.items():
        if env_var(old) in environ:
            raise invalid(old, env_var(old), f"renamed: set {env_var(new)} instead")


def apply_arguments(config: dict, arguments: Mapping[str, Any], where: str) -> None:
    for key, value in arguments.items():
        source = f"the argument {key}="
        if key == "tools":
            # The JSON form (a list of {"name": ...} objects) or the TOML form ({NAME: {...}}).
            if isinstance(value, Mapping):
                tools = list(value.items())
            elif isinstance(value, (list, tuple)) and all(isinstance(t, Mapping) and isinstance(t.get("name"), str) for t in value):
                tools = [(t["name"], t) for t in value]
            else:
                raise invalid("tools", source, "expected a list of {\"name\": ..., ...} objects or a dict of "
                              f"tool names to settings, got {shown(value)}")
            for name, settings in tools:
                set_tool(config, name, settings, source)
        elif key in KEYS:
            config[key] = typed(key, value, source)
        else:
            raise unknown(key, where)


def layered(defaults: dict, *, config_file: Any = None, environ: Optional[Mapping[str, str]] = None,
            arguments: Optional[Mapping[str, Any]] = None, where: str = "the arguments") -> dict:
    """`defaults` (a full config) with the file, the environment (`os.environ` when None) and
    `arguments` layered over it, in that order. Per-tool settings layer per tool and per key.
    `where` names the arguments in the error for an unknown one."""
    config = copy.deepcopy(defaults)
    config["tools"] = list(config.get("tools") or [])
    if config_file is not None:
        apply_file(config, config_file)
    apply_environment(config, os.environ if environ is None else environ)
    apply_arguments(config, arguments or {}, where)
    return config
