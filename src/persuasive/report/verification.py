"""The outcome of ``persuasive verify``: :class:`Verification`.

:func:`persuasive.report.verify.verify_certificate` returns it; it separates whether a
certificate is **consistent** (no field disagrees with its recomputation) from whether it
**claims a guarantee** that holds, and only both together make it *verified*.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Verification"]


@dataclass(frozen=True)
class Verification:
    """The outcome of :func:`verify_certificate`.

    Attributes
    ----------
    ok : bool
        Verified: consistent, and the certificate claims a guarantee that holds as stated.
    consistent : bool
        No field disagrees with its recomputation (and the publication, if given, passes).
    claims : bool
        The recomputed ``guarantee.holds``: the certificate claims a guarantee.
    mismatches : tuple of str
        One sentence per disagreeing field, naming it (``guarantee.kappa: stated 100,
        recomputed 1.52``), or per problem of the publication.
    statement : str
        The recomputed guarantee in one sentence (what the certificate may honestly claim).
    kind : str
        The certificate's kind.
    published_checked : bool
        Whether the publication was read and checked.
    recomputed : dict or None
        The recomputed document (None if the claim could not be read).
    """

    ok: bool
    consistent: bool
    claims: bool
    mismatches: tuple[str, ...]
    statement: str = ""
    kind: str = ""
    published_checked: bool = False
    recomputed: dict[str, Any] | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        from persuasive.release.display import verification_repr

        return verification_repr(self)

    def _repr_html_(self) -> str:
        """Verified or not, the recomputed guarantee and κ, the first mismatches."""
        from persuasive.release.display import verification_html

        return verification_html(self)

    def explain(self) -> str:
        """What the certificate claims and whether it holds, in a few lines."""
        if not self.consistent:
            return "NOT verified: " + "; ".join(self.mismatches)
        checked = (
            "the publication matches"
            if self.published_checked
            else "the publication was not checked (pass --published DIR)"
        )
        if not self.claims:
            return (
                f"NOT verified: the certificate is consistent but claims no guarantee: "
                f"{self.statement}"
            )
        return f"verified ({self.kind}; {checked}): {self.statement}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "consistent": self.consistent,
            "claims_guarantee": self.claims,
            "kind": self.kind,
            "published_checked": self.published_checked,
            "statement": self.statement,
            "mismatches": list(self.mismatches),
        }
