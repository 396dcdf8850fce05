"""One `Lro` shared by 8 threads: 2,000 calls mixing offloads, extractions and failing filters,
each result checked, and resident memory flat. `pytest -s` shows the figures."""

import os
import threading
import time

from lro_wasm import Lro, LroError

THREADS = 8
CALLS = 250  # per thread
WARM = 100  # calls after which the baseline memory is taken


def records(n, tag):
    return [{"id": f"{tag}-{i}", "namespace": "_semantic/load", "title": f"Record {i} of {tag}"} for i in range(n)]


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_eight_threads_share_one_lro(wasm, tmp_path):
    lro = Lro(wasm)
    # No storage caps: a write that does not fit under a cap degrades instead of offloading.
    cfg = lro.config(output_dir=str(tmp_path), threshold_tokens=100, max_files=0, max_bytes=0)
    lock = threading.Lock()
    done = [0]
    rss_at_warm = []
    failures = []

    def count_call():
        with lock:
            done[0] += 1
            if done[0] == WARM:
                rss_at_warm.append(rss_mb())

    def worker(t):
        mine = []  # (path, count) of this thread's offloads
        try:
            for i in range(CALLS):
                step = i % 3
                if step == 0 or not mine:
                    n = 40 + (t * CALLS + i) % 60
                    out = lro.offload(cfg, {"operation": "list", "records": records(n, f"t{t}c{i}")})
                    assert out["kind"] == "offloaded" and out["count"] == n, out
                    with open(out["path"]) as f:
                        assert sum(1 for _ in f) == n + 1, out["path"]  # the header and the records
                    mine.append((out["path"], n, f"t{t}c{i}"))
                elif step == 1:
                    path, n, tag = mine[i % len(mine)]
                    if i % 2:
                        got = lro.extract(cfg, {"path": path, "query": 'select(.id | endswith("-7")) | .id'})
                        assert got["values"] == [f'"{tag}-7"'], got
                    else:
                        got = lro.extract(cfg, {"path": path, "query": "length", "slurp": True})
                        assert got["values"] == [str(n)], got
                else:
                    try:
                        lro.query('error("boom")', "null")
                    except LroError as e:
                        assert e.kind == "filter-failed" and "boom" in e.message, e
                    else:
                        raise AssertionError("a failing filter did not fail")
                count_call()
        except BaseException as e:  # reported by the main thread
            failures.append((t, e))

    start = time.monotonic()
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.monotonic() - start
    rss_end = rss_mb()

    assert not failures, failures[:3]
    total = done[0]
    print(f"\nload: {THREADS} threads, {total} calls in {took:.1f} s = {total / took:.0f} calls/s; "
          f"RSS {rss_at_warm[0]:.0f} MB after {WARM} calls, {rss_end:.0f} MB after {total}")
    assert total == THREADS * CALLS
    assert rss_end - rss_at_warm[0] < 100, f"resident memory grew from {rss_at_warm[0]:.0f} to {rss_end:.0f} MB"


def test_each_lro_ticks_its_engine_until_it_is_gone_and_no_longer(wasm, tmp_path):
    """An engine's epoch ticker holds the engine and ends when its `Lro` is collected, freeing
    the engine from its own thread (it used to tick through a weak reference, which could hand
    it an engine being freed: a segfault). An Lro made and dropped leaves no ticker behind, and a
    deadline still interrupts a call. (Other tests' Lros may be collected meanwhile: only this
    test's own tickers are watched.)"""
    import gc

    def tickers():
        return {t for t in threading.enumerate() if t.name == "lro-epoch"}

    for _ in range(6):
        others = tickers()
        made = Lro(wasm, cache_dir=str(tmp_path / "cache"), filter_deadline=0.05)
        own = tickers() - others
        assert len(own) == 1, own
        try:
            made.query("[limit(100000000; repeat(1))] | length", "null")
        except LroError as e:
            assert e.kind == "timeout", e
        else:
            raise AssertionError("the deadline did not interrupt the call")
        del made
        gc.collect()
        for ticker in own:
            ticker.join(timeout=2)
            assert not ticker.is_alive(), "a ticker outlived its Lro"
