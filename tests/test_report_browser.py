"""The HTML report loads in a real browser with every image present (headless Chromium).

Debian's ``chromium`` package provides the browser (``.ci/run`` installs it). On CI (``CI`` set)
a missing binary is a failure; locally the test skips and says how to install it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from persuasive.classes.receivers import PoissonReceiver
from persuasive.files.output import OutputFolder
from persuasive.release.pipeline import publish
from persuasive.release.tables import release_table

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=5000",
)


def _chromium() -> str:
    found = next(
        (p for p in ("/usr/bin/chromium", shutil.which("chromium")) if p and os.path.exists(p)),
        None,
    )
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (CI is set): apt-get install -y chromium")
        pytest.skip("chromium not installed; run `apt-get install -y chromium` to run this test")
    return found


def test_report_loads_with_every_image(tmp_path: Path) -> None:
    browser = _chromium()
    frame = pl.DataFrame({"area": [f"a{i:02d}" for i in range(40)], "n": list(range(40))})
    release = release_table(frame, keys="area", count="n", h=5, receiver=PoissonReceiver(1, 8))
    out = publish(release, OutputFolder(tmp_path / "out"), report=True, target_kappa=1.5)
    page = out.files["report"]
    profile = tmp_path / "profile"
    result = subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", result.stdout)
    assert body is not None, result.stdout[:500]
    loaded = re.search(r'data-images-loaded="(\d+)"', body.group(1))
    total = re.search(r'data-images-total="(\d+)"', body.group(1))
    assert loaded is not None and total is not None, f"load script did not run: {body.group(0)}"
    assert int(total.group(1)) >= 3
    assert loaded.group(1) == total.group(1)
