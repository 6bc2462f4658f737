"""What a parameter domain is: :class:`Param`, its description and its checks.

A :class:`Param` declares the domain of one parameter (a number in an interval, an integer, a
flag, one of a few strings, an array of numbers, a list of pairs, a range of means); its
:meth:`Param.check` validates and converts a value, naming the parameter, and
:meth:`Param.domain` describes the allowed values in words. The declarations themselves are in
:mod:`persuasive._domains.declarations`, grouped in registries by :mod:`persuasive._domains`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from persuasive import _validation as v
from persuasive._validation import echo
from persuasive.errors import ValidationError

__all__ = ["DATASET_INDEX", "KINDS", "Param"]

#: The kinds of value a :class:`Param` can declare.
KINDS: tuple[str, ...] = (
    "real",
    "int",
    "bool",
    "str",
    "array",
    "pairs",
    "range",
    "table",
    "tables",
)

_NDIM_TEXT = {
    (0, 1): "a number or a 1-d array of numbers",
    (1,): "a 1-d array of numbers",
    (2,): "a 2-d array of numbers",
    (1, 2): "a 1-d or 2-d array of numbers",
    (0, 1, 2): "a number, a 1-d or a 2-d array of numbers",
}


def _fmt(x: float | None, default: str) -> str:
    if x is None:
        return default
    if isinstance(x, int):
        return str(x)
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))  # 1000000, not 1e+06
    return f"{x:g}"


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(
        x, (bool, np.bool_)
    )


@dataclass(frozen=True)
class Param:
    """The declared domain of one parameter (a constructor argument, a spec key, an option).

    Parameters
    ----------
    kind : {"real", "int", "bool", "str", "array", "pairs", "range", "table", "tables"}
        A real number, an integer, a boolean, a string (one of ``choices`` if given), an array
        of finite numbers with ``ndim`` dimensions, a non-empty list of pairs of integers >= 0,
        a pair ``(lo, hi)`` of reals with ``low <= lo <= hi`` (a range of means), a table or a
        non-empty array of tables (the last two only for spec documents).
    low, high : float, optional
        Bounds of a number (``None``: unbounded); for ``"range"``, ``low`` bounds both ends.
    low_open, high_open : bool
        Whether the bound is excluded.
    allow_inf : bool
        Whether ``inf`` is allowed (``nan`` never is).
    required : bool
        Whether the parameter must be given. An optional parameter whose ``default`` is
        ``None`` accepts ``None`` ("absent") in :meth:`check`.
    default : object
        Value used when an optional parameter is absent.
    choices : tuple of str
        Allowed strings for ``kind = "str"``.
    ndim : tuple of int
        Allowed numbers of dimensions for ``kind = "array"`` (0: a single number).
    example : str
        An example value, shown by :meth:`domain` for arrays.
    doc : str
        One-line meaning, for the documentation and ``--help``.
    """

    kind: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    allow_inf: bool = False
    required: bool = True
    default: Any = None
    choices: tuple[str, ...] = ()
    ndim: tuple[int, ...] = ()
    example: str = ""
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:  # pragma: no cover - a programming error in a declaration
            raise AssertionError(f"unknown Param kind {self.kind!r}")

    def but(self, **changes: Any) -> Param:
        """The same domain with other fields changed (e.g. ``required=False``, ``doc=...``)."""
        return replace(self, **changes)

    @property
    def accepts_none(self) -> bool:
        """Whether ``None`` means "absent" (an optional parameter without a default)."""
        return not self.required and self.default is None

    def _interval(self) -> str:
        lb = "(" if self.low_open or self.low is None else "["
        hb = ")" if self.high_open or (self.high is None and not self.allow_inf) else "]"
        return f"{lb}{_fmt(self.low, '-inf')}, {_fmt(self.high, 'inf')}{hb}"

    def domain(self) -> str:
        """A human description of the allowed values, e.g. ``a real number in (0, inf)``."""
        if self.kind in ("real", "int"):
            noun = "a real number" if self.kind == "real" else "an integer"
            if self.low is None and self.high is None:
                return noun
            return f"{noun} in {self._interval()}"
        if self.kind == "str" and self.choices:
            return "one of " + ", ".join(f'"{c}"' for c in self.choices)
        if self.kind == "array":
            text = _NDIM_TEXT.get(self.ndim, f"an array of numbers with {self.ndim} dimension(s)")
            return f"{text}, e.g. {self.example}" if self.example else text
        if self.kind == "range":
            lo = _fmt(self.low, "-inf")
            return f"a pair LO:HI of real numbers with {lo} <= LO <= HI < inf"
        return {
            "bool": "true or false",
            "str": "a string",
            "pairs": "a list of integer pairs, e.g. [[0, 1], [1, 2]]",
            "table": "a table",
            "tables": 'an array of tables, e.g. [{type = "log"}]',
        }[self.kind]

    # ----------------------------------------------------------------------------------------
    # Validation
    # ----------------------------------------------------------------------------------------

    def check(self, name: str, value: Any) -> Any:
        """Return ``value`` validated and converted, else raise ValidationError naming ``name``.

        Numbers come back as ``float`` / ``int``, arrays as float64 ndarrays, pairs as a tuple
        of ``(int, int)``; ``None`` comes back unchanged when :attr:`accepts_none`.
        """
        if value is None and self.accepts_none:
            return None
        if self.kind == "real":
            return self._real(name, value)
        if self.kind == "int":
            return self._int(name, value)
        if self.kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise ValidationError(f"{name} must be true or false; got {echo(value)}")
            return bool(value)
        if self.kind == "str":
            if not isinstance(value, str) or (self.choices and value not in self.choices):
                raise ValidationError(f"{name} must be {self.domain()}; got {echo(value)}")
            return value
        if self.kind == "array":
            return self._array(name, value)
        if self.kind == "pairs":
            return _pairs(name, value)
        if self.kind == "range":
            return self._range(name, value)
        if self.kind == "table":
            if not isinstance(value, dict):
                raise ValidationError(f"{name} must be a table; got {echo(value)}")
            return value
        if not isinstance(value, list) or not value:  # "tables"
            raise ValidationError(
                f"{name} must be {self.domain()} (at least one); got {echo(value)}"
            )
        for k, item in enumerate(value):
            if not isinstance(item, dict):
                raise ValidationError(f"{name}[{k}] must be a table; got {echo(item)}")
        return value

    def _real(self, name: str, value: Any) -> float:
        return v.real(
            name,
            value,
            low=self.low,
            high=self.high,
            low_open=self.low_open,
            high_open=self.high_open,
            allow_inf=self.allow_inf,
        )

    def _int(self, name: str, value: Any) -> int:
        if isinstance(value, (bool, np.bool_)):
            raise ValidationError(f"{name} must be an integer; got {echo(value)}")
        if isinstance(value, (float, np.floating)):
            f = float(value)
            if not math.isfinite(f) or not f.is_integer():
                raise ValidationError(f"{name} must be an integer; got {echo(value)}")
            n = int(f)
        elif isinstance(value, (int, np.integer)):
            n = int(value)
        else:
            raise ValidationError(f"{name} must be an integer; got {echo(value)}")
        too_low = self.low is not None and (n < self.low or (self.low_open and n == self.low))
        too_high = self.high is not None and (n > self.high or (self.high_open and n == self.high))
        if too_low or too_high:
            raise ValidationError(f"{name} must be {self.domain()}; got {echo(value)}")
        return n

    def _array(self, name: str, value: Any) -> np.ndarray:
        if isinstance(value, (list, tuple)):
            _nested_numbers(name, value, self.ndim, self.domain())
        return v.array(name, value, ndim=self.ndim)

    def _range(self, name: str, value: Any) -> tuple[float, float]:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise ValidationError(f"{name} must be {self.domain()}; got {echo(value)}")
        point = Param("real", low=self.low, low_open=self.low_open)
        lo = point.check(f"{name} (LO)", value[0])
        hi = point.check(f"{name} (HI)", value[1])
        if hi < lo:
            raise ValidationError(f"{name} must be {self.domain()}; got LO = {lo:g} > HI = {hi:g}")
        return lo, hi


def _nested_numbers(name: str, value: Any, ndim: tuple[int, ...], domain: str) -> None:
    """Structural checks of an array given as (nested) lists, naming the bad entry."""
    if not value:
        raise ValidationError(f"{name} must be {domain}; got {echo(value)}")
    if all(_is_number(x) for x in value):
        if 1 not in ndim:
            raise ValidationError(f"{name} must be {domain}; got {echo(value)}")
        return
    if not all(isinstance(r, (list, tuple)) for r in value) or 2 not in ndim:
        raise ValidationError(f"{name} must be {domain}; got {echo(value)}")
    width = len(value[0])
    for i, row in enumerate(value):
        if not row or len(row) != width:
            raise ValidationError(
                f"{name} must be rectangular: row {i} has {len(row)} entries, row 0 has {width}"
            )
        for j, x in enumerate(row):
            if not _is_number(x):
                raise ValidationError(f"{name}[{i}][{j}] must be a number; got {echo(x)}")


def _pairs(name: str, value: Any) -> tuple[tuple[int, int], ...]:
    if not isinstance(value, (list, tuple, set, frozenset)) or not value:
        raise ValidationError(
            f"{name} must be a non-empty list of integer pairs, "
            f"e.g. [[0, 1], [1, 2]]; got {echo(value)}"
        )
    out = []
    for k, pair in enumerate(value):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValidationError(f"{name}[{k}] must be a pair [i, j]; got {echo(pair)}")
        i = DATASET_INDEX.check(f"{name}[{k}][0]", pair[0])
        j = DATASET_INDEX.check(f"{name}[{k}][1]", pair[1])
        out.append((i, j))
    return tuple(out)


#: A dataset label of a finite data space {0, 1, ...} (the entries of neighbour pairs).
DATASET_INDEX = Param("int", low=0, doc="a dataset of a finite space {0, 1, ...}")
