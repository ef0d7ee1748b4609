"""The papermill engine the runner uses: nbclient's, with the notebook saved at most once a second.

Why: papermill rewrites the whole output notebook at every cell's start and end. A runbook's
notebook carries plotly.js (about 5 MB) from its first figure on, and nbformat's indented JSON
writer walks every node in Python, so runbook 01's 33 cells cost 66 full rewrites: about 3 s of
an 8 s run on a 2-core machine. Here a save within :data:`SAVE_EVERY_S` of the previous write is
deferred, and written by the next save, the next kernel message after the interval, or at the
end. Nothing is lost: the notebook is always written when it completes (papermill's own final
save, also after a failing cell), right after a cell raised, and when the process is asked to
stop (SIGTERM, as the incident console's cancel sends) the pending state is flushed first.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from papermill.engines import NBClientEngine, NotebookExecutionManager, papermill_engines

ENGINE_NAME = "vllm_runbooks"
#: Seconds between two writes of the output notebook while it executes.
SAVE_EVERY_S = 1.0

_CURRENT: list[ThrottledSaves] = []


class ThrottledSaves(NotebookExecutionManager):
    """papermill's execution manager whose intermediate saves are rate-limited (see module doc)."""

    _last_write: float | None = None
    _pending = False
    _force = False

    def save(self, **kwargs: Any) -> None:
        """Write now when forced, first, or :data:`SAVE_EVERY_S` after the last write; else defer."""
        if kwargs.get("nb") is not None:
            self.nb = kwargs["nb"]
        now = time.monotonic()
        if self._force or self._last_write is None or now - self._last_write >= SAVE_EVERY_S:
            self._write()
        else:
            self._pending = True

    def _write(self) -> None:
        super().save()
        self._last_write = time.monotonic()
        self._pending = False

    def autosave_cell(self) -> None:
        """Called on every kernel message: write a deferred save once the interval has passed."""
        if self._pending and self._last_write is not None and time.monotonic() - self._last_write >= SAVE_EVERY_S:
            self._write()

    def flush(self) -> None:
        """Write a deferred save now (the process is about to stop)."""
        if self._pending:
            self._write()

    def cell_exception(self, cell: Any, cell_index: int | None = None, **kwargs: Any) -> None:
        """A raising cell is written at once: its traceback is the evidence."""
        super().cell_exception(cell, cell_index=cell_index, **kwargs)
        self._force = True

    def notebook_complete(self, **kwargs: Any) -> None:
        """The final save is never deferred."""
        self._force = True
        super().notebook_complete(**kwargs)


class ThrottledEngine(NBClientEngine):
    """nbclient's engine with :class:`ThrottledSaves` as its execution manager."""

    @classmethod
    def execute_managed_notebook(cls, nb_man: NotebookExecutionManager, kernel_name: str, **kwargs: Any) -> Any:
        """Run the notebook with the manager papermill built, turned into a :class:`ThrottledSaves`."""
        nb_man.__class__ = ThrottledSaves  # same state, our save(); papermill builds the manager itself
        _CURRENT.append(nb_man)  # type: ignore[arg-type]
        try:
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)
        finally:
            _CURRENT.remove(nb_man)  # type: ignore[arg-type]


papermill_engines.register(ENGINE_NAME, ThrottledEngine)


@contextmanager
def flush_on_terminate() -> Iterator[None]:
    """While executing, a SIGTERM first writes the deferred notebook, then ends the process as before."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread; the final save still happens
        return
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: Any) -> None:
        for manager in list(_CURRENT):
            try:
                manager.flush()
            except Exception:  # noqa: BLE001 - stopping anyway; papermill's last write stands
                pass
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
        if callable(previous):
            previous(signum, frame)
        else:
            os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
