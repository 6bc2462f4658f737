"""A table release on a real Spark cluster: a standalone master and two workers on localhost.

The module starts the cluster once (:class:`StandaloneCluster`: ``spark-class`` of the pip
pyspark, each process in its own process group), waits until both workers are registered
with the master, and stops every process in a ``finally`` (the process groups are killed, also
when a test or the start fails). The release is submitted as a user would submit it
(``docs/scale.md``): ``spark-submit --master spark://... src/persuasive/spark/submit.py`` with
the arguments of ``persuasive release table``. The oracles are independent of the Spark
engine: the published rows are computed here with polars from the input, the certificate is
the one the polars engine writes for the same input, and ``persuasive verify`` re-checks the
folder. A release with its margins (``--margins rows,cols --target-kappa K``, secondary
suppression) is submitted to the same cluster, and its folder compared with the polars
engine's byte for byte.

:mod:`benchmarks.bench_spark` starts the same cluster (it imports :class:`StandaloneCluster`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUBMIT = ROOT / "src" / "persuasive" / "spark" / "submit.py"
#: Seconds the cluster may take to start, and a submitted job to run (a loaded 2-core machine).
START_TIMEOUT = 180
JOB_TIMEOUT = 600


def spark_home() -> Path:
    """``SPARK_HOME``, else the home of the pip pyspark (``pyspark.find_spark_home``)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def python_env() -> dict[str, str]:
    """The environment of the cluster's processes: this interpreter's Python on the driver and
    the executors, this interpreter's ``bin/`` first on ``PATH``, Spark bound to localhost."""
    env = dict(os.environ)
    env["SPARK_HOME"] = str(spark_home())
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    return env


class StandaloneCluster:
    """A Spark standalone master and ``workers`` workers on 127.0.0.1, as subprocesses.

    Parameters
    ----------
    workdir : Path
        Where the logs and the workers' folders go.
    workers, cores, memory : int, int, str
        The number of workers, and the cores and memory each offers.

    Use as a context manager: the processes are started on entry (which returns once every
    worker is registered) and their process groups killed on exit, whatever happened.
    """

    def __init__(self, workdir: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g"):
        self.workdir = Path(workdir)
        self.n_workers, self.cores, self.memory = workers, cores, memory
        self.port, self.webui_port = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def _spawn(self, name: str, args: Sequence[str]) -> None:
        log = self.workdir / f"{name}.log"
        self.logs.append(log)
        with log.open("wb") as fh:
            self.procs.append(
                subprocess.Popen(
                    [str(spark_home() / "bin" / "spark-class"), *args],
                    stdout=fh,
                    stderr=subprocess.STDOUT,
                    env=python_env(),
                    start_new_session=True,  # its own process group: killed as a whole
                )
            )

    def state(self) -> dict[str, Any]:
        """The master's state: its web UI's JSON (workers, running and completed apps)."""
        url = f"http://127.0.0.1:{self.webui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as r:
            return dict(json.load(r))

    def alive_workers(self) -> list[dict[str, Any]]:
        try:
            workers = self.state().get("workers", [])
        except OSError:
            return []
        return [w for w in workers if w.get("state") == "ALIVE"]

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._spawn(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1",
                "--port", str(self.port),
                "--webui-port", str(self.webui_port),
            ],
        )  # fmt: skip
        for i in range(self.n_workers):
            work = self.workdir / f"worker-{i}"
            work.mkdir(exist_ok=True)
            self._spawn(
                f"worker-{i}",
                [
                    "org.apache.spark.deploy.worker.Worker", self.url,
                    "--host", "127.0.0.1",
                    "--cores", str(self.cores),
                    "--memory", self.memory,
                    "--webui-port", str(free_port()),
                    "--work-dir", str(work),
                ],
            )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        while len(self.alive_workers()) < self.n_workers:
            dead = [p.args for p in self.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = f"exited: {dead}" if dead else f"not up after {START_TIMEOUT} s"
                raise RuntimeError(f"the Spark cluster did not start ({why})\n{self.log_tails()}")
            time.sleep(0.5)

    def log_tails(self, chars: int = 1500) -> str:
        return "\n".join(
            f"--- {log.name} ---\n{log.read_text(errors='replace')[-chars:]}"
            for log in self.logs
            if log.exists()
        )

    def stop(self) -> None:
        """Kill every process group (TERM, then KILL after 15 s) and wait for the processes."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in self.procs:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(p.pid, sig)
            deadline = time.monotonic() + 15
            for p in self.procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=max(0.1, deadline - time.monotonic()))
            if all(p.poll() is not None for p in self.procs):
                break
        # the groups may still hold executors (children of the workers): KILL them too, and
        # wait (up to 15 s) until no process of any group is left
        deadline = time.monotonic() + 15
        for p in self.procs:
            while time.monotonic() < deadline:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    break
                time.sleep(0.05)

    def __enter__(self) -> StandaloneCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def submit(
        self, app: Path, args: Sequence[str], *, cwd: Path, conf: Sequence[str] = ()
    ) -> subprocess.CompletedProcess[str]:
        """``spark-submit --master URL`` of ``app`` with ``args``, with this interpreter's
        Python on the driver and the executors; the completed process (in its own process
        group, killed if it outlives :data:`JOB_TIMEOUT`)."""
        cmd = [
            str(spark_home() / "bin" / "spark-submit"),
            "--master", self.url,
            "--conf", f"spark.pyspark.python={sys.executable}",
            "--conf", f"spark.pyspark.driver.python={sys.executable}",
            "--conf", f"spark.executor.cores={self.cores}",
            "--conf", "spark.executor.memory=768m",
            "--conf", "spark.ui.enabled=false",
            *conf,
            str(app),
            *args,
        ]  # fmt: skip
        with subprocess.Popen(
            cmd,
            cwd=cwd,
            env=python_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as proc:
            try:
                out, err = proc.communicate(timeout=JOB_TIMEOUT)
            except BaseException:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                raise
            finally:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)  # a daemon left behind by the driver
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


# --------------------------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------------------------

pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("Spark needs a Java runtime: .ci/run installs openjdk-17-jre-headless")
    with StandaloneCluster(tmp_path_factory.mktemp("spark-cluster")) as c:
        yield c


# --------------------------------------------------------------------------------------------
# The release, submitted to the cluster
# --------------------------------------------------------------------------------------------

H = 5
#: The arguments of ``persuasive release table`` after DATA (the same for every engine).
RELEASE = ["--keys", "area,age", "--count", "n", "--h", str(H), "--poisson-mean", "0.5:3"]


def _table(path: Path, n: int = 3000, seed: int = 8) -> dict[str, list[str]]:
    """A count table with an integer and a string key in shuffled order, counts 0..20 (about a
    quarter of them below h), written as CSV; returns its columns as the CSV text reads."""
    import numpy as np

    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    area = [str(100 + i // 6) for i in order]
    age = [f"{15 * (i % 6)}-{15 * (i % 6) + 14}" for i in order]
    counts = [str(v) for v in rng.integers(0, 21, n)]
    lines = ["area,age,n", *(f"{a},{g},{c}" for a, g, c in zip(area, age, counts, strict=True))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"area": area, "age": age, "n": counts}


def _published_rows(path: Path) -> list[tuple[str | None, ...]]:
    """The rows of a published table, one CSV file or a folder of part files in name order,
    every column as text (a suppressed count reads as None)."""
    import polars as pl

    files = sorted(path.glob("part-*")) if path.is_dir() else [path]
    files = [f for f in files if f.stat().st_size > 0 and not f.name.endswith(".crc")]
    frames = [pl.read_csv(f, infer_schema=False) for f in files]
    return [tuple(r) for f in frames for r in f.iter_rows()]


def _run(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "persuasive"
    return subprocess.run(
        [str(exe), *args], cwd=cwd, env=python_env(), capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def released(
    cluster: StandaloneCluster, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The table, released once by ``spark-submit`` on the cluster and once by the polars
    engine (``persuasive release table``), with the completed applications before and after."""
    work = tmp_path_factory.mktemp("spark-release")
    table = _table(work / "t.csv")
    before = len(cluster.state().get("completedapps", []))
    spark = cluster.submit(
        SUBMIT, ["release", "table", "t.csv", *RELEASE, "--out", "spark"], cwd=work
    )
    after = cluster.state().get("completedapps", [])
    polars = _run(["release", "table", "t.csv", *RELEASE, "--out", "polars"], work)
    return {"work": work, "table": table, "spark": spark, "polars": polars,
            "apps": (before, after)}  # fmt: skip


def test_submitted_release_exits_0_and_ran_on_the_cluster(
    released: dict[str, Any], cluster: StandaloneCluster
) -> None:
    spark = released["spark"]
    assert spark.returncode == 0, spark.stderr[-4000:]
    assert "holds" in spark.stdout
    before, after = released["apps"]
    assert len(after) == before + 1, after  # one more application completed on this master
    app = after[-1]
    assert app["state"] == "FINISHED", app
    for i in range(cluster.n_workers):  # each worker ran an executor of the release
        ran = list((cluster.workdir / f"worker-{i}" / app["id"]).glob("*/stderr"))
        assert ran, f"worker {i} ran no executor of {app['id']}\n{cluster.log_tails()}"


def test_submitted_release_publishes_the_suppressed_table(released: dict[str, Any]) -> None:
    """The published rows are the input's, in its order, with every count below h missing
    (the oracle: the input's columns, suppressed here)."""
    assert released["spark"].returncode == 0, released["spark"].stderr[-4000:]
    t = released["table"]
    want = [
        (a, g, c if int(c) >= H else None)
        for a, g, c in zip(t["area"], t["age"], t["n"], strict=True)
    ]
    assert sum(c is None for *_, c in want) > 0  # the table has cells to suppress
    published = [p for p in (released["work"] / "spark").iterdir() if p.name.startswith("released")]
    assert len(published) == 1, published
    assert _published_rows(published[0]) == want


def test_submitted_release_verifies_and_matches_the_polars_certificate(
    released: dict[str, Any],
) -> None:
    work = released["work"]
    assert released["spark"].returncode == 0, released["spark"].stderr[-4000:]
    assert released["polars"].returncode == 0, released["polars"].stderr[-4000:]
    check = _run(["verify", "spark/certificate.json"], work)
    assert check.returncode == 0, check.stdout + check.stderr
    spark_cert = (work / "spark" / "certificate.json").read_bytes()
    polars_cert = (work / "polars" / "certificate.json").read_bytes()
    assert spark_cert == polars_cert


# --------------------------------------------------------------------------------------------
# The release with margins (secondary suppression), submitted to the same cluster
# --------------------------------------------------------------------------------------------

#: ``release table`` with its margins, the planner to a target κ (``docs/margins_release.md``).
MARGINS = ["--keys", "area,age", "--count", "n", "--h", str(H), "--poisson-mean", "1:10",
           "--margins", "rows,cols", "--target-kappa", "6"]  # fmt: skip
#: The small cells of the margins table (row, column): each alone in its row and its column.
SMALL_CELLS = [(0, 0), (2, 3), (5, 6), (7, 1), (10, 4)]


def _margins_table(path: Path, rows: int = 12, cols: int = 8, seed: int = 11) -> None:
    """A 12 x 8 count table (``area`` x ``age``) in shuffled order: counts 8..30, except the
    cells of :data:`SMALL_CELLS`, below h, no two in a row or a column, so that the primary
    pattern falls into one component per small cell."""
    import numpy as np

    rng = np.random.default_rng(seed)
    counts = rng.integers(8, 31, (rows, cols))
    for r, c in SMALL_CELLS:
        counts[r, c] = rng.integers(0, H)
    lines = ["area,age,n"]
    for i in rng.permutation(rows * cols):
        r, c = divmod(int(i), cols)
        lines.append(f"{100 + r},{15 * c}-{15 * c + 14},{counts[r, c]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _components(released: Path, statuses: Sequence[str]) -> int:
    """The connected components of the published cells of ``statuses``, two cells linked when
    they share an ``area`` or an ``age`` (a published row or column total)."""
    import polars as pl

    df = pl.read_csv(released, infer_schema=False)
    cells = df.filter(pl.col("suppressed").is_in(list(statuses))).select("area", "age").rows()
    parent = list(range(len(cells)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for axis in (0, 1):
        first: dict[str, int] = {}
        for i, cell in enumerate(cells):
            parent[find(i)] = find(first.setdefault(cell[axis], i))
    return len({find(i) for i in range(len(cells))})


@pytest.fixture(scope="module")
def released_margins(
    cluster: StandaloneCluster, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The margins table, released with ``--margins rows,cols --target-kappa 6`` once by
    ``spark-submit`` on the cluster (``--engine spark`` and the master added by submit.py) and
    once by the polars engine."""
    work = tmp_path_factory.mktemp("spark-margins")
    _margins_table(work / "m.csv")
    before = len(cluster.state().get("completedapps", []))
    spark = cluster.submit(
        SUBMIT, ["release", "table", "m.csv", *MARGINS, "--out", "spark"], cwd=work
    )
    after = cluster.state().get("completedapps", [])
    polars = _run(["release", "table", "m.csv", *MARGINS, "--out", "polars"], work)
    return {"work": work, "spark": spark, "polars": polars, "apps": (before, after)}


def test_submitted_margins_release_verifies_and_is_the_polars_release(
    released_margins: dict[str, Any],
) -> None:
    """Exit 0 on the cluster, ``persuasive verify --published`` passes, and the folder is the
    polars engine's byte for byte (every file, the custodian's too); the primary pattern has a
    component per small cell, and the planner hid secondary cells."""
    work, spark = released_margins["work"], released_margins["spark"]
    assert spark.returncode == 0, spark.stdout[-3000:] + spark.stderr[-4000:]
    assert released_margins["polars"].returncode == 0, released_margins["polars"].stderr[-4000:]
    before, after = released_margins["apps"]
    assert len(after) == before + 1 and after[-1]["state"] == "FINISHED", after
    check = _run(["verify", "spark/certificate.json", "--published", "spark"], work)
    assert check.returncode == 0, check.stdout + check.stderr
    published = work / "spark" / "released.csv"
    assert _components(published, ["primary"]) == len(SMALL_CELLS)
    assert "secondary" in published.read_text(encoding="utf-8")
    assert _components(published, ["primary", "secondary"]) > 1  # several pieces to hand out
    files = {p.name for p in (work / "polars").iterdir()}
    assert {"certificate.json", "released.csv", "margins.csv"} <= files
    assert files == {p.name for p in (work / "spark").iterdir()}
    for name in sorted(files):
        same = (work / "spark" / name).read_bytes() == (work / "polars" / name).read_bytes()
        assert same, name


def test_submitted_duplicate_key_exits_2_with_the_polars_error(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    """A key twice, found by the executors: spark-submit passes the exit status 2 on, with one
    ``error:`` line (spark-submit merges the Python driver's standard error into its standard
    output), the in-memory engine's line for the same file, and nothing written."""
    table = _table(tmp_path / "t.csv", n=600)
    with (tmp_path / "t.csv").open("a", encoding="utf-8") as fh:  # row 601 repeats row 17
        fh.write(f"{table['area'][16]},{table['age'][16]},3\n")
    args = ["release", "table", "t.csv", *RELEASE]
    done = cluster.submit(SUBMIT, [*args, "--out", "o"], cwd=tmp_path)
    polars = _run([*args, "--out", "p"], tmp_path)
    assert polars.returncode == 2, polars.stderr
    want = [line for line in polars.stderr.splitlines() if line.startswith("error:")]
    assert len(want) == 1 and "601" in want[0], polars.stderr
    assert done.returncode == 2, done.stderr[-3000:]
    lines = (done.stdout + done.stderr).splitlines()
    assert [line for line in lines if line.startswith("error:")] == want, done.stdout[-3000:]
    assert not (tmp_path / "o").exists() and not (tmp_path / "p").exists()


def test_cli_arguments_of_submit() -> None:
    """DATA first means ``release table DATA``; the Spark engine and the submitted master are
    added only when not given."""
    from persuasive.spark.submit import cli_arguments

    cmds = {"release", "verify"}
    assert cli_arguments(["t.csv"], "spark://h:1", cmds) == [
        "release", "table", "t.csv", "--engine", "spark", "--spark-master", "spark://h:1",
    ]  # fmt: skip
    given = ["release", "table", "t.csv", "--engine", "spark", "--spark-master=local[1]"]
    assert cli_arguments(given, "spark://h:1", cmds) == given
    polars = ["release", "table", "t.csv", "--engine", "polars"]
    assert cli_arguments(polars, "spark://h:1", cmds) == polars
    assert cli_arguments(["verify", "c.json"], "spark://h:1", cmds) == ["verify", "c.json"]
    assert cli_arguments(["release", "table", "--help"], None, cmds) == [
        "release", "table", "--help",
    ]  # fmt: skip
