"""The configuration read as the `lro` command reads it (host/src/config.rs): a TOML file, the
`ATLATL_PROMPT__OFFLOAD__*` environment and arguments, in that order of strength, gathered here
and layered by the component (`configuration.load`), so each error names the key and where it
came from in the command's own words."""

import pytest

from conftest import REPO
from lro_wasm import Lro, LroError
from lro_wasm._settings import env_var

# The keys of docs/CONFIGURATION.md, and the old names the component points to the new ones from.
KEYS = ("enabled", "threshold_tokens", "ttl_seconds", "output_dir", "prefix", "descriptor",
        "schema_version", "extract_tool", "recipes", "max_bytes", "max_files")
RENAMED = {"threshold": "threshold_tokens", "ttl": "ttl_seconds", "dir": "output_dir", "native": "extract_tool"}

LRO: Lro
# The component's defaults as the tests' base (only what the layers change is looked at).
BASE: dict


@pytest.fixture(scope="module", autouse=True)
def _component(lro):
    global LRO, BASE
    LRO, BASE = lro, lro.defaults()


def layered(base, **kwargs):
    return LRO.layered(base, **kwargs)


def toml(tmp_path, text):
    path = tmp_path / "lro.toml"
    path.write_text(text)
    return path


def error(**kwargs):
    with pytest.raises(LroError) as caught:
        layered(BASE, **{"environ": {}, **kwargs})
    assert caught.value.kind == "invalid-config", caught.value
    return caught.value.message


def test_arguments_beat_the_environment_which_beats_the_file_which_beats_the_defaults(tmp_path):
    file = toml(tmp_path, '[prompt.offload]\nthreshold_tokens = 100\nttl_seconds = 60\nprefix = "lro"\n')
    env = {"ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS": "200", "ATLATL_PROMPT__OFFLOAD__TTL_SECONDS": "70"}
    c = layered(BASE, config_file=file, environ=env, arguments={"threshold_tokens": 300})
    assert (c["threshold_tokens"], c["ttl_seconds"], c["prefix"]) == (300, 70, "lro")
    c = layered(BASE, config_file=file, environ=env)
    assert c["threshold_tokens"] == 200
    c = layered(BASE, config_file=file, environ={})
    assert (c["threshold_tokens"], c["ttl_seconds"], c["max_files"]) == (100, 60, 1000)
    assert layered(BASE, environ={}) == BASE
    assert BASE["tools"] == [], "the defaults given must not be changed"


def test_the_process_environment_is_read_when_none_is_given(monkeypatch):
    monkeypatch.setenv("ATLATL_PROMPT__OFFLOAD__MAX_FILES", "7")
    assert layered(BASE)["max_files"] == 7


# key, its TOML value, its text in the environment, its Python value, the value they all give.
EVERY_KEY = [
    ("enabled", "false", "false", False, False),
    ("threshold_tokens", "77", "77", 77, 77),
    ("ttl_seconds", "60", "60", 60, 60),
    ("output_dir", '"/x"', "/x", "/x", "/x"),
    ("prefix", '"lro"', "lro", "lro", "lro"),
    ("descriptor", '"bare"', "bare", "bare", "bare"),
    ("schema_version", '"0.2"', "0.2", "0.2", "0.2"),
    ("extract_tool", "true", "true", True, True),
    ("recipes", '"v1"', "v1", "v1", "v1"),
    ("max_bytes", "1000", "1000", 1000, 1000),
    ("max_files", "3", "3", 3, 3),
]


@pytest.mark.parametrize("key, toml_value, text, value, want", EVERY_KEY, ids=[row[0] for row in EVERY_KEY])
def test_every_key_works_from_the_file_the_environment_and_the_arguments(tmp_path, key, toml_value, text, value, want):
    assert BASE[key] != want, "the test value must differ from the default"
    file = toml(tmp_path, f"[prompt.offload]\n{key} = {toml_value}\n")
    assert layered(BASE, config_file=file, environ={})[key] == want
    assert layered(BASE, environ={env_var(key): text})[key] == want
    assert layered(BASE, environ={}, arguments={key: value})[key] == want
    assert f"| `{key}` |" in (REPO / "docs" / "CONFIGURATION.md").read_text(), "docs/CONFIGURATION.md lacks the key"


def test_the_table_walks_every_key_the_component_knows():
    assert [row[0] for row in EVERY_KEY] == list(KEYS)
    known = error(arguments={"colour": 1}).split("known keys: ")[1]
    assert known == ", ".join(KEYS)


@pytest.mark.parametrize("text, want", [("true", True), ("TRUE", True), ("1", True), ("false", False), ("False", False), ("0", False)])
def test_the_environment_spells_booleans_as_the_command_does(text, want):
    assert layered(BASE, environ={"ATLATL_PROMPT__OFFLOAD__ENABLED": text})["enabled"] is want


@pytest.mark.parametrize("text, want", [(" 5 ", 5), ("+5", 5), ("4294967295", 4294967295)])
def test_the_environment_spells_numbers_as_the_command_does(text, want):
    assert layered(BASE, environ={"ATLATL_PROMPT__OFFLOAD__THRESHOLD_TOKENS": text})["threshold_tokens"] == want


@pytest.mark.parametrize("var, text, message", [
    ("THRESHOLD_TOKENS", "lots", 'expected a whole number from 0 to 4294967295, got "lots"'),
    ("THRESHOLD_TOKENS", "4294967296", 'expected a whole number from 0 to 4294967295, got "4294967296"'),
    ("MAX_FILES", "-1", 'expected a whole number from 0 to 4294967295, got "-1"'),
    ("MAX_BYTES", "1_000", 'expected a whole number from 0 to 18446744073709551615, got "1_000"'),
    ("TTL_SECONDS", "1.5", 'expected a whole number from 0 to 18446744073709551615, got "1.5"'),
    ("ENABLED", "yes", 'expected true or false, got "yes"'),
    ("EXTRACT_TOOL", " true", 'expected true or false, got " true"'),
    ("DESCRIPTOR", "rich", 'expected "full" or "bare", got "rich"'),
    ("RECIPES", "V2", 'expected "v2" or "v1", got "V2"'),
])
def test_a_bad_variable_is_an_error_naming_the_key_and_the_variable(var, text, message):
    key = var.lower()
    assert error(environ={f"ATLATL_PROMPT__OFFLOAD__{var}": text}) == \
        f"prompt.offload.{key} (from ATLATL_PROMPT__OFFLOAD__{var}): {message}"


def test_an_old_name_is_an_error_pointing_to_the_new_one(tmp_path):
    # The converter's own hint for a config dict passed to a function (`config: unknown field(s)
    # threshold (now threshold_tokens)`) is the component's table, checked here.
    from lro_wasm._convert import RENAMED as converters
    assert converters == RENAMED
    for old, new in RENAMED.items():
        assert error(environ={env_var(old): "1"}) == \
            f"prompt.offload.{old} (from {env_var(old)}): renamed: set {env_var(new)} instead"
        file = toml(tmp_path, f"[prompt.offload]\n{old} = 5\n")
        assert error(config_file=file) == \
            f"unknown key prompt.offload.{old} in {file} (now {new}); known keys: {', '.join(KEYS)}"
        assert error(arguments={old: 5}, where="the arguments of LroExtension") == \
            f"unknown key prompt.offload.{old} in the arguments of LroExtension (now {new}); known keys: {', '.join(KEYS)}"


def test_other_programs_variables_are_left_alone_and_a_misspelt_one_is_refused():
    assert layered(BASE, environ={"ATLATL_PROMPT__BUDGET": "3", "HOME": "/root"}) == BASE
    # A typo used to change nothing and say nothing; it is refused as a typo in the file is.
    assert error(environ={"ATLATL_PROMPT__OFFLOAD__THRESHHOLD_TOKENS": "5"}) == (
        "unknown key prompt.offload.threshhold_tokens in ATLATL_PROMPT__OFFLOAD__THRESHHOLD_TOKENS; "
        f"known keys: {', '.join(KEYS)}")


def test_the_file_errors_name_the_key_and_the_file(tmp_path):
    file = toml(tmp_path, '[prompt.offload]\nenabled = "yes"\n')
    assert error(config_file=file) == f'prompt.offload.enabled (from {file}): expected true or false, got "yes"'
    file = toml(tmp_path, "[prompt.offload]\nthreshold_tokens = -3\n")
    assert error(config_file=file) == f"prompt.offload.threshold_tokens (from {file}): expected a whole number from 0 to 4294967295, got -3"
    file = toml(tmp_path, "[prompt.offload]\nmax_files = true\n")
    assert error(config_file=file).endswith("expected a whole number from 0 to 4294967295, got true")
    file = toml(tmp_path, "[prompt.offload]\noutput_dir = 5\n")
    assert error(config_file=file) == f"prompt.offload.output_dir (from {file}): expected a string, got 5"
    file = toml(tmp_path, "[prompt.offload]\ncolour = 'red'\n")
    assert error(config_file=file) == f"unknown key prompt.offload.colour in {file}; known keys: {', '.join(KEYS)}"
    file = toml(tmp_path, "[prompt]\noffload = 3\n")
    assert error(config_file=file) == f"config file {file}: [prompt.offload] must be a table"
    file = toml(tmp_path, "[prompt.offload]\ntools = 3\n")
    assert error(config_file=file) == f"config file {file}: [prompt.offload.tools] must be a table"
    file = toml(tmp_path, "[prompt.offload\n")
    assert error(config_file=file).startswith(f"config file {file}: ")
    missing = tmp_path / "missing.toml"
    assert error(config_file=missing) == f"config file {missing}: No such file or directory (os error 2)"


def test_other_sections_of_the_file_are_ignored(tmp_path):
    file = toml(tmp_path, "[server]\nport = 1\n[prompt]\nbudget = 3\n[prompt.offload]\nenabled = false\n")
    assert layered(BASE, config_file=file, environ={})["enabled"] is False
    assert layered(BASE, config_file=toml(tmp_path, "[server]\nport = 1\n"), environ={}) == BASE


def test_tool_tables_configure_each_tool(tmp_path):
    file = toml(tmp_path, '[prompt.offload.tools.github_search]\nthreshold_tokens = 500\nsections = ["items"]\n'
                          'inline_keys = ["total_count"]\n[prompt.offload.tools.ls]\nenabled = false\n')
    c = layered(BASE, config_file=file, environ={})
    assert c["tools"] == [
        {"name": "github_search", "enabled": None, "threshold_tokens": 500, "sections": ["items"], "inline_keys": ["total_count"]},
        {"name": "ls", "enabled": False, "threshold_tokens": None, "sections": None, "inline_keys": None},
    ]
    file = toml(tmp_path, '[prompt.offload.tools.ls]\nsections = "items"\n')
    assert error(config_file=file) == f'prompt.offload.tools.ls.sections (from {file}): expected a list of strings, got "items"'
    file = toml(tmp_path, "[prompt.offload.tools.ls]\nthreshold = 5\n")
    assert error(config_file=file) == (f"prompt.offload.tools.ls.threshold (from {file}): unknown key; "
                                       "known keys: enabled, threshold_tokens, sections, inline_keys")
    file = toml(tmp_path, "[prompt.offload.tools]\nls = 5\n")
    assert error(config_file=file) == f"prompt.offload.tools.ls (from {file}): expected a table, got 5"


def test_tools_in_the_arguments_layer_per_tool_and_per_key_over_the_file(tmp_path):
    file = toml(tmp_path, "[prompt.offload.tools.search]\nthreshold_tokens = 500\nenabled = true\n"
                          "[prompt.offload.tools.ls]\nenabled = false\n")
    as_list = layered(BASE, config_file=file, environ={}, arguments={
        "tools": [{"name": "search", "threshold_tokens": 9000}, {"name": "new", "sections": ["rows"]}]})
    as_dict = layered(BASE, config_file=file, environ={}, arguments={
        "tools": {"search": {"threshold_tokens": 9000}, "new": {"sections": ["rows"]}}})
    assert as_list["tools"] == as_dict["tools"] == [
        {"name": "search", "enabled": True, "threshold_tokens": 9000, "sections": None, "inline_keys": None},
        {"name": "ls", "enabled": False, "threshold_tokens": None, "sections": None, "inline_keys": None},
        {"name": "new", "enabled": None, "threshold_tokens": None, "sections": ["rows"], "inline_keys": None},
    ]


@pytest.mark.parametrize("arguments, message", [
    ({"threshold_tokens": "500"}, 'prompt.offload.threshold_tokens (from the arguments): expected a whole number from 0 to 4294967295, got "500"'),
    ({"threshold_tokens": True}, "prompt.offload.threshold_tokens (from the arguments): expected a whole number from 0 to 4294967295, got true"),
    ({"threshold_tokens": 5.0}, "prompt.offload.threshold_tokens (from the arguments): expected a whole number from 0 to 4294967295, got 5.0"),
    ({"ttl_seconds": -1}, "prompt.offload.ttl_seconds (from the arguments): expected a whole number from 0 to 18446744073709551615, got -1"),
    ({"enabled": 1}, "prompt.offload.enabled (from the arguments): expected true or false, got 1"),
    ({"descriptor": "rich"}, 'prompt.offload.descriptor (from the arguments): expected "full" or "bare", got "rich"'),
    ({"tools": [{"threshold_tokens": 5}]}, "prompt.offload.tools (from the arguments): expected a list of "
     '{"name": ..., ...} objects or an object of tool names to settings, got [{"threshold_tokens":5}]'),
    ({"tools": {"t": {"threshold": 5}}}, "prompt.offload.tools.t.threshold (from the arguments): unknown key; "
     "known keys: enabled, threshold_tokens, sections, inline_keys"),
    ({"tools": {"t": {"inline_keys": ["a", 1]}}}, 'prompt.offload.tools.t.inline_keys (from the arguments): '
     'expected a list of strings, got ["a",1]'),
    ({"colour": "red"}, f"unknown key prompt.offload.colour in the arguments; known keys: {', '.join(KEYS)}"),
    ({"dir_problem": "x"}, f"unknown key prompt.offload.dir_problem in the arguments; known keys: {', '.join(KEYS)}"),
    ({"output_dir": object()}, "the arguments: cannot be serialised as JSON: "),
])
def test_a_bad_argument_is_an_error_naming_the_key_and_the_arguments(arguments, message):
    assert error(arguments=arguments).startswith(message)
    assert message.endswith(": ") or error(arguments=arguments) == message


def test_none_sets_nothing():
    assert layered(BASE, environ={}, arguments={"prefix": None, "tools": {"t": {"enabled": None}}})["prefix"] == "atlatl"


def test_an_output_dir_may_be_a_path(tmp_path):
    assert layered(BASE, environ={}, arguments={"output_dir": tmp_path})["output_dir"] == str(tmp_path)


def test_load_config_layers_over_the_component_defaults(lro, tmp_path, monkeypatch):
    monkeypatch.setenv("ATLATL_PROMPT__OFFLOAD__PREFIX", "env")
    file = toml(tmp_path, '[prompt.offload]\nttl_seconds = 60\nprefix = "file"\n[prompt.offload.tools.ls]\nenabled = false\n')
    c = lro.load_config(file, threshold_tokens=5)
    assert c == {**lro.defaults(), "threshold_tokens": 5, "ttl_seconds": 60, "prefix": "env", "tools": [
        {"name": "ls", "enabled": False, "threshold_tokens": None, "sections": None, "inline_keys": None}]}
    assert lro.load_config(environ={}) == lro.defaults()
    with pytest.raises(LroError) as caught:
        lro.load_config(environ={}, threshold=5)
    assert caught.value.kind == "invalid-config"
    assert caught.value.message.startswith("unknown key prompt.offload.threshold in the arguments of load_config (now threshold_tokens)")
