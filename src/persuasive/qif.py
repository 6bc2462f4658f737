r"""Quantitative information flow (QIF) beside persuasive privacy (App. D.1, Bon et al. 2026).

For a finite mechanism :math:`m(x, t)` (rows = secrets :math:`x \in \{0..K-1\}`, columns =
outputs) and a prior :math:`\pi` on the secrets, QIF (Alvim et al. 2020; Smith 2009) measures
how much the release teaches an attacker *on average* under that one prior:

.. math::

    I_\pi(X; T) = \sum_{x, t} \pi_x m(x, t) \log\frac{m(x, t)}{m_\pi(t)}, \qquad
    m_\pi(t) = \sum_z \pi_z m(z, t),

    V(X) = \max_x \pi_x, \qquad V(X \mid T) = \sum_t \max_x \pi_x m(x, t), \qquad
    \mathcal L = \frac{V(X \mid T)}{V(X)},

and the multiplicative capacity (the largest leakage over *all* priors, Alvim et al. 2020,
Thm. 7.2) is :math:`\mathcal{ML}^\times = \sum_t \max_x m(x, t)`.

The link to PP (App. D.1; docs/math.md §7): for the log score the relative loss is
:math:`\Delta_L(\pi, t, x) = \log m(x, t) - \log m_\pi(t)`, and averaging it over
:math:`x \sim \pi` *and* :math:`T \sim M(x, \cdot)` gives exactly :math:`I_\pi(X; T)`.
PP instead bounds the *tail* of :math:`\Delta` for *every* :math:`x` and every prior in a class.
All logarithms are natural (nats; divide by ``log 2`` for bits).

Examples
--------
>>> import persuasive as pp
>>> from persuasive.qif import qif_report
>>> r = qif_report(pp.RandomizedResponse(1.0, 2), [0.5, 0.5])
>>> round(r.mutual_information, 6), round(r.multiplicative_leakage, 6), r.certificate.kappa
(0.110944, 1.462117, 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from persuasive import _validation as v
from persuasive.certify import certify
from persuasive.closed.pdp import finite_matrix
from persuasive.definitions import PersuasivePrivacy, PersuasivePrivacyExpectation, pure_dp
from persuasive.errors import ValidationError
from persuasive.mechanisms import Mechanism
from persuasive.priors import DiscretePrior
from persuasive.results import Certificate, _json

__all__ = [
    "QIFReport",
    "bayes_vulnerability",
    "min_entropy_leakage",
    "multiplicative_capacity",
    "multiplicative_leakage",
    "mutual_information",
    "posterior_bayes_vulnerability",
    "qif_report",
]


# --- validation at the public boundary ---------------------------------------------------------


def _matrix(mechanism: Any) -> NDArray[np.float64]:
    matrix = finite_matrix(mechanism) if isinstance(mechanism, Mechanism) else None
    if matrix is None:
        raise ValidationError(
            "mechanism must be a finite kernel (FiniteKernel, RandomizedResponse, or a "
            f"Joint/Chain of them) with rows = secrets; got {mechanism!r}"
        )
    return matrix


def _prior(prior: Any, n_inputs: int) -> NDArray[np.float64]:
    """The prior as a dense probability vector on the rows ``0..K-1``."""
    if isinstance(prior, DiscretePrior):
        pts = prior.support
        if pts.shape[1] != 1 or np.any(pts != np.round(pts)) or np.any(pts < 0):
            raise ValidationError(
                "prior must be a DiscretePrior on the kernel's rows 0..K-1 (scalar integer "
                f"datasets); got {prior!r}"
            )
        if np.any(pts >= n_inputs):
            raise ValidationError(
                f"prior puts mass on dataset {int(pts.max())} but the mechanism has only "
                f"{n_inputs} rows (0..{n_inputs - 1})"
            )
        dense = np.zeros(n_inputs)
        dense[pts[:, 0].astype(np.intp)] = prior.probs
        return dense
    p = v.probabilities("prior", v.array("prior", prior, ndim=1))
    if p.shape[0] != n_inputs:
        raise ValidationError(
            f"prior must have one probability per mechanism row ({n_inputs}); got "
            f"{p.shape[0]} entries"
        )
    return p


def _inputs(mechanism: Any, prior: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    m = _matrix(mechanism)
    return m, _prior(prior, m.shape[0])


# --- private cores (trusted inputs) ---------------------------------------------------------------


def _mi(m: NDArray[np.float64], pi: NDArray[np.float64]) -> float:
    with np.errstate(divide="ignore"):
        log_joint = np.log(pi)[:, None] + np.log(m)
    log_pred = logsumexp(log_joint, axis=0)  # log m_pi(t); -inf only for impossible outputs
    ok = np.isfinite(log_joint)
    rows, cols = np.nonzero(ok)
    loss = np.log(m[rows, cols]) - log_pred[cols]
    return max(0.0, float(np.sum(np.exp(log_joint[rows, cols]) * loss)))


def _posterior_v(m: NDArray[np.float64], pi: NDArray[np.float64]) -> float:
    return float(np.max(pi[:, None] * m, axis=0).sum())


# --- public functions ---------------------------------------------------------------------------


def mutual_information(mechanism: Mechanism, prior: ArrayLike | DiscretePrior) -> float:
    r"""Mutual information :math:`I_\pi(X; T)` in nats (Alvim et al. 2020, §2).

    .. math:: I_\pi(X; T) = \sum_{x,t} \pi_x m(x,t) \big[\log m(x,t) - \log m_\pi(t)\big]
              = \mathbb E_{X \sim \pi}\, \mathbb E_{T \sim M(X,\cdot)}\,\Delta_L(\pi, T, X),

    the log-score relative loss averaged over the secret and the output (App. D.1, Bon et al.
    2026). Computed in the log domain; terms with :math:`\pi_x m(x,t) = 0` contribute 0.

    Parameters
    ----------
    mechanism : FiniteKernel
        A finite mechanism, rows = secrets (also RandomizedResponse, Joint/Chain of kernels).
    prior : array_like or DiscretePrior
        Probabilities of the rows (one per row, summing to one), or a DiscretePrior on them.

    Examples
    --------
    >>> import persuasive as pp
    >>> round(mutual_information(pp.FiniteKernel([[1, 0], [0, 1]]), [0.5, 0.5]), 6)  # log 2
    0.693147
    """
    return _mi(*_inputs(mechanism, prior))


def bayes_vulnerability(prior: ArrayLike | DiscretePrior, n_inputs: int | None = None) -> float:
    r"""Prior Bayes vulnerability :math:`V(X) = \max_x \pi_x` (one-guess success probability).

    ``n_inputs`` (number of secrets) is only needed to place a DiscretePrior; a vector prior
    gives it by its length.

    >>> bayes_vulnerability([0.2, 0.5, 0.3])
    0.5
    """
    if n_inputs is None:
        if isinstance(prior, DiscretePrior):
            return float(np.max(prior.probs))
        return float(np.max(v.probabilities("prior", v.array("prior", prior, ndim=1))))
    return float(np.max(_prior(prior, v.integer("n_inputs", n_inputs, low=1))))


def posterior_bayes_vulnerability(mechanism: Mechanism, prior: ArrayLike | DiscretePrior) -> float:
    r"""Posterior Bayes vulnerability :math:`V(X \mid T) = \sum_t \max_x \pi_x m(x, t)`.

    The probability that an attacker who sees T and guesses the MAP secret is right
    (Alvim et al. 2020, §5.1).

    >>> import persuasive as pp
    >>> round(posterior_bayes_vulnerability(pp.RandomizedResponse(1.0, 2), [0.5, 0.5]), 6)
    0.731059
    """
    return _posterior_v(*_inputs(mechanism, prior))


def multiplicative_leakage(mechanism: Mechanism, prior: ArrayLike | DiscretePrior) -> float:
    r"""Multiplicative Bayes leakage :math:`\mathcal L = V(X \mid T) / V(X) \ge 1`."""
    m, pi = _inputs(mechanism, prior)
    return _posterior_v(m, pi) / float(np.max(pi))


def min_entropy_leakage(mechanism: Mechanism, prior: ArrayLike | DiscretePrior) -> float:
    r"""Min-entropy leakage :math:`\log \mathcal L = H_\infty(X) - H_\infty(X \mid T)` (nats)."""
    return math.log(multiplicative_leakage(mechanism, prior))


def multiplicative_capacity(mechanism: Mechanism) -> float:
    r"""Multiplicative Bayes capacity :math:`\max_\pi \mathcal L = \sum_t \max_x m(x, t)`.

    Attained at the uniform prior (Alvim et al. 2020, Thm. 7.2); its log is the min-entropy
    capacity. Like PP it is a worst case over a *class* of priors (all of them), but of an
    average over outputs.

    >>> import persuasive as pp
    >>> round(multiplicative_capacity(pp.RandomizedResponse(1.0, 2)), 6)
    1.462117
    """
    return float(np.max(_matrix(mechanism), axis=0).sum())


@dataclass(frozen=True)
class QIFReport:
    """QIF measures of one mechanism under one prior, next to a PP certificate.

    Attributes
    ----------
    mutual_information : float
        :math:`I_\\pi(X; T)` in nats (average of the log-score relative loss).
    prior_vulnerability, posterior_vulnerability : float
        :math:`V(X)` and :math:`V(X \\mid T)`.
    multiplicative_leakage, min_entropy_leakage : float
        :math:`\\mathcal L` and :math:`\\log \\mathcal L` (nats).
    multiplicative_capacity : float
        :math:`\\max_\\pi \\mathcal L`.
    certificate : Certificate
        The PP guarantee (worst case over x and over a class of priors, tail at δ).
    prior : tuple of float
        The prior the QIF numbers are for.
    mechanism : dict
        Description of the mechanism.
    """

    mutual_information: float
    prior_vulnerability: float
    posterior_vulnerability: float
    multiplicative_leakage: float
    min_entropy_leakage: float
    multiplicative_capacity: float
    certificate: Certificate
    prior: tuple[float, ...] = field(default=())
    mechanism: dict[str, Any] = field(default_factory=dict)

    def explain(self) -> str:
        c = self.certificate
        return (
            f"Average case, one prior (QIF): the mutual information is "
            f"{self.mutual_information:.6g} nats (the log-score relative loss averaged over "
            f"x ~ prior and T); one MAP guess succeeds with probability "
            f"{self.prior_vulnerability:.6g} before and {self.posterior_vulnerability:.6g} after "
            f"the release (leakage x{self.multiplicative_leakage:.6g}, at most "
            f"x{self.multiplicative_capacity:.6g} over all priors). Worst case, a class of "
            f"priors (PP): the relative loss exceeds kappa = {c.kappa:.6g} with probability at "
            f"most delta = {c.delta:g} for every dataset and every prior in the class "
            f"({c.basis})."
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(
            _json(
                {
                    "mutual_information": self.mutual_information,
                    "prior_vulnerability": self.prior_vulnerability,
                    "posterior_vulnerability": self.posterior_vulnerability,
                    "multiplicative_leakage": self.multiplicative_leakage,
                    "min_entropy_leakage": self.min_entropy_leakage,
                    "multiplicative_capacity": self.multiplicative_capacity,
                    "certificate": self.certificate.to_dict(),
                    "prior": list(self.prior),
                    "mechanism": self.mechanism,
                }
            )
        )


def qif_report(
    mechanism: Mechanism,
    prior: ArrayLike | DiscretePrior,
    definition: PersuasivePrivacy | PersuasivePrivacyExpectation | None = None,
) -> QIFReport:
    r"""QIF measures under ``prior`` next to the PP certificate of ``definition``.

    Parameters
    ----------
    mechanism : FiniteKernel
        Finite mechanism, rows = secrets.
    prior : array_like or DiscretePrior
        Prior on the rows.
    definition : PersuasivePrivacy or PersuasivePrivacyExpectation, optional
        The PP guarantee to certify. Default :func:`~persuasive.pure_dp` with
        :math:`\kappa = \infty`, whose certificate reports the exact pure-DP
        :math:`\kappa(0)` under the log score and neighbour priors (Prop 6).

    Returns
    -------
    QIFReport
        Frozen result with ``explain()`` and ``to_dict()``.

    Examples
    --------
    >>> import persuasive as pp
    >>> r = qif_report(pp.RandomizedResponse(2.0, 4), [0.25] * 4)
    >>> round(r.posterior_vulnerability, 6), round(r.certificate.kappa, 6)
    (0.711235, 2.0)
    """
    m, pi = _inputs(mechanism, prior)
    if definition is None:
        definition = pure_dp(math.inf)
    cert = certify(mechanism, definition)
    v_prior = float(np.max(pi))
    v_post = _posterior_v(m, pi)
    return QIFReport(
        mutual_information=_mi(m, pi),
        prior_vulnerability=v_prior,
        posterior_vulnerability=v_post,
        multiplicative_leakage=v_post / v_prior,
        min_entropy_leakage=math.log(v_post / v_prior),
        multiplicative_capacity=float(np.max(m, axis=0).sum()),
        certificate=cert,
        prior=tuple(float(p) for p in pi),
        mechanism=mechanism.describe(),
    )
