r"""``pp.optimise``: one entry to the Sender's choice (eq. 5, Bon et al. 2026).

It looks at what it is given and calls :func:`~persuasive.choose.choose_mean` (a mean: the
class and the target, no data), :func:`~persuasive.choose.choose_table` (a count table and a
Receiver model) or :func:`~persuasive.choose.choose_linear` (linear statistics: data with
``value`` and ``statistics``, or a matrix A).
"""

from __future__ import annotations

import inspect
from typing import Any

from persuasive.choose.frontier import Choice
from persuasive.errors import ValidationError

__all__ = ["optimise"]

_SHAPES = (
    "a mean (optimise(r1=, r2=, target_kappa=)), a count table (optimise(data, keys=, "
    "count=, receiver=, target_kappa=)) or linear statistics (optimise(data, value=, "
    "statistics=, r1=, r2=, target_kappa=), or optimise(A, r1=, r2=, target_kappa=))"
)


def _which(data: Any, spec: dict[str, Any]) -> str:
    import numpy as np

    if "receiver" in spec or "keys" in spec or "count" in spec:
        return "table"
    if "statistics" in spec or "value" in spec:
        return "linear"
    if data is None:
        return "mean" if spec else "none"
    if isinstance(data, np.ndarray) or (
        isinstance(data, (list, tuple)) and data and isinstance(data[0], (list, tuple))
    ):
        return "linear"
    return "none"


def optimise(data: Any = None, /, **spec: Any) -> Choice:
    r"""The certified mechanism of least utility loss for a target κ (the Sender's problem,
    eq. 5 of Bon et al. 2026), searched over the families this library certifies.

    .. math:: M^\star = \arg\min_{M \in \mathcal F} L(M)
              \quad\text{s.t. } M \text{ is } (\mathcal S, \mathcal Q_x, \kappa,
              \delta)\text{-PP (certified)}

    Parameters
    ----------
    data : None, a count table, data with linear statistics, or a matrix A
        None for a mean (its choice needs no data). A table (path or frame) with ``keys``,
        ``count`` and ``receiver``. Data with ``value`` and ``statistics``, or the matrix A
        (k × n) itself, for linear statistics.
    **spec
        The keywords of :func:`~persuasive.choose.choose_mean`,
        :func:`~persuasive.choose.choose_table` or :func:`~persuasive.choose.choose_linear`.

    Returns
    -------
    Choice
        ``best``, every family with its reason, the frontier (``to_frame``, ``plot``,
        ``to_html``, ``write_report``).

    Raises
    ------
    ValidationError
        What was given is none of these, or a keyword the chosen search does not take.

    Examples
    --------
    >>> import persuasive as pp
    >>> pp.optimise(r1=1.0, r2=4.0, target_kappa=3.0).best.family
    'exact'
    >>> c = pp.optimise([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]], r1=1.0, r2=4.0, target_kappa=1.5,
    ...                 max_stat_sd=1.0, delta=0.5)
    >>> c.best.family, c.best.kappa <= 1.5, round(c.best.parameter, 4)
    ('gaussian', True, 0.6224)
    >>> pp.optimise("fair.csv", r1=1.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    persuasive.errors.ValidationError: optimise needs a mean (optimise(r1=, ...
    """
    from persuasive.choose.linear import choose_linear
    from persuasive.choose.mean import choose_mean
    from persuasive.choose.table import choose_table

    kind = _which(data, spec)
    if kind == "none":
        raise ValidationError(
            f"optimise needs {_SHAPES}; got data = {data!r:.40} and keywords {sorted(spec)}"
        )
    fn: Any = {"mean": choose_mean, "table": choose_table, "linear": choose_linear}[kind]
    allowed = [p for p in inspect.signature(fn).parameters if p not in ("data", "frame")]
    unknown = sorted(set(spec) - set(allowed))
    if unknown:
        raise ValidationError(
            f"optimise for {kind} statistics does not take {unknown}; it takes {allowed}"
            if kind == "linear"
            else f"optimise for a {kind} does not take {unknown}; it takes {allowed}"
        )
    missing = [
        p.name
        for p in inspect.signature(fn).parameters.values()
        if p.default is inspect.Parameter.empty
        and p.kind is inspect.Parameter.KEYWORD_ONLY
        and p.name not in spec
    ]
    if missing:
        what = f"{kind} statistics" if kind == "linear" else f"a {kind}"
        raise ValidationError(f"optimise for {what} needs {missing}; got {sorted(spec)}")
    return fn(**spec) if kind == "mean" else fn(data, **spec)
