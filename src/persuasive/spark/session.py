"""The Spark session of a release: given, started from a master URL, or the active one.

A session given is used as it is and never stopped; a session this module starts
(:func:`session_of`) reads and writes timestamps in UTC (``spark.sql.session.timeZone``) and is
left running for the next release (Spark starts once per process).

A session started in local mode keeps its scratch files (``spark.local.dir``: shuffle and
spill files, which hold the custodian's keys and counts) in a private folder (mode 0700) that is
removed when the process exits, after the session is stopped — also after SIGINT, SIGTERM or
SIGHUP, which the command line turns into a normal exit. Spark's default, ``/tmp``, keeps
``blockmgr-*`` folders of an interrupted or killed driver. A SIGKILL leaves the folder
(nothing can run then); it is under the system's temporary folder.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from typing import Any

from persuasive.errors import ValidationError

__all__ = ["INSTALL", "pyspark", "session_of"]

#: What to install for the Spark engine.
INSTALL = "pip install 'persuasive-privacy[spark]'"


def pyspark() -> Any:
    """The ``pyspark.sql`` module; a one-line ValidationError when pyspark is not installed."""
    try:
        import pyspark.sql
    except ImportError:
        raise ValidationError(
            f"engine='spark' needs pyspark, which is not installed: {INSTALL} (or use "
            "engine='polars')"
        ) from None
    return pyspark.sql


def _is_session(obj: Any) -> bool:
    """A ``pyspark.sql.SparkSession`` (classic or Spark Connect)."""
    return any(
        c.__name__ == "SparkSession" and c.__module__.startswith("pyspark.sql")
        for c in type(obj).__mro__
    )


def session_of(spark: Any) -> Any:
    """The session of a release.

    Parameters
    ----------
    spark : SparkSession, str or None
        A session (used as it is), a master URL such as ``local[2]`` or ``spark://host:7077``
        (the session of that master, started if none is active), or None (the active
        session, else one started on ``local[*]``).

    Returns
    -------
    SparkSession
    """
    sql = pyspark()
    if spark is not None and _is_session(spark):
        return spark
    if spark is not None and (not isinstance(spark, str) or not spark.strip()):
        raise ValidationError(
            "spark must be a SparkSession or a master URL such as 'local[2]' or "
            f"'spark://host:7077'; got {spark!r:.60}"
        )
    active = sql.SparkSession.getActiveSession()
    if active is not None:  # getOrCreate would return it anyway, changing its settings
        return active
    master = spark.strip() if spark else "local[*]"
    builder = sql.SparkSession.builder.master(master)
    builder = builder.appName("persuasive").config("spark.sql.session.timeZone", "UTC")
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    # Local mode only: on a cluster the executors' scratch folders are the cluster's
    # (SPARK_LOCAL_DIRS, YARN's LOCAL_DIRS), on machines this process cannot clean.
    scratch = tempfile.mkdtemp(prefix="persuasive-spark-") if master.startswith("local") else ""
    if scratch:
        builder = builder.config("spark.local.dir", scratch)
    try:
        session = builder.getOrCreate()
    except BaseException:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    atexit.register(_close, session, scratch)
    return session


def _close(session: Any, scratch: str) -> None:
    """Stop a session this module started and remove its scratch folder (at exit)."""
    try:
        session.stop()
    except Exception:  # the JVM may be gone already; the folder is removed all the same
        pass
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)
