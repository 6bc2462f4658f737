"""A Spark session the release starts keeps its scratch files in a private folder that is gone
when the process has exited, also after SIGTERM (Spark's default leaves ``blockmgr-*`` folders
holding shuffle files of the custodian's table in /tmp).

Each case runs the command line in a subprocess (its own JVM) with TMPDIR set to a fresh folder,
so that every folder Spark or persuasive creates there is seen."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

pytest.importorskip("pyspark")

CLI = [str(Path(sys.executable).parent / "persuasive")]


def _run(tmp_path: Path, *, interrupt: bool) -> tuple[int, list[str]]:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    data = tmp_path / "t.parquet"
    n = 200_000
    pl.DataFrame({"cell": list(range(n))[::-1], "n": [i % 11 for i in range(n)]}).write_parquet(
        data
    )
    env = {**os.environ, "TMPDIR": str(scratch)}
    cmd = [
        *CLI, "release", "table", str(data), "--keys", "cell", "--count", "n", "--h", "5",
        "--poisson-mean", "0.5:3", "--out", str(tmp_path / "rel"), "--engine", "spark",
        "--spark-master", "local[1]", "--quiet",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if interrupt:  # once Spark has made its scratch folder, i.e. is at work
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if any(True for _ in scratch.glob("persuasive-spark-*/blockmgr-*")):
                break
            time.sleep(0.2)
        assert proc.poll() is None, "the release ended before Spark was at work"
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    if interrupt:
        assert b"interrupted" in err or proc.returncode == 0, err[-500:]
    time.sleep(1)
    left = sorted(p.name for p in scratch.rglob("*") if "blockmgr" in str(p) or "shuffle" in p.name)
    return proc.returncode, left


@pytest.mark.parametrize("interrupt", [False, True])
def test_no_scratch_file_survives(tmp_path: Path, interrupt: bool) -> None:
    code, left = _run(tmp_path, interrupt=interrupt)
    assert code in ((0,) if not interrupt else (0, 143)), code
    assert left == [], left
    if interrupt and code != 0:
        assert not (tmp_path / "rel").exists()
