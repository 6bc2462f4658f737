r"""Read dp_accounting ``DpEvent`` objects as :mod:`persuasive` mechanisms, and back.

dp_accounting describes a mechanism by its noise in units of the sensitivity C (the
``noise_multiplier`` s / C), which is exactly the convention of :mod:`persuasive` noise
mechanisms (sensitivity 1, docs/math.md §6):

=============================================  ==========================================
DpEvent                                        persuasive mechanism
=============================================  ==========================================
``LaplaceDpEvent(b)``                          ``LaplaceMechanism(b)``
``GaussianDpEvent(s)``                         ``GaussianMechanism(s)``
``DiscreteLaplaceDpEvent(a, sensitivity=1)``   ``GeometricMechanism(1 / a)``
``RandomizedResponseDpEvent(p, k)``            ``RandomizedResponse(log(1 + k(1-p)/p), k)``
``ComposedDpEvent([e1, ..., en])``             ``ComposedRelease([m1, ..., mn])``
``SelfComposedDpEvent(e, n)``                  ``ComposedRelease.repeat(m, n)``
=============================================  ==========================================

A composition is read as independent releases of the same data x
(:class:`~persuasive.mechanisms.composed.ComposedRelease`, docs/dev/COMPOSITION_CONTRACT.md);
dp_accounting also allows adaptively chosen queries, which a fixed kernel does not model.
Everything else (subsampling, tree aggregation, repeat-and-select, mixtures of Gaussians,
zCDP-only events, non-private and unsupported events) raises
:class:`~persuasive.UnsupportedCombinationError` naming the event.

Examples
--------
>>> import dp_accounting
>>> from_dp_event(dp_accounting.LaplaceDpEvent(2.0))
LaplaceMechanism(scale=2.0)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from persuasive.adapters._deps import require
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms import (
    FiniteKernel,
    GaussianMechanism,
    GeometricMechanism,
    LaplaceMechanism,
    Mechanism,
    RandomizedResponse,
)
from persuasive.mechanisms.composed import ComposedRelease, flatten

#: Why the events that do not map do not map.
_UNMAPPED = {
    "PoissonSampledDpEvent": "privacy amplification by subsampling (the release depends on a "
    "random subset, not on a fixed dataset x; persuasive has no subsampled mechanism)",
    "SampledWithReplacementDpEvent": "privacy amplification by subsampling",
    "SampledWithoutReplacementDpEvent": "privacy amplification by subsampling",
    "TruncatedSubsampledGaussianDpEvent": "privacy amplification by subsampling",
    "SingleEpochTreeAggregationDpEvent": "tree aggregation (DP-FTRL) has no persuasive kernel",
    "RepeatAndSelectDpEvent": "repeat-and-select with a random number of repetitions",
    "MixtureOfGaussiansDpEvent": "a mixture of Gaussians (random sensitivity)",
    "ZCDpEvent": "a bare zCDP guarantee is a bound, not a mechanism (no kernel to read)",
    "NonPrivateDpEvent": "a non-private release has no noise to read",
    "UnsupportedDpEvent": "dp_accounting itself marks the event as unsupported",
    "NoOpDpEvent": "a no-op releases nothing (it is dropped inside compositions)",
}


Parts = list[tuple[Mechanism, int]]


def _compose(parts: Parts) -> Mechanism:
    """The part itself if there is one release, else the
    :class:`~persuasive.mechanisms.composed.ComposedRelease` of the parts with their counts."""
    if len(parts) == 1 and parts[0][1] == 1:
        return parts[0][0]
    return ComposedRelease([m for m, _ in parts], [c for _, c in parts])


def _is(event: Any, dpa: Any, name: str) -> bool:
    """isinstance against a dp_accounting event class that older versions may lack."""
    cls = getattr(dpa, name, None)
    return cls is not None and isinstance(event, cls)


def _map(event: Any, dpa: Any) -> Parts:
    """The releases in ``event`` as ``(mechanism, count)``, flattened over compositions."""
    name = type(event).__name__
    if _is(event, dpa, "LaplaceDpEvent"):
        return [(LaplaceMechanism(event.noise_multiplier), 1)]
    if _is(event, dpa, "GaussianDpEvent"):
        return [(GaussianMechanism(event.noise_multiplier), 1)]
    if _is(event, dpa, "DiscreteLaplaceDpEvent"):
        if event.sensitivity != 1:
            raise UnsupportedCombinationError(
                f"DiscreteLaplaceDpEvent with sensitivity {event.sensitivity!r}: integer noise "
                "cannot be rescaled to sensitivity 1, so only sensitivity 1 maps"
            )
        return [(GeometricMechanism(1.0 / float(event.noise_parameter)), 1)]
    if _is(event, dpa, "RandomizedResponseDpEvent"):
        p, k = float(event.noise_parameter), int(event.num_buckets)
        if not 0.0 <= p <= 1.0 or k < 1:
            raise ValidationError(
                f"RandomizedResponseDpEvent needs noise_parameter in [0, 1] and num_buckets "
                f">= 1; got {p!r}, {k!r}"
            )
        if k == 1:
            return [(FiniteKernel([[1.0]]), 1)]
        if p == 0.0:
            return [(FiniteKernel(np.eye(k)), 1)]  # no noise: epsilon0 = inf
        return [(RandomizedResponse(math.log1p(k * (1.0 - p) / p), k), 1)]
    if _is(event, dpa, "ComposedDpEvent"):
        return [part for e in event.events for part in _map(e, dpa)]
    if _is(event, dpa, "SelfComposedDpEvent"):
        if int(event.count) < 0:
            raise ValidationError(f"SelfComposedDpEvent count must be >= 0; got {event.count!r}")
        n = int(event.count)
        return [(m, c * n) for m, c in _map(event.event, dpa)] if n else []
    if _is(event, dpa, "NoOpDpEvent"):
        return []
    reason = _UNMAPPED.get(name, "no persuasive mechanism corresponds to it")
    raise UnsupportedCombinationError(f"{name} does not map to a persuasive mechanism: {reason}")


def from_dp_event(event: Any) -> Mechanism:
    r"""The :mod:`persuasive` mechanism described by a dp_accounting ``DpEvent``.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        Laplace, Gaussian, discrete Laplace (sensitivity 1), randomized response, or a
        (self-)composition of these; no-ops inside a composition are dropped.

    Returns
    -------
    Mechanism
        In units of the sensitivity; a composition is a
        :class:`~persuasive.mechanisms.composed.ComposedRelease` (releases of the same data).

    Raises
    ------
    MissingDependencyError
        If dp_accounting is not installed.
    UnsupportedCombinationError
        For events that do not map (subsampling, tree aggregation, zCDP, ...), naming the
        event and the reason.

    Examples
    --------
    >>> import dp_accounting
    >>> import persuasive as pp
    >>> m = from_dp_event(dp_accounting.GaussianDpEvent(1.0))
    >>> round(pp.certify(m, pp.probabilistic_dp(1.0, 0.31)).kappa, 4)
    0.9959
    """
    dpa = require("dp_accounting.dp_event", "dp-accounting")
    if not _is(event, dpa, "DpEvent"):
        raise ValidationError(f"event must be a dp_accounting DpEvent; got {event!r}")
    parts = _map(event, dpa)
    if not parts:
        raise UnsupportedCombinationError(
            f"{type(event).__name__} releases nothing (only no-ops or a count of 0): "
            "there is no mechanism to read"
        )
    return _compose(parts)


def _event(mechanism: Mechanism, dpa: Any) -> Any:
    if isinstance(mechanism, LaplaceMechanism):
        return dpa.LaplaceDpEvent(mechanism.scale)
    if isinstance(mechanism, GaussianMechanism):
        return dpa.GaussianDpEvent(mechanism.sigma)
    if isinstance(mechanism, GeometricMechanism):
        return dpa.DiscreteLaplaceDpEvent(1.0 / mechanism.scale, 1)
    if isinstance(mechanism, RandomizedResponse):
        k = mechanism.k
        return dpa.RandomizedResponseDpEvent(k / (math.exp(mechanism.epsilon) + k - 1), k)
    raise UnsupportedCombinationError(
        f"{type(mechanism).__name__} has no dp_accounting DpEvent; supported: "
        "LaplaceMechanism, GaussianMechanism, GeometricMechanism, RandomizedResponse and "
        "Compositions of them"
    )


def to_dp_event(mechanism: Mechanism) -> Any:
    r"""The dp_accounting ``DpEvent`` of a :mod:`persuasive` mechanism (inverse of
    :func:`from_dp_event`).

    Compositions (``Composition``, ``ComposedRelease``, nested) are flattened with
    :func:`~persuasive.mechanisms.composed.flatten` (equal parts merged, ``Joint(M, K)`` read as
    M by Prop 4); a part released c > 1 times becomes ``SelfComposedDpEvent(event, c)``, several
    parts a ``ComposedDpEvent``.

    Examples
    --------
    >>> import persuasive as pp
    >>> to_dp_event(pp.Composition(pp.GaussianMechanism(2.0), pp.GaussianMechanism(2.0)))
    SelfComposedDpEvent(event=GaussianDpEvent(noise_multiplier=2.0), count=2)
    """
    dpa = require("dp_accounting.dp_event", "dp-accounting")
    events = [
        _event(m, dpa) if c == 1 else dpa.SelfComposedDpEvent(_event(m, dpa), c)
        for m, c in flatten(mechanism)
    ]
    return events[0] if len(events) == 1 else dpa.ComposedDpEvent(events)
