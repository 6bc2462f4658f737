"""The human report: files, the plain sentence, embedded images, atomicity, Markdown links.

A report is written by the release pipeline (``publish(..., report=True)``) from the release
and its certificate (``release.report(document, target_kappa)``, rendered by
:func:`persuasive.report.write_report`); the pipeline's output folder makes it atomic.

Oracles: the sentence's numbers are computed here (α = 0.2 → "20%", κ = −log 0.2 → "1.609");
images are checked by their PNG signature after base64 decoding; a failing plot or write is
simulated by monkeypatching.
"""

from __future__ import annotations

import base64
import html as html_lib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
import pytest

from persuasive.classes.receivers import PoissonReceiver, SmallCellReceiver
from persuasive.errors import ValidationError
from persuasive.files.output import OutputFolder
from persuasive.release.pipeline import publish
from persuasive.release.tables import release_table
from persuasive.report import plots, write_report
from persuasive.report.verify import verify_certificate

PNG = b"\x89PNG\r\n\x1a\n"
SENTENCE = (
    f"Against a Receiver whose prior for each cell puts at least {100 * 0.2:.3g} % on counts "
    f"below 5, the published table guarantees κ = {-math.log(0.2):.4g} nats for every cell "
    f"whose true count is below 5: whatever such a Receiver believed beforehand, the release "
    f"multiplies the probability they give to the true count of such a cell by at most "
    f"{1 / 0.2:.1f} (e to the power κ)"
)


def _table(receiver: Any = None, h: int = 5) -> Any:
    frame = pl.DataFrame({"area": [f"a{i:02d}" for i in range(30)], "n": list(range(30))})
    return release_table(
        frame, keys="area", count="n", h=h, receiver=receiver or SmallCellReceiver(0.2)
    )


def _written(release: Any, folder: Path, target_kappa: float | None = None) -> dict[str, Path]:
    """Publish ``release`` into ``folder`` (no report) and write its report into
    ``folder/../rep`` with :func:`write_report`; return the report's files."""
    doc = publish(release, OutputFolder(folder)).document
    return write_report(folder.parent / "rep", release.report(doc, target_kappa))


def test_table_report_files_sentence_and_images(tmp_path: Path) -> None:
    out = _written(_table(), tmp_path / "out", target_kappa=1.5)
    assert set(out) == {"html", "markdown", "calibration", "loss", "worst_cell"}
    assert all(p.is_file() and p.parent == tmp_path / "rep" for p in out.values())
    html = out["html"].read_text(encoding="utf-8")
    md = out["markdown"].read_text(encoding="utf-8")
    assert SENTENCE in html and SENTENCE in md
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 3 and html.count("<img") == 3
    assert all(base64.b64decode(data).startswith(PNG) for data in images)
    assert "http://" not in html and "https://" not in html and "<link" not in html
    for word in ("Bon et al. 2026, Proposition 8", "SHA-256 of the rows of released.csv", "digest"):
        assert word in html
    for word in ("imagesLoaded", "imagesTotal"):
        assert word in html
    assert "suppressed" in md and "| a00 | suppressed |" in md  # missing, not a number
    # a representative preview: shown and suppressed cells, in file order, and it says so
    assert "| a05 | 5 |" in md and "the first 15 shown and the first 5 suppressed" in md
    for raw in ("0.199336", "G^r", "MCMC", "publication bound", "cell_suppression", "model="):
        assert raw not in html


def test_report_states_the_certificate_it_was_written_with(tmp_path: Path) -> None:
    out = tmp_path / "out"
    files = publish(_table(), OutputFolder(out), report=True).files
    assert files["report"] == out / "report" / "report.html"
    doc = verify_certificate(out / "certificate.json", published=out).recomputed
    assert doc is not None
    html = files["report"].read_text(encoding="utf-8")
    assert doc["digest"] in html and doc["publication"]["files"][0]["table"]["sha256"] in html
    assert html_lib.escape(doc["guarantee"]["statement"]) in html
    assert sorted(p.name for p in (out / "report").iterdir()) == [
        "calibration.png",
        "loss.png",
        "report.html",
        "report.md",
        "worst_cell.png",
    ]


def test_markdown_references_existing_pngs(tmp_path: Path) -> None:
    out = _written(_table(PoissonReceiver(1.0, 8.0)), tmp_path / "out")
    md = out["markdown"].read_text(encoding="utf-8")
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert sorted(links) == ["calibration.png", "loss.png", "worst_cell.png"]
    for link in links:
        assert (out["markdown"].parent / link).read_bytes().startswith(PNG)


def test_sentence_numbers_against_closed_form(tmp_path: Path) -> None:
    doc = publish(_table(SmallCellReceiver(0.2)), OutputFolder(tmp_path / "a")).document
    assert SENTENCE in doc["guarantee"]["statement"]
    doc = publish(_table(PoissonReceiver(0.0, 4.0), h=3), OutputFolder(tmp_path / "b")).document
    alpha = math.exp(-4.0) * (1 + 4.0 + 8.0)  # P(Poi(4) < 3)
    sentence = doc["guarantee"]["statement"]
    assert "Poisson with mean between 0 and 4" in sentence
    assert f"at least {100 * alpha:.3g} % on counts below 3" in sentence
    assert f"κ = {-math.log(alpha):.4g} nats" in sentence
    assert f"by at most {1 / alpha:.1f} (e to the power κ)" in sentence


@pytest.mark.parametrize("existing", [False, True])
@pytest.mark.parametrize(
    ("module", "name", "error"),
    [
        ("persuasive.report.plots", "loss_histogram", RuntimeError("plot failed")),
        ("persuasive.report.html", "render_html", OSError("disk full")),
    ],
)
def test_failing_report_leaves_nothing_behind(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    existing: bool,
    module: str,
    name: str,
    error: Exception,
) -> None:
    import importlib

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(importlib.import_module(module), name, boom)
    dest = tmp_path / "out"
    if existing:
        dest.mkdir()
    with pytest.raises(type(error), match=str(error)):
        publish(_table(), OutputFolder(dest), report=True)
    if existing:
        assert list(dest.iterdir()) == []
        assert list(tmp_path.iterdir()) == [dest]
    else:
        assert list(tmp_path.iterdir()) == []


def test_rewriting_a_release_with_its_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    publish(_table(), OutputFolder(out), report=True)
    first = sorted(p.relative_to(out) for p in out.rglob("*"))
    publish(_table(h=6), OutputFolder(out, force=True), report=True)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == first
    assert "below 6" in (out / "report" / "report.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_bad_destinations_and_kinds(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValidationError, match="is a file"):
        publish(_table(), OutputFolder(tmp_path / "file"), report=True)

    @dataclass
    class Odd:
        kind: ClassVar[str] = "histogram"
        params: Any = None

    with pytest.raises(ValidationError, match="kind must be one of"):
        publish(Odd(), OutputFolder(tmp_path / "rep"), report=True)  # type: ignore[arg-type]
    assert not (tmp_path / "rep").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_plots_are_deterministic_png() -> None:
    a = plots.calibration_plot([1, 2, 3], [2.0, 1.0, math.inf], target_kappa=1.5, current=2)
    b = plots.calibration_plot([1, 2, 3], [2.0, 1.0, math.inf], target_kappa=1.5, current=2)
    assert a == b and a.startswith(PNG)
    assert plots.loss_histogram([], kappa=1.0).startswith(PNG)
    assert plots.cell_prior_posterior_plot([0.1, 0.1, 0.8], 2).startswith(PNG)
    assert plots.gaussian_prior_posterior_plot(1.0 + math.log(4.0), 1.0, 4.0).startswith(PNG)


def test_real_mean_releases_report_and_certify(tmp_path: Path) -> None:
    from persuasive.release import means

    rng = np.random.default_rng(1)
    exact = means.release_mean(rng.normal(size=40), r1=1.0, r2=4.0)
    outcome = publish(exact, OutputFolder(tmp_path / "exact"), report=True)
    html = outcome.files["report"].read_text(encoding="utf-8")
    assert exact.statement() == outcome.statement
    assert exact.statement() in html_lib.unescape(html)
    assert html.count("data:image/png;base64,") == 2  # calibration, worst individual
    assert outcome.document["guarantee"]["kappa"] == pytest.approx(1.0 + math.log(4.0), abs=1e-12)
    assert verify_certificate(outcome.files["certificate"], published=tmp_path / "exact").ok
    frame = pl.DataFrame({"g": ["a"] * 20 + ["b"] * 25, "y": rng.normal(size=45)})
    groups = means.release_group_means(frame, value="y", group="g", r1=1.0, r2=4.0)
    outcome = publish(groups, OutputFolder(tmp_path / "groups"), report=True)
    md = (outcome.files["report"].parent / "report.md").read_text(encoding="utf-8")
    assert "The first 2 of 2 published rows" in md
    assert "one mean of “y” per “g” group" in md  # the report names the columns
    assert verify_certificate(outcome.files["certificate"], published=tmp_path / "groups").ok
