#!/usr/bin/env python3
"""Last response → exit of `shard run`, A against B, in alternating batches.

Runs bench/e2e/run.py (the three-turn task against a local mock) for each binary in turn,
BATCHES × RUNS times, and pools the per-run figures: start → first request and last
response → exit (runs, median, p90, max, and how many runs missed the goals of 10 and
5 ms), and per batch the whole task's median wall time and peak RSS. Alternating batches
share whatever load the machine has at the time.

Before each batch the binary is dropped from the page cache and read back whole, so every
binary starts from the same cache state: how the kernel cached a file (just linked, copied,
or read ahead) changes how many of its code pages a run maps, by a megabyte or more of peak
RSS, more than the differences between builds (docs/performance.md, "Packed relocations").

Usage: bench/e2e/exit_ab.py NAME=BIN [NAME=BIN ...] [--batches N] [--runs N]
Run it under `chrt -f 50` where allowed (real-time priority keeps builds from preempting
the benchmark; the disk is still shared).
"""
import os, re, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def recache(path):
    """Drops `path` from the page cache and reads it back, the same way for every binary."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1 << 20):
            pass
    finally:
        os.close(fd)


def main():
    args = sys.argv[1:]
    batches, runs, bins = 5, 10, []
    while args:
        a = args.pop(0)
        if a == "--batches":
            batches = int(args.pop(0))
        elif a == "--runs":
            runs = int(args.pop(0))
        else:
            name, _, path = a.partition("=")
            bins.append((name, path))
    if not bins:
        sys.exit(__doc__)
    pooled = {name: {"first": [], "exit": [], "wall": [], "rss": []} for name, _ in bins}
    for b in range(batches):
        for name, path in bins:
            recache(path)
            out = subprocess.run([sys.executable, os.path.join(HERE, "run.py"), path, str(runs)],
                                 capture_output=True, text=True, check=True).stdout
            for key, label in (("first", "start_to_first_request_ms"), ("exit", "last_response_to_exit_ms")):
                line = next(l for l in out.splitlines() if l.startswith(label))
                xs = [float(x) for x in re.sub(r"\(.*\)", "", line[len(label):]).split()]
                pooled[name][key] += xs
            pooled[name]["wall"].append(float(re.search(r"wall_ms median=([\d.]+)", out).group(1)))
            pooled[name]["rss"].append(float(re.search(r"peak_rss_mb max=([\d.]+)", out).group(1)))
            print(f"batch {b + 1}/{batches} {name}: first request " + " ".join(f"{x:.1f}" for x in pooled[name]["first"][-runs:])
                  + "; exit " + " ".join(f"{x:.1f}" for x in pooled[name]["exit"][-runs:]), flush=True)
    for name, _ in bins:
        for key, label in (("first", "start → first request"), ("exit", "last response → exit")):
            xs = pooled[name][key]
            goal = 5.0 if key == "exit" else 10.0
            over = sum(1 for x in xs if x > goal)
            extra = f", over {goal:.0f} ms: {over}"
            print(f"{name}: {label}: runs={len(xs)} median={statistics.median(xs):.1f} p90={pct(xs, 0.9):.1f} max={max(xs):.1f} ms{extra}")
    base = bins[0][0]
    for name, _ in bins:
        wall, rss = pooled[name]["wall"], pooled[name]["rss"]
        ratio = ""
        if name != base:
            ratio = (f" (against {base}: wall ×{statistics.median(wall) / statistics.median(pooled[base]['wall']):.3f},"
                     f" RSS ×{statistics.median(rss) / statistics.median(pooled[base]['rss']):.3f})")
        print(f"{name}: whole task: batch wall medians {min(wall):.1f}–{max(wall):.1f} ms (median {statistics.median(wall):.1f}),"
              f" peak RSS {min(rss):.1f}–{max(rss):.1f} MB (median {statistics.median(rss):.1f}){ratio}")


if __name__ == "__main__":
    main()
