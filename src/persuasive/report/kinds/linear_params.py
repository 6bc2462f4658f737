r"""The parameters of a linear release's claim (:class:`LinearParams`) and how the records each
statistic covers are written in the certificate (``design.statistics[j].members``: a bitmap,
one bit per record in row order, little-endian, zlib-compressed, base64).

The bitmaps are inputs of the claim: :func:`decode_members` reads one (one whole zlib stream of
n bits, nothing after it) and the claim states it back as read, so the zlib level is not part
of the claim. Writers compress at :data:`ZLIB_LEVEL`; certificates written at level 9 verify
unchanged. What the members determine (A's column patterns, who is exposed, the text) is
computed once per parameters object.
"""

from __future__ import annotations

import base64
import math
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from persuasive.errors import ValidationError

if TYPE_CHECKING:
    from persuasive.linear.exposure import LinearExposure
    from persuasive.linear.structured import ColumnPatterns

__all__ = [
    "ENCODING",
    "ZLIB_LEVEL",
    "LinearParams",
    "decode_members",
    "encode_members",
    "receivers_of",
]


#: How a statistic's covered records are written in ``design.statistics[j].members``.
ENCODING = "base64(zlib(packbits(bitorder=little)))"
#: The zlib level a writer compresses at: fast (level 9 took 15x as long for a file 5 % smaller
#: at n = 10^6, benchmarks/README.md); any level decodes the same, and a certificate states its
#: bitmaps back as written, so certificates written at level 9 before still verify.
ZLIB_LEVEL = 1


def encode_members(mask: NDArray[np.bool_]) -> str:
    """The records a statistic covers (a boolean mask in row order) as compact text
    (deterministic: the same mask gives the same text)."""
    bits = np.packbits(np.asarray(mask, dtype=bool), bitorder="little")
    return base64.b64encode(zlib.compress(bits.tobytes(), ZLIB_LEVEL)).decode("ascii")


def decode_members(text: str, n: int, *, where: str = "members") -> NDArray[np.bool_]:
    """The inverse of :func:`encode_members`; a ValidationError naming ``where`` if it is bad
    (not base64, not one whole zlib stream with nothing after it, or not n bits)."""
    try:
        unzip = zlib.decompressobj()
        raw = unzip.decompress(base64.b64decode(text.encode("ascii"), validate=True))
        if not unzip.eof or unzip.unused_data:
            raise ValueError("the zlib stream is cut short or followed by other bytes")
    except (ValueError, zlib.error) as exc:
        raise ValidationError(f"{where}: not a {ENCODING} bitmap ({exc})") from None
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")
    if bits.size != 8 * math.ceil(n / 8) or bits[n:].any():
        raise ValidationError(f"{where}: the bitmap does not hold n = {n} records")
    return bits[:n].astype(bool)


def receivers_of(
    r1: float, r2: float, max_stat_sd: float | None, max_person_error: float | None
) -> Any:
    """The Receiver class of a linear release: :class:`persuasive.linear.LinearGaussianClass`
    (``max_person_error`` None), else
    :class:`persuasive.linear.bounded_error.BoundedErrorLinearClass` with r0 = it."""
    from persuasive.linear import LinearGaussianClass
    from persuasive.linear.bounded_error import BoundedErrorLinearClass

    if max_person_error is None:
        return LinearGaussianClass(r1, r2, max_stat_sd=max_stat_sd)
    return BoundedErrorLinearClass(
        r1, r2, max_stat_sd=max_stat_sd, max_person_error=max_person_error
    )


@dataclass(frozen=True)
class LinearParams:
    """The parameters of a linear release's claim (``max_person_error`` None: the class
    :class:`~persuasive.linear.LinearGaussianClass`; r0 > 0:
    :class:`~persuasive.linear.bounded_error.BoundedErrorLinearClass`).

    ``encoded`` is the members' text as a certificate states it (read back as is, so the
    zlib level it was written at does not matter); None: :func:`encode_members` of
    ``members``. What is derived from the members (the text, A's column patterns, who is
    exposed) is computed once per parameters object, however often the claim is built.
    """

    value: str
    statistics: tuple[tuple[str, str, str], ...]  # (name, kind, where), the released ones
    withheld: tuple[str, ...]
    members: tuple[NDArray[np.bool_], ...]  # covered records of each released statistic
    n: int
    r1: float
    r2: float
    noise_sd: float | None
    max_stat_sd: float | None
    delta: float
    target_kappa: float | None = None
    max_person_error: float | None = None  # r0: the bounded-error class; None: the linear one
    encoded: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    def coefficients(self) -> NDArray[np.float64]:
        """1/n_j (a mean over n_j records) or 1 (a sum), per statistic."""
        return np.array(
            [
                1.0 / int(np.count_nonzero(m)) if kind == "mean" else 1.0
                for (_, kind, _), m in zip(self.statistics, self.members, strict=True)
            ]
        )

    def matrix(self) -> NDArray[np.float64]:
        """A (k × n): 1/n_j (mean) or 1 (sum) on the covered records."""
        a = np.zeros((len(self.statistics), self.n))
        for j, (c, mask) in enumerate(zip(self.coefficients(), self.members, strict=True)):
            a[j, mask] = c
        return a

    def knowing(
        self, patterns: ColumnPatterns | None, exposures: tuple[LinearExposure, ...]
    ) -> LinearParams:
        """These parameters with A's column patterns and who is exposed already known (the
        release computed them from the same selections; not recomputed, not checked here:
        ``verify`` recomputes both from the bitmaps)."""
        self.__dict__["patterns"] = patterns
        self.__dict__["exposures"] = exposures
        return self

    @cached_property
    def texts(self) -> tuple[str, ...]:
        """``design.statistics[j].members`` of the claim."""
        return (
            self.encoded if self.encoded is not None else tuple(map(encode_members, self.members))
        )

    @cached_property
    def patterns(self) -> ColumnPatterns | None:
        """A's column patterns, from the members (O(nk), no dense A); None for more than 62
        statistics (then the dense A is used)."""
        from persuasive.linear.structured import patterns_of_masks

        return patterns_of_masks(self.members, self.coefficients())

    @cached_property
    def exposures(self) -> tuple[LinearExposure, ...]:
        """Who the statistics expose, with the combination that does it."""
        from persuasive.linear.exposure import exposures

        pat = self.patterns
        a = self.matrix() if pat is None else None
        return exposures(a, [s[0] for s in self.statistics], patterns=pat)

    def receivers(self) -> Any:
        """The Receiver class of the claim (:func:`receivers_of`)."""
        return receivers_of(self.r1, self.r2, self.max_stat_sd, self.max_person_error)

    def mechanism(self) -> Any:
        """``LinearGaussian`` of A (by its patterns when known) and noise sd² on each."""
        from persuasive.mechanisms.linear import LinearGaussian

        r = None if self.noise_sd is None else self.noise_sd**2
        pat = self.patterns
        return (
            LinearGaussian(self.matrix(), r)
            if pat is None
            else LinearGaussian.from_patterns(pat, r)
        )
