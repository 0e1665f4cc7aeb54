#!/usr/bin/env python3
"""How long the disk makes a writer wait, three ways, on the file system of DIR.

(a) append a 3 KB line and fdatasync (the file grows: a journal commit, as a transcript's
    turn-end sync), (b) overwrite preallocated, already written blocks and fdatasync (no
    size change), (c) the same overwrite with O_DSYNC. N rounds, 30 ms apart; prints runs,
    median, p90 and max of each. The answer to "can an exit that waits for the disk stay
    under 5 ms here?".

Usage: bench/e2e/disk_sync.py DIR [N]
"""
import os, statistics, sys, time

d = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 100
line = b'{"x":"' + b"a" * 3000 + b'"}\n'


def stats(name, xs):
    xs = sorted(xs)
    print(f"{name}: runs={len(xs)} median={statistics.median(xs):.2f} p90={xs[int(len(xs) * 0.9)]:.2f} max={xs[-1]:.2f} ms")


fa = os.open(os.path.join(d, "append.jsonl"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
fb = os.open(os.path.join(d, "prealloc.bin"), os.O_RDWR | os.O_CREAT, 0o600)
os.write(fb, b"\0" * (len(line) * (N + 1)))
os.fsync(fb)
fc = os.open(os.path.join(d, "prealloc.bin"), os.O_RDWR | os.O_DSYNC)
A, B, C = [], [], []
for i in range(N):
    os.write(fa, line)
    t = time.perf_counter(); os.fdatasync(fa); A.append((time.perf_counter() - t) * 1000)
    os.pwrite(fb, line, i * len(line))
    t = time.perf_counter(); os.fdatasync(fb); B.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter(); os.pwrite(fc, line, i * len(line)); C.append((time.perf_counter() - t) * 1000)
    time.sleep(0.03)
stats("append + fdatasync", A)
stats("overwrite + fdatasync", B)
stats("O_DSYNC overwrite", C)
for f in ("append.jsonl", "prealloc.bin"):
    os.unlink(os.path.join(d, f))
