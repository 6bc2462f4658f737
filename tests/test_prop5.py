"""The Prop 5 counterexample (docs/math.md §5): δ(1) is 0.05 for M, 0.25 for MK, 0.05 for M⊗K."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import persuasive as pp

_PATH = Path(__file__).resolve().parents[1] / "examples" / "prop5_counterexample.py"
_spec = importlib.util.spec_from_file_location("prop5_counterexample", _PATH)
assert _spec is not None and _spec.loader is not None
ex = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ex)

EXPECTED = {"M": 0.05, "MK": 0.25, "M⊗K": 0.05}


def _pdp_enumeration(matrix, eps):
    """sup over ordered neighbours of P_x[log m(x,t)/m(x',t) > eps], directly with numpy."""
    out = 0.0
    for a, b in ((0, 1), (1, 0)):
        p, q = matrix[a], matrix[b]
        with np.errstate(divide="ignore", invalid="ignore"):
            fail = (p > 0) & ((q == 0) | (np.log(p) - np.log(q) > eps))
        out = max(out, float(p[fail].sum()))
    return out


def _matrices():
    m, k = ex.kernels()
    mm, kk = m.matrix, k.matrix
    return {"M": mm, "MK": mm @ kk, "M⊗K": (mm[:, :, None] * kk[None, :, :]).reshape(2, -1)}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_certified(name):
    mech = ex.mechanisms()[name]
    assert ex.certified_delta(mech) == pytest.approx(EXPECTED[name], abs=1e-12)
    cert = pp.certify(mech, pp.probabilistic_dp(1.0, 0.05))
    assert cert.holds == (name != "MK")
    prof = pp.profile(mech, pp.pure_dp(1.0), kappas=[1.0])
    assert prof.delta_of_kappa[0] == pytest.approx(EXPECTED[name], abs=1e-12)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_pdp_enumeration(name):
    assert _pdp_enumeration(_matrices()[name], 1.0) == pytest.approx(EXPECTED[name], abs=1e-12)


@pytest.mark.parametrize("name", ["M", "MK"])
def test_pp_two_point_q_to_zero(name):
    mech = pp.FiniteKernel(_matrices()[name])
    worst = 0.0
    for x, xp in ((0, 1), (1, 0)):
        prior = pp.TwoPointPrior(x, xp, 1e-9)
        outs, probs = mech.output_distribution([x])
        loss = np.array([pp.relative_loss(pp.LogScore(), prior, mech, [x], t) for t in outs])
        worst = max(worst, float(probs[loss > 1.0].sum()))
    assert worst == pytest.approx(EXPECTED[name], abs=1e-12)


def test_merged_loss():
    mk = _matrices()["MK"]
    assert np.log(mk[0, 0] / mk[1, 0]) == pytest.approx(1.123144, abs=1e-6)


def test_main_prints(capsys):
    ex.main()
    out = capsys.readouterr().out
    assert "0.050000" in out and "0.250000" in out
