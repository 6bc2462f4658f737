r"""Read an OpenDP measurement as a :mod:`persuasive` mechanism.

OpenDP measurements record how they were built (``__opendp_dict__``); the adapter walks that
record: chains ``transformation >> measurement`` (the transformation's stability map turns the
input distance ``d_in`` into the sensitivity Δ seen by the noise step), measure conversions
(``make_approximate``, ``make_pureDP_to_zCDP``, ``make_zCDP_to_approxDP``, ``make_fix_delta``:
the same noise kernel, only the accounting changes) down to one noise step.

Units. :mod:`persuasive` noise mechanisms assume sensitivity 1, neighbours differing by at most
1 in one coordinate (Prop 6, docs/math.md §6). Adding :math:`\mathrm{Lap}(b)` to a statistic of
sensitivity Δ is, after dividing the output by Δ, adding :math:`\mathrm{Lap}(b/\Delta)` to a
statistic of sensitivity 1, and the privacy loss is invariant under this bijection, so

.. math::

    \mathrm{Lap}(b) \text{ at sensitivity } \Delta \;\equiv\;
    \texttt{LaplaceMechanism}(b/\Delta), \qquad
    \mathcal N(0, \sigma^2) \text{ at } \Delta \;\equiv\; \texttt{GaussianMechanism}(\sigma/\Delta)

in units of Δ. The discrete (integer) Laplace has no such rescaling (Δ·ℤ is not ℤ), so it maps
to :class:`~persuasive.GeometricMechanism` only at Δ = 1. See ``docs/adapters.md``.

Examples
--------
>>> import opendp.prelude as dp
>>> dp.enable_features("contrib")
>>> space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
>>> from_opendp(dp.m.make_laplace(*space, scale=4.0), d_in=2.0)
LaplaceMechanism(scale=2.0)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from persuasive.adapters._deps import require
from persuasive.errors import UnsupportedCombinationError, ValidationError
from persuasive.mechanisms import (
    GaussianMechanism,
    GeometricMechanism,
    LaplaceMechanism,
    Mechanism,
    RandomizedResponse,
)

#: Measure conversions: same kernel, different accounting; the wrapped measurement's keyword.
_CONVERSIONS = {
    "make_approximate": "measurement",
    "make_pureDP_to_zCDP": "measurement",
    "make_zCDP_to_approxDP": "measurement",
    "make_fix_delta": "measurement",
}
_NOISE = ("make_laplace", "make_gaussian", "make_geometric", "make_randomized_response_bool")
_INT = re.compile(r"^(Vec<)?[iu](8|16|32|64|128|size)>?$")
_FLOAT = re.compile(r"^(Vec<)?f(32|64)>?$")


@dataclass(frozen=True)
class OpenDPReading:
    """The persuasive reading of an OpenDP measurement.

    Attributes
    ----------
    mechanism : Mechanism
        The persuasive mechanism, in units of the sensitivity.
    constructor : str
        The OpenDP noise constructor found, e.g. ``"make_laplace"``.
    scale : float
        OpenDP's noise scale (Laplace b, Gaussian σ, geometric scale) in data units; for
        randomized response, OpenDP's ``prob``.
    sensitivity : float
        Δ, the distance seen by the noise step for the given ``d_in``.
    d_in : object
        The input distance the reading is for.
    notes : tuple of str
        How the measurement was unwrapped, and caveats.
    """

    mechanism: Mechanism
    constructor: str
    scale: float
    sensitivity: float
    d_in: Any
    notes: tuple[str, ...] = ()


def _record(meas: Any) -> tuple[str, dict[str, Any]]:
    info = getattr(meas, "__opendp_dict__", None)
    if not isinstance(info, dict) or "__function__" not in info:
        raise UnsupportedCombinationError(
            f"{type(meas).__name__} carries no OpenDP construction record (__opendp_dict__), "
            "so its noise family and scale cannot be read; build it with opendp.measurements "
            "(make_laplace / make_gaussian / make_geometric) or opendp.context"
        )
    return str(info["__function__"]), dict(info.get("__kwargs__", {}))


def _walk(meas: Any, d_in: Any, notes: list[str]) -> tuple[str, dict[str, Any], Any]:
    """Unwrap chains and measure conversions down to the noise step; return its record and
    the distance it sees."""
    fn, kw = _record(meas)
    if fn == "make_chain_mt":
        t = kw["transformation0"]
        try:
            d_mid = t.map(d_in)
        except Exception as exc:  # OpenDP raises its own exception types
            raise ValidationError(
                f"d_in = {d_in!r} is not a valid input distance for the measurement's "
                f"input metric {t.input_metric}: {exc}"
            ) from exc
        notes.append(
            f"chained after a transformation ({t.input_metric} -> {t.output_metric}): "
            f"d_in = {d_in!r} gives sensitivity {d_mid!r} by OpenDP's stability map"
        )
        return _walk(kw["measurement1"], d_mid, notes)
    if fn in _CONVERSIONS:
        notes.append(f"{fn}: a change of privacy measure only; the noise kernel is unchanged")
        return _walk(kw[_CONVERSIONS[fn]], d_in, notes)
    if fn in _NOISE:
        return fn, kw, d_in
    raise UnsupportedCombinationError(
        f"OpenDP constructor {fn!r} does not map to a persuasive mechanism; supported: "
        f"{', '.join(_NOISE)}, optionally after make_chain_mt and the measure conversions "
        f"{', '.join(_CONVERSIONS)} (see docs/adapters.md for what does not map)"
    )


def _positive(name: str, value: Any) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be a positive number; got {value!r}") from exc
    if not (math.isfinite(x) and x > 0):
        raise ValidationError(f"{name} must be a positive finite number; got {value!r}")
    return x


def _noise_mechanism(fn: str, kw: dict[str, Any], delta: float, notes: list[str]) -> Mechanism:
    if fn == "make_randomized_response_bool":
        prob = float(kw["prob"])
        if not 0.5 <= prob < 1.0:
            raise UnsupportedCombinationError(
                f"randomized response with prob = {prob!r}: only prob in [0.5, 1) maps "
                "(prob = 1 releases the bit exactly)"
            )
        notes.append("boolean randomized response: rows/outputs 0 = False, 1 = True")
        return RandomizedResponse(math.log(prob / (1.0 - prob)), 2)
    carrier = str(kw["input_domain"].carrier_type)
    scale = _positive("scale", kw["scale"])
    vector = carrier.startswith("Vec<")
    if kw.get("k") is not None:
        raise UnsupportedCombinationError(
            f"{fn} with an explicit granularity k = {kw['k']!r}: the noise lives on the 2^k "
            "lattice and the data are rounded to it, which no persuasive mechanism models; "
            "use the default k"
        )
    integer = bool(_INT.match(carrier))
    if not integer and not _FLOAT.match(carrier):
        raise UnsupportedCombinationError(f"{fn} on carrier type {carrier!r} does not map")
    if fn == "make_gaussian":
        if integer:
            raise UnsupportedCombinationError(
                "make_gaussian on integers is the discrete Gaussian, whose privacy loss "
                "differs from the continuous Gaussian; persuasive has no discrete Gaussian"
            )
        if vector:
            notes.append(
                "vector Gaussian under the L2 metric: the privacy loss depends only on "
                "||x - x'||_2, so the one-coordinate reading is exact"
            )
        return GaussianMechanism(scale / delta)
    if integer:  # make_geometric, or make_laplace on integers (discrete Laplace)
        if delta != 1.0:
            raise UnsupportedCombinationError(
                f"discrete Laplace (geometric) noise at sensitivity {delta!r}: integer noise "
                "cannot be rescaled to sensitivity 1, so only sensitivity 1 maps "
                "(to GeometricMechanism)"
            )
        return GeometricMechanism(scale)
    if fn == "make_geometric":
        raise UnsupportedCombinationError("make_geometric on a float domain does not map")
    notes.append(
        "OpenDP samples float Laplace noise on a fine 2^k lattice and rounds its privacy map "
        "up; the persuasive reading is the continuous Laplace mechanism"
    )
    if vector:
        notes.append(
            "vector Laplace under the L1 metric: persuasive's neighbours differ in one "
            "coordinate by up to the sensitivity; the pure-DP epsilon is the same for every "
            "shift in the L1 ball, tails at delta > 0 are read at the one-coordinate shift"
        )
    return LaplaceMechanism(scale / delta)


def read_opendp(measurement: Any, d_in: Any = None) -> OpenDPReading:
    r"""The persuasive reading of an OpenDP measurement, with its sensitivity and notes.

    Parameters
    ----------
    measurement : opendp.mod.Measurement or opendp.context.Query
        A measurement built with ``make_laplace``, ``make_gaussian``, ``make_geometric`` or
        ``make_randomized_response_bool``, possibly chained after a transformation and/or
        wrapped in a measure conversion; or an ``opendp.context`` query (it is resolved).
    d_in : optional
        The input distance (privacy unit) to read the measurement at; default the query's
        ``d_in``, else 1.

    Returns
    -------
    OpenDPReading
        ``mechanism`` is in units of the sensitivity Δ = the noise step's input distance.

    Raises
    ------
    MissingDependencyError
        If opendp is not installed.
    UnsupportedCombinationError
        If the measurement is not of a family that maps (the message names what was found).
    """
    od = require("opendp.mod", "opendp")
    context = require("opendp.context", "opendp")
    notes: list[str] = []
    if isinstance(measurement, context.Query):
        if d_in is None:
            d_in = measurement._d_in
        measurement = measurement.resolve()
        notes.append("opendp.context query resolved into its measurement")
    if not isinstance(measurement, od.Measurement):
        raise ValidationError(
            "measurement must be an opendp Measurement or opendp.context Query; got "
            f"{type(measurement).__name__}"
        )
    if d_in is None:
        d_in = 1
    fn, kw, d_mid = _walk(measurement, d_in, notes)
    sens = 1.0 if fn == "make_randomized_response_bool" else _positive("sensitivity", d_mid)
    mech = _noise_mechanism(fn, kw, sens, notes)
    scale = float(kw["prob"] if fn == "make_randomized_response_bool" else kw["scale"])
    return OpenDPReading(mech, fn, scale, sens, d_in, tuple(notes))


def from_opendp(measurement: Any, d_in: Any = None) -> Mechanism:
    r"""The :mod:`persuasive` mechanism equivalent to an OpenDP measurement.

    ``Lap(b)`` at sensitivity Δ becomes ``LaplaceMechanism(b / Δ)``, Gaussian σ becomes
    ``GaussianMechanism(σ / Δ)`` (both in units of Δ), integer Laplace / geometric at Δ = 1
    becomes ``GeometricMechanism(b)``, boolean randomized response with ``prob`` p becomes
    ``RandomizedResponse(log(p / (1 - p)), 2)``. See :func:`read_opendp` for the parameters.

    Examples
    --------
    >>> import opendp.prelude as dp
    >>> import persuasive as pp
    >>> dp.enable_features("contrib")
    >>> space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    >>> meas = dp.m.make_laplace(*space, scale=3.0)
    >>> pp.certify(from_opendp(meas), pp.pure_dp(meas.map(1.0))).holds
    True
    """
    return read_opendp(measurement, d_in).mechanism
