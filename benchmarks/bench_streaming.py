"""Peak memory and time of the streamed table release against the table's size.

Usage::

    python benchmarks/bench_streaming.py --sizes 1e6 1e7 1e8
    python benchmarks/bench_streaming.py --sizes 2e9 --stages engine --order shuffled
    python benchmarks/bench_streaming.py --sizes 1e7 --stages polars pipeline --format csv

For each size N, ``benchmarks/make_big_table.py`` writes a count table of N cells under
``--dir`` (default ``/tmp``; removed afterwards unless ``--keep``), and each stage runs in a
fresh subprocess whose peak resident memory (max RSS) is read from ``os.wait4``:

``engine``
    ``release_table(path, engine="streaming")`` (validation, keys proved unique, the digest of
    the published rows), the published table sunk into a file, and the table kind's streamed
    reading of the written file with the pipeline's check that it has that digest
    (``pipeline._check_digests``): the engine and one reading of the publication.
``pipeline``
    ``rel.write(folder)`` with ``engine="streaming"``: the engine, then the pipeline's own reading
    of the publication for the certificate and the final verification (``persuasive verify``),
    both in bounded memory (:func:`persuasive.release.stream_publication.publication_stats`).
``polars``
    ``rel.write(folder)`` with the in-memory engine, for comparison.

It prints one line per size and stage: cells, file size, peak RSS, bytes per cell and seconds,
and the date and load average (``docs/out_of_core.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, sys, time
from pathlib import Path
from persuasive.classes.receivers import PoissonReceiver
from persuasive.release.tables import release_table

stage, src, fmt, out = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
t0 = time.perf_counter()
opts = dict(keys="cell", count="n", h=5, receiver=PoissonReceiver(0.5, 3))
times = {}
if stage == "engine":
    from persuasive.release import pipeline
    rel = release_table(src, engine="streaming", **opts)
    times["release"] = time.perf_counter() - t0
    out.mkdir(parents=True)
    files = {}
    for name, write in rel.published_files(fmt).items():
        write(out / name)
        files[name] = out / name
    times["write"] = time.perf_counter() - t0
    from persuasive.report.kinds.table import KIND

    pipeline._check_digests(rel, KIND.read_publication(rel.params, files))
    times["check"] = time.perf_counter() - t0
    how = rel.unique_by
else:
    engine = "polars" if stage == "polars" else "streaming"
    rel = release_table(src, engine=engine, **opts)
    times["release"] = time.perf_counter() - t0
    rel.write(out, format=fmt)
    times["write+certify+verify"] = time.perf_counter() - t0
    how = getattr(rel, "unique_by", "")
print(json.dumps({"times": times, "unique_by": how}))
"""


def run_child(stage: str, src: Path, fmt: str, out: Path) -> dict[str, object]:
    """Run one stage in a subprocess; its result and peak RSS (bytes)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, stage, str(src), fmt, str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    t0 = time.perf_counter()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t0
    stdout = proc.stdout.read() if proc.stdout else ""
    stderr = proc.stderr.read() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = stderr.strip().splitlines()[-1:] or ["(no output)"]
        return {"error": f"exit {proc.returncode}: {tail[0]}", "rss": usage.ru_maxrss * 1024}
    result = json.loads(stdout.strip().splitlines()[-1])
    result["rss"] = usage.ru_maxrss * 1024  # ru_maxrss is in KiB on Linux
    result["seconds"] = elapsed
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", nargs="+", default=["1e6", "1e7", "1e8"])
    p.add_argument("--stages", nargs="+", default=["engine", "pipeline"])
    p.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    p.add_argument("--order", choices=("sorted", "shuffled"), default="sorted")
    p.add_argument("--keys", choices=("int", "text"), default="int")
    p.add_argument("--dir", type=Path, default=Path("/tmp"))
    p.add_argument("--keep", action="store_true", help="keep the generated tables")
    args = p.parse_args(argv)
    for stage in args.stages:
        if stage not in ("engine", "pipeline", "polars"):
            p.error(f"unknown stage {stage!r}: engine, pipeline or polars")
    load = os.getloadavg()
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} cores; "
        f"{args.format}, {args.order} {args.keys} keys"
    )
    print("cells\tfile GB\tstage\tpeak RSS MB\tbytes/cell\tseconds\tkeys unique by")
    work = Path(tempfile.mkdtemp(prefix="persuasive-bench-", dir=args.dir))
    try:
        for size in args.sizes:
            n = int(float(size))
            src = work / f"table-{n}.{args.format}"
            make = [sys.executable, str(HERE / "make_big_table.py"), "--cells", str(n)]
            make += ["--out", str(src), "--order", args.order, "--keys", args.keys]
            subprocess.run(make, check=True, stderr=subprocess.DEVNULL)
            gb = src.stat().st_size / 1e9
            for stage in args.stages:
                out = work / f"out-{n}-{stage}"
                r = run_child(stage, src, args.format, out)
                shutil.rmtree(out, ignore_errors=True)
                rss = int(r["rss"])  # type: ignore[call-overload]
                if "error" in r:
                    print(f"{n}\t{gb:.3f}\t{stage}\t{rss / 2**20:.0f}\t-\t-\t{r['error']}")
                    continue
                print(
                    f"{n}\t{gb:.3f}\t{stage}\t{rss / 2**20:.0f}\t{rss / n:.2f}\t"
                    f"{r['seconds']:.1f}\t{r['unique_by']}",
                    flush=True,
                )
            if not args.keep:
                src.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
