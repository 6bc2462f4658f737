"""The certificate document (Assumption 1: data-independent, byte-stable) and its verification.

Oracles: κ = −log α computed here with ``math.log`` (Prop 8), r1 + log r2 (Prop 7); the spec
hash recomputed here with ``hashlib`` on a hand-written canonical string; tampered documents
built by hand.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import sys

import polars as pl
import pytest

from persuasive.classes.receivers import PoissonReceiver, SmallCellReceiver
from persuasive.errors import ValidationError
from persuasive.release.tables import release_table
from persuasive.report import (
    certificate_document,
    dumps_certificate,
    spec_sha256,
    verify_certificate,
    write_certificate,
)

MEAN_SPEC = {
    "mechanism": {"type": "exact_mean"},
    "definition": {
        "kind": "pp",
        "kappa": 2.4,
        "delta": 0.0,
        "scores": [{"type": "marginal_dss"}],
        "priors": {"class": "gaussian_mean", "r1": 1.0, "r2": 4.0},
    },
}


def _table(counts: list[int], h: int = 5, receiver: object | None = None) -> object:
    frame = pl.DataFrame({"area": [f"a{i}" for i in range(len(counts))], "n": counts})
    return release_table(
        frame, keys="area", count="n", h=h, receiver=receiver or SmallCellReceiver(0.2)
    )


def _rehash(doc: dict) -> dict:
    doc["spec_sha256"] = spec_sha256(doc["spec"])
    return doc


@pytest.fixture()
def table_doc() -> dict:
    return certificate_document(_table([0, 3, 7, 12, 40]))


# --------------------------------------------------------------------------------------------
# The document
# --------------------------------------------------------------------------------------------


def test_same_spec_on_different_data_gives_byte_identical_files(tmp_path):
    a = write_certificate(tmp_path / "a.json", _table([0, 3, 7, 12, 40]))
    b = write_certificate(tmp_path / "b.json", _table([100, 1, 2, 2, 9, 0, 55, 4]))
    assert a.read_bytes() == b.read_bytes()
    text = a.read_text(encoding="utf-8")
    for number in ("40", "12", "100", "55"):  # no count of either table leaks in
        assert f": {number}" not in text and f"{number}," not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]


def test_different_spec_gives_a_different_certificate():
    a = certificate_document(_table([0, 3, 7], h=5))
    b = certificate_document(_table([0, 3, 7], h=6))
    assert a["spec_sha256"] != b["spec_sha256"]


def test_document_fields_against_prop8_closed_form(table_doc):
    doc = table_doc
    assert doc["format"] == "persuasive-certificate" and doc["format_version"] == 1
    assert doc["library"]["name"] == "persuasive-privacy"
    assert doc["guarantee"] == {"kappa": -math.log(0.2), "delta": 0.0}
    assert doc["basis"] == "Prop 8 (Bon et al. 2026)" and doc["exact"] is True
    assert doc["spec"]["receiver"] == {"model": "small_cell", "alpha": 0.2}
    assert set(doc) == {
        "format",
        "format_version",
        "library",
        "spec",
        "spec_sha256",
        "guarantee",
        "basis",
        "exact",
        "notes",
    }


def test_spec_hash_matches_an_independent_canonical_encoding():
    spec = {"b": float("inf"), "a": [0.1, 2], "é": True}
    expected = hashlib.sha256('{"a":[0.1,2],"b":"inf","é":true}'.encode()).hexdigest()
    assert spec_sha256(spec) == expected


def test_dumps_is_canonical_and_round_trips(table_doc):
    text = dumps_certificate(table_doc)
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert dumps_certificate(json.loads(text)) == text
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_infinite_kappa_is_written_as_a_string():
    spec = copy.deepcopy(MEAN_SPEC)
    doc = certificate_document(spec)
    doc["guarantee"]["kappa"] = math.inf
    assert '"kappa": "inf"' in dumps_certificate(doc)


def test_bare_spec_is_certified_against_prop7():
    doc = certificate_document(MEAN_SPEC)
    assert doc["guarantee"]["kappa"] == pytest.approx(1.0 + math.log(4.0), abs=1e-12)
    assert doc["basis"] == "Prop 7 (Bon et al. 2026)"


def test_bad_release_is_rejected():
    with pytest.raises(ValidationError, match=r"release\.spec"):
        certificate_document(object())
    with pytest.raises(ValidationError, match="JSON values"):
        certificate_document({**MEAN_SPEC, "release": {"x": object()}})


# --------------------------------------------------------------------------------------------
# Verification
# --------------------------------------------------------------------------------------------


def test_good_certificates_verify(tmp_path):
    path = write_certificate(tmp_path / "c.json", _table([1, 9], receiver=PoissonReceiver(0, 3)))
    v = verify_certificate(path)
    assert v.ok and v.mismatches == () and "verified" in v.explain()
    assert v.recomputed is not None and v.recomputed.holds
    assert verify_certificate(certificate_document(MEAN_SPEC)).ok


def _only(v, field: str) -> None:
    assert not v.ok
    assert any(m.startswith(field) for m in v.mismatches), v.mismatches


def test_lowered_kappa_fails_naming_guarantee_kappa(table_doc):
    table_doc["guarantee"]["kappa"] = 1.2
    v = verify_certificate(table_doc)
    _only(v, "guarantee.kappa")
    assert v.mismatches == (
        "guarantee.kappa: stated 1.2 is below the proven 1.609438 (κ lowered?)",
    )


def test_changed_class_alpha_fails_naming_the_alpha(table_doc):
    table_doc["spec"]["definition"]["priors"]["alpha"] = 0.3
    v = verify_certificate(table_doc)
    _only(v, "spec_sha256")
    _only(v, "spec.definition.priors.alpha")
    assert "spec.definition.priors.alpha" in v.mismatches[0]  # named by the hash message too
    v = verify_certificate(_rehash(table_doc))  # a careful forger also fixes the hash
    _only(v, "spec.definition.priors.alpha")
    assert "stated 0.3" in " ".join(v.mismatches) and "0.2" in " ".join(v.mismatches)


def test_lowered_definition_kappa_fails(table_doc):
    table_doc["spec"]["definition"]["kappa"] = 1.0
    table_doc["guarantee"]["kappa"] = 1.0
    v = verify_certificate(_rehash(table_doc))
    _only(v, "spec.definition.kappa")
    _only(v, "guarantee.kappa")


def test_changed_threshold_fails(table_doc):
    table_doc["spec"]["mechanism"]["h"] = 3  # h_M < h_C: Prop 8 proves nothing (κ = ∞)
    v = verify_certificate(_rehash(table_doc))
    _only(v, "guarantee.kappa")
    assert "proven inf" in v.mismatches[0]


def test_changed_basis_exact_delta_fail(table_doc):
    for field, path, value in [
        ("basis", ("basis",), "Prop 7 (Bon et al. 2026)"),
        ("exact", ("exact",), False),
        ("guarantee.delta", ("guarantee", "delta"), 0.1),
    ]:
        doc = copy.deepcopy(table_doc)
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        v = verify_certificate(doc)
        assert len(v.mismatches) == 1, v.mismatches
        _only(v, field)


def test_edited_hash_fails(table_doc):
    table_doc["spec_sha256"] = "0" * 64
    v = verify_certificate(table_doc)
    assert len(v.mismatches) == 1
    _only(v, "spec_sha256")


def test_unknown_receiver_module_is_a_mismatch(table_doc, monkeypatch):
    monkeypatch.setitem(sys.modules, "persuasive.classes.receivers", None)
    v = verify_certificate(table_doc)
    _only(v, "spec.receiver")
    assert "unavailable" in v.mismatches[0]


def test_spec_that_no_longer_parses_is_a_mismatch(table_doc):
    table_doc["spec"]["mechanism"]["hh"] = 3
    v = verify_certificate(_rehash(table_doc))
    _only(v, "spec")
    assert v.recomputed is None and "mechanism.hh" in v.mismatches[0]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"format": "other"}', "format must be 'persuasive-certificate'"),
        ('{"format": "persuasive-certificate", "format_version": 2}', "format_version 2"),
        ('{"format": "persuasive-certificate", "format_version": 1}', "'library' is missing"),
    ],
)
def test_unreadable_certificates_raise_naming_the_problem(tmp_path, text, match):
    path = tmp_path / "c.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValidationError, match=match):
        verify_certificate(path)


def test_bad_field_types_raise(table_doc):
    table_doc["guarantee"]["kappa"] = "low"
    with pytest.raises(ValidationError, match=r"guarantee\.kappa must be a number"):
        verify_certificate(table_doc)
    with pytest.raises(ValidationError, match="not found"):
        verify_certificate("/nonexistent/c.json")
