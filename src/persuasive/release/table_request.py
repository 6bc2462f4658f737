"""A table release as the engines receive it: the source and the checked parameters.

:func:`persuasive.release.tables.release_table` checks every parameter and computes the
data-independent certificate once, then hands a :class:`TableRequest` to the engine that reads
and suppresses the cells:

* ``"polars"`` (default) — in memory (:mod:`persuasive.release.tables`);
* ``"streaming"`` — out of core on one machine: the table is scanned and the published table
  sunk in a stream, in bounded memory (:mod:`persuasive.release.streaming`);
* ``"spark"`` — on Apache Spark, local or on a cluster (:mod:`persuasive.spark`).

Every engine gives the same published rows, the same errors and the same certificate
(``docs/scale.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from persuasive.errors import ValidationError
from persuasive.report.kinds.table import TableParams
from persuasive.results import Certificate

__all__ = ["ENGINES", "TableRequest", "check_engine"]

#: The engines of the table release.
ENGINES = ("polars", "streaming", "spark")


def check_engine(engine: Any, source: Any, *, option: str = "engine") -> str:
    """The engine name: ``engine``, or for ``None`` ``"spark"`` when ``source`` is a Spark
    DataFrame and ``"polars"`` otherwise."""
    if engine is None:
        return "spark" if is_spark_frame(source) else "polars"
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ValidationError(f"{option} must be one of {', '.join(ENGINES)}; got {engine!r:.60}")
    if is_spark_frame(source) and engine != "spark":
        raise ValidationError(
            f"{option}={engine!r} cannot read a Spark DataFrame; use engine='spark' (or leave "
            "it out)"
        )
    return engine


def is_spark_frame(obj: Any) -> bool:
    """Whether ``obj`` is a ``pyspark.sql.DataFrame`` (classic or Spark Connect); pyspark is
    not imported for this."""
    return any(
        c.__name__ == "DataFrame" and c.__module__.startswith("pyspark.sql")
        for c in type(obj).__mro__
    )


@dataclass(frozen=True)
class TableRequest:
    """A checked table release, for an engine.

    Attributes
    ----------
    source : Any
        A path, a :class:`persuasive.files.DataFile`, an in-memory frame, or (Spark) a
        ``pyspark.sql.DataFrame``.
    keys, count : tuple of str, str
        The key columns and the count column.
    h, r : int
        The threshold and the score threshold (``r_explicit``: r was given).
    receiver : Receiver
        The Receiver model.
    target_kappa : float or None
    absent : str
        ``"zero"`` or ``"structural"``.
    microdata : bool
        The source holds one record per unit (tabulated first).
    params : TableParams
        The claim.
    certificate : Certificate
        The certificate of the claim (data-independent, Prop 8).
    """

    source: Any
    keys: tuple[str, ...]
    count: str
    h: int
    r: int
    r_explicit: bool
    receiver: Any
    target_kappa: float | None
    absent: str
    microdata: bool
    params: TableParams
    certificate: Certificate
