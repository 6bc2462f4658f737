"""Every numerical tolerance used by :mod:`persuasive`, in one place.

Changing a value here changes it everywhere; no other module hard-codes a tolerance.
"""

from __future__ import annotations

#: Probabilities given by the user must sum to one within this absolute tolerance.
PROB_SUM_ATOL: float = 1e-9

#: A covariance matrix is positive semi-definite if its smallest eigenvalue is at least
#: ``-PSD_RTOL * largest eigenvalue``; positive definite if the smallest is above
#: ``+PSD_RTOL * largest``.
PSD_RTOL: float = 1e-10

#: Rows of a Markov kernel must sum to one within this absolute tolerance.
KERNEL_ROW_ATOL: float = 1e-9

#: Two outputs of a deterministic statistic are considered equal within this absolute tolerance
#: (used when deciding whether a dataset of a discrete prior is consistent with an observed output).
OUTPUT_ATOL: float = 1e-9

#: Relative loss values within this absolute tolerance of a threshold count as equal to it;
#: the PP event is Δ <= κ, so a loss that exceeds κ by less than this is *not* a failure.
#: Used only where it errs against the Sender's claim being *disproved* too eagerly: an audit's
#: ``holds`` (an audit reports a violation only above κ + LOSS_ATOL) and tests comparing an
#: audit's value with a certificate. Never in a certificate's ``holds`` (compared with no
#: slack, so rounding can only make a certificate refuse) and never to shrink a certificate.
LOSS_ATOL: float = 1e-9

#: Posterior variances below ``VAR_RTOL * prior variance`` are treated as zero (exposure).
VAR_RTOL: float = 1e-12

#: Smallest prior weight q of the two-point prior used by audits of Prop 6 (the infimum is the
#: limit q -> 0 and is not attained, docs/math.md §6).
TWO_POINT_Q_MIN: float = 1e-12

#: Default confidence level 1 - beta of Clopper-Pearson bounds in Monte Carlo audits.
MC_CONFIDENCE: float = 0.99

#: Prior-class membership tests accept a prior whose constraint is violated by at most this
#: relative amount (rounding on the boundary, e.g. the sharp Prop 7 witness). Audits that use
#: such a prior may exceed a certificate by a comparable amount, which LOSS_ATOL absorbs.
CLASS_RTOL: float = 1e-9

#: Relative slack under which two expected losses (or two interval masses) count as tied, so
#: that the documented tie-break rule of a Bayes act, not floating-point rounding, picks it.
TIE_RTOL: float = 1e-12

#: Properness check: a pair (P, Q) violates properness only if
#: S(Q, Q) > S(P, Q) + PROPER_ATOL + PROPER_RTOL * |S(P, Q)| (+ PROPER_MC_Z standard errors of
#: the paired difference when S(P, Q) is estimated by Monte Carlo).
PROPER_ATOL: float = 1e-9
PROPER_RTOL: float = 1e-9
PROPER_MC_Z: float = 4.0

#: Upper-tail mass of a scipy cell law left out when a cell is enumerated on a finite grid
#: (the grid is renormalised).
CELL_TAIL: float = 1e-13

#: Directed rounding of certificates (persuasive._rounding): ulps of error allowed for
#: one libm call (log, exp, expm1, log1p), stepped over upwards.
LIBM_ULPS: int = 2

#: Directed rounding of certificates: a closed form of a few operations is moved up by
#: ``CLOSED_FORM_C * eps * m`` (m the magnitude of its terms) before it is reported, so that its
#: floating-point error can only raise κ (or δ); the same bound decides when a non-positive
#: computed κ is certainly 0.
CLOSED_FORM_C: float = 64.0

#: Relative float error absorbed when a privacy loss ℓ is put on the grid Δℤ of a privacy-loss
#: distribution (persuasive.pld.pmf): a quotient ℓ/Δ within ``PLD_SNAP * max(1, |ℓ/Δ|)`` above
#: an integer j is put on jΔ (rounding of the division only; the certificate adds it back).
PLD_SNAP: float = 16.0 * 2.220446049250313e-16
