"""examples/differencing_attack.py: every claim checked against numpy."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parents[1] / "examples" / "differencing_attack.py"
_spec = importlib.util.spec_from_file_location("differencing_attack", _PATH)
assert _spec is not None and _spec.loader is not None
ex = importlib.util.module_from_spec(_spec)
sys.modules["differencing_attack"] = ex  # dataclasses look their module up
_spec.loader.exec_module(ex)


@pytest.fixture(scope="module")
def fair():
    return ex.load()


@pytest.fixture(scope="module")
def xs(fair):
    return fair["affairs"].to_numpy(), fair["religious"].to_numpy()


@pytest.fixture(scope="module")
def repair(fair):
    """The noise calibration (seconds): computed once, checked by two tests."""
    return ex.noise_repair(fair)


def test_group_means_are_private(fair, xs) -> None:
    x, g = xs
    rel = ex.private_release(fair)
    want = [x.mean(), *(x[g == k].mean() for k in (1, 2, 3, 4))]
    np.testing.assert_allclose(rel.values["value"].to_numpy(), want, rtol=1e-12)
    assert rel.exposed == ()
    assert rel.certificate.kappa == pytest.approx(ex.R1 + math.log(ex.R2))


def test_differencing_exposes_exactly_the_respondent(fair, xs) -> None:
    x, _ = xs
    n, i = x.size, ex.RESPONDENT
    att = ex.attack(fair)
    assert att.release.certificate is None
    assert [e.row_id for e in att.release.exposed] == [i]
    comb = att.release.exposed[0].combination
    assert comb == pytest.approx({"overall": n, "all_but_17": -(n - 1)})
    revealed = n * x.mean() - (n - 1) * np.delete(x, i).mean()  # independent replay
    assert revealed == pytest.approx(x[i], abs=1e-9)
    assert att.revealed == pytest.approx(x[i], abs=1e-9)


def test_noise_repair_meets_the_target(fair, repair) -> None:
    rep = repair
    n = fair.height
    assert rep.sd > 0 and rep.kappa <= ex.TARGET_KAPPA + 1e-9
    assert rep.respondent_kappa <= rep.kappa + 1e-12 and math.isfinite(rep.respondent_kappa)
    assert rep.attack_error_sd == pytest.approx(rep.sd * math.hypot(n, n - 1))


def test_noise_repair_posterior_variance_independent(fair, repair) -> None:
    """Under the stated prior (Σ = s²I) and noise sd σ, x_17's posterior variance is
    s² − s⁴ a_iᵀ (s² A Aᵀ + σ² I)⁻¹ a_i > 0 (k × k algebra, numpy)."""
    from persuasive.release.statistics import statistics_matrix

    rep = repair
    _, a = statistics_matrix(fair, ex.differencing_statistics(), value="affairs")
    s2, ai = ex.PRIOR_SD**2, a[:, ex.RESPONDENT]
    g = s2 * a @ a.T + rep.sd**2 * np.eye(a.shape[0])
    post = s2 - s2**2 * ai @ np.linalg.solve(g, ai)
    assert 0 < post < s2


def test_withholding_drops_the_differencing_statistic(fair, xs) -> None:
    x, g = xs
    held = ex.withholding_repair(fair)
    assert [s.name for s in held.withheld] in (["all_but_17"], ["overall"])
    assert held.certificate.kappa == pytest.approx(ex.R1 + math.log(ex.R2))
    kept = dict(zip(held.values["name"], held.values["value"], strict=True))
    for k in (1, 2, 3, 4):
        assert kept[f"religious_{k}"] == pytest.approx(x[g == k].mean(), rel=1e-12)
    # nobody exposed any more: e_17 is not a combination of the kept rows (numpy least squares)
    from persuasive.release.statistics import statistics_matrix

    stats = [s for s in ex.differencing_statistics() if s[0] in kept]
    _, a = statistics_matrix(fair, stats, value="affairs")
    e = np.zeros(x.size)
    e[ex.RESPONDENT] = 1.0
    c, *_ = np.linalg.lstsq(a.T, e, rcond=None)
    assert np.linalg.norm(a.T @ c - e) > 0.5


def test_script_runs(capsys, monkeypatch, fair, repair) -> None:
    real = ex.noise_repair

    def noise_repair(frame):  # the calibration the repair fixture already ran on this frame
        return repair if frame.equals(fair) else real(frame)

    monkeypatch.setattr(ex, "noise_repair", noise_repair)
    ex.main()
    out = capsys.readouterr().out
    assert "EXPOSED: row 17 = 6366·overall − 6365·all_but_17" in out
    # the noise the script states is the calibration's, and meets the target it prints
    assert f"sd {repair.sd:.4g} on every statistic" in out
    assert f"κ = {repair.kappa:.3f}" in out and repair.kappa <= ex.TARGET_KAPPA + 1e-9
