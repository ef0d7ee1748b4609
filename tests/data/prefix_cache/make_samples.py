"""Regenerate the CONSTRUCTED sample request files in this folder (deterministic).

.venv/bin/python tests/data/prefix_cache/make_samples.py
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = "vllm-runbooks-tiny"

INSTRUCTIONS = " ".join(
    [
        "You are the support assistant for the platform team of a GPU serving cluster.",
        "Answer briefly, cite the runbook step you rely on, and never invent node names.",
        "When a node fails to start the model server, first collect evidence: image tag and digest,",
        "the CUDA runtime of the image, the host driver version and branch, the GPU list, the launch",
        "command with secrets removed, and the full startup log. Then compare the container CUDA with",
        "the driver's maximum CUDA before changing any flag. Do not change max model length, tensor",
        "parallel size or memory settings while the environment question is open.",
    ]
    * 6
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_node_status",
            "description": "Return the health of one cluster node.",
            "parameters": {"type": "object", "properties": {"node": {"type": "string"}}, "required": ["node"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "open_change",
            "description": "Open a change record for a node.",
            "parameters": {
                "type": "object",
                "properties": {"node": {"type": "string"}, "kind": {"type": "string", "enum": ["driver", "image"]}},
                "required": ["node", "kind"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "page_owner",
            "description": "Page the owner of a node.",
            "parameters": {"type": "object", "properties": {"node": {"type": "string"}}, "required": ["node"]},
        },
    },
]

QUESTIONS = [
    "Node 12 fails at CUDA init after the image change. What first?",
    "Which driver branch do we need for the cu130 image?",
    "Can I raise max-model-len to make the server start?",
    "How do I tell a driver mismatch from a bad flag?",
    "What goes into the change record for node 7?",
    "Is the forward compatibility package usable on GeForce cards?",
    "Who approves a driver upgrade on the shared cluster?",
    "The log says no kernel image is available. What does that mean?",
]


def body(system: str, question: str, tools: list | None = None, **extra) -> dict:
    b = {
        "model": MODEL,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}],
        "temperature": 0,
        "max_tokens": 32,
    }
    if tools is not None:
        b["tools"] = tools
    b.update(extra)
    return b


def write(name: str, rows: list[dict]) -> None:
    (HERE / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def main() -> None:
    # The system prompt opens with the time of the request: every request differs at token ~15.
    write(
        "timestamp_system.jsonl",
        [
            body(f"Current time: 2026-11-29T10:{i:02d}:{(7 * i) % 60:02d}Z. {INSTRUCTIONS}", q, TOOLS)
            for i, q in enumerate(QUESTIONS)
        ],
    )
    # Identical system prompt, but the tools come from an unordered collection: the order changes.
    orders = list(itertools.permutations(TOOLS))
    write(
        "tool_order.jsonl",
        [body(INSTRUCTIONS, q, list(orders[i % len(orders)])) for i, q in enumerate(QUESTIONS)],
    )
    # The healthy case: only the last user message varies.
    write("clean.jsonl", [body(INSTRUCTIONS, q, TOOLS) for q in QUESTIONS])
    # Batch-API lines with a request id in the system prompt (a uuid).
    ids = [
        "3f2b9c1e-8a4d-4c1b-9f7e-1d2c3b4a5f60",
        "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
        "0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e",
    ]
    write(
        "request_id_batch.jsonl",
        [
            {
                "custom_id": f"r{i}",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": body(f"{INSTRUCTIONS} Request id: {rid}.", QUESTIONS[i], TOOLS),
            }
            for i, rid in enumerate(ids)
        ],
    )


if __name__ == "__main__":
    main()
