"""Validation helpers for the public boundary.

Each helper raises :class:`~persuasive.errors.ValidationError` with a message that names the
argument, echoes the bad value and says what is allowed (docs/architecture.md, rule 5).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from persuasive import _tolerances as tol
from persuasive.errors import ValidationError


def echo(value: Any) -> str:
    """``repr(value)``, cut to 80 characters: how error messages quote a bad value."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_echo = echo


def real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a float in the given interval, else raise ValidationError."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValidationError(f"{name} must be a real number; got {_echo(value)}")
    v = float(value)
    lb = "[" if (allow_inf if low is None else not low_open) else "("
    hb = "]" if (allow_inf if high is None else not high_open) else ")"
    lo_s = "-inf" if low is None else f"{low:g}"
    hi_s = "inf" if high is None else f"{high:g}"
    interval = f"{lb}{lo_s}, {hi_s}{hb}"
    if math.isnan(v) or (math.isinf(v) and not allow_inf):
        raise ValidationError(f"{name} must be a finite number; got {_echo(value)}")
    lo_bad = low is not None and (v < low or (low_open and v == low))
    hi_bad = high is not None and (v > high or (high_open and v == high))
    if lo_bad or hi_bad:
        raise ValidationError(f"{name} must be in {interval}; got {_echo(value)}")
    return v


def integer(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int in ``[low, high]``, else raise ValidationError."""
    if isinstance(value, bool):
        raise ValidationError(f"{name} must be an integer; got {_echo(value)}")
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        value = int(value)
    if not isinstance(value, (int, np.integer)):
        raise ValidationError(f"{name} must be an integer; got {_echo(value)}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        lo_s = "-inf" if low is None else str(low)
        hi_s = "inf" if high is None else str(high)
        raise ValidationError(f"{name} must be an integer in [{lo_s}, {hi_s}]; got {v}")
    return v


def array(
    name: str,
    value: ArrayLike,
    *,
    ndim: int | tuple[int, ...] | None = None,
    finite: bool = True,
    nonneg: bool = False,
) -> NDArray[np.float64]:
    """Return ``value`` as a float64 array, checking dimension and finiteness (booleans are
    not numbers here)."""
    if isinstance(value, (bool, np.bool_)) or (
        isinstance(value, np.ndarray) and value.dtype == np.bool_
    ):
        raise ValidationError(f"{name} must be numeric; got {_echo(value)}")
    try:
        a = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be numeric; got {_echo(value)}") from exc
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if a.ndim not in allowed:
            raise ValidationError(
                f"{name} must have {' or '.join(map(str, allowed))} dimension(s); "
                f"got shape {a.shape}"
            )
    if a.size == 0:
        raise ValidationError(f"{name} must not be empty; got {_echo(value)}")
    if finite and not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0]
        raise ValidationError(
            f"{name} must contain only finite numbers; entry {tuple(int(b) for b in bad)} "
            f"is {a[tuple(bad)]}"
        )
    if nonneg and np.any(a < 0):
        bad = np.argwhere(a < 0)[0]
        raise ValidationError(
            f"{name} must be non-negative; entry {tuple(int(b) for b in bad)} is {a[tuple(bad)]}"
        )
    return a


def probabilities(name: str, value: ArrayLike, *, axis: int = -1) -> NDArray[np.float64]:
    """Return ``value`` as probabilities summing to one along ``axis``."""
    p = array(name, value, nonneg=True)
    sums = p.sum(axis=axis)
    if not np.all(np.abs(sums - 1.0) <= tol.PROB_SUM_ATOL):
        worst = np.max(np.abs(np.atleast_1d(sums) - 1.0))
        raise ValidationError(
            f"{name} must sum to one (within {tol.PROB_SUM_ATOL:g}); off by {worst:.3g}. "
            f"Normalise it, e.g. p / p.sum()"
        )
    return p


def covariance(
    name: str, value: ArrayLike, n: int | None = None, *, definite: bool = True
) -> NDArray[np.float64]:
    """Return a symmetric positive (semi-)definite covariance matrix."""
    c = array(name, value, ndim=(0, 1, 2))
    if c.ndim == 0:
        c = c.reshape(1, 1)
    elif c.ndim == 1:
        c = np.diag(c)
    if c.shape[0] != c.shape[1]:
        raise ValidationError(f"{name} must be a square matrix; got shape {c.shape}")
    if n is not None and c.shape[0] != n:
        raise ValidationError(f"{name} must be {n} x {n} to match the mean; got shape {c.shape}")
    # Work on C / max|C_ij| so that neither the symmetrisation nor the eigenvalues overflow
    # (entries near the largest float) or underflow (subnormal entries).
    top = float(np.max(np.abs(c)))
    unit = c / top if top > 0.0 else c
    if not np.allclose(unit, unit.T, rtol=1e-10, atol=1e-12):
        raise ValidationError(
            f"{name} must be symmetric; max |C - C^T| = {top * np.max(np.abs(unit - unit.T)):.3g}"
        )
    unit = 0.5 * unit + 0.5 * unit.T
    c = np.where(c == c.T, c, 0.5 * c + 0.5 * c.T)  # exact when already symmetric
    eig = np.linalg.eigvalsh(unit)
    scale = float(np.max(np.abs(eig)))
    if definite and eig[0] <= tol.PSD_RTOL * scale:
        raise ValidationError(
            f"{name} must be positive definite; its smallest eigenvalue is {eig[0] * top:.3g}"
        )
    if not definite and eig[0] < -tol.PSD_RTOL * scale:
        raise ValidationError(
            f"{name} must be positive semi-definite; its smallest eigenvalue is {eig[0] * top:.3g}"
        )
    return c


def choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``allowed``."""
    if value not in allowed:
        raise ValidationError(f"{name} must be one of {', '.join(allowed)}; got {_echo(value)}")
    return str(value)


def rng(name: str, value: Any) -> np.random.Generator:
    """A numpy Generator from ``value``: None (fresh entropy), a seed (an integer >= 0) or a
    Generator; a ValidationError naming ``name`` otherwise."""
    if isinstance(value, np.random.Generator):
        return value
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
        raise ValidationError(
            f"{name} must be None, a seed (an integer >= 0) or a numpy Generator; "
            f"got {_echo(value)}"
        )
    if value is not None and int(value) < 0:
        raise ValidationError(f"{name} must be a seed >= 0; got {int(value)}")
    return np.random.default_rng(value)
