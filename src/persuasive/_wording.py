"""Small pieces of wording shared by the messages of several modules."""

from __future__ import annotations

__all__ = ["prior_sds"]


def prior_sds(r0: float, text: str | None = None) -> str:
    """``r0`` in prior standard deviations, with the noun agreeing: ``1 prior sd``,
    ``0.5 prior sds``, ``2 prior sds`` (``text``: the number already formatted).

    Examples
    --------
    >>> prior_sds(1.0), prior_sds(0.5), prior_sds(2.0), prior_sds(1.0, "1.00")
    ('1 prior sd', '0.5 prior sds', '2 prior sds', '1.00 prior sd')
    """
    return f"{f'{r0:g}' if text is None else text} prior sd{'' if r0 == 1 else 's'}"
