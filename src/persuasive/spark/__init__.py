"""The table release on Apache Spark (``release_table(..., engine="spark")``, ``docs/spark.md``).

The cells are read, checked and suppressed by Spark SQL (no Python function per row), the
published table is written by Spark as a dataset folder of part files
(``released.csv/part-00000-….csv``, …) and the digest of its rows is computed in parallel on
Arrow batches (:mod:`persuasive.spark.digest`), so the certificate is byte-identical to the
polars engine's for the same rows (Prop 8, Bon et al. 2026; ``docs/scale.md``).

pyspark is imported only when a Spark release runs (:func:`persuasive.spark.session.pyspark`):
``import persuasive.spark`` works without it.
"""

from __future__ import annotations

__all__: list[str] = []
