"""The certificate of a release, its verification, and the human report (issue 3).

* :func:`certificate_document`, :func:`dumps_certificate`, :func:`write_certificate` — the
  versioned JSON certificate; it holds nothing computed from the data (Assumption 1).
* :func:`verify_certificate` — re-prove a certificate from its spec and compare field by field.
* :func:`write_report` — ``report.html`` (self-contained) and ``report.md`` with the figures.
"""

from persuasive.report.certificate import (
    certificate_document,
    dumps_certificate,
    spec_sha256,
    write_certificate,
)
from persuasive.report.html import render_html, write_report
from persuasive.report.markdown import render_markdown
from persuasive.report.verify import Verification, verify_certificate

__all__ = [
    "Verification",
    "certificate_document",
    "dumps_certificate",
    "render_html",
    "render_markdown",
    "spec_sha256",
    "verify_certificate",
    "write_certificate",
    "write_report",
]
