"""`lro` as users install it without Rust: the lro-cli wheel and npm packages that
packaging/build makes from the test build, each installed into a fresh environment with no Rust
toolchain on PATH and no network (a network namespace of its own), running `lro proxy` in front
of a real server (server-filesystem), driven by the Python SDK's client. And the crates that
`cargo install lro-cli` builds: packaged, built from the .crate files alone, `lro --version`.

The packages' sizes and the time from install to the first answered tools/list are printed.
"""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from test_proxy import FILESYSTEM, LRO, ROOT, printed_call, records

VERSION = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]
NPM = ROOT / "packaging" / "npm" / "lro-cli"


def without_rust() -> str:
    """PATH without any directory holding a Rust toolchain (~/.cargo/bin and the like)."""
    kept = [d for d in os.environ["PATH"].split(os.pathsep)
            if d and not any(os.path.exists(os.path.join(d, tool)) for tool in ("cargo", "rustc", "rustup"))]
    stripped = os.pathsep.join(kept)
    assert shutil.which("cargo", path=stripped) is None and shutil.which("rustc", path=stripped) is None
    assert shutil.which("node", path=stripped), "node stays on PATH (server-filesystem and npm need it)"
    return stripped


def offline() -> list[str]:
    """A prefix that runs a command with no network at all: a network namespace of its own."""
    for prefix in (["unshare", "--net"], ["unshare", "--map-root-user", "--net"]):
        if subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
            return prefix
    pytest.fail("unshare cannot make a network namespace here: the installs must be shown to need no network")


def run(command: list, *, what: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], env=env, cwd=cwd, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        pytest.fail(f"{what} failed (exit status {done.returncode}): {' '.join(map(str, command))}\n"
                    f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}", pytrace=False)
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """packaging/build's output for this machine, from the build the tests already made."""
    out = tmp_path_factory.mktemp("packages")
    # Niced: the suites that run beside it (tests/run) time servers and clients; this only builds.
    run(["nice", "-n", "10", "bash", ROOT / "packaging" / "build", "--out", out, "--profile", "dev",
         "--python", sys.executable, "--crates"], what="packaging/build")
    return out


def one(directory: Path, pattern: str) -> Path:
    found = sorted(directory.glob(pattern))
    assert len(found) == 1, f"one {pattern} in {directory}: {found}"
    return found[0]


@pytest.fixture
def project(tmp_path) -> Path:
    data = tmp_path / "project"
    data.mkdir()
    for i in range(400):
        (data / f"note_{i:03d}.txt").write_text(f"note {i}\n")
    return data


def drive(lro: Path, project: Path, out: Path, started: float) -> float:
    """`lro proxy` in front of server-filesystem, from the Python SDK's client, with no Rust on
    PATH: tools listed, a large listing offloaded, the guidance's lro_extract call answered.
    Returns the seconds from `started` to the first answered tools/list."""
    params = StdioServerParameters(
        command=str(lro),
        args=["proxy", "--output-dir", str(out), "--threshold", "500", "--", str(FILESYSTEM), str(project)],
        env={"PATH": without_rust(), "HOME": os.environ.get("HOME", str(out))},
    )

    async def main() -> float:
        async with Client(params) as session:
            tools = (await session.list_tools()).tools
            first = time.monotonic() - started
            assert "list_directory" in [t.name for t in tools] and tools[-1].name == "lro_extract"
            listing = await session.call_tool("list_directory", {"path": str(project)})
            descriptor = json.loads(listing.content[0].text)
            lines = records(descriptor["files"]["lines"])
            assert len(lines) == 400 and lines[0]["text"] == "[FILE] note_000.txt"
            arguments = printed_call(descriptor["guidance"])
            extracted = await session.call_tool("lro_extract", arguments)
            assert not extracted.is_error, extracted
            counted = await session.call_tool("lro_extract", {"file_path": arguments["file_path"],
                                                              "query": "length", "slurp": True})
            assert not counted.is_error and counted.content[0].text.split() == ["400"], counted
            return first

    return asyncio.run(asyncio.wait_for(main(), 120))


def test_the_wheel_installs_with_no_rust_and_no_network_and_proxies(built, tmp_path, project, capsys):
    wheel = one(built, "lro_cli-*.whl")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv], what="python -m venv")
    started = time.monotonic()
    run([*offline(), venv / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index",
         "--find-links", built, "lro-cli"], what="pip install lro-cli (no index, no network)",
        env={**os.environ, "PATH": without_rust()})
    lro = venv / "bin" / "lro"
    assert run([lro, "--version"], what="lro --version").stdout.strip() == f"lro {VERSION}"
    first = drive(lro, project, tmp_path / "offloads", started)
    with capsys.disabled():
        print(f"\nlro-cli wheel: {wheel.name} {wheel.stat().st_size:,} bytes; "
              f"{first:.1f} s from `pip install` to the first answered tools/list")


def test_the_npm_packages_install_with_no_rust_and_no_network_and_proxy(built, tmp_path, project, capsys):
    main = built / f"lro-cli-{VERSION}.tgz"
    platform = one(built, "lro-cli-*-*.tgz")
    app = tmp_path / "app"
    app.mkdir()
    env = {**os.environ, "PATH": without_rust(), "npm_config_cache": str(tmp_path / "npm-cache")}
    started = time.monotonic()
    run([*offline(), "npm", "install", "--offline", "--no-audit", "--no-fund", main, platform],
        what="npm install lro-cli (offline, no network)", env=env, cwd=app)
    lro = app / "node_modules" / ".bin" / "lro"
    assert run([lro, "--version"], what="lro --version").stdout.strip() == f"lro {VERSION}"
    first = drive(lro, project, tmp_path / "offloads", started)
    with capsys.disabled():
        print(f"\nlro-cli npm: {main.name} {main.stat().st_size:,} bytes, {platform.name} "
              f"{platform.stat().st_size:,} bytes; {first:.1f} s from `npm install` to the first answered tools/list")


def test_without_its_platform_package_the_npm_command_says_what_to_do(built, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    env = {**os.environ, "npm_config_cache": str(tmp_path / "npm-cache")}
    run([*offline(), "npm", "install", "--offline", "--no-audit", "--no-fund", built / f"lro-cli-{VERSION}.tgz"],
        what="npm install lro-cli alone", env=env, cwd=app)
    done = subprocess.run([app / "node_modules" / ".bin" / "lro", "--version"], capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == ""
    assert "lro-cli-linux-x64-gnu" in done.stderr and "--omit=optional" in done.stderr, done.stderr
    # LRO_BINARY names a binary for a platform no package covers.
    done = subprocess.run([app / "node_modules" / ".bin" / "lro", "--version"], capture_output=True, text=True,
                          env={**os.environ, "LRO_BINARY": LRO})
    assert done.returncode == 0 and done.stdout.strip() == f"lro {VERSION}", done.stderr


def test_the_npm_launcher_passes_on_exit_status_and_signals(built, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    env = {**os.environ, "npm_config_cache": str(tmp_path / "npm-cache")}
    run([*offline(), "npm", "install", "--offline", "--no-audit", "--no-fund", built / f"lro-cli-{VERSION}.tgz",
         one(built, "lro-cli-*-*.tgz")], what="npm install", env=env, cwd=app)
    lro = app / "node_modules" / ".bin" / "lro"
    usage = subprocess.run([lro, "no-such-command"], capture_output=True, text=True)
    assert usage.returncode == 2 and "no-such-command" in usage.stderr
    # A client stops its server by signalling the process it started: the launcher's child must
    # stop too, not linger holding the server.
    waiting = subprocess.Popen([lro, "proxy", "--output-dir", tmp_path / "o", "--", sys.executable, "-c",
                                "import time; time.sleep(60)"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    time.sleep(1.5)
    children = Path(f"/proc/{waiting.pid}/task/{waiting.pid}/children").read_text().split()
    assert children, "the launcher started lro"
    waiting.terminate()
    waiting.wait(timeout=20)
    for pid in children:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text(), \
            "lro ended with its launcher"


def test_the_packages_hold_nothing_of_the_builders_machine(built):
    """Paths of the builder's machine (the checkout, the output, cargo's home, Python's) in any
    text a package carries; the dev binary's own panic locations aside (release builds remap
    them, .github/workflows/release.yml)."""
    machine = [str(ROOT), str(built), os.path.expanduser("~/.cargo"), str(Path(sys.executable).parent)]
    texts: dict[str, str] = {}
    with zipfile.ZipFile(one(built, "lro_cli-*.whl")) as wheel:
        for name in wheel.namelist():
            if ".dist-info/" in name:
                texts[f"wheel:{name}"] = wheel.read(name).decode()
    for tgz in [*built.glob("*.tgz"), *(built / "crates").glob("*.crate")]:
        with tarfile.open(tgz) as archive:
            for member in archive.getmembers():
                if member.isfile() and not member.name.endswith("/bin/lro"):
                    texts[f"{tgz.name}:{member.name}"] = archive.extractfile(member).read().decode(errors="replace")
    assert len(texts) > 40, sorted(texts)
    leaks = [(name, m) for name, text in texts.items() for m in machine if m in text]
    assert not leaks, leaks


def test_the_crates_build_lro_from_the_packages_alone(built):
    crates = built / "crates"
    names = sorted(p.name for p in crates.glob("*.crate"))
    assert names == [f"lro-cli-{VERSION}.crate", f"lro-core-{VERSION}.crate", f"lro-host-{VERSION}.crate",
                     "lro-jaq-core-3.1.2.crate", "lro-jaq-json-2.0.3.crate", "lro-jaq-std-3.0.4.crate"]
    for crate in crates.glob("*.crate"):
        with tarfile.open(crate) as archive:
            manifest = tomllib.loads(archive.extractfile(f"{crate.stem}/Cargo.toml").read().decode())
            for table in ("dependencies", "build-dependencies"):
                for name, spec in manifest.get(table, {}).items():
                    assert not (isinstance(spec, dict) and "path" in spec), f"{crate.name}: {name} is a path dependency"
            if crate.name.startswith("lro-host-"):
                # The component inside, the one the test build embeds; and the WIT bindgen! reads.
                packaged = archive.extractfile(f"{crate.stem}/lro.wasm").read()
                embedded = subprocess.run([LRO, "component"],
                                          capture_output=True, check=True).stdout
                assert packaged == embedded
                assert f"{crate.stem}/wit/world.wit" in archive.getnames()
    done = run([crates / "bin" / "lro", "--version"], what="lro --version (built from the crates)",
               env={"PATH": without_rust()})
    assert done.stdout.strip() == f"lro {VERSION}"


def test_every_platform_is_built_by_the_release_and_named_by_lro_cli():
    """packaging/npm/lro-cli/platforms.json, the release's matrix and lro-cli's optional
    dependencies name the same platforms; the launcher reads the table, packaging/build too."""
    platforms = json.loads((NPM / "platforms.json").read_text())
    manifest = json.loads((NPM / "package.json").read_text())
    assert manifest["version"] == VERSION
    assert manifest["optionalDependencies"] == {p["package"]: VERSION for p in platforms}
    workflow = (ROOT / ".github" / "workflows" / "release.yml").read_text()
    matrix = [line.split("target:")[1].split(",")[0].strip() for line in workflow.splitlines()
              if line.strip().startswith("- { target:")]
    assert sorted(matrix) == sorted(p["target"] for p in platforms)
    assert all(p["binary"] == ("lro.exe" if p["os"] == "win32" else "lro") for p in platforms)
