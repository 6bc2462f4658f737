"""The table release on Spark and out of core, against the in-memory engine, in one run.

Prints, in one run (``docs/scale.md``):

1. for each size of ``--sizes`` (default 10^7 and 10^8 cells): the in-memory engine
   (``persuasive release table ... --engine polars``) and Spark on ``local[2]``
   (``--engine spark --spark-master local[2]``), end to end (read, check, write, certificate,
   verification), the time and the ratio to polars;
2. at ``--cluster`` cells (default 10^8; 0 skips it): the same release submitted to a
   standalone Spark cluster of two workers of one core started on this machine
   (``spark-submit --master spark://127.0.0.1:PORT src/persuasive/spark/submit.py release
   table ...``: :class:`test_spark_cluster.StandaloneCluster`), the time and the ratio to polars
   at that size (measured in the same run);
3. for each size of ``--streaming-sizes`` (default: those of ``--sizes``): the peak resident
   memory of the out-of-core engine (``--engine streaming``) against the in-memory engine's,
   with the bytes per cell.

Each release is a fresh ``persuasive`` (or ``spark-submit``) process, as a user runs it, so
the Spark times include starting the JVM and the session: a 1000-cell release on each Spark
path shows that fixed cost. The peak memory is the child's ``ru_maxrss`` (``os.wait4``). The
input of each size is generated once into a temporary folder with ``make_big_table.py``
(Parquet, an Int64 key ``cell`` in shuffled order, a count ``n``: a quarter below h = 5), and
every release writes Parquet. Nothing is asserted; the load average is printed with each size,
as the machine may be shared.

Run: ``python benchmarks/bench_spark.py [--sizes 1e7,1e8] [--cluster 1e8]
[--streaming-sizes 1e6,1e7,1e8] [--order shuffled|sorted] [--tmp DIR]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

SUBMIT = ROOT / "src" / "persuasive" / "spark" / "submit.py"
RELEASE = ["--keys", "cell", "--count", "n", "--h", "5", "--poisson-mean", "0.5:3"]
PERSUASIVE = str(Path(sys.executable).parent / "persuasive")
SMALL = 1000


@dataclass
class Run:
    seconds: float
    peak: int  # bytes
    status: int
    tail: str

    def shown(self, base: Run | None = None, peak: bool = True) -> str:
        if self.status != 0:
            return f"failed (exit {self.status}): {self.tail}"
        text = f"{self.seconds:8.2f} s"
        if peak:  # a Spark release runs in JVMs that are not the child waited for
            text += f"   peak RSS {self.peak / 2**30:6.2f} GiB"
        if base is not None and base.status == 0:
            text += f"   ratio to polars {self.seconds / base.seconds:6.2f}x"
        return text


def run(cmd: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> Run:
    """Run ``cmd`` in its own process group; its wall time, peak RSS, status and last line."""
    log = cwd / f"log-{time.monotonic_ns()}.txt"
    with log.open("wb") as fh:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, 9)  # what the command left behind (a Spark daemon)
        seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:")]
    tail = (errors or lines or [""])[-1][:200]
    if proc.returncode == 0:
        log.unlink()  # a failed command's log stays in the folder
    return Run(seconds, usage.ru_maxrss * 1024, proc.returncode, tail)


def release(
    data: Path, engine: str, out: Path, extra: Sequence[str] = (), cwd: Path | None = None
) -> Run:
    shutil.rmtree(out, ignore_errors=True)
    cmd = [PERSUASIVE, "release", "table", str(data), *RELEASE, "--engine", engine]
    cmd += [*extra, "--out", str(out), "--quiet"]
    env = cluster_env()
    return run(cmd, cwd or out.parent, env)


def cluster_env() -> dict[str, str]:
    from test_spark_cluster import python_env

    return python_env()


def make(tmp: Path, n: int, order: str) -> Path:
    """The input of ``n`` cells, written once by ``make_big_table.py`` in a process of its own:
    a child's peak RSS (``ru_maxrss``) starts at the RSS of the process it was forked from, so
    this one stays small."""
    path = tmp / f"t{n}.parquet"
    if not path.exists():
        cmd = [sys.executable, str(ROOT / "benchmarks" / "make_big_table.py"), "--cells", str(n)]
        cmd += ["--out", str(path), "--order", order]
        subprocess.run(cmd, check=True, capture_output=True)
    return path


def load() -> str:
    return f"load average {os.getloadavg()[0]:.2f}"


def label(n: int) -> str:
    return f"{n:.0e}".replace("e+0", "e")


@contextlib.contextmanager
def workdir(given: Path | None) -> Iterator[Path]:
    if given is not None:
        given.mkdir(parents=True, exist_ok=True)
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        yield Path(tmp)


def speed(tmp: Path, sizes: Sequence[int], order: str) -> dict[int, Run]:
    """Part 1: polars against Spark local[2]; the polars runs by size."""
    print("== Spark local[2] against polars (end to end, one process each) ==")
    small = make(tmp, SMALL, order)
    r = release(small, "spark", tmp / "out-spark", ["--spark-master", "local[2]"])
    print(f"{label(SMALL)} cells  Spark local[2] (its fixed cost)      : {r.shown(peak=False)}")
    base: dict[int, Run] = {}
    for n in sizes:
        data = make(tmp, n, order)
        print(f"{label(n)} cells, Parquet {data.stat().st_size / 1e9:.2f} GB, {order} keys, "
              f"h = 5  ({load()})")  # fmt: skip
        base[n] = release(data, "polars", tmp / "out-polars")
        print(f"  polars (in memory)                     : {base[n].shown()}")
        r = release(data, "spark", tmp / "out-spark", ["--spark-master", "local[2]"])
        print(f"  Spark local[2]                         : {r.shown(base[n], peak=False)}")
        sys.stdout.flush()
    return base


def cluster(tmp: Path, n: int, order: str, base: Run | None) -> None:
    """Part 2: the standalone cluster of two one-core workers, through spark-submit."""
    from test_spark_cluster import StandaloneCluster

    print("== standalone cluster: a master and two workers (1 core, 2 GiB each) ==")
    data = make(tmp, n, order)
    if base is None:
        base = release(data, "polars", tmp / "out-polars")
    with StandaloneCluster(tmp / "cluster", workers=2, cores=1, memory="2g") as c:
        conf = ["--conf", "spark.executor.memory=1536m", "--conf", "spark.ui.enabled=false"]
        conf += ["--conf", f"spark.pyspark.python={sys.executable}"]
        for size, data_ in ((SMALL, make(tmp, SMALL, order)), (n, data)):
            out = tmp / "out-cluster"
            shutil.rmtree(out, ignore_errors=True)
            cmd = [str(Path(sys.executable).parent / "spark-submit"), "--master", c.url, *conf]
            cmd += [str(SUBMIT), "release", "table", str(data_), *RELEASE, "--out", str(out)]
            r = run([*cmd, "--quiet"], tmp, cluster_env())
            who = "(its fixed cost)" if size == SMALL else f"({load()})"
            print(f"{label(size)} cells  spark-submit, 2 workers {who:<14}: "
                  f"{r.shown(base if size == n else None, peak=False)}")  # fmt: skip
            sys.stdout.flush()


def memory(tmp: Path, sizes: Sequence[int], order: str, base: dict[int, Run]) -> None:
    """Part 3: peak memory of the out-of-core engine against size, beside polars'; the bytes
    per cell are above the peak of a 1000-cell release of the same engine (the interpreter and
    the libraries)."""
    print("== peak memory: streaming (out of core) against polars (in memory) ==")
    small = make(tmp, SMALL, order)
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"(a peak below this benchmark's own {floor / 2**30:.2f} GiB cannot be seen)")
    fixed = {e: release(small, e, tmp / f"out-{e}").peak for e in ("streaming", "polars")}
    print(f"{label(SMALL)} cells  peak RSS: streaming {fixed['streaming'] / 2**30:.2f} GiB, "
          f"polars {fixed['polars'] / 2**30:.2f} GiB (the fixed part)")  # fmt: skip
    for n in sizes:
        data = make(tmp, n, order)
        s = release(data, "streaming", tmp / "out-streaming")
        p = base.get(n) or release(data, "polars", tmp / "out-polars")
        print(f"{label(n)} cells ({load()})")
        for name, r in (("streaming", s), ("polars", p)):
            per = (r.peak - fixed[name]) / n
            more = "" if r.status else f"  {per:6.1f} B/cell above the fixed part"
            print(f"  {name:<10}: {r.shown(p if name == 'streaming' else None)}{more}")
        sys.stdout.flush()


def sizes_of(text: str) -> list[int]:
    return [int(float(s)) for s in text.split(",") if s.strip()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1e7,1e8", help="cells, comma-separated (polars, Spark)")
    p.add_argument("--cluster", default="1e8", help="cells on the standalone cluster (0: none)")
    p.add_argument("--streaming-sizes", default=None, help="cells (default: --sizes; '': none)")
    p.add_argument("--order", choices=("shuffled", "sorted"), default="shuffled")
    p.add_argument("--tmp", type=Path, default=None, help="keep the inputs here (default: temp)")
    args = p.parse_args(argv)
    sizes = sizes_of(args.sizes)
    on_cluster = int(float(args.cluster))
    mem = sizes if args.streaming_sizes is None else sizes_of(args.streaming_sizes)
    print(f"bench_spark.py  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  "
          f"{os.cpu_count()} cores  {load()}")  # fmt: skip
    with workdir(args.tmp) as tmp:
        base = speed(tmp, sizes, args.order) if sizes else {}
        if on_cluster:
            cluster(tmp, on_cluster, args.order, base.get(on_cluster))
        if mem:
            memory(tmp, mem, args.order, base)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
