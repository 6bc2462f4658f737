"""Prop 5 (Bon et al. 2026): persuasive privacy is not closed under sender post-processing.

The explicit counterexample of docs/math.md §5 [RECON, CHECK]: datasets {0, 1} (neighbours), outputs
(A, B, C, A', B', C'), ε = 1, δ = 0.05, p = 0.2, p_b = p e^{-0.9}, r = (1 - δ - p - p_b)/2.

* M is (1, 0.05)-PDP: the loss is +∞ on A (probability 0.05) and 0.9 on B.
* K merges A ∪ B and A' ∪ B'; the merged loss log((δ + p)/p_b) = 1.123 > 1 has probability 0.25,
  so MK (sender post-processing) is only (1, 0.25)-PDP.
* M ⊗ K (receiver post-processing, Prop 4) keeps δ = 0.05.

Run ``python examples/prop5_counterexample.py``.
"""

from __future__ import annotations

import math

import numpy as np

import persuasive as pp
from persuasive.certify import find_theorem

EPS, DELTA, P = 1.0, 0.05, 0.2


def kernels() -> tuple[pp.FiniteKernel, pp.FiniteKernel]:
    """The mechanism M (2 x 6) and the merging post-processing K (6 x 4)."""
    pb = P * math.exp(-0.9)
    r = (1.0 - DELTA - P - pb) / 2.0
    m = np.array([[DELTA, P, r, 0.0, pb, r], [0.0, pb, r, DELTA, P, r]])
    k = np.zeros((6, 4))
    k[[0, 1], 0] = 1.0  # A, B   -> A ∪ B
    k[2, 1] = 1.0  # C
    k[[3, 4], 2] = 1.0  # A', B' -> A' ∪ B'
    k[5, 3] = 1.0  # C'
    return pp.FiniteKernel(m), pp.FiniteKernel(k)


def mechanisms() -> dict[str, pp.Mechanism]:
    """M, MK (Chain) and M ⊗ K (Joint)."""
    m, k = kernels()
    return {"M": m, "MK": pp.Chain(m, k), "M⊗K": pp.Joint(m, k)}


def certified_delta(mechanism: pp.Mechanism, eps: float = EPS) -> float:
    """δ(ε) from the registered theorem (Prop 6, or Prop 4 for the joint release)."""
    d = pp.pure_dp(eps)
    return find_theorem(mechanism, d).delta_at(mechanism, d, eps)


def main() -> None:
    for name, mech in mechanisms().items():
        d = pp.probabilistic_dp(EPS, DELTA)
        cert = pp.certify(mech, d)
        print(
            f"{name:4s} delta(1) = {certified_delta(mech):.6f}  "
            f"(1, 0.05)-PDP holds: {cert.holds}  [{cert.basis}]"
        )


if __name__ == "__main__":
    main()
