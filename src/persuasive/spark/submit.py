"""The entry point of ``spark-submit``: the ``persuasive`` command line inside a Spark driver.

``spark-submit`` runs a Python file, not a console script; this file is that Python file, so
that a table release on a cluster takes exactly the arguments of the command line
(``docs/scale.md``)::

    spark-submit --master spark://host:7077 \\
        "$(python -c 'import persuasive.spark.submit as s; print(s.__file__)')" \\
        release table counts.parquet --keys area --count n --h 5 --poisson-mean 0.5:3 \\
        --out /shared/rel

The arguments are those of ``persuasive`` (``release table DATA ...``, or any other command);
arguments that start with a release's DATA (not a command name) are taken as
``release table DATA ...``. The session is the one ``spark-submit`` configured (its
``--master``, ``--conf``, ``--executor-memory`` ...), started before the command runs, so that
the Spark engine uses it; it reads and writes timestamps in UTC unless
``spark.sql.session.timeZone`` is given. ``release table`` without ``--engine`` gets
``--engine spark``, and without ``--spark-master`` the master of that session. The exit status
is the command's (0 holds, 1 does not hold, 2 bad input, 3 internal error), which
``spark-submit`` passes on (it merges the driver's standard error into its standard output).

The driver and the executors must run the same Python with ``persuasive`` installed: give
``--conf spark.pyspark.python=/path/to/python`` (or set ``PYSPARK_PYTHON``) when the cluster's
default Python is another one.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["cli_arguments", "main"]

TIME_ZONE = "spark.sql.session.timeZone"


def _commands() -> set[str]:
    """The names of the top-level commands and command groups of ``persuasive``."""
    from typer.main import get_command

    from persuasive.cli import app

    return set(getattr(get_command(app), "commands", {}))


def _given(args: Sequence[str], option: str) -> bool:
    return any(a == option or a.startswith(option + "=") for a in args)


def cli_arguments(args: Sequence[str], master: str | None, commands: set[str]) -> list[str]:
    """The command line to run for the arguments given to ``spark-submit``.

    Parameters
    ----------
    args : sequence of str
        The arguments after this file on the ``spark-submit`` command line.
    master : str or None
        The master URL of the submitted session (``None``: leave ``--spark-master`` out).
    commands : set of str
        The top-level command names of ``persuasive``.

    Returns
    -------
    list of str
        ``args`` with ``release table`` in front when they start with DATA, and for
        ``release table``: ``--engine spark`` when no ``--engine`` is given, ``--spark-master
        MASTER`` when the engine is Spark and no ``--spark-master`` is given.

    Examples
    --------
    >>> cli_arguments(["t.csv", "--h", "5"], "local[2]", {"release", "verify"})
    ['release', 'table', 't.csv', '--h', '5', '--engine', 'spark', '--spark-master', 'local[2]']
    >>> cli_arguments(["verify", "rel/certificate.json"], "local[2]", {"release", "verify"})
    ['verify', 'rel/certificate.json']
    """
    out = list(args)
    if out and not out[0].startswith("-") and out[0] not in commands:
        out = ["release", "table", *out]
    if out[:2] != ["release", "table"] or any(a in ("--help", "-h") for a in out):
        return out
    if not _given(out, "--engine"):
        out += ["--engine", "spark"]
    engine = _engine(out)
    if master is not None and engine == "spark" and not _given(out, "--spark-master"):
        out += ["--spark-master", master]
    return out


def _engine(args: Sequence[str]) -> str | None:
    for i, a in enumerate(args):
        if a == "--engine" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--engine="):
            return a.split("=", 1)[1]
    return None


def _session() -> Any:
    """The session ``spark-submit`` configured (``None`` without pyspark), reading and writing
    timestamps in UTC as a session the Spark engine starts does, unless
    ``spark.sql.session.timeZone`` was given."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    spark = SparkSession.builder.getOrCreate()
    if not spark.sparkContext.getConf().contains(TIME_ZONE):
        spark.conf.set(TIME_ZONE, "UTC")
    return spark


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``persuasive`` with ``argv`` (default: ``sys.argv[1:]``) in a Spark driver; return
    its exit status (the session is stopped after the command)."""
    from persuasive.cli import app

    args = list(sys.argv[1:] if argv is None else argv)
    session = _session()
    try:
        master = None if session is None else str(session.sparkContext.master)
        try:
            app(args=cli_arguments(args, master, _commands()), prog_name="persuasive")
        except SystemExit as exc:
            code = exc.code
            return code if isinstance(code, int) else (0 if code is None else 2)
        return 0
    finally:
        if session is not None:
            session.stop()


if __name__ == "__main__":
    sys.exit(main())
