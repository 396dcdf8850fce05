"""`lro proxy --listen --store s3://...`: replicas that share one bucket answer for each other's
offloads, with no affinity, in both protocol generations. The S3 server is moto's (a real S3
API over HTTP on loopback, started here); the clients are the Python SDK's, over streamable
HTTP; the upstream is the Python SDK memory server.

Run by `bash tests/run`; LRO_BIN names the `lro` binary (default target/debug/lro).
"""

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

import boto3
import httpx2
import pytest
from moto.server import ThreadedMotoServer
from test_listen import ALICE, BOB, HEADERS, INITIALIZE, LRO, MEMORY, client, count, listening, messages, offload, run, stop, tokens_file

BUCKET = "offloads"


class S3:
    """moto's S3 server on 127.0.0.1, which can be stopped and started again on its port (its
    objects live in this process, so they survive a restart)."""

    def __init__(self):
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        self.port = self.server.get_host_and_port()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.env = {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }
        self.client = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                                   aws_access_key_id="testing", aws_secret_access_key="testing")
        self.client.create_bucket(Bucket=BUCKET)

    def keys(self) -> list[str]:
        listed = self.client.list_objects_v2(Bucket=BUCKET)
        return sorted(o["Key"] for o in listed.get("Contents", []))

    def stop(self):
        self.server.stop()

    def start(self):
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self.server.start()


@pytest.fixture(scope="module")
def s3():
    server = S3()
    yield server
    server.stop()


@pytest.fixture
def bucket(s3):
    """The bucket, emptied for each test."""
    for key in s3.keys():
        s3.client.delete_object(Bucket=BUCKET, Key=key)
    return s3


class Replica:
    """One `lro proxy --listen --store` with a disk of its own, as on another machine."""

    def __init__(self, directory: Path, s3: S3, *flags: str, env: dict | None = None, store_flag: bool = True):
        self.out = directory
        store = ["--store", f"s3://{BUCKET}/team"] if store_flag else []
        command = [LRO, "proxy", "--listen", "127.0.0.1:0", "--output-dir", str(self.out), "--threshold", "500",
                   *store, *flags, "--", *MEMORY]
        self.process, self.lines, self.url = listening(command, {**os.environ, **s3.env, **(env or {})})

    def files(self, principal: str) -> list[Path]:
        return sorted((self.out / principal).glob("*.jsonl"))

    def stop(self):
        stop(self.process)


@pytest.fixture
def replicas(tmp_path, bucket):
    started = []

    def start(*flags, **kwargs) -> tuple[Replica, Replica]:
        pair = tuple(Replica(tmp_path / name, bucket, "--tokens", str(tokens_file(tmp_path)), *flags, **kwargs)
                     for name in ["a", "b"])
        started.extend(pair)
        return pair

    yield start
    for replica in started:
        replica.stop()


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_an_offload_made_on_one_replica_is_extracted_listed_and_read_on_the_other(replicas, bucket, mode):
    a, b = replicas()

    async def main():
        async with client(a.url, mode, ALICE) as on_a:
            handle = (await offload(on_a))["file_path"]
        name = handle.removeprefix("lro://offload/")
        assert bucket.keys() == [f"team/alice/{name}"]
        assert not b.files("alice"), "b's cache starts cold"
        async with client(b.url, mode, ALICE) as on_b:
            counted = await count(on_b, handle)
            assert (counted.is_error, counted.content[0].text) == (False, "200")
            read = await on_b.read_resource(f"{handle}?from=0&to=2")
            assert [json.loads(line)["id"] for line in read.contents[0].text.splitlines()[:2]] == ["mem-00000", "mem-00001"]
            assert handle in [str(r.uri) for r in (await on_b.list_resources()).resources]
        # b read it back into its own cache, byte for byte.
        assert [f.name for f in b.files("alice")] == [name]
        assert b.files("alice")[0].read_bytes() == a.files("alice")[0].read_bytes()
        assert oct(b.files("alice")[0].stat().st_mode & 0o777) == "0o600"

        async with client(b.url, mode, BOB) as bob:
            theirs = await count(bob, handle)
            never = handle[:-12] + "ZZZZZZ.jsonl"
            missing = await count(bob, never)
            assert theirs.is_error and missing.is_error
            assert theirs.content[0].text.replace(handle, "H") == missing.content[0].text.replace(never, "H")
            assert handle not in [str(r.uri) for r in (await bob.list_resources()).resources]
        assert not b.files("bob"), "bob's call fetched nothing of alice's"

    run(main())
    refused = httpx2.post(b.url, headers=HEADERS, json=INITIALIZE)
    assert refused.status_code == 401


def test_an_offload_above_the_part_size_goes_up_in_parts_and_comes_back_whole(replicas, bucket):
    a, b = replicas()

    async def main():
        async with client(a.url, "legacy", ALICE) as on_a:
            handle = (await offload(on_a, query="x" * 400, limit=20_000))["file_path"]
        async with client(b.url, "2026-07-28", ALICE) as on_b:
            return handle, (await count(on_b, handle)).content[0].text

    handle, counted = run(main())
    assert counted == "20000"
    name = handle.removeprefix("lro://offload/")
    stored = bucket.client.head_object(Bucket=BUCKET, Key=f"team/alice/{name}")
    assert stored["ContentLength"] > 8 << 20, "above 8 MiB: a multipart upload"
    assert "-" in stored["ETag"], "S3 marks a multipart upload's ETag with its part count"
    assert (b.out / "alice" / name).read_bytes() == (a.out / "alice" / name).read_bytes()


def test_an_expired_handle_is_reported_and_its_object_swept(replicas, bucket):
    a, b = replicas("--ttl", "2")

    async def main():
        async with client(a.url, "2026-07-28", ALICE) as on_a:
            handle = (await offload(on_a))["file_path"]
        assert len(bucket.keys()) == 1
        deadline = time.monotonic() + 20
        while bucket.keys() and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        assert bucket.keys() == [], "a replica's sweep deletes the expired object"
        async with client(b.url, "legacy", ALICE) as on_b:
            answer = await count(on_b, handle)
            assert answer.is_error
            assert answer.content[0].text.startswith(f"expired: the offload {handle} expired at "), answer.content[0].text

    run(main())


def test_twenty_concurrent_clients_each_get_their_own_answers_across_replicas(replicas, bucket):
    a, b = replicas()

    async def one(i: int):
        limit = 60 + i
        first, second = (a, b) if i % 2 else (b, a)
        async with client(first.url, "2026-07-28", ALICE) as on_first:
            handle = (await offload(on_first, query=f"q{i}", limit=limit))["file_path"]
        async with client(second.url, "legacy", ALICE) as on_second:
            counted = await count(on_second, handle)
            return counted.content[0].text, str(limit)

    async def main():
        return await asyncio.gather(*(one(i) for i in range(20)))

    answers = run(main())
    assert [got for got, _ in answers] == [wanted for _, wanted in answers]
    assert len(bucket.keys()) == 20


def test_a_store_that_stops_degrades_offloads_and_they_recover_when_it_is_back(replicas, bucket):
    a, b = replicas()

    async def offload_on_a():
        async with client(a.url, "legacy", ALICE) as on_a:
            result = await on_a.call_tool("recall_memories", {"query": "q", "limit": 200})
            return json.loads(result.content[0].text), result.is_error

    bucket.stop()
    try:
        degraded, is_error = run(offload_on_a())
    finally:
        bucket.start()
    # The spec's fallback: the call did not fail, and says why the rest is not there.
    assert not is_error
    assert degraded["truncated"] is True and degraded["total_count"] == 200, degraded
    assert f"the store s3://{BUCKET}/team: it could not be reached" in degraded["lro_warning"], degraded["lro_warning"]
    # The store's own error (its endpoint, and what it replied) is the operator's, on stderr.
    assert "127.0.0.1" not in degraded["lro_warning"]
    assert any(bucket.endpoint in line for line in a.lines), "".join(a.lines)
    assert not a.files("alice"), "no offload file is left behind that no other replica could read"
    assert bucket.keys() == []

    descriptor, _ = run(offload_on_a())
    assert descriptor["offloaded"] is True

    async def on_b():
        async with client(b.url, "2026-07-28", ALICE) as session:
            return (await count(session, descriptor["file_path"])).content[0].text

    assert run(on_b()) == "200"


def test_a_store_unreachable_for_a_read_says_so_and_is_not_a_missing_handle(replicas, bucket):
    a, b = replicas()

    async def main():
        async with client(a.url, "legacy", ALICE) as on_a:
            handle = (await offload(on_a))["file_path"]
        bucket.stop()
        try:
            async with client(b.url, "legacy", ALICE) as on_b:
                answer = await count(on_b, handle)
                with pytest.raises(Exception) as failed:
                    await on_b.read_resource(handle)
        finally:
            bucket.start()
        assert answer.is_error
        assert answer.content[0].text.startswith("unavailable: the offload could not be read from the store"), answer.content[0].text
        assert "call again" in answer.content[0].text
        assert "unavailable" in messages(failed.value)
        async with client(b.url, "legacy", ALICE) as on_b:
            assert (await count(on_b, handle)).content[0].text == "200"

    run(main())


def test_objects_another_writer_put_in_the_bucket_are_neither_listed_nor_swept_nor_a_stop_to_the_sweep(replicas, bucket):
    old = "01" + "0" * 24  # a ULID of 1970: long expired
    planted = {f"team/alice/notes.txt": b"not ours\n", f"team/alice/atlatl-recall-{old}.jsonl": b"",
               f"team/alice/sub/atlatl-recall-{old}.jsonl": b"{}\n"}
    for key, body in planted.items():
        bucket.client.put_object(Bucket=BUCKET, Key=key, Body=body)
    a, b = replicas("--ttl", "2")

    async def main():
        async with client(a.url, "legacy", ALICE) as on_a:
            handle = (await offload(on_a))["file_path"]
            listed = [str(r.uri) for r in (await on_a.list_resources()).resources]
            assert listed == [handle], listed
        deadline = time.monotonic() + 20
        while f"team/alice/{handle.removeprefix('lro://offload/')}" in bucket.keys() and time.monotonic() < deadline:
            await asyncio.sleep(0.5)

    run(main())
    assert bucket.keys() == sorted(planted), "the offload was swept, and nothing else"


def test_the_store_may_be_named_by_the_variable_or_the_configuration_file(tmp_path, bucket):
    config = tmp_path / "lro.toml"
    config.write_text(f'[prompt.offload]\nstore = "s3://{BUCKET}/team"\nttl_seconds = 600\n')
    tokens = str(tokens_file(tmp_path))
    a = Replica(tmp_path / "a", bucket, "--tokens", tokens, store_flag=False,
                env={"ATLATL_PROMPT__OFFLOAD__STORE": f"s3://{BUCKET}/team"})
    b = Replica(tmp_path / "b", bucket, "--tokens", tokens, "--config", str(config), store_flag=False)
    try:
        assert any(f"keeping offloads in s3://{BUCKET}/team" in line for line in a.lines + b.lines)

        async def main():
            async with client(a.url, "2026-07-28", ALICE) as on_a:
                handle = (await offload(on_a))["file_path"]
            async with client(b.url, "legacy", ALICE) as on_b:
                return (await count(on_b, handle)).content[0].text

        assert run(main()) == "200"
    finally:
        a.stop()
        b.stop()
    # Every other command takes the same file: the key is the proxy's, and left alone there.
    done = subprocess.run([LRO, "recipes", "--config", str(config)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    config.write_text('[prompt.offload]\nstore = 3\n')
    done = subprocess.run([LRO, "recipes", "--config", str(config)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "prompt.offload.store (from " in done.stderr and "expected a string" in done.stderr, done.stderr


def test_a_store_over_plain_http_needs_aws_allow_http(replicas, bucket):
    a, _ = replicas(env={"AWS_ALLOW_HTTP": "false"})
    assert any("warning: the store s3://offloads/team: a request to it failed" in line for line in a.lines), "".join(a.lines)

    async def main():
        async with client(a.url, "legacy", ALICE) as on_a:
            result = await on_a.call_tool("recall_memories", {"query": "q", "limit": 200})
            return json.loads(result.content[0].text)

    assert run(main())["truncated"] is True
    assert bucket.keys() == [], "nothing went over plain HTTP"


@pytest.mark.parametrize("store, env, wanted", [
    ("s3://No_Such", {}, "the bucket name \"No_Such\" is not a valid one"),
    ("gs://offloads", {}, "not an s3:// URL"),
    (f"s3://{BUCKET}", {"AWS_SECRET_ACCESS_KEY": ""}, "AWS_SECRET_ACCESS_KEY is not set"),
    ("/srv/offloads", {}, "name two directories"),
])
def test_a_bad_store_is_a_usage_error_naming_what_is_wrong(tmp_path, bucket, store, env, wanted):
    done = subprocess.run([LRO, "proxy", "--listen", "127.0.0.1:0", "--output-dir", str(tmp_path), "--store", store,
                           "--", *MEMORY], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **bucket.env, **env})
    assert done.returncode == 2, done.stderr
    assert wanted in done.stderr, done.stderr
    assert "panicked" not in done.stderr
