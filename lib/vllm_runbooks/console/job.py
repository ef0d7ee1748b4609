"""Run one step in a background process, with a live progress line, and cancel it cleanly.

Why a process and not a thread: papermill blocks until its kernel finishes and cannot be stopped
from outside; a process (``vllm-runbooks run``) can, together with the kernel it started (which
jupyter_client puts in its own session, so the whole process tree is ended, not a group).
The progress line is the last line the runner streams to stderr (papermill's cell progress and
the runbooks' own progress lines), bounded in length; the stream itself is read and discarded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..records import utc_now

MAX_LINE = 240
TERMINATE_GRACE_S = 10.0
PROGRESS_EVERY_S = 0.5


def parameters_yaml(parameters: dict[str, Any]) -> str:
    """The step's parameters as the ``-f`` file the CLI reads: one value shared by two parameters
    is written twice, because the CLI refuses YAML anchors and aliases (alias bombs)."""
    import yaml

    class _NoAliases(yaml.SafeDumper):
        def ignore_aliases(self, data: object) -> bool:
            return True

    return yaml.dump(parameters, Dumper=_NoAliases)


class StepJob:
    """``vllm-runbooks run NAME`` into the incident's run directory, in the background."""

    def __init__(
        self,
        runbook: str,
        parameters: dict[str, Any],
        run_dir: str | Path,
        on_progress: Callable[[str], None] | None = None,
        on_done: Callable[[StepJob], None] | None = None,
    ) -> None:
        self.runbook = runbook
        self.parameters = dict(parameters)
        self.run_dir = Path(run_dir)
        self.on_progress = on_progress or (lambda line: None)
        self.on_done = on_done or (lambda job: None)
        self.started_at = utc_now()
        self.t0 = time.monotonic()
        self.returncode: int | None = None
        self.cancelled = False
        self.last_line = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._params_file: str | None = None
        self._lock = threading.Lock()
        self._ended = threading.Event()
        self._changed = threading.Event()
        self._finished = threading.Event()
        self.callback_errors: list[str] = []

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.t0

    def start(self) -> StepJob:
        """Start the process and the thread that reads its progress and reports the end."""
        fd, self._params_file = tempfile.mkstemp(prefix="vllm-runbooks-console-", suffix=".yaml")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(parameters_yaml(self.parameters))
        argv = [sys.executable, "-m", "vllm_runbooks.cli", "run", self.runbook, "-f", self._params_file,
                "--run-dir", str(self.run_dir), "--format", "json"]  # fmt: skip
        self._proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True
        )
        threading.Thread(target=self._follow, name=f"console-{self.runbook}-read", daemon=True).start()
        threading.Thread(target=self._notify, name=f"console-{self.runbook}-show", daemon=True).start()
        return self

    @property
    def running(self) -> bool:
        return self._proc is not None and not self._finished.is_set()

    def _follow(self) -> None:
        """Drain the process's stderr, keeping only the last line; never calls back itself, so a
        slow or stuck display can never block the step (a full pipe would stall it)."""
        assert self._proc is not None and self._proc.stderr is not None
        pending = b""
        while True:
            chunk = self._proc.stderr.read1(4096)  # type: ignore[attr-defined]
            if not chunk:
                break
            pending = (pending + chunk)[-4 * MAX_LINE :]
            parts = pending.replace(b"\r", b"\n").split(b"\n")
            pending = parts[-1]
            lines = [p.decode("utf-8", "replace").strip() for p in parts[:-1]]
            lines = [ln for ln in lines if ln and "Kernel is running over TCP" not in ln]
            if lines:
                self.last_line = lines[-1][:MAX_LINE]
                self._changed.set()
        self.returncode = self._proc.wait()
        if self._params_file:
            Path(self._params_file).unlink(missing_ok=True)
        self._finished.set()
        self._changed.set()

    def _notify(self) -> None:
        """Report progress (at most every PROGRESS_EVERY_S) and the end, from its own thread."""
        shown = None
        while True:
            self._changed.wait()
            self._changed.clear()
            if self.last_line != shown:
                shown = self.last_line
                self._call(self.on_progress, shown)
            if self._finished.is_set():
                break
            self._finished.wait(PROGRESS_EVERY_S)  # pacing of display updates, not synchronisation
        try:
            self._call(self.on_done, self)
        finally:
            self._ended.set()

    def _call(self, callback: Callable[..., None], arg: Any) -> None:
        try:
            callback(arg)
        except Exception as exc:  # a display error must not stop the step's bookkeeping
            self.callback_errors.append(f"{type(exc).__name__}: {exc}")

    def cancel(self) -> bool:
        """Stop the step and everything it started; False when it had already ended."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                return False
            self.cancelled = True
            import psutil

            try:
                parent = psutil.Process(self._proc.pid)
                family = [parent, *parent.children(recursive=True)]
            except psutil.NoSuchProcess:
                return False
            for proc in family:
                try:
                    proc.terminate()
                except psutil.NoSuchProcess:
                    pass
            _, alive = psutil.wait_procs(family, timeout=TERMINATE_GRACE_S)
            for proc in alive:
                try:
                    proc.kill()
                except psutil.NoSuchProcess:
                    pass
            return True

    def wait(self, timeout_s: float | None = None) -> int | None:
        """Block until the process has ended (tests and scripts; the console never blocks)."""
        if self._proc is None:
            return None
        self._ended.wait(timeout_s)
        return self.returncode
