"""profile(): kappa(delta) and delta(kappa) grids."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

import persuasive as pp


def test_default_grid_and_values():
    prof = pp.profile(pp.GaussianMechanism(1.0), pp.pure_dp(1.0))
    assert prof.deltas[0] == 0.0 and prof.kappas[0] == np.inf
    assert prof.deltas[1] == pytest.approx(1e-9) and prof.deltas[-1] == pytest.approx(0.5)
    ref = np.maximum(0.0, 0.5 - stats.norm.ppf(prof.deltas[1:]))
    np.testing.assert_allclose(prof.kappas[1:], ref, rtol=1e-12)
    np.testing.assert_allclose(
        prof.delta_of_kappa, stats.norm.cdf(0.5 - prof.kappa_grid), rtol=1e-12
    )
    assert prof.basis == "Prop 6 (Bon et al. 2026)" and prof.exact
    assert np.all(np.diff(prof.kappas) <= 0) and np.all(np.diff(prof.delta_of_kappa) <= 0)


def test_table_values_and_json():
    prof = pp.profile(
        pp.RandomizedResponse(2.0, 4), pp.pure_dp(1.0), deltas=[0.0, 0.8], kappas=[1.0, 2.0]
    )
    assert prof.kappas.tolist() == [2.0, 0.0]
    np.testing.assert_allclose(prof.delta_of_kappa, [0.71123459, 0.0], atol=1e-8)
    d = json.loads(json.dumps(prof.to_dict()))
    assert d["kappas"][0] == 2.0 and d["basis"].startswith("Prop 6")
    inf = json.loads(
        json.dumps(pp.profile(pp.LaplaceMechanism(1.0), pp.pure_dp(1.0), deltas=[0.0]).to_dict())
    )
    assert inf["kappas"] == [1.0]


def test_definition_method_and_errors():
    prof = pp.pure_dp(1.0).profile(pp.LaplaceMechanism(2.0), deltas=[0.3])
    assert prof.kappas[0] == pytest.approx(0.5)
    with pytest.raises(pp.ValidationError, match="deltas"):
        pp.profile(pp.LaplaceMechanism(1.0), pp.pure_dp(1.0), deltas=[1.5])
    with pytest.raises(pp.ValidationError, match="kappas"):
        pp.profile(pp.LaplaceMechanism(1.0), pp.pure_dp(1.0), kappas=[-1.0])
    with pytest.raises(pp.ValidationError, match="mechanism"):
        pp.profile(None, pp.pure_dp(1.0))
    with pytest.raises(pp.UnsupportedCombinationError, match="expectation"):
        pp.profile(pp.LaplaceMechanism(1.0), pp.renyi_dp(2.0, 1.0))
