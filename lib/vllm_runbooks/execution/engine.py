"""The papermill engine the runner uses: nbclient's, with the notebook saved at most once a second.

Why: papermill rewrites the whole output notebook at every cell's start and end. A runbook's
notebook carries plotly.js (about 5 MB) from its first figure on, and nbformat's indented JSON
writer walks every node in Python, so runbook 01's 33 cells cost 66 full rewrites: about 3 s of
an 8 s run on a 2-core machine. Here a save within :data:`SAVE_EVERY_S` of the previous write is
deferred, and a timer on the execution's event loop writes it :data:`SAVE_EVERY_S` later (while a
silent cell runs, too); output a cell streams marks the notebook for the same timer, where
papermill alone waits 30 s. The notebook is always written when it completes (papermill's final
save, which follows a failing cell at once), and when the process is asked to stop (SIGTERM, as
the incident console's cancel sends, or SIGHUP, a dropped terminal). What a SIGKILL (or the OOM killer)
can take is the last second of output, where papermill alone could lose a long cell's last 30 s.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from papermill.engines import NBClientEngine, NotebookExecutionManager, papermill_engines

ENGINE_NAME = "vllm_runbooks"
#: Seconds between two writes of the output notebook while it executes.
SAVE_EVERY_S = 1.0
#: Signals after which the deferred notebook is written before the process ends as it would have.
FLUSH_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_CURRENT: list[ThrottledSaves] = []


class ThrottledSaves(NotebookExecutionManager):
    """papermill's execution manager whose intermediate saves are rate-limited (see module doc)."""

    _last_write: float | None = None
    _pending = False
    _force = False
    _timer: asyncio.TimerHandle | None = None

    def save(self, **kwargs: Any) -> None:
        """Write now when forced, first, or :data:`SAVE_EVERY_S` after the last write; else defer."""
        if kwargs.get("nb") is not None:
            self.nb = kwargs["nb"]
        now = time.monotonic()
        if self._force or self._last_write is None or now - self._last_write >= SAVE_EVERY_S:
            self._write()
        else:
            self._defer()

    def _defer(self) -> None:
        self._pending = True
        if self._timer is not None:
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                loop = asyncio.get_event_loop()  # the loop nbclient runs each cell on (jupyter_core's)
            self._timer = loop.call_later(SAVE_EVERY_S, self._timer_fired)
        except RuntimeError:  # no loop to time it on: write now rather than risk losing it
            self._write()

    def _timer_fired(self) -> None:
        self._timer = None
        self.flush()

    def _write(self) -> None:
        super().save()
        self._last_write = time.monotonic()
        self._pending = False

    def autosave_cell(self) -> None:
        """Called on every kernel message: the notebook may have changed; write it or defer it."""
        self.save()

    def flush(self) -> None:
        """Write a deferred save now (the interval has passed, or the process is about to stop)."""
        if self._pending:
            self._write()

    def notebook_complete(self, **kwargs: Any) -> None:
        """The final save is never deferred (papermill calls this in a ``finally``, so also right
        after a raising cell: its traceback is the evidence)."""
        self._force = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
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
    """While executing, SIGTERM / SIGHUP first write the deferred notebook, then act as before."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread; the final save still happens
        return
    previous = {sig: signal.getsignal(sig) for sig in FLUSH_SIGNALS}

    def handler(signum: int, frame: Any) -> None:
        for manager in list(_CURRENT):
            try:
                manager.flush()
            except Exception:  # noqa: BLE001 - stopping anyway; papermill's last write stands
                pass
        before = previous[signal.Signals(signum)]
        signal.signal(signum, before if before is not None else signal.SIG_DFL)
        if callable(before):
            before(signum, frame)
        else:
            os.kill(os.getpid(), signum)

    for sig in FLUSH_SIGNALS:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before if before is not None else signal.SIG_DFL)
