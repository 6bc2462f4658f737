"""Certificates, their verification, and the human report.

* :mod:`persuasive.report.certificate` — the canonical, strict-JSON certificate document and
  its digest; :mod:`persuasive.report.kinds` — what each release kind's certificate claims and
  how every field is recomputed.
* :func:`verify_certificate` — recompute a certificate (and its publication) and compare every
  field; say what it claims.
* :func:`write_report` — ``report.html`` (self-contained) and ``report.md`` with the figures.
"""

from persuasive.report.html import render_html, write_report
from persuasive.report.markdown import render_markdown
from persuasive.report.verify import Verification, verify_certificate

__all__ = [
    "Verification",
    "render_html",
    "render_markdown",
    "verify_certificate",
    "write_report",
]
