"""greedy_withhold: ties broken by who stays exposed, and the kept set maximal.

Oracle: brute force over every subset of the statistics, exposure decided by the rank test
e_i ∈ rowspace(A_S) (numpy.linalg.matrix_rank), independent of the library's analysis.
"""

from __future__ import annotations

import sys
from itertools import combinations

import numpy as np
import pytest

from persuasive.linear import StructuredCovariance, greedy_withhold


def _exposes(a: np.ndarray) -> bool:
    """Some e_i in A's row space: rank [A; e_i] == rank A."""
    if a.shape[0] == 0:
        return False
    r = np.linalg.matrix_rank(a)
    eye = np.eye(a.shape[1])
    return any(np.linalg.matrix_rank(np.vstack([a, e])) == r for e in eye)


def _safe_sets(a: np.ndarray) -> list[frozenset[int]]:
    k = a.shape[0]
    return [
        frozenset(s)
        for size in range(k + 1)
        for s in combinations(range(k), size)
        if not _exposes(a[list(s)])
    ]


def _run(a: np.ndarray, cov: object):
    n = a.shape[1]
    return greedy_withhold(a, sys.float_info.max, mean=np.zeros(n), cov=cov, r1=1.0)


def test_issue_14_ties_keep_one_of_the_first_two() -> None:
    """Every first trial leaves someone exposed; dropping s2 = x_1 leaves the fewest (one)."""
    a = np.array([[0, 1, 1, 0], [0, 1 / 3, 1 / 3, 1 / 3], [0, 1, 0, 0], [0, 0, 0, 1.0]])
    best = max(len(s) for s in _safe_sets(a))
    assert best == 1
    for cov in (np.eye(4), StructuredCovariance(np.ones(4))):  # dense and pattern paths
        w = _run(a, cov)
        assert len(w.kept) == 1 and w.kept[0] in (0, 1)
        assert np.isfinite(w.kappa).all() and not _exposes(a[w.kept])


@pytest.mark.parametrize("seed", range(8))
def test_kept_set_is_safe_and_maximal_against_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(3, 6)), int(rng.integers(2, 6))
    masks = rng.random((k, n)) < 0.5
    masks[rng.integers(0, k), :] = True  # an overall statistic
    a = masks / np.maximum(masks.sum(axis=1, keepdims=True), 1)
    a = a[masks.any(axis=1)]
    safe = _safe_sets(a)
    for cov in (np.eye(n), StructuredCovariance(np.ones(n))):
        w = _run(a, cov)
        kept = frozenset(w.kept)
        assert kept in safe, (seed, w.kept)
        assert not any(kept < s for s in safe), (seed, w.kept)  # inclusion-maximal
        assert sorted(w.kept + w.dropped) == list(range(a.shape[0]))
