"""The human report: files, the plain sentence, embedded images, atomicity, Markdown links.

Oracles: the sentence's numbers are computed here (α = 0.2 → "20%", κ = −log 0.2 → "1.61");
images are checked by their PNG signature after base64 decoding; a failing plot is simulated by
monkeypatching.
"""

from __future__ import annotations

import base64
import html as html_lib
import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
import pytest

from persuasive.certify import certify
from persuasive.classes.receivers import PoissonReceiver, SmallCellReceiver
from persuasive.errors import ValidationError
from persuasive.release.tables import release_table
from persuasive.report import plots, write_report
from persuasive.report.content import plain_sentence
from persuasive.results import Certificate
from persuasive.spec import spec_from_dict

PNG = b"\x89PNG\r\n\x1a\n"
SENTENCE = (
    "A Receiver whose prior puts at least 20% on small counts cannot raise its log-score on "
    "any small cell by more than 1.61 nats"
)


def _table(receiver: Any = None, h: int = 5) -> Any:
    frame = pl.DataFrame({"area": [f"a{i:02d}" for i in range(30)], "n": list(range(30))})
    return release_table(
        frame, keys="area", count="n", h=h, receiver=receiver or SmallCellReceiver(0.2)
    )


@dataclass(frozen=True)
class _MeanRelease:
    """A stand-in with the attributes of the contract's MeanRelease."""

    value: float = 3.25
    kind: str = "mean"
    spec: dict[str, Any] = field(
        default_factory=lambda: {
            "mechanism": {"type": "exact_mean"},
            "definition": {
                "kind": "pp",
                "kappa": 1.0 + math.log(4.0),
                "delta": 0.0,
                "scores": [{"type": "marginal_dss"}],
                "priors": {"class": "gaussian_mean", "r1": 1.0, "r2": 4.0},
            },
        }
    )

    @property
    def certificate(self) -> Certificate:
        return certify(*spec_from_dict(self.spec))

    def summary(self) -> dict[str, Any]:
        return {"n": 100}

    def calibration_curve(self) -> tuple[list[float], list[float], str]:
        r1s = [0.25, 0.5, 1.0, 2.0]
        return r1s, [r + math.log(4.0) for r in r1s], "prior radius r1"

    def statement(self) -> str:
        return "The exact mean protects every individual up to 2.39 nats."


def test_table_report_files_sentence_and_images(tmp_path):
    out = write_report(tmp_path / "rep", _table(), target_kappa=1.5)
    assert set(out) == {"html", "markdown", "calibration", "loss", "worst_cell"}
    assert all(p.is_file() and p.parent == tmp_path / "rep" for p in out.values())
    html = out["html"].read_text(encoding="utf-8")
    md = out["markdown"].read_text(encoding="utf-8")
    assert SENTENCE in html and SENTENCE in md
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 3 and html.count("<img") == 3
    assert all(base64.b64decode(data).startswith(PNG) for data in images)
    assert "http://" not in html and "https://" not in html and "<link" not in html
    for word in ("Prop 8 (Bon et al. 2026)", "spec SHA-256", "imagesLoaded", "imagesTotal"):
        assert word in html
    assert "suppressed" in md and "| a00 | suppressed |" in md  # missing, not a number


def test_markdown_references_existing_pngs(tmp_path):
    out = write_report(tmp_path / "rep", _table(PoissonReceiver(1.0, 8.0)))
    md = out["markdown"].read_text(encoding="utf-8")
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert sorted(links) == ["calibration.png", "loss.png", "worst_cell.png"]
    for link in links:
        assert (out["markdown"].parent / link).read_bytes().startswith(PNG)


def test_sentence_numbers_against_closed_form():
    rel = _table(SmallCellReceiver(0.2))
    assert plain_sentence(rel).startswith(SENTENCE)
    rel = _table(PoissonReceiver(0.0, 4.0), h=3)
    alpha = math.exp(-4.0) * (1 + 4.0 + 8.0)  # P(Poi(4) < 3)
    sentence = plain_sentence(rel)
    assert f"at least {100 * alpha:.3g}% on small counts" in sentence
    assert f"more than {-math.log(alpha):.2f} nats" in sentence


def test_mean_report_uses_the_statement(tmp_path):
    out = write_report(tmp_path / "rep", _MeanRelease())
    html = out["html"].read_text(encoding="utf-8")
    assert "The exact mean protects every individual up to 2.39 nats." in html
    assert html.count("data:image/png;base64,") == 2
    assert set(out) == {"html", "markdown", "calibration", "worst_individual"}


@pytest.mark.parametrize("existing", [False, True])
def test_failing_plot_leaves_nothing_behind(tmp_path, monkeypatch, existing):
    def boom(*args: Any, **kwargs: Any) -> bytes:
        raise RuntimeError("plot failed")

    monkeypatch.setattr(plots, "loss_histogram", boom)
    dest = tmp_path / "rep"
    if existing:
        dest.mkdir()
    with pytest.raises(RuntimeError, match="plot failed"):
        write_report(dest, _table())
    if existing:
        assert list(dest.iterdir()) == []
    else:
        assert list(tmp_path.iterdir()) == []


def test_failing_write_removes_the_temporary_folder(tmp_path, monkeypatch):
    import persuasive.report.html as html_mod

    def boom(path: Any, write: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(html_mod, "atomic_write", boom)
    with pytest.raises(OSError, match="disk full"):
        write_report(tmp_path / "rep", _table())
    assert list(tmp_path.iterdir()) == []


def test_rewriting_into_an_existing_report_folder(tmp_path):
    first = write_report(tmp_path / "rep", _table())
    second = write_report(tmp_path / "rep", _table(h=6))
    assert first == second
    assert "below 6" in second["markdown"].read_text(encoding="utf-8")
    assert sorted(p.name for p in (tmp_path / "rep").iterdir()) == sorted(
        p.name for p in first.values()
    )


def test_bad_inputs(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValidationError, match="not a folder"):
        write_report(tmp_path / "file", _table())

    @dataclass
    class Odd:
        kind: str = "histogram"

    with pytest.raises(ValidationError, match=r"release\.kind"):
        write_report(tmp_path / "rep", Odd())
    assert not (tmp_path / "rep").exists()


def test_plots_are_deterministic_png():
    a = plots.calibration_plot([1, 2, 3], [2.0, 1.0, math.inf], target_kappa=1.5, current=2)
    b = plots.calibration_plot([1, 2, 3], [2.0, 1.0, math.inf], target_kappa=1.5, current=2)
    assert a == b and a.startswith(PNG)
    assert plots.loss_histogram([], kappa=1.0).startswith(PNG)
    assert plots.cell_prior_posterior_plot([0.1, 0.1, 0.8], 2).startswith(PNG)
    assert plots.gaussian_prior_posterior_plot(1.0 + math.log(4.0), 1.0, 4.0).startswith(PNG)


def test_real_mean_releases_report_and_certify(tmp_path):
    means = pytest.importorskip("persuasive.release.means")
    from persuasive.report import certificate_document, verify_certificate

    rng = np.random.default_rng(1)
    exact = means.release_mean(rng.normal(size=40), r1=1.0, r2=4.0)
    out = write_report(tmp_path / "exact", exact)
    html = out["html"].read_text(encoding="utf-8")
    assert exact.statement() in html_lib.unescape(html)
    assert html.count("data:image/png;base64,") == 2
    doc = certificate_document(exact)
    assert doc["guarantee"]["kappa"] == pytest.approx(1.0 + math.log(4.0), abs=1e-12)
    assert verify_certificate(doc).ok
    frame = pl.DataFrame({"g": ["a"] * 20 + ["b"] * 25, "y": rng.normal(size=45)})
    groups = means.release_group_means(frame, value="y", group="g", r1=1.0, r2=4.0)
    out = write_report(tmp_path / "groups", groups)
    md = out["markdown"].read_text(encoding="utf-8")
    assert "First 2 of 2 released rows:" in md
    assert verify_certificate(certificate_document(groups)).ok
