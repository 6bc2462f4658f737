"""The repository stands alone, and what users read says what the code does."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from persuasive.cli import app
from persuasive.errors import ValidationError
from persuasive.margins import MarginTable

ROOT = Path(__file__).resolve().parents[1]


def _texts() -> list[Path]:
    files = [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("examples/*.py")]
    files += [p for p in (ROOT / "src").rglob("*") if p.suffix in (".py", ".toml", ".md")]
    return [p for p in files if p.is_file()]


def test_no_reference_to_files_outside_the_repository() -> None:
    # the working notes of the developers are not shipped: cite the paper or docs/math.md
    bad = []
    for path in _texts():
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"MATH\.md|DESIGN\.md|\.\./shared/", text):
            line = text.count("\n", 0, m.start()) + 1
            bad.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0)}")
    assert not bad, bad


def test_every_docs_math_section_cited_exists() -> None:
    sections = set(re.findall(r"^## (\d+)\.", (ROOT / "docs/math.md").read_text(), re.M))
    cited = set()
    for path in _texts():
        cited |= set(re.findall(r"docs/math\.md,? §(\d+)", path.read_text(encoding="utf-8")))
    assert cited and cited <= sections, sorted(cited - sections)


def test_threshold_help_says_what_is_enforced() -> None:
    out = CliRunner().invoke(app, ["release", "table", "--help"]).output
    assert "[2, 10^6]" in " ".join(out.split())  # the help of --h states h >= 2, as enforced
    bad = CliRunner().invoke(app, ["release", "table", "x.csv", "--keys", "k", "--count", "c",
                                   "--h", "1", "--alpha", "0.5", "--out", "o"])  # fmt: skip
    assert bad.exit_code == 2 and "[2, 1000000]" in bad.output


def test_margins_message_shows_plain_numbers() -> None:
    # a margins message echoed numpy scalars ("np.int64(0)"): it must show plain numbers
    with pytest.raises(ValidationError) as info:
        MarginTable(
            np.array([[1, 2], [3, 4]]),
            h=2,
            margins="rows",
            totals={(0,): np.array([4.0, 7.0])},
        )
    message = str(info.value)
    assert "np." not in message and "index (0,)" in message and "[4, 7]" in message
