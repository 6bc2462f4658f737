"""An interrupted release leaves nothing behind (issue 10, ``persuasive.files.output``).

A small driver runs the real command line (``persuasive.cli.app``) in a subprocess and sends
itself SIGTERM, SIGHUP or SIGINT at a chosen point — at a progress step ("read", "write",
"certify", "report", "verify", and "plan and audit" with margins), while a published or custodian
file is written, just before the folder is renamed into place, and during the rename itself.
Whatever the point, the release must exit 128 + the signal with one ``error: interrupted`` line
and leave the parent folder exactly as it was: no ``.NAME.*.persuasive-tmp`` folder, no custodian
file, no ``released.*`` — and an earlier folder it was to replace (``--force``) intact.

A last test interrupts a real 200 000-row release after a few delays, wherever it happens to be.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

EXIT = {"SIGTERM": 143, "SIGHUP": 129, "SIGINT": 130}

DRIVER = r"""
import contextlib, json, os, signal, sys, time

spec = json.loads(sys.argv[1])
sig = getattr(signal, spec["signal"])
at = spec["at"]

def fire():
    os.kill(os.getpid(), sig)

if at.startswith("step:"):
    import persuasive.cli._common as common
    name, real = at[5:], common.progress

    @contextlib.contextmanager
    def progress(steps, quiet):
        with real(steps, quiet) as step:
            def wrapped(n):
                if n == name:
                    fire()
                step(n)
            yield wrapped

    common.progress = progress
elif at in ("published", "custodian"):
    import persuasive.release.pipeline as pipeline
    real_frame = pipeline.write_frame
    custodian = at == "custodian"

    def write_frame(frame):
        make = real_frame(frame)
        def for_name(name):
            write = make(name)
            def write_then_fire(path):
                write(path)
                if path.name.startswith("custodian_") == custodian:
                    fire()
            return write_then_fire
        return for_name

    pipeline.write_frame = write_frame
elif at == "commit":
    import persuasive.files.output as output
    real_commit = output.OutputFolder._commit

    def commit(self, tmp):
        fire()
        return real_commit(self, tmp)

    output.OutputFolder._commit = commit
elif at == "after-commit":  # just after the folder was renamed into place
    import persuasive.files.output as output
    real_commit = output.OutputFolder._commit

    def commit(self, tmp):
        real_commit(self, tmp)
        fire()
        time.sleep(0.2)

    output.OutputFolder._commit = commit
elif at == "mkdtemp":  # the temporary folder was just created (signals "held back")
    import persuasive.files.output as output
    real_mkdtemp = output.tempfile.mkdtemp

    def mkdtemp(*args, **kwargs):
        made = real_mkdtemp(*args, **kwargs)
        if made.endswith(".persuasive-tmp"):
            fire()
            time.sleep(0.2)
        return made

    output.tempfile.mkdtemp = mkdtemp
elif at == "fallback-swap":  # no renameat2: the old folder is moved aside, then tmp moved in
    import persuasive.files.output as output
    real_replace = os.replace
    calls = []

    class Os:
        def __getattr__(self, name):
            return getattr(os, name)

        @staticmethod
        def replace(a, b):
            real_replace(a, b)
            calls.append(a)
            if len(calls) == 1:
                fire()
                time.sleep(0.2)

    output.os = Os()
    output._exchange = lambda a, b: False
else:
    raise SystemExit(f"unknown point {at!r}")

from persuasive.cli import app

app(args=spec["args"], prog_name="persuasive")
"""


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs:
            out[(Path(dirpath) / name).relative_to(root).as_posix() + "/"] = ""
        for name in files:
            p = Path(dirpath) / name
            out[p.relative_to(root).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def drive(args: list[str], at: str, sig: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    spec = json.dumps({"args": args, "at": at, "signal": sig})
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("PERSUASIVE_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-c", DRIVER, spec],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        env=env,
    )


def assert_interrupted(
    proc: subprocess.CompletedProcess[str], sig: str, *, message: bool = True
) -> None:
    assert proc.returncode == EXIT[sig], (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    if not message:  # SIGINT: see test_sigint_prints_one_error_line
        return
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"error: interrupted ({sig})"), proc.stderr


def table_args(data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "release", "table", str(data), "--keys", "k", "--count", "c", "--h", "3",
        "--alpha", "0.5", "--out", str(out), "--quiet", *extra,
    ]  # fmt: skip


def margins_args(data: Path, out: Path, *extra: str) -> list[str]:
    return [
        "release", "table", str(data), "--keys", "r,c", "--count", "n", "--h", "3",
        "--poisson-mean", "1:10", "--margins", "rows,cols", "--out", str(out), "--quiet",
        *extra,
    ]  # fmt: skip


def write_table(folder: Path) -> Path:
    p = folder / "in.csv"
    p.write_text("k,c\n" + "".join(f"k{i:02d},{i % 7}\n" for i in range(30)), encoding="utf-8")
    return p


def write_grid(folder: Path) -> Path:
    p = folder / "grid.csv"
    counts = [1, 2, 9, 2, 1, 8, 7, 6, 12]  # a 2 x 2 suppressed block: nothing disclosed
    cells = [f"{a},{b}" for a in "abc" for b in "xyz"]
    p.write_text(
        "r,c,n\n" + "".join(f"{c},{n}\n" for c, n in zip(cells, counts, strict=True)),
        encoding="utf-8",
    )
    return p


@pytest.fixture
def table(tmp_path: Path) -> Path:
    return write_table(tmp_path)


@pytest.fixture
def grid(tmp_path: Path) -> Path:
    return write_grid(tmp_path)


@dataclass(frozen=True)
class Run:
    """One interrupted release: its folder before, the process, the folder after."""

    before: dict[str, str]
    proc: subprocess.CompletedProcess[str]
    after: dict[str, str]


def run_in(folder: Path, args: list[str], at: str, sig: str) -> Run:
    before = snapshot(folder)
    proc = drive(args, at, sig, folder)
    return Run(before, proc, snapshot(folder))


# --------------------------------------------------------------------------------------------
# Deterministic points
# --------------------------------------------------------------------------------------------

TABLE_POINTS = [
    ("step:read", "SIGTERM"),
    ("step:write", "SIGTERM"),
    ("published", "SIGTERM"),
    ("step:report", "SIGTERM"),
    ("step:verify", "SIGTERM"),
    ("commit", "SIGTERM"),
    ("step:write", "SIGHUP"),
    ("step:certify", "SIGINT"),
]


MARGINS_POINTS = [
    ("step:plan and audit", "SIGTERM"),
    ("custodian", "SIGTERM"),
    ("step:verify", "SIGTERM"),
    ("commit", "SIGHUP"),
    ("custodian", "SIGINT"),
]


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], Any]:
    """The releases interrupted at each deterministic point, each in a folder of its own,
    snapshotted before and after. The subprocesses are independent and spend most of their
    second starting Python, so they run a few at a time; each test takes its own result
    (``.result()`` re-raises whatever went wrong in that run)."""
    cases: dict[tuple[str, str, str], tuple[Path, list[str], str, str]] = {}
    for at, sig in TABLE_POINTS:
        folder = tmp_path_factory.mktemp("table")
        extra = ["--report"] if at == "step:report" else []
        args = table_args(write_table(folder), folder / "out", *extra)
        cases["table", at, sig] = (folder, args, at, sig)
    for at, sig in MARGINS_POINTS:
        folder = tmp_path_factory.mktemp("margins")
        cases["margins", at, sig] = (
            folder,
            margins_args(write_grid(folder), folder / "out"),
            at,
            sig,
        )
    workers = min(4, max(2, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return {key: pool.submit(run_in, *case) for key, case in cases.items()}


@pytest.mark.parametrize(("at", "sig"), TABLE_POINTS, ids=[f"{a}-{s}" for a, s in TABLE_POINTS])
def test_interrupted_table_release_leaves_nothing(interrupted: Any, at: str, sig: str) -> None:
    run = interrupted["table", at, sig].result()
    assert_interrupted(run.proc, sig, message=sig != "SIGINT")
    assert run.after == run.before


@pytest.mark.parametrize(("at", "sig"), MARGINS_POINTS, ids=[f"{a}-{s}" for a, s in MARGINS_POINTS])
def test_interrupted_margins_release_leaves_no_custodian_file(
    interrupted: Any, at: str, sig: str
) -> None:
    run = interrupted["margins", at, sig].result()
    assert_interrupted(run.proc, sig, message=sig != "SIGINT")
    assert not [p for p in run.after if "custodian" in p or "persuasive-tmp" in p]
    assert run.after == run.before


@pytest.mark.parametrize("at", ["step:write", "commit"])
def test_interrupted_replacement_keeps_the_earlier_folder(
    table: Path, grid: Path, tmp_path: Path, at: str
) -> None:
    out = tmp_path / "out"
    from typer.testing import CliRunner

    from persuasive.cli import app

    result = CliRunner().invoke(app, margins_args(grid, out))
    assert result.exit_code == 0, result.stderr
    before = snapshot(tmp_path)
    proc = drive(table_args(table, out, "--force"), at, "SIGTERM", tmp_path)
    assert_interrupted(proc, "SIGTERM")
    assert snapshot(tmp_path) == before


def test_interrupted_release_into_new_parents_leaves_no_folder(table: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    out = tmp_path / "new" / "deep" / "out"
    proc = drive(table_args(table, out), "step:write", "SIGTERM", tmp_path)
    assert_interrupted(proc, "SIGTERM")
    assert snapshot(tmp_path) == before


def test_sigint_prints_one_error_line(table: Path, tmp_path: Path) -> None:
    proc = drive(table_args(table, tmp_path / "out"), "step:write", "SIGINT", tmp_path)
    assert_interrupted(proc, "SIGINT")


def _written_or_untouched(
    proc: subprocess.CompletedProcess[str], before: dict[str, str], after: dict[str, str]
) -> None:
    """A truthful outcome: exit 0 and the new folder, or exit 143 and nothing changed."""
    assert not [p for p in after if "persuasive-tmp" in p or p.endswith(".old/")], after
    if proc.returncode == 0:
        return
    assert_interrupted(proc, "SIGTERM")
    assert after == before


@pytest.mark.parametrize("replace", [False, True], ids=["new", "force"])
def test_signal_right_after_the_rename_is_reported_truthfully(
    table: Path, tmp_path: Path, replace: bool
) -> None:
    out = tmp_path / "out"
    if replace:
        from typer.testing import CliRunner

        from persuasive.cli import app

        assert CliRunner().invoke(app, table_args(table, out)).exit_code == 0
    before = snapshot(tmp_path)
    extra = ["--force"] if replace else []
    proc = drive(table_args(table, out, *extra, "--format", "parquet"), "after-commit", "SIGTERM",
                 tmp_path)  # fmt: skip
    _written_or_untouched(proc, before, snapshot(tmp_path))


def test_signal_while_the_temporary_folder_is_created(table: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    proc = drive(table_args(table, tmp_path / "out"), "mkdtemp", "SIGTERM", tmp_path)
    assert_interrupted(proc, "SIGTERM")
    assert snapshot(tmp_path) == before


def test_signal_between_the_two_renames_of_the_fallback(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    from typer.testing import CliRunner

    from persuasive.cli import app

    assert CliRunner().invoke(app, table_args(table, out)).exit_code == 0
    before = snapshot(tmp_path)
    proc = drive(table_args(table, out, "--force", "--format", "parquet"), "fallback-swap",
                 "SIGTERM", tmp_path)  # fmt: skip
    _written_or_untouched(proc, before, snapshot(tmp_path))


# --------------------------------------------------------------------------------------------
# A real interruption, at whatever moment it lands
# --------------------------------------------------------------------------------------------


def test_sigterm_at_any_moment_of_a_large_release(tmp_path: Path) -> None:
    data = tmp_path / "big.csv"
    rows = "".join(f"{i:07d},{(i * 7919) % 31}\n" for i in range(200_000))
    data.write_text("k,c\n" + rows, encoding="utf-8")
    exe = Path(sys.executable).with_name("persuasive")
    before = snapshot(tmp_path)
    seen: dict[int, int] = {}
    for i, delay in enumerate([0.05, 0.4, 0.7, 1.0, 1.4]):
        out = tmp_path / f"out{i}"
        proc = subprocess.Popen(
            [str(exe), *table_args(data, out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=180)
        seen[proc.returncode] = seen.get(proc.returncode, 0) + 1
        after = snapshot(tmp_path)
        assert not [p for p in after if "persuasive-tmp" in p or p.endswith(".old/")], after
        assert proc.returncode in (0, 143, -signal.SIGTERM), (proc.returncode, stdout, stderr)
        if proc.returncode == 143:
            lines = [x for x in stderr.splitlines() if x.strip()]
            assert len(lines) == 1 and lines[0].startswith("error: interrupted (SIGTERM)"), stderr
        if proc.returncode == 0:
            assert out.is_dir()
        if out.exists():
            # finished, or the signal landed after the rename (exit 143: the misreport is
            # tested strictly by test_signal_right_after_the_rename_is_reported_truthfully;
            # -15: killed by the default action while the process exited): whole and verified
            assert sorted(p.name for p in out.iterdir()) == [
                ".persuasive-output.json",
                "certificate.json",
                "released.csv",
            ]
            check = subprocess.run(
                [str(exe), "verify", str(out / "certificate.json"), "--published", str(out)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert check.returncode == 0, check.stdout + check.stderr
            before = snapshot(tmp_path)
        assert after == before
    assert 143 in seen, seen  # at least one delay hit the release itself


def test_an_interruption_replaced_by_another_exception_is_still_an_interruption(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM during a C extension's import surfaces as ``ImportError: initialization failed``
    (the extension swallows the Interrupted): the command line reports the interruption (exit
    128 + signal), never an internal error."""
    from persuasive.cli import _app
    from persuasive.files import signals as sg

    monkeypatch.setattr(sg, "RECEIVED", [])
    try:
        try:
            raise sg.Interrupted(signal.SIGTERM)
        except sg.Interrupted:
            raise ImportError("initialization failed")  # noqa: B904 - as an extension does
    except ImportError as chained:
        assert _app._error_status(chained) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.startswith("error: interrupted (SIGTERM)")
    monkeypatch.setattr(sg, "RECEIVED", [int(signal.SIGTERM)])  # the chain lost, the signal not
    assert _app._error_status(ImportError("initialization failed")) == 128 + signal.SIGTERM
    assert capsys.readouterr().err.startswith("error: interrupted (SIGTERM)")
    monkeypatch.setattr(sg, "RECEIVED", [])
    assert _app._error_status(ImportError("initialization failed")) == _app.INTERNAL
