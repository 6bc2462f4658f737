"""Shared fixtures and hypothesis settings."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=25, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# The command's output is laid out for the terminal it runs in (``COLUMNS`` sets the width of a
# piped console: src/persuasive/cli/_output.py). pytest-xdist's workers inherit COLUMNS=80, so
# tests that read a wrapped path or sentence would depend on the machine: they run unwrapped.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)

#: The soundness sweep's instance counts reported by the xdist workers (merged in the controller).
_WORKER_COUNTS: dict[str, int] = {}


def _sweep_counts() -> dict[str, int]:
    """The counts of tests/test_soundness_sweep.py run in this process (empty if it did not)."""
    import sys

    module = sys.modules.get("test_soundness_sweep")
    return dict(module.COUNTS) if module is not None else {}


def pytest_sessionfinish(session) -> None:  # type: ignore[no-untyped-def]
    """In an xdist worker, hand the sweep's counts to the controller."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["soundness_counts"] = _sweep_counts()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # type: ignore[no-untyped-def]
    """In the xdist controller, add up the counts each worker reported."""
    for name, count in getattr(node, "workeroutput", {}).get("soundness_counts", {}).items():
        _WORKER_COUNTS[name] = _WORKER_COUNTS.get(name, 0) + count


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    """Print how many random instances the soundness sweep checked (audit <= certificate),
    in this process or, under pytest-xdist, in all the workers together."""
    counts = _sweep_counts()
    for name, count in _WORKER_COUNTS.items():
        counts[name] = counts.get(name, 0) + count
    if counts:
        parts = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        terminalreporter.write_line(
            f"soundness sweep: {sum(counts.values())} instances audit <= certificate ({parts})"
        )


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local[2] Spark session for the test files that use it (under pytest-xdist: one per
    worker), stopped at the end of the run: a JVM starts once, not once per file."""
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("persuasive-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()
