"""``python -m vllm_runbooks.cli``: the same entry point as the ``vllm-runbooks`` script."""

from . import main

raise SystemExit(main())
