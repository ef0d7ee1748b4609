"""``RUN_DIR/index.html``: the one page an approver opens first — the whole run, offline.

Why: a suite leaves some twenty files; the person who approves a node change should not have
to know which to open. The page shows, from run.json and the files its manifest lists:

1. the change record (runbook 06's ``change_record.html``, embedded) when the run has one;
2. each runbook's summary in procedure order: status, verdict, key figures (the typed headline
   run.json holds), its main figure (the notebook's first figure), links to its report view,
   full HTML copy and notebook; runbooks the suite skipped, with the reason;
3. the files run.json lists, with their sha256 (folded).

Every value shown is escaped (``display``); the page runs no script but the one fixed figure
script, under a Content-Security-Policy, and loads nothing but the run's shared plotly.js.

What it proves: nothing by itself. It is a view the runner writes after each runbook from what
run.json vouches for at that moment; a file that no longer matches its sha256 is named here
instead of shown. The runner lists the page in the manifest like any artefact (via
``runjson.record_attachment``), so ``runs --verify`` notices an edited page. Because the
manifest is append-only (a listed file keeps its hash), the page before is first set aside, with
its manifest entry, as ``index-1.html``, ``index-2.html``… (``runjson.move_artefact``): each
version anyone may have read stays, byte for byte, with its hash.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..bounded import load_json
from ..display import (
    FIGURE_SCRIPT,
    PAGE_CSS,
    PLOTLY_MIME,
    badge,
    banner,
    cells_table,
    esc,
    figure_div,
    html_table,
    page_csp,
)
from ..stage import Headline
from .offline_html import plotlyjs_name, shared_plotlyjs
from .report_view import REPORT_SUFFIX
from .runjson import (
    RUN_JSON,
    ArtefactError,
    latest_artefact,
    move_artefact,
    read_run_json,
    record_attachment,
    run_json_edited,
    sha256_file,
    signature_status,
)

INDEX_FILE = "index.html"
#: The change record's offline page (runbook 06's ``change_record.render.HTML_FILE``; its Markdown and
#: JSON lie beside it under the same stem).
RECORD_HTML = "change_record.html"
#: Who run.json's ``attached`` names as the writer of the page.
WRITER = "index"
#: A notebook larger than this is not opened for its figure (an executed one is well under 1 MB).
MAX_NOTEBOOK_BYTES = 16 * 1024 * 1024
#: A figure whose JSON is larger than this is linked, not embedded.
MAX_FIGURE_BYTES = 2 * 1024 * 1024
#: A record page larger than this is linked, not embedded.
MAX_RECORD_BYTES = 4 * 1024 * 1024
MAX_FIGURES_SHOWN = 40
MAX_MANIFEST_ROWS = 2000
MAX_VALUE_CHARS = 300


def build_index(run_dir: str | Path, data: Mapping[str, Any] | None = None) -> tuple[str, int]:
    """The page (HTML) and how many figures it draws, from run.json (``data``, read when None)."""
    run_dir = Path(run_dir)
    if data is None:
        data = read_run_json(run_dir / RUN_JSON)
    if not isinstance(data, Mapping) or not isinstance(data.get("runbooks"), list):
        raise ValueError(f"{run_dir / RUN_JSON}: not a run record")
    files = _Files(run_dir, data)
    library = plotlyjs_name()
    figures: list[str] = []
    parts = [_header(run_dir, data), _record_section(files)]
    parts.append(_runbooks_section(run_dir, data, files, figures, library))
    parts.append(_manifest_section(files))
    parts.append(_about_section())
    csp = page_csp(bool(figures))
    head = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'  # a constant: no quote in it
        f"<title>Run {esc(data.get('run_id') or run_dir.name)}</title><style>{PAGE_CSS}</style>"
    )
    if figures and library:
        head += f"<script src='{esc(quote(library))}' charset='utf-8'></script>"
    tail = f"<script>{FIGURE_SCRIPT}</script>" if figures else ""
    return f"{head}</head><body>{''.join(parts)}{tail}</body></html>\n", len(figures)


class _Files:
    """The run's files as run.json's manifest vouches for them (checked once each)."""

    def __init__(self, run_dir: Path, data: Mapping[str, Any]) -> None:
        self.run_dir = run_dir
        listed = data.get("artefacts")
        self.manifest = {str(k): str(v) for k, v in listed.items()} if isinstance(listed, Mapping) else {}
        self._checked: dict[str, str] = {}

    def problem(self, rel: str) -> str:
        """Why ``rel`` cannot be shown as the run's file ("" when its sha256 matches run.json)."""
        if rel not in self._checked:
            path = self.run_dir / rel
            if rel not in self.manifest:
                why = "not listed in run.json's manifest"
            elif not path.is_file():
                why = "listed in run.json but missing"
            else:
                try:
                    why = "" if sha256_file(path) == self.manifest[rel] else "changed since run.json recorded it"
                except OSError as exc:
                    why = f"unreadable ({exc.strerror or exc})"
            self._checked[rel] = why
        return self._checked[rel]

    def link(self, rel: str, label: str | None = None) -> str:
        """A relative link to a vouched-for file, or its name and why it is not linked."""
        why = self.problem(rel)
        if why:
            return f"{esc(label or rel)} <span class='vr-muted'>({esc(why)})</span>"
        return f"<a href='{esc(_href(rel))}'>{esc(label or rel)}</a>"


def _href(rel: str) -> str:
    """A run-relative path as a link (each part percent-encoded: no name becomes a scheme)."""
    return "/".join(quote(part, safe="") for part in rel.split("/"))


def _header(run_dir: Path, data: Mapping[str, Any]) -> str:
    status, why = signature_status(data)
    versions = data.get("versions") if isinstance(data.get("versions"), Mapping) else {}
    rows = [
        {"field": "run", "value": data.get("run_id") or run_dir.name},
        {"field": "host", "value": data.get("host")},
        {"field": "created", "value": data.get("created_at")},
        {"field": "last written", "value": data.get("updated_at")},
        {"field": "status", "value": data.get("status")},
        {"field": "vllm-runbooks", "value": versions.get("vllm_runbooks")},
        {"field": "run.json signature", "value": f"{status}: {why}"},
    ]
    return (
        f"<h1>Run {esc(data.get('run_id') or run_dir.name)}</h1>"
        "<p>The whole run on one page: the change record, then each runbook's verdict, key figures and "
        "main figure, with links to its full report. The evidence is the files run.json lists; "
        f"<code>vllm-runbooks runs --verify {esc(run_dir.name)}</code> checks each against its sha256.</p>"
        + html_table(rows)
    )


def _record_section(files: _Files) -> str:
    head = "<section id='record'><h2>Change record</h2>"
    try:
        found = latest_artefact(files.run_dir, RECORD_HTML)
    except ArtefactError as exc:
        return head + f"<p>{esc(exc)}</p></section>"
    if found is None:
        return head + (
            "<p>No change record in this run yet: runbook 06 (change_record) writes it, "
            "after the runbooks below.</p></section>"
        )
    rel = found.relative_to(files.run_dir).as_posix()
    siblings = [found.with_suffix(suffix) for suffix in (".md", ".json")]  # change_record-2.md beside -2.html
    others = [files.link(p.relative_to(files.run_dir).as_posix()) for p in siblings if p.exists()]
    links = "<p>" + " · ".join([files.link(rel), *others]) + "</p>"
    why = files.problem(rel)
    if why:
        return head + banner("The change record is not shown", f"{rel}: {why}", "bad") + links + "</section>"
    body = _page_body(found)
    if body is None:
        return head + f"<p>{esc(rel)} is too large or not a page to embed: open it directly.</p>{links}</section>"
    approvals = (
        "<p class='vr-muted'>Approvals are added after the record (<code>vllm-runbooks approve</code>, under "
        "<code>approvals/</code>) and are not on this page: <code>vllm-runbooks runs --verify</code> checks "
        "them.</p>"
    )
    return head + links + approvals + f"<div class='vr-record'>{body}</div></section>"


def _page_body(path: Path) -> str | None:
    """What lies between ``<body>`` and ``</body>`` of the record's page (which the record writer
    escaped: values never become markup there), or None when it is not such a page."""
    if path.stat().st_size > MAX_RECORD_BYTES:
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    start, end = text.find("<body>"), text.rfind("</body>")
    return text[start + len("<body>") : end] if 0 <= start < end else None


def _runbooks_section(
    run_dir: Path, data: Mapping[str, Any], files: _Files, figures: list[str], library: str | None
) -> str:
    entries = [e for e in data.get("runbooks") or [] if isinstance(e, Mapping)]
    overview, sections = [], []
    for number, entry in enumerate(entries, 1):
        name = str(entry.get("name") or "?")
        notebook = _notebook_rel(entry)
        headline = Headline.coerce(entry.get("headline"))
        anchor = f"runbook-{number}"
        report = notebook[: -len(".ipynb")] + REPORT_SUFFIX if notebook else None
        status = str(entry.get("status") or "?")
        verdict = headline.verdict if headline else None
        overview.append(
            [
                f"<a href='#{anchor}'>{esc(notebook or name)}</a>",
                badge(status),
                badge(verdict) if verdict else "—",
                files.link(report, "report") if report else "—",
            ]
        )
        sections.append(_runbook_summary(entry, name, notebook, report, headline, anchor, files, figures, library))
    skipped = _skipped(files, {str(e.get("name")) for e in entries})
    if skipped:
        overview += [[esc(name), badge(status), "—", esc(reason)] for name, status, reason in skipped]
    head = "<section id='runbooks'><h2>Runbooks</h2>"
    if not overview:
        return head + "<p>No runbook has been recorded in this run yet.</p></section>"
    return head + cells_table(["runbook", "status", "verdict", "report"], overview) + "".join(sections) + "</section>"


def _notebook_rel(entry: Mapping[str, Any]) -> str | None:
    """The entry's notebook as a name inside the run directory (run.json holds the path it had)."""
    value = entry.get("notebook")
    if not isinstance(value, str) or not value.endswith(".ipynb"):
        return None
    return Path(value).name


def _runbook_summary(
    entry: Mapping[str, Any],
    name: str,
    notebook: str | None,
    report: str | None,
    headline: Headline | None,
    anchor: str,
    files: _Files,
    figures: list[str],
    library: str | None,
) -> str:
    status = str(entry.get("status") or "?")
    verdict = f" · verdict {badge(headline.verdict)}" if headline else ""
    parts = [f"<h3 id='{anchor}'>{esc(notebook or name)} · {badge(status)}{verdict}</h3>"]
    when = [entry.get("started_at"), f"{entry.get('duration_s')} s" if entry.get("duration_s") is not None else None]
    parts.append(f"<p class='vr-muted'>{esc(' · '.join(str(w) for w in when if w))}</p>")
    if status == "running":
        parts.append(banner("Not finished", "running, or interrupted before run.json recorded its result", "warn"))
    if entry.get("error"):
        parts.append(banner("Failed", _cut(entry.get("error")), "bad"))
    if headline is not None and headline.figures:
        rows = [{"key figure": k, "value": _cut(v)} for k, v in list(headline.figures.items())[:MAX_FIGURES_SHOWN]]
        parts.append(html_table(rows))
    elif headline is None and status != "running":
        parts.append("<p>No verdict recorded (the runbook did not reach its verdict cell).</p>")
    if notebook:
        parts.append(_main_figure(notebook, files, figures, library))
        links = [files.link(report, "report view") if report else ""]
        links += [files.link(notebook[: -len(".ipynb")] + ".html", "full HTML copy"), files.link(notebook, "notebook")]
        parts.append("<p>" + " · ".join(x for x in links if x) + "</p>")
    return "".join(parts)


def _cut(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def _main_figure(notebook: str, files: _Files, figures: list[str], library: str | None) -> str:
    """The notebook's first figure (the runbook's main one), from a notebook run.json vouches for."""
    why = files.problem(notebook)
    if why:
        return f"<p class='vr-muted'>Figure not shown: {esc(notebook)} is {esc(why)}.</p>"
    try:
        nb = load_json(files.run_dir / notebook, MAX_NOTEBOOK_BYTES)[0]
    except (OSError, ValueError) as exc:
        return f"<p class='vr-muted'>Figure not shown: {esc(notebook)} is unreadable ({esc(exc)}).</p>"
    figure = _first_figure(nb)
    if figure is None:
        return ""
    if len(json.dumps(figure, default=str)) > MAX_FIGURE_BYTES:
        return "<p class='vr-muted'>Its main figure is too large to embed here: see the report view.</p>"
    figures.append(notebook)
    return figure_div(figure, library)


def _first_figure(nb: Any) -> Any:
    cells = nb.get("cells") if isinstance(nb, Mapping) else None
    for cell in cells if isinstance(cells, list) else []:
        outputs = cell.get("outputs") if isinstance(cell, Mapping) else None
        for output in outputs if isinstance(outputs, list) else []:
            data = output.get("data") if isinstance(output, Mapping) else None
            if isinstance(data, Mapping) and isinstance(data.get(PLOTLY_MIME), Mapping):
                return data[PLOTLY_MIME]
    return None


def _skipped(files: _Files, ran: set[str]) -> list[tuple[str, str, str]]:
    """Runbooks the suite planned but did not run (skipped, refused), from its manifest-checked plan."""
    from .runjson import read_artefact_json
    from .suite import SUITE_FILE

    try:
        plan, _ = read_artefact_json(files.run_dir, SUITE_FILE, schema="suite_result")
    except (FileNotFoundError, ValueError):
        return []
    out = []
    for entry in plan.get("runbooks") or []:
        if isinstance(entry, Mapping) and str(entry.get("name")) not in ran and entry.get("status") != "ok":
            out.append((str(entry.get("name")), str(entry.get("status")), _cut(entry.get("reason") or "")))
    return out


def _manifest_section(files: _Files) -> str:
    # the page itself is left out: a page cannot carry its own hash
    rows = [{"file": rel, "sha256": digest} for rel, digest in sorted(files.manifest.items()) if rel != INDEX_FILE]
    more = len(rows) - MAX_MANIFEST_ROWS
    note = f"<p>… and {more} more (run.json lists them all).</p>" if more > 0 else ""
    return (
        "<section id='files'><details><summary><b>The files run.json lists "
        f"({len(rows)}, with their sha256)</b></summary>{html_table(rows[:MAX_MANIFEST_ROWS])}{note}"
        "</details></section>"
    )


def _about_section() -> str:
    return (
        "<section id='about'><p class='vr-muted'>About this page: the runner rewrites it after each runbook, "
        "from run.json and the files it lists, and lists it in run.json's manifest. It proves nothing by "
        "itself: a file that no longer matches its sha256 is named instead of shown. A page named "
        f"<code>index-N.html</code> is an earlier version, kept unchanged with its sha256; the current one is "
        f"<code>{INDEX_FILE}</code>.</p></section>"
    )


@contextlib.contextmanager
def _index_lock(run_dir: Path) -> Iterator[None]:
    """Serialise rewrites of the page by runbooks finishing together (a lock on the directory
    itself: a lock file would be a file no runbook wrote)."""
    fd = os.open(run_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def write_run_index(run_dir: str | Path) -> Path:
    """Write (or rewrite) ``RUN_DIR/index.html`` and list it in run.json; returns its path.

    The page before is set aside first, with its manifest entry, as ``index-N.html``; a page
    identical to the current one is left as it is. Raises ``ValueError`` (run.json unreadable or
    edited: nothing is written, re-signing must not hide that) or ``OSError``.
    """
    run_dir = Path(run_dir)
    with _index_lock(run_dir):
        data = read_run_json(run_dir / RUN_JSON)
        if not isinstance(data, dict) or not isinstance(data.get("runbooks"), list):
            raise ValueError(f"{run_dir / RUN_JSON}: not a run record")
        edited = run_json_edited(data)
        if edited:
            raise ValueError(f"{run_dir / RUN_JSON}: {edited}")
        page, figures = build_index(run_dir, data)
        target = run_dir / INDEX_FILE
        attach = [target]
        name = plotlyjs_name() if figures else None
        if name and not (run_dir / name).exists():  # only a library written here is listed here
            attach.append(run_dir / str(shared_plotlyjs(run_dir)))
        listed = data.get("artefacts") if isinstance(data.get("artefacts"), dict) else {}
        if target.is_file() and target.read_bytes() == page.encode("utf-8"):
            if any(p.name not in listed for p in attach):  # an earlier write stopped short of listing
                record_attachment(run_dir, WRITER, attach)
            return target
        tmp = run_dir / f".{INDEX_FILE}.{os.getpid()}.{secrets.token_hex(3)}.tmp"
        try:
            with tmp.open("x", encoding="utf-8") as handle:
                handle.write(page)
            if target.exists() or target.is_symlink():
                _set_aside(run_dir, target)
            os.link(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        record_attachment(run_dir, WRITER, attach)
        return target


def _set_aside(run_dir: Path, target: Path) -> None:
    """Move the page before to the first free ``index-N.html``, its manifest entry with it."""
    for n in range(1, 10_000):
        candidate = run_dir / f"index-{n}.html"
        if candidate.exists():
            continue
        try:
            move_artefact(run_dir, target, candidate)
            return
        except FileExistsError:
            continue
    raise OSError(f"{run_dir}: no free name to set {target.name} aside")
