"""The a-priori bounds in a margins certificate: ``claim.apriori`` (``docs/margins_apriori.md``).

``claim.apriori`` lists every cell with a bound the Receiver knows before the release, as
``{"key": [labels...], "lower": a, "upper": b or null}`` sorted by key (labels as the published
CSV writes them). The bounds are listed, not referred to by a digest of a file beside the
certificate: the verifier needs every one of them to rebuild the posterior and recompute κ, and
they are public by declaration. They are claim *inputs* (chosen before looking at the data, like
the known cells): verify checks them against the publication (each names a published cell,
each published count lies in its box) and recomputes κ with them; the digest binds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from persuasive.errors import ValidationError
from persuasive.margins.known import MAX_BOUND

__all__ = ["APRIORI_NOTE", "apriori_claim", "read_apriori"]

#: The note of a claim with a-priori bounds.
APRIORI_NOTE = (
    "{n} cells have bounds stated to be known to the Receiver before the release (listed in the "
    "claim, the a-priori bounds): the posterior, κ and the choice of suppressed cells condition "
    "on them. The guarantee covers a Receiver who knows them; one who did not learns them from "
    "this certificate, and the surprise of a bound itself is not in κ."
)

Bound = tuple[tuple[str, ...], int, "int | None"]


def read_apriori(claim: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[Bound, ...]:
    """``claim.apriori`` (optional) as ``(labels, lower, upper or None)``, checked: a list of
    objects with ``key`` (the cell's key labels, strings), ``lower`` (an integer from 0 to
    :data:`~persuasive.margins.known.MAX_BOUND`) and ``upper`` (an integer from ``lower`` to
    it, or null), sorted by key, each cell once."""
    if "apriori" not in claim:
        return ()
    raw = claim["apriori"]
    if not isinstance(raw, list) or not raw:
        raise ValidationError(
            "claim.apriori: must be a non-empty list of cells with their bounds (leave it out if "
            "none)"
        )
    out: list[Bound] = []
    for j, item in enumerate(raw):
        at = f"claim.apriori[{j}]"
        if not isinstance(item, dict):
            raise ValidationError(
                f"{at}: must be {{'key': [{len(keys)} key labels], 'lower': int, 'upper': int "
                f"or null}}; got {item!r:.60}"
            )
        for name in ("key", "lower", "upper"):
            if name not in item:
                raise ValidationError(f"{at}.{name}: missing")
        extra = sorted(set(item) - {"key", "lower", "upper"})
        if extra:
            raise ValidationError(f"{at}.{extra[0]}: unexpected (allowed: key, lower, upper)")
        key, lo, up = item["key"], item["lower"], item["upper"]
        if not (
            isinstance(key, list) and len(key) == len(keys) and all(isinstance(s, str) for s in key)
        ):
            raise ValidationError(
                f"{at}.key: must be the list of the cell's {len(keys)} key labels (strings); "
                f"got {key!r:.60}"
            )
        if not _count(lo):
            raise ValidationError(
                f"{at}.lower: must be an integer from 0 to {MAX_BOUND} (2**53); got {lo!r:.40}"
            )
        if not (up is None or (_count(up) and up >= lo)):
            raise ValidationError(
                f"{at}.upper: must be null (no bound) or an integer from lower ({lo}) to "
                f"{MAX_BOUND} (2**53); got {up!r:.40}"
            )
        out.append((tuple(key), int(lo), None if up is None else int(up)))
    labels = [b[0] for b in out]
    if labels != sorted(set(labels)):
        raise ValidationError("claim.apriori: must be sorted by key, each cell once")
    return tuple(out)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_BOUND


def apriori_claim(bounds: tuple[Bound, ...]) -> dict[str, Any]:
    """The ``claim.apriori`` entry of these bounds (nothing when there are none)."""
    if not bounds:
        return {}
    return {"apriori": [{"key": list(k), "lower": lo, "upper": up} for k, lo, up in bounds]}
