#!/usr/bin/env python3
"""A/B of two `shard` binaries: delta throughput through the Runtime (wall, and CPU of the
shard process from RUSAGE_CHILDREN, which load on a shared machine disturbs less) and idle
RSS, alternating the binaries, best of 7. Usage: bench/runtime/ab.py BIN_A BIN_B [...]"""
import os, resource, sys, tempfile, shutil, importlib.util
spec = importlib.util.spec_from_file_location(
    "bench", os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench.py"))
bench = importlib.util.module_from_spec(spec)
bins = sys.argv[1:]
spec.loader.exec_module(bench)
N = 200_000
res = {b: {"wall": [], "cpu": [], "rss": []} for b in bins}
tmp = tempfile.mkdtemp()
home = os.path.join(tmp, "home"); work = os.path.join(tmp, "work")
os.makedirs(home); os.makedirs(work)
for i in range(7):
    for b in bins:
        bench.BIN = b
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        dt, total, count = bench.deltas(home, work, N)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        res[b]["wall"].append(dt)
        res[b]["cpu"].append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
        if i < 3:
            res[b]["rss"].append(bench.rss_after_sync(home, work)[0])
for b in bins:
    w = sorted(res[b]["wall"]); c = sorted(res[b]["cpu"])
    print(f"{b}: {N} deltas wall best={w[0]:.3f}s median={w[len(w)//2]:.3f}s -> {N/w[0]:,.0f}/s best; cpu best={c[0]:.3f}s median={c[len(c)//2]:.3f}s; idle rss={min(res[b]['rss']):.2f} MB")
shutil.rmtree(tmp, ignore_errors=True)
