"""The example stage: ``Config`` → ``run(config)`` → a result that shows, glues and saves itself.

It answers a question without side effects, so the template runs anywhere: is ``endpoint`` a
URL a runbook may talk to (http or https, a host, no credentials in it)? A new runbook replaces
the question and keeps the shape.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from typing import ClassVar

from ..display import banner, bullets
from ..records import Record
from ..redact import redact_text
from ..stage import Headline, ResultMixin


@dataclass
class Config(Record):
    """The runbook's parameters (documented in the notebook's first cell)."""

    SCHEMA: ClassVar[str] = "example_config"
    endpoint: str = "http://127.0.0.1:8000"


@dataclass(repr=False)
class ExampleResult(ResultMixin, Record):
    """What the example concluded: ``usable`` or ``unusable``, with every reason."""

    SCHEMA: ClassVar[str] = "example_result"
    RUNBOOK: ClassVar[str] = "example"
    VERDICTS: ClassVar[tuple[str, ...]] = ("usable", "unusable")
    ARTEFACT: ClassVar[str] = "example/result.json"
    endpoint: str
    problems: list[str] = field(default_factory=list)

    def headline(self) -> Headline:
        """The verdict and a figure (copied into run.json by the runner)."""
        return self.make_headline("unusable" if self.problems else "usable", {"problems": len(self.problems)})

    def _repr_html_(self) -> str:
        verdict = self.headline().verdict
        tone = "good" if verdict == "usable" else "bad"
        return banner(f"Endpoint {verdict}", self.endpoint, tone) + bullets(self.problems)


def run(config: Config) -> ExampleResult:
    """Check the endpoint's shape; never raises for bad input (each problem is a reason)."""
    text = str(config.endpoint or "")
    problems: list[str] = []
    parsed = urllib.parse.urlsplit(text)
    if parsed.scheme not in ("http", "https"):
        problems.append(f"scheme {parsed.scheme or 'none'!r}: only http and https")
    if not parsed.hostname:
        problems.append("no host")
    if parsed.username or parsed.password:
        problems.append("credentials in the URL: give them through an environment variable instead")
    return ExampleResult(endpoint=redact_text(text), problems=problems)
