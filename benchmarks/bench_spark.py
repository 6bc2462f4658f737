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
   with the bytes per cell;
4. with ``--margins`` (default ``100x8x8``; '' skips it): a release **with its margins**
   (secondary suppression, ``docs/margins_release.md``) of a three-way table ``region`` x
   ``a`` x ``b`` with the margins ``region+a,region+b`` and a target κ, so that the planner
   runs: the table of each region is a rows-and-columns table of its own, and the suppressed
   cells fall into many independent components (printed, counted from the published table).
   The in-memory engine and Spark on ``local[2]``, end to end, the time and the ratio, and
   whether the two output folders are byte-identical (every file, the custodian's too);
5. with ``--audit`` (default ``1e4`` regions; '' skips it): the audit of the **primary
   pattern** of the same kind of ``region`` x ``a`` x ``b`` table (8 x 8 per region, so
   64 cells per region) with the margins ``region+a,region+b`` and no target:
   :func:`persuasive.spark.margin_audit.audit_margins_spark` on ``local[2]`` (the grid never on
   the driver) against the in-memory audit of the same pattern,
   ``worst_case_losses(MarginTable.from_frame(pl.read_parquet(...), ...), receiver)`` — what
   ``release_table_with_margins(...).primary_worst`` computes, without the release's classical
   comparison and files. Each engine runs in a fresh Python process (this file with
   ``--audit-child``); the time is measured inside it from reading the Parquet file to the
   audit's totals (the Spark session is started before, and its start is printed apart), and
   the process's wall time beside it. The peak RSS of the process that calls the audit is its
   ``ru_maxrss`` (``RUSAGE_SELF``, read at its end): for Spark that is the Python driver only;
   the JVM (the driver's JVM and, with ``local[2]``, the executors) is another process, whose
   peak (``VmHWM`` of ``/proc/PID/status``, read before the session stops) is printed apart,
   and the Python workers of the tasks are not counted. Then the two per-cell results are
   compared cell by cell (``kappa_published``, ``kappa_upper``, ``disclosed``), with the
   maxima, the numbers of suppressed and disclosed cells and of components, and Spark's
   number of tasks of the audit's ``applyInPandas`` step (the partitions of its result).

Each release is a fresh ``persuasive`` (or ``spark-submit``) process, as a user runs it, so
the Spark times include starting the JVM and the session: a 1000-cell release on each Spark
path shows that fixed cost. The peak memory is the child's ``ru_maxrss`` (``os.wait4``). The
input of each size is generated once into a temporary folder with ``make_big_table.py``
(Parquet, an Int64 key ``cell`` in shuffled order, a count ``n``: a quarter below h = 5), and
every release writes Parquet (the format of its input). Nothing is asserted; the load average
is printed with each size, as the machine may be shared.

Run: ``python benchmarks/bench_spark.py [--sizes 1e7,1e8] [--cluster 1e8]
[--streaming-sizes 1e6,1e7,1e8] [--margins 100x8x8] [--audit 1e4,1e5] [--order shuffled|sorted]
[--tmp DIR]``; the margins release alone: ``python benchmarks/bench_spark.py --sizes ''
--cluster 0 --streaming-sizes '' --audit ''``; the audit alone: ``python
benchmarks/bench_spark.py --sizes '' --cluster 0 --streaming-sizes '' --margins ''``.
"""

from __future__ import annotations

import argparse
import contextlib
import math
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


#: The release with margins of part 4: h, the Receiver, the target κ (as in
#: ``bench_margins_release.py``), and the margins of the ``region`` x ``a`` x ``b`` table.
MARGINS_H, MARGINS_KAPPA, MARGINS_SHARE, MARGINS_SEED = 5, 6.0, 0.03, 2026
MARGINS = ["--keys", "region,a,b", "--count", "n", "--h", str(MARGINS_H),
           "--poisson-mean", "1:10", "--margins", "region+a,region+b",
           "--target-kappa", f"{MARGINS_KAPPA:g}"]  # fmt: skip


def make_margins_table(tmp: Path, shape: tuple[int, int, int]) -> Path:
    """The ``region`` x ``a`` x ``b`` table of part 4, as Parquet (Int64 keys and count):
    Poisson(12) counts, a share :data:`MARGINS_SHARE` of the cells replaced by 0..h-1 and
    every other cell at least h (``bench_margins_release.make_counts``), in key order."""
    import numpy as np
    import polars as pl

    path = tmp / f"margins-{'x'.join(map(str, shape))}.parquet"
    rng = np.random.default_rng(MARGINS_SEED)
    counts = rng.poisson(12.0, shape)
    small = rng.random(shape) < MARGINS_SHARE
    counts = np.where(small, rng.integers(0, MARGINS_H, shape), np.maximum(counts, MARGINS_H))
    region, a, b = np.indices(shape)
    frame = pl.DataFrame({"region": region.ravel(), "a": a.ravel(), "b": b.ravel(),
                          "n": counts.ravel()})  # fmt: skip
    frame.write_parquet(path)
    return path


def components(
    released: Path, margins: Sequence[Sequence[str]], statuses: Sequence[str]
) -> list[int]:
    """The sizes of the connected components of the published cells of ``statuses``
    (``released``: the published table, CSV or Parquet), two cells linked when they lie in the
    same entry of a margin, largest first: the independent pieces of the audit, which
    :mod:`persuasive.margins.constraints` may split further (it drops the margin entries that
    the others imply, and what they linked may fall apart)."""
    import polars as pl

    read = pl.read_parquet if released.suffix == ".parquet" else pl.read_csv
    df = read(released)
    df = df.filter(pl.col("suppressed").is_in(list(statuses)))
    parent = list(range(df.height))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for by in margins:
        first: dict[tuple[object, ...], int] = {}
        for i, key in enumerate(df.select(by).iter_rows()):
            parent[find(i)] = find(first.setdefault(key, i))
    sizes: dict[int, int] = {}
    for i in range(df.height):
        sizes[find(i)] = sizes.get(find(i), 0) + 1
    return sorted(sizes.values(), reverse=True)


def same_folders(one: Path, two: Path) -> tuple[bool, int]:
    """Whether two output folders hold the same files with the same bytes; the number of files."""
    names = sorted(p.name for p in one.iterdir())
    if names != sorted(p.name for p in two.iterdir()):
        return False, len(names)
    return all((one / n).read_bytes() == (two / n).read_bytes() for n in names), len(names)


def margins_release(tmp: Path, shape: tuple[int, int, int]) -> None:
    """Part 4: a release with margins, polars against Spark local[2], and the two folders."""
    print("== a release with margins: Spark local[2] against polars (end to end, one process "
          "each) ==")  # fmt: skip
    data = make_margins_table(tmp, shape)
    print(f"{'x'.join(map(str, shape))} = {math.prod(shape)} cells (region x a x b), margins "
          f"region+a,region+b, h = {MARGINS_H}, {MARGINS_SHARE:.0%} below h, Poisson 1:10, "
          f"target kappa {MARGINS_KAPPA:g}, Parquet  ({load()})")  # fmt: skip
    outs = {e: tmp / f"out-margins-{e}" for e in ("polars", "spark")}
    runs = {}
    for engine, extra in (("polars", []), ("spark", ["--spark-master", "local[2]"])):
        shutil.rmtree(outs[engine], ignore_errors=True)
        cmd = [PERSUASIVE, "release", "table", str(data), *MARGINS, "--engine", engine, *extra]
        runs[engine] = run([*cmd, "--out", str(outs[engine]), "--quiet"], tmp, cluster_env())
    base = runs["polars"]
    if base.status == 0:
        by = [["region", "a"], ["region", "b"]]
        published = next(outs["polars"].glob("released.*"))  # Parquet in, Parquet out
        first = components(published, by, ["primary"])
        final = components(published, by, ["primary", "secondary"])
        print(f"  components (cells linked by a margin entry): primary pattern {sum(first)} "
              f"cells in {len(first)}; published pattern {sum(final)} cells in {len(final)}, "
              f"the largest {final[0] if final else 0} cells")  # fmt: skip
    print(f"  polars (in memory)                     : {base.shown(peak=False)}")
    print(f"  Spark local[2]                         : {runs['spark'].shown(base, peak=False)}")
    if base.status == 0 and runs["spark"].status == 0:
        same, n = same_folders(outs["polars"], outs["spark"])
        print(f"  output folders byte-identical          : {'yes' if same else 'NO'} ({n} files)")
    sys.stdout.flush()


#: The audit of part 5: the table of part 4 (``make_margins_table``) with 8 x 8 cells per region,
#: its primary pattern audited with the same h, Receiver and margins, and no target.
AUDIT_AB, AUDIT_KEYS, AUDIT_MARGINS = 8, ["region", "a", "b"], "region+a,region+b"
AUDIT_NAMES = {
    "polars": "in memory (polars)",
    "spark": "Spark local[2]    ",
}


def _jvm_peak(spark: object) -> int | None:
    """The peak RSS (bytes) of the session's JVM, ``VmHWM`` of its ``/proc`` status; None when
    it cannot be read (the gateway's process is not the JVM)."""
    try:
        proc = spark.sparkContext._gateway.proc  # type: ignore[attr-defined]
        status = Path(f"/proc/{proc.pid}/status").read_text()
        if Path(f"/proc/{proc.pid}/comm").read_text().strip() != "java":
            return None
    except (AttributeError, OSError):
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


def audit_child(engine: str, data: Path, out: Path, facts_out: Path) -> int:
    """One engine's audit of part 5, in this (fresh) process: its timings, totals and peak RSS
    written as JSON to ``facts_out``; the per-cell result (the suppressed cells' keys,
    ``kappa_published``, ``kappa_upper``, ``disclosed``) written to ``out`` after the timing.
    ``engine``: ``polars`` or ``spark`` (on ``local[2]``, the session as persuasive starts it)."""
    import json

    from persuasive.classes.receivers import PoissonReceiver

    receiver = PoissonReceiver(1, 10)
    kept = [*AUDIT_KEYS, "kappa_published", "kappa_upper", "disclosed"]
    facts: dict[str, object] = {}
    if engine == "polars":
        import numpy as np
        import polars as pl

        from persuasive.margins import MarginTable, worst_case_losses

        t0 = time.perf_counter()
        frame = pl.read_parquet(data)
        table = MarginTable.from_frame(
            frame, keys=AUDIT_KEYS, count="n", h=MARGINS_H, margins=AUDIT_MARGINS
        )
        worst = worst_case_losses(table, receiver)
        facts["seconds"] = time.perf_counter() - t0
        sup = table.suppressed
        post = worst.posterior
        facts |= {
            "n_cells": table.n_cells,
            "n_suppressed": int(sup.sum()),
            "n_components": 0 if post is None else len(post.methods),
            "n_inexact": int((~worst.computed_exactly[sup]).sum()),
            "max_kappa_published": float(worst.kappa_published[sup].max(initial=0.0)),
            "n_disclosed": int(worst.disclosed[sup].sum()),
        }
        at = np.nonzero(sup)
        cols = {k: np.asarray(table.levels[k])[i] for k, i in zip(AUDIT_KEYS, at, strict=True)}
        for name in kept[len(AUDIT_KEYS) :]:
            cols[name] = getattr(worst, name)[at]
        pl.DataFrame(cols).write_parquet(out)
    else:
        from persuasive.spark import session
        from persuasive.spark.margin_audit import audit_margins_spark

        t0 = time.perf_counter()
        spark = session.session_of("local[2]")
        spark.range(1).count()  # the executors started
        t1 = time.perf_counter()
        audit = audit_margins_spark(
            str(data), keys=AUDIT_KEYS, count="n", h=MARGINS_H, receiver=receiver,
            margins=AUDIT_MARGINS, spark=spark,
        )  # fmt: skip
        facts |= {"session": t1 - t0, "seconds": time.perf_counter() - t1}
        facts |= {
            "n_cells": audit.n_cells,
            "n_suppressed": audit.n_suppressed,
            "n_components": audit.n_components,
            "n_inexact": audit.cells.filter("NOT exact").count(),
            "max_kappa_published": audit.max_kappa_published,
            "n_disclosed": audit.n_disclosed,
            "tasks": audit.cells.rdd.getNumPartitions(),  # of the applyInPandas stage
        }
        audit.cells.select(*kept).write.parquet(str(out))
        facts["jvm_peak"] = _jvm_peak(spark)
        spark.stop()
    facts["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    facts_out.write_text(json.dumps(facts))
    return 0


def same_cells(one: Path, two: Path) -> tuple[int, int]:
    """The suppressed cells of the two per-cell results whose ``kappa_published``,
    ``kappa_upper`` and ``disclosed`` are equal (bit for bit), and the number of cells of
    either (a cell of one only counts as a difference)."""
    import polars as pl

    a = pl.read_parquet(one)
    b = pl.read_parquet(two if two.is_file() else two / "*.parquet")
    both = a.join(b, on=AUDIT_KEYS, how="full", coalesce=True, suffix="_spark")
    same = pl.lit(True)
    for name in ("kappa_published", "kappa_upper", "disclosed"):
        same = same & (pl.col(name) == pl.col(f"{name}_spark")).fill_null(False)
    return int(both.select(same.sum()).item()), both.height


def audit(tmp: Path, regions: Sequence[int]) -> None:
    """Part 5: the audit of the primary pattern, Spark (no grid on the driver) against the
    in-memory audit, each in a fresh process, and the two results cell by cell."""
    import json

    print("== the audit of a table's primary pattern with its margins: audit_margins_spark on "
          "local[2] against the in-memory audit (one process each) ==")  # fmt: skip
    print("(in memory: worst_case_losses(MarginTable.from_frame(...)), the release's primary "
          "audit; time from reading the Parquet file to the totals, the Spark session started "
          "before)")  # fmt: skip
    for n in regions:
        shape = (n, AUDIT_AB, AUDIT_AB)
        data = make_margins_table(tmp, shape)
        print(f"{n} regions x {AUDIT_AB} x {AUDIT_AB} = {math.prod(shape):,} cells, margins "
              f"{AUDIT_MARGINS}, h = {MARGINS_H}, {MARGINS_SHARE:.0%} below h, Poisson 1:10, "
              f"no target, Parquet  ({load()})")  # fmt: skip
        got: dict[str, dict[str, object]] = {}
        for engine in ("polars", "spark"):
            out, facts = tmp / f"audit-{engine}-{n}.parquet", tmp / f"audit-{engine}-{n}.json"
            shutil.rmtree(out, ignore_errors=True)
            out.unlink(missing_ok=True)
            facts.unlink(missing_ok=True)
            cmd = [sys.executable, str(Path(__file__).resolve()), "--audit-child", engine]
            r = run([*cmd, str(data), str(out), str(facts)], tmp, cluster_env())
            name = AUDIT_NAMES[engine]
            if r.status != 0 or not facts.exists():
                print(f"  {name}: failed (exit {r.status}): {r.tail}")
                continue
            f = got[engine] = json.loads(facts.read_text())
            ratio = ""
            if engine != "polars" and "polars" in got:
                ratio = f"   ratio {float(f['seconds']) / float(got['polars']['seconds']):6.2f}x"
            print(f"  {name}: {float(f['seconds']):8.2f} s{ratio}   (the process {r.seconds:.1f} s"
                  + (f", the session's start {float(f['session']):.1f} s" if "session" in f else "")
                  + ")")  # fmt: skip
            how = "linked by margin entries" if engine == "spark" else "of its constraints"
            what = f"{f['n_suppressed']} suppressed cells in {f['n_components']} components "
            what += f"({how}), {f['n_inexact']} not exact"
            peak = f"    peak RSS {int(f['peak']) / 2**30:5.2f} GiB"
            if engine == "spark":
                what += f", the components audited in {f['tasks']} tasks"
                jvm = (
                    "not read" if f["jvm_peak"] is None else f"{int(f['jvm_peak']) / 2**30:.2f} GiB"
                )
                peak += f" (the Python driver); the JVM {jvm} (driver and executors); the "
                peak += "Python workers not counted"
            print(f"    {what}")
            print(peak)
            sys.stdout.flush()
        if "polars" in got and "spark" in got:
            p, q = got["polars"], got["spark"]
            keys = ("max_kappa_published", "n_disclosed", "n_suppressed", "n_cells")
            verdict = "equal" if all(p[k] == q[k] for k in keys) else "DIFFERENT"
            cells, of = same_cells(*(tmp / f"audit-{e}-{n}.parquet" for e in ("polars", "spark")))
            print(f"  agree: max kappa_published {p['max_kappa_published']!r} (in memory) / "
                  f"{q['max_kappa_published']!r} (Spark), disclosed cells {p['n_disclosed']} / "
                  f"{q['n_disclosed']}: {verdict}; cell by cell (kappa_published, kappa_upper, "
                  f"disclosed) {cells} of {of} equal")  # fmt: skip
        sys.stdout.flush()


def shape_of(text: str) -> tuple[int, int, int] | None:
    if not text.strip():
        return None
    dims = tuple(int(d) for d in text.lower().split("x"))
    if len(dims) != 3:
        raise SystemExit(f"--margins takes REGIONSxAxB, e.g. 100x8x8; got {text!r}")
    return dims  # type: ignore[return-value]


def sizes_of(text: str) -> list[int]:
    return [int(float(s)) for s in text.split(",") if s.strip()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1e7,1e8", help="cells, comma-separated (polars, Spark)")
    p.add_argument("--cluster", default="1e8", help="cells on the standalone cluster (0: none)")
    p.add_argument("--streaming-sizes", default=None, help="cells (default: --sizes; '': none)")
    p.add_argument("--margins", default="100x8x8", help="regions x a x b of part 4 ('': none)")
    p.add_argument("--audit", default="1e4", help="regions of part 5, comma-separated ('': none)")
    p.add_argument("--audit-child", nargs=4, metavar=("ENGINE", "DATA", "OUT", "FACTS"),
                   help=argparse.SUPPRESS)  # fmt: skip
    p.add_argument("--order", choices=("shuffled", "sorted"), default="shuffled")
    p.add_argument("--tmp", type=Path, default=None, help="keep the inputs here (default: temp)")
    args = p.parse_args(argv)
    if args.audit_child:
        engine, data, out, facts = args.audit_child
        return audit_child(engine, Path(data), Path(out), Path(facts))
    sizes = sizes_of(args.sizes)
    on_cluster = int(float(args.cluster))
    mem = sizes if args.streaming_sizes is None else sizes_of(args.streaming_sizes)
    shape = shape_of(args.margins)
    regions = sizes_of(args.audit)
    print(f"bench_spark.py  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  "
          f"{os.cpu_count()} cores  {load()}")  # fmt: skip
    with workdir(args.tmp) as tmp:
        base = speed(tmp, sizes, args.order) if sizes else {}
        if on_cluster:
            cluster(tmp, on_cluster, args.order, base.get(on_cluster))
        if mem:
            memory(tmp, mem, args.order, base)
        if shape is not None:
            margins_release(tmp, shape)
        if regions:
            audit(tmp, regions)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
