"""The certificate document (format 2) and its verification.

Assumption 1 in format 2: the claim, the guarantee and the notes do not depend on the data (the
publication section and the digest, which bind the published files, do).

Oracles: κ = −log α computed here with ``math.log`` (Prop 8), r1 + log r2 (Prop 7); canonical
JSON and the digest recomputed here with ``hashlib`` and ``json`` on hand-written or
independently encoded strings; tampered documents built by hand.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from persuasive.classes.receivers import PoissonReceiver, SmallCellReceiver
from persuasive.errors import ValidationError
from persuasive.files.output import OutputFolder
from persuasive.release.means import release_mean
from persuasive.release.pipeline import publish
from persuasive.release.tables import release_table
from persuasive.report.certificate import canonical, digest_of, dumps, sha256_of
from persuasive.report.verify import verify_certificate

#: The fields of a certificate that must not depend on the data (Assumption 1).
DATA_FREE = ("format", "format_version", "kind", "library", "claim", "guarantee", "notes")


def _table(counts: list[int], h: int = 5, receiver: Any = None, **kw: Any) -> Any:
    frame = pl.DataFrame({"area": [f"a{i}" for i in range(len(counts))], "n": counts})
    return release_table(
        frame, keys="area", count="n", h=h, receiver=receiver or SmallCellReceiver(0.2), **kw
    )


def _publish(release: Any, out: Path) -> dict[str, Any]:
    """Write ``release`` into ``out`` through the pipeline; return its certificate document."""
    return publish(release, OutputFolder(out)).document


def _independent_digest(doc: dict[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _rehash(doc: dict[str, Any]) -> dict[str, Any]:
    """A careful forger also fixes the digest (computed here, not by the library)."""
    doc["digest"] = _independent_digest(doc)
    return doc


@pytest.fixture(scope="module")
def table_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _publish(_table([0, 3, 7, 12, 40]), tmp_path_factory.mktemp("cert") / "out")


@pytest.fixture()
def doc(table_doc: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(table_doc)


# --------------------------------------------------------------------------------------------
# The document
# --------------------------------------------------------------------------------------------


def test_claim_guarantee_and_notes_do_not_depend_on_the_data(tmp_path: Path) -> None:
    a = _publish(_table([0, 3, 7, 12, 40]), tmp_path / "a")
    b = _publish(_table([100, 1, 2, 2, 9, 0, 55, 4]), tmp_path / "b")
    part = {k: a[k] for k in DATA_FREE}
    assert json.dumps(part, sort_keys=True) == json.dumps(
        {k: b[k] for k in DATA_FREE}, sort_keys=True
    )
    text = json.dumps(part, sort_keys=True)
    for number in ("40", "12", "100", "55"):  # no count of either table leaks in
        assert f": {number}" not in text and f"{number}," not in text
    # the publication section binds the published file, so it and the digest differ
    assert a["publication"] != b["publication"] and a["digest"] != b["digest"]
    assert (a["publication"]["cells"], b["publication"]["cells"]) == (5, 8)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_different_spec_gives_a_different_certificate(tmp_path: Path) -> None:
    a = _publish(_table([0, 3, 7], h=5), tmp_path / "a")
    b = _publish(_table([0, 3, 7], h=6), tmp_path / "b")
    assert a["claim"] != b["claim"] and a["digest"] != b["digest"]
    assert (a["claim"]["spec"]["mechanism"]["h"], b["claim"]["spec"]["mechanism"]["h"]) == (5, 6)


def test_document_fields_against_prop8_closed_form(table_doc: dict[str, Any]) -> None:
    doc = table_doc
    assert doc["format"] == "persuasive-certificate" and doc["format_version"] == 2
    assert doc["kind"] == "table"
    assert doc["library"]["name"] == "persuasive-privacy"
    g = doc["guarantee"]
    assert g["kappa"] == pytest.approx(-math.log(0.2), rel=1e-15) and g["delta"] == 0.0
    assert g["holds"] is True and g["exact"] is True
    assert g["basis"] == "Prop 8 (Bon et al. 2026)"
    assert "20 %" in g["statement"] and "1.609 nats" in g["statement"]
    assert doc["claim"]["receiver"] == {"model": "small_cell", "alpha": 0.2}
    assert doc["claim"]["spec"]["definition"]["kappa"] == "inf"  # no target κ
    assert doc["claim"]["spec"]["definition"]["priors"] == {
        "class": "small_cell",
        "h": 5,
        "alpha": 0.2,
    }
    assert doc["claim"]["columns"] == {"keys": ["area"], "count": "n"}
    assert set(doc) == {*DATA_FREE, "publication", "digest"}
    assert [f["name"] for f in doc["publication"]["files"]] == ["released.csv"]
    assert (doc["publication"]["cells"], doc["publication"]["suppressed"]) == (5, 2)


def test_publication_hash_is_the_digest_of_the_published_rows(tmp_path: Path) -> None:
    """A table is bound by the digest of its rows (persuasive.files.table_digest), computed here
    from the file's bytes: one chunk is the SHA-256 of the file's lines after the header."""
    out = tmp_path / "out"
    doc = _publish(_table([0, 3, 7, 12, 40]), out)
    (entry,) = doc["publication"]["files"]
    raw = (out / "released.csv").read_bytes()
    body = raw.split(b"\n", 1)[1]
    columns = [["area", "String"], ["n", "Int64"]]
    h = hashlib.sha256(b"persuasive table digest 1\n")
    h.update(json.dumps(columns, separators=(",", ":")).encode() + b"\n5\n")
    h.update(hashlib.sha256(body).digest())
    assert entry == {
        "name": "released.csv",
        "table": {"rows": 5, "chunk_rows": 65536, "columns": columns, "sha256": h.hexdigest()},
    }


def test_canonical_encoding_and_digest_match_an_independent_encoding(
    table_doc: dict[str, Any],
) -> None:
    spec = {"b": float("inf"), "a": [0.1, 2], "é": True}
    expected = hashlib.sha256('{"a":[0.1,2],"b":"inf","é":true}'.encode()).hexdigest()
    assert sha256_of(spec) == expected
    assert table_doc["digest"] == _independent_digest(table_doc) == digest_of(table_doc)


def test_dumps_is_canonical_and_round_trips(tmp_path: Path) -> None:
    out = tmp_path / "out"
    doc = _publish(_table([0, 3, 7, 12, 40]), out)
    text = (out / "certificate.json").read_text(encoding="utf-8")
    assert text == dumps(doc)
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert dumps(json.loads(text)) == text
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_infinite_kappa_is_written_as_a_string(table_doc: dict[str, Any]) -> None:
    assert '"kappa": "inf"' in dumps({"guarantee": {"kappa": math.inf}})
    assert '"kappa": "inf"' in dumps(table_doc)  # the claim's target κ, absent


def test_exact_mean_is_certified_against_prop7(tmp_path: Path) -> None:
    doc = _publish(release_mean([1.0, 2.0, 6.0], r1=1.0, r2=4.0), tmp_path / "out")
    assert doc["kind"] == "mean"
    assert doc["guarantee"]["kappa"] == pytest.approx(1.0 + math.log(4.0), abs=1e-12)
    assert doc["guarantee"]["basis"] == "Prop 7 (Bon et al. 2026)"
    assert doc["guarantee"]["holds"] is True and doc["guarantee"]["exact"] is True


def test_values_that_are_not_json_are_rejected() -> None:
    with pytest.raises(ValidationError, match="JSON values"):
        canonical({"release": {"x": object()}})
    with pytest.raises(ValidationError, match="NaN"):
        dumps({"kappa": float("nan")})


# --------------------------------------------------------------------------------------------
# Verification
# --------------------------------------------------------------------------------------------


def test_good_certificates_verify(tmp_path: Path) -> None:
    out = tmp_path / "t"
    _publish(_table([1, 9], receiver=PoissonReceiver(0, 3)), out)
    v = verify_certificate(out / "certificate.json")
    assert v.ok and v.consistent and v.claims and v.mismatches == ()
    assert "verified" in v.explain() and not v.published_checked
    assert v.recomputed is not None and v.recomputed["guarantee"]["holds"] is True
    with_files = verify_certificate(out / "certificate.json", published=out)
    assert with_files.ok and with_files.published_checked
    mean = tmp_path / "m"
    _publish(release_mean([0.0, 1.0, 5.0], r1=1.0, r2=4.0), mean)
    assert verify_certificate(mean / "certificate.json", published=mean).ok


def _only(v: Any, field: str) -> None:
    assert not v.ok
    assert any(m.startswith(field) for m in v.mismatches), v.mismatches


def test_lowered_kappa_fails_naming_guarantee_kappa(doc: dict[str, Any]) -> None:
    doc["guarantee"]["kappa"] = 1.2
    v = verify_certificate(doc)
    _only(v, "guarantee.kappa")
    _only(v, "digest")  # edited after it was written
    v = verify_certificate(_rehash(doc))
    (only,) = v.mismatches
    assert only.startswith("guarantee.kappa: stated 1.2, recomputed 1.609437912434")
    assert not v.ok and not v.consistent


def test_changed_class_alpha_fails_naming_the_alpha(doc: dict[str, Any]) -> None:
    doc["claim"]["spec"]["definition"]["priors"]["alpha"] = 0.3
    v = verify_certificate(doc)
    _only(v, "digest")
    _only(v, "claim.spec.definition.priors.alpha")
    v = verify_certificate(_rehash(doc))
    (only,) = v.mismatches
    assert only == "claim.spec.definition.priors.alpha: stated 0.3, recomputed 0.2"


def test_lowered_definition_kappa_fails(doc: dict[str, Any]) -> None:
    doc["claim"]["spec"]["definition"]["kappa"] = 1.0
    doc["guarantee"]["kappa"] = 1.0
    v = verify_certificate(_rehash(doc))
    _only(v, "claim.spec.definition.kappa")
    _only(v, "guarantee.kappa")


def test_a_target_below_the_proven_kappa_claims_no_guarantee(doc: dict[str, Any]) -> None:
    # A consistent edit of the target (claim.target_kappa and definition.kappa) to 1.0 < κ:
    # the recomputed guarantee no longer holds, and the stated one is named.
    doc["claim"]["target_kappa"] = 1.0
    doc["claim"]["spec"]["definition"]["kappa"] = 1.0
    v = verify_certificate(_rehash(doc))
    assert not v.ok and not v.claims
    _only(v, "guarantee.holds")
    assert "NOT met" in v.statement


def test_changed_threshold_fails(doc: dict[str, Any]) -> None:
    doc["claim"]["spec"]["mechanism"]["h"] = 3  # below r = 5: Prop 8 gives no guarantee
    v = verify_certificate(_rehash(doc))
    (only,) = v.mismatches
    assert only.startswith("claim: cannot be read") and "h = 3" in only
    assert not v.ok and not v.claims
    doc["claim"]["spec"]["mechanism"]["h"] = 6  # the class's h (5) no longer the mechanism's
    v = verify_certificate(_rehash(doc))
    _only(v, "claim.spec.definition.priors.h")


@pytest.mark.parametrize(
    ("field", "value"),
    [("basis", "Prop 7 (Bon et al. 2026)"), ("exact", False), ("delta", 0.1), ("holds", False)],
)
def test_changed_basis_exact_delta_holds_fail(doc: dict[str, Any], field: str, value: Any) -> None:
    doc["guarantee"][field] = value
    v = verify_certificate(_rehash(doc))
    (only,) = v.mismatches
    assert only.startswith(f"guarantee.{field}: stated ")


def test_edited_digest_fails(doc: dict[str, Any]) -> None:
    doc["digest"] = "sha256:" + "0" * 64
    v = verify_certificate(doc)
    (only,) = v.mismatches
    assert only.startswith("digest: stated sha256:0000")


def test_edited_library_version_is_bound_by_the_digest(doc: dict[str, Any]) -> None:
    doc["library"]["version"] = "0.0.0-forged"
    v = verify_certificate(doc)
    _only(v, "digest")
    assert any("written by persuasive 0.0.0-forged" in m for m in v.mismatches)


def test_unknown_receiver_model_is_a_mismatch(doc: dict[str, Any]) -> None:
    doc["claim"]["receiver"] = {"model": "uniform", "alpha": 0.2}
    v = verify_certificate(_rehash(doc))
    (only,) = v.mismatches
    assert only.startswith("claim: cannot be read: claim.receiver") and "'uniform'" in only
    assert not v.ok and v.recomputed is None


def test_extra_claim_field_is_a_mismatch(doc: dict[str, Any]) -> None:
    doc["claim"]["spec"]["mechanism"]["hh"] = 3
    v = verify_certificate(_rehash(doc))
    (only,) = v.mismatches
    assert only.startswith("claim.spec.mechanism.hh: not a field of this certificate")
    assert v.recomputed is not None


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"format": "other"}', "format must be 'persuasive-certificate'"),
        ('{"format": "persuasive-certificate", "format_version": 1}', "format_version 1"),
        ('{"format": "persuasive-certificate", "format_version": 3}', "format_version 3"),
    ],
)
def test_unreadable_certificates_raise_naming_the_problem(
    tmp_path: Path, text: str, match: str
) -> None:
    path = tmp_path / "c.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValidationError, match=match):
        verify_certificate(path)


def test_a_format_2_document_without_fields_is_not_verified(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{"format": "persuasive-certificate", "format_version": 2}', encoding="utf-8")
    v = verify_certificate(path)
    assert not v.ok and not v.consistent
    assert any(m.startswith("library.version") for m in v.mismatches)
    assert any(m.startswith("kind") for m in v.mismatches)


def test_bad_field_types_are_mismatches(doc: dict[str, Any]) -> None:
    doc["guarantee"]["kappa"] = "low"
    v = verify_certificate(_rehash(doc))
    (only,) = v.mismatches
    assert only.startswith("guarantee.kappa: stated 'low'")
    with pytest.raises(ValidationError, match="not found"):
        verify_certificate("/nonexistent/c.json")
