"""Shared fixtures and hypothesis settings."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=25, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    """Print how many random instances the soundness sweep checked (audit <= certificate)."""
    import sys

    module = sys.modules.get("test_soundness_sweep")
    line = module.soundness_summary_line() if module is not None else None
    if line:
        terminalreporter.write_line(line)
