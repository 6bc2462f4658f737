"""Honest advice for noisy linear releases (issue 14, docs/linear_bounded.md): one sentence when
noise cannot lower κ under the stated class, with the reason and the class under which it
would. Every number the sentence states is re-checked against the certificates, and the
searches behind it against brute-force scans."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from persuasive.certify.linear_bounded_error import linear_bounded_error_kappa
from persuasive.linear import LinearGaussianClass
from persuasive.linear.advice import (
    calibrate_bounded_noise,
    largest_person_error,
    linear_noise_advice,
)
from persuasive.release.mean_advice import noise_floors

A = np.array([[0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25]])  # two means, nobody exposed


def _bounded(r1, r2, r0, v, s, delta):
    """The certificate itself (on A, with the exposure check)."""
    return linear_bounded_error_kappa(
        A, r1, r2, max_person_error=r0, max_stat_sd=v, noise_sd=s, delta=delta
    )


def _number(flag: str, text: str) -> float:
    found = re.search(rf"{flag} ([0-9.e+-]+)", text)
    assert found, text
    return float(found.group(1))


#: (r1, r2, noise sd, V, delta): every branch of the advice, and one where noise pays.
CASES = [
    (1.0, 4.0, 1.0, None, 0.05),  # proven: r1 + log r2 <= z^2_{1-delta}
    (1.5, 4.0, 1.0, 1.0, 0.05),  # not certifiable: below the chi-square quantile
    (4.0, 4.0, 1.0, 1.0, 0.05),  # a smaller V would do
    (4.0, 4.0, 1.0, None, 0.3),  # a V would do; the bounded class needs one too
    (4.0, 4.0, 1.0, 0.1, 0.05),  # noise pays already (3.96 < 5.39)
]


@pytest.mark.parametrize(("r1", "r2", "s", "v", "delta"), CASES)
def test_the_linear_class_advice_is_none_exactly_when_noise_pays_and_its_numbers_hold(
    r1, r2, s, v, delta
) -> None:
    exact = r1 + math.log(r2)
    noisy = LinearGaussianClass(r1, r2, max_stat_sd=v).class_kappa(A, s * s, delta)
    text = linear_noise_advice(r1, r2, s, max_stat_sd=v, delta=delta)
    assert (text is None) == (noisy < exact)
    if text is None:
        return
    assert text.count(". ") == 0  # one sentence
    proven, certified = noise_floors(delta)
    if exact <= proven:
        assert "(proven)" in text
    elif exact <= certified:
        assert "no noise level can be certified" in text
    else:  # the stated V makes this noise certify below the exact statistics
        v_star = _number("--max-stat-sd", text)
        if v_star > 0:
            cls = LinearGaussianClass(r1, r2, max_stat_sd=v_star)
            assert cls.class_kappa(A, s * s, delta) < exact
    # the bounded-error class named: at the stated r0 (and V) the noise beats the exact release
    use_v = _number("--max-stat-sd", text.split("under the class that also")[1]) if v is None else v
    r0 = _number("--max-person-error", text)
    assert _bounded(r1, r2, r0, use_v, s, delta) < _bounded(r1, r2, r0, use_v, 0.0, delta)
    stated = re.search(r"κ = ([0-9.]+) against the exact statistics' ([0-9.]+)", text)
    assert stated
    assert float(stated.group(1)) == pytest.approx(_bounded(r1, r2, r0, use_v, s, delta), rel=1e-3)


@pytest.mark.parametrize(  # r2 >= 2: A reveals the total of records {2, 3}
    ("r1", "r2", "s", "v", "delta"),
    [(1.0, 4.0, 1.0, 1.0, 0.05), (4.0, 2.5, 0.3, 1.0, 0.3), (0.5, 4.0, 4.0, 0.1, 0.05)],
)
def test_the_largest_person_error_matches_a_brute_force_scan(r1, r2, s, v, delta) -> None:
    top = largest_person_error(r1, r2, s, v, delta)
    scan = np.geomspace(1e-2, 20.0, 30)
    beats = np.array([_bounded(r1, r2, r, v, s, delta) < _bounded(r1, r2, r, v, 0.0, delta)
                      for r in scan])  # fmt: skip
    noise_pays_anyway = LinearGaussianClass(r1, r2, max_stat_sd=v).class_kappa(
        A, s * s, delta
    ) < r1 + math.log(r2)
    if not noise_pays_anyway:  # then the r0 that pay form an interval (0, top)
        assert top is not None and math.isfinite(top)
        assert np.all(beats[scan < top * (1 - 1e-5)]) and not np.any(beats[scan > top * 1.0001])
    assert top is None or _bounded(r1, r2, min(top, 1e6), v, s, delta) < _bounded(
        r1, r2, min(top, 1e6), v, 0.0, delta
    )


def test_the_bounded_class_advice() -> None:
    # r0 = 3 is too wide for noise 1 at V = 1: the exact release is certified lower
    text = linear_noise_advice(1.0, 4.0, 1.0, max_stat_sd=1.0, delta=0.05, max_person_error=3.0)
    assert text is not None and "too wide" in text
    r0 = _number("--max-person-error", text)
    assert r0 < 3.0 and _bounded(1.0, 4.0, r0, 1.0, 1.0, 0.05) < _bounded(1.0, 4.0, r0, 1.0, 0, 0)
    # without V noise never pays, whatever r0; the advice names a V and keeps the user's r0
    text = linear_noise_advice(1.0, 4.0, 1.0, max_stat_sd=None, delta=0.05, max_person_error=0.5)
    assert text is not None and "does not bound the Receiver's prior sd" in text
    assert _number("--max-person-error", text) == 0.5 and _number("--max-stat-sd", text) == 1.0
    for r0, s in [(0.2, 0.5), (1.0, 2.0), (3.0, 16.0), (3.0, 0.5)]:  # None iff it pays
        got = linear_noise_advice(1.0, 4.0, s, max_stat_sd=1.0, delta=0.05, max_person_error=r0)
        pays = _bounded(1.0, 4.0, r0, 1.0, s, 0.05) < _bounded(1.0, 4.0, r0, 1.0, 0.0, 0.05)
        assert (got is None) == pays


@pytest.mark.parametrize(("target", "r0", "delta"), [(1.0, 1.0, 0.05), (0.3, 2.0, 0.05),
                                                    (1.2, 1.0, 0.0)])  # fmt: skip
def test_calibrated_noise_is_the_smallest_on_a_scan(target: float, r0: float, delta: float):
    s = calibrate_bounded_noise(target, 1.0, 4.0, max_person_error=r0, max_stat_sd=1.0,
                                delta=delta)  # fmt: skip
    assert _bounded(1.0, 4.0, r0, 1.0, s, delta) <= target
    scan = np.geomspace(1e-2, 1e3, 36)
    meets = [s2 for s2 in scan if _bounded(1.0, 4.0, r0, 1.0, s2, delta) <= target]
    assert meets and s <= min(meets) * (1 + 1e-5)
    assert _bounded(1.0, 4.0, r0, 1.0, s * (1 - 1e-4), delta) > target
    assert all(_bounded(1.0, 4.0, r0, 1.0, u, delta) <= target for u in scan[scan >= s][::3])


def test_unreachable_and_exact_targets() -> None:
    assert calibrate_bounded_noise(3.0, 1.0, 4.0, max_person_error=1.0, max_stat_sd=1.0,
                                   delta=0.05) == 0.0  # fmt: skip
    with pytest.raises(Exception, match="unreachable at delta = 0"):
        calibrate_bounded_noise(0.2, 1.0, 4.0, max_person_error=1.0, max_stat_sd=1.0, delta=0.0)
