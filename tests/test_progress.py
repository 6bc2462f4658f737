"""Progress of long steps (``persuasive._progress``, issue 11).

With a recording reporter installed, every long step of the library reports a task that starts,
advances to its total and finishes: ``verify`` of a margins release (and the posterior it
recomputes), the margins planner's search and final audit, the Markov chain, and a large
composition of privacy-loss distributions. Without a reporter nothing is printed, and the
command line draws no bar when standard error is not a terminal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import sparse

import persuasive as pp
from persuasive._progress import RecordingReporter, active, reporting, task
from persuasive.classes.receivers import NegativeBinomialReceiver, PoissonReceiver
from persuasive.files.output import OutputFolder
from persuasive.margins import MarginTable, plan_suppression, posterior_marginals
from persuasive.margins.mcmc import sample_marginals
from persuasive.pld import compose
from persuasive.release.margins import release_table_with_margins
from persuasive.release.pipeline import publish
from persuasive.report.verify import verify_certificate

NB = NegativeBinomialReceiver(1.0, 40.0, 1.0)
COUNTS = np.array([[2, 5, 7], [1, 9, 6], [8, 3, 12]])
#: Characters a rich progress bar draws (bar, spinner).
BAR_CHARS = ("━", "╸", "╺", "⠋", "⠙", "⠹", "⠸", "\x1b[?25l")


def _frame(counts: np.ndarray) -> pl.DataFrame:
    idx = np.indices(counts.shape).reshape(counts.ndim, -1)
    return pl.DataFrame({"a": idx[0], "b": idx[1], "n": counts.ravel()})


def _all_complete(rec: RecordingReporter) -> None:
    assert rec.tasks, "no task was reported"
    for t in rec.tasks:
        assert t.finished, t
        assert t.total is None or t.done == t.total, t


@pytest.fixture(scope="module")
def margins_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rel = release_table_with_margins(
        _frame(COUNTS), keys=["a", "b"], count="n", receiver=NB, margins="rows,cols", h=3,
        target_kappa=3.5,
    )  # fmt: skip
    out = tmp_path_factory.mktemp("progress") / "rel"
    publish(rel, OutputFolder(out))
    return out


def test_task_is_a_no_op_without_a_reporter(capsys: pytest.CaptureFixture[str]) -> None:
    assert not active()
    with task("anything", total=3) as advance:
        advance()
        advance(2)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_reporters_nest_and_are_restored() -> None:
    outer, inner = RecordingReporter(), RecordingReporter()
    with reporting(outer):
        with reporting(inner), task("inner"):
            pass
        with task("outer", total=1) as advance:
            advance()
    assert not active()
    assert [t.name for t in outer.tasks] == ["outer"] and outer.tasks[0].complete
    assert [t.name for t in inner.tasks] == ["inner"] and inner.tasks[0].complete


def test_a_task_is_finished_when_its_step_raises() -> None:
    rec = RecordingReporter()
    with reporting(rec), pytest.raises(ValueError), task("fails", total=2) as advance:
        advance()
        raise ValueError
    assert rec.tasks[0].finished and rec.tasks[0].done == 1


def test_verify_of_a_margins_release_reports_progress(margins_release: Path) -> None:
    rec = RecordingReporter()
    with reporting(rec):
        result = verify_certificate(margins_release / "certificate.json", published=margins_release)
    assert result.ok
    _all_complete(rec)
    names = [t.name for t in rec.tasks]
    assert names[0] == "verify: recompute the certificate"
    assert "margins: posterior of the suppressed cells" in names


def test_verify_without_a_reporter_prints_nothing(
    margins_release: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify_certificate(margins_release / "certificate.json", published=margins_release).ok
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_planner_reports_its_search_and_final_audit() -> None:
    t = MarginTable([[0, 9, 8], [7, 6, 9], [8, 9, 7]], h=3, margins="rows,cols")
    rec = RecordingReporter()
    with reporting(rec):
        plan = plan_suppression(t, PoissonReceiver(1, 10), kappa=7.0)
    assert plan.certified
    _all_complete(rec)
    names = [t.name for t in rec.tasks]
    assert names.count("planner: search") == 1 and names.count("planner: final audit") == 1
    assert names.index("planner: search") < names.index("planner: final audit")
    assert rec.named("planner: cells above the target"), names  # the greedy steps themselves
    assert rec.named("margins: posterior")  # the final audit's posterior


def test_markov_chain_reports_its_sweeps_in_chunks() -> None:
    A = sparse.csr_array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]])
    rec = RecordingReporter()
    with reporting(rec):
        sample_marginals(
            A, np.array([1, 1, 1, 1]), np.zeros(4, np.int64), np.zeros((4, 3)),
            n_sweeps=4000, burn_in=50, rng=np.random.default_rng(0),
        )  # fmt: skip
    _all_complete(rec)
    (chain,) = rec.named("margins: Markov chain")
    assert chain.total == 50 + 500  # burn-in + ceil(4000 / 8 chains), a multiple of 5 batches
    assert chain.advances <= 100  # chunks, not one report per sweep


def test_mcmc_posterior_reports_the_chain_inside_the_posterior() -> None:
    t = MarginTable([[1, 2, 7], [2, 1, 9], [8, 9, 6]], h=3, margins="rows,cols")
    q = pp.IndependentCellsPrior([[1 / 12] * 12] * 9)
    rec = RecordingReporter()
    with reporting(rec):
        posterior_marginals(t, q, method="mcmc", n_sweeps=200, rng=0)
    _all_complete(rec)
    names = [t.name for t in rec.tasks]
    assert names[0] == "margins: posterior of the suppressed cells"
    assert any(n.startswith("margins: Markov chain") for n in names[1:])


def test_large_composition_reports_every_part() -> None:
    parts = [(pp.LaplaceMechanism(20.0 + i), 1) for i in range(40)]
    rec = RecordingReporter()
    with reporting(rec):
        compose(parts, step=1e-3)
    _all_complete(rec)
    (pld,) = rec.named("composition: privacy-loss distribution")
    assert pld.total == 40 and pld.advances == 40
    assert rec.named("composition: neighbour pairs")


def test_tight_certificate_of_a_composition_reports_progress() -> None:
    mech: pp.Mechanism = pp.LaplaceMechanism(30.0)
    for i in range(11):
        mech = pp.Composition(mech, pp.LaplaceMechanism(31.0 + i))
    rec = RecordingReporter()
    with reporting(rec):
        cert = pp.certify(mech, pp.probabilistic_dp(1.0, 1e-3))
    assert "tight composition" in cert.basis
    _all_complete(rec)
    (pld,) = rec.named("composition: privacy-loss distribution")
    assert pld.total == 12


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    full.pop("FORCE_COLOR", None)
    cmd = [sys.executable, "-c", "from persuasive.cli import app; app()", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=full, check=False)


def test_cli_draws_no_bar_when_not_a_terminal(margins_release: Path, tmp_path: Path) -> None:
    cert = margins_release / "certificate.json"
    proc = _run(["verify", str(cert), "--published", str(margins_release)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert not any(ch in proc.stdout + proc.stderr for ch in BAR_CHARS)
    data = tmp_path / "t.csv"
    _frame(COUNTS).write_csv(data)
    proc = _run(
        ["release", "table", str(data), "--keys", "a,b", "--count", "n", "--h", "3",
         "--negbin-mean", "1:40", "--negbin-size", "1", "--margins", "rows,cols",
         "--target-kappa", "3.5", "--out", str(tmp_path / "out")],
        tmp_path,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    assert not any(ch in proc.stdout + proc.stderr for ch in BAR_CHARS)


def test_cli_bar_reporter_shows_library_tasks_on_a_terminal(tmp_path: Path) -> None:
    """On a terminal (a pseudo-terminal for standard error) the bar is drawn, library tasks
    included; ``--quiet`` draws nothing."""
    pty = pytest.importorskip("pty")
    script = (
        "import time, persuasive._progress as p\n"
        "from persuasive.cli import _common as c\n"
        "with c.progress(['verify'], False) as step:\n"
        "    step('verify')\n"
        "    assert p.active()\n"
        "    with p.task('library step', total=2) as advance:\n"
        "        advance(); time.sleep(0.3); advance()\n"
        "with c.progress(['verify'], True) as step:\n"
        "    assert not p.active()\n"
        "print('done')\n"
    )
    main, child = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "100"}
    env.pop("NO_COLOR", None)
    proc = subprocess.run(
        [sys.executable, "-c", script], stderr=child, stdout=subprocess.PIPE, text=True,
        env=env, cwd=tmp_path, check=False, timeout=60,
    )  # fmt: skip
    os.close(child)
    err = b""
    try:
        while chunk := os.read(main, 65536):
            err += chunk
    except OSError:
        pass
    os.close(main)
    assert proc.returncode == 0 and proc.stdout == "done\n", err
    assert "library step" in err.decode("utf-8", "replace")
