"""A tiny Qwen2 chat model and tokenizer, generated locally and deterministically (no download).

Why: the embedded target must serve a real model through vLLM's real code paths (chat template,
tool parser, structured output, prefix cache) on a 2-core CPU, offline. Random weights are fine
for that; what matters is that the model is small, seeded (byte-identical on rebuild), has a
ChatML/Hermes chat template that renders ``tools``, and *finishes* constrained outputs.

The finishing trick: random weights put near-uniform mass on every token, and a JSON grammar
allows unlimited whitespace, so a constrained string or object never closes. One residual
dimension is held constant (embedding column constant, attention/MLP output rows zeroed), which
turns the matching ``lm_head`` column into a per-token logit bias; whitespace-only, control and
partial-UTF-8 tokens get about -20, so bounded tool schemas and ``json_schema`` outputs finish.

Heavy imports (torch, transformers, tokenizers) happen only inside ``build_into`` so importing
this module stays cheap; ``ensure_model`` runs the build in a subprocess of the target's Python.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..records import Record
from .paths import cache_root

#: bump when the builder's output changes, so cached models are rebuilt.
BUILDER_VERSION = "2"

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"]
TOOL_TOKENS = ["<tool_call>", "</tool_call>"]

CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}"
    "{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}"
    "{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n\' }}'
    "{%- elif messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'user' or (message['role'] == 'system' and not loop.first) %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- elif message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant' }}"
    "{%- if message['content'] %}{{- '\\n' + message['content'] }}{%- endif %}"
    "{%- for tool_call in message.get('tool_calls') or [] %}"
    "{%- set fn = tool_call['function'] if tool_call['function'] is defined else tool_call %}"
    "{{- '\\n<tool_call>\\n{\"name\": \"' + fn['name'] + '\", \"arguments\": ' }}"
    "{%- if fn['arguments'] is string %}{{- fn['arguments'] }}"
    "{%- else %}{{- fn['arguments'] | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message['role'] == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1]['role'] != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message['content'] + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1]['role'] != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@dataclass(frozen=True)
class ModelSpec:
    """Everything that determines the model's bytes; its hash names the cache directory."""

    seed: int = 0
    vocab_size: int = 2048
    hidden_size: int = 128
    intermediate_size: int = 256
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    max_positions: int = 4096
    bias: float = -20.0
    corpus_lines: int = 4000

    def key(self) -> str:
        """A short hash of the spec and builder version: the cache directory's name, so a change rebuilds."""
        blob = json.dumps({"builder": BUILDER_VERSION, **asdict(self)}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


@dataclass
class ModelBuild(Record):
    """Where the model lies and whether this call built it (``built``) or found it cached."""

    SCHEMA = "target_model_build"
    ok: bool
    path: str
    key: str
    built: bool = False
    elapsed_s: float = 0.0
    error: str = ""


def model_dir(spec: ModelSpec = ModelSpec(), root: Path | None = None) -> Path:
    """Where the model for ``spec`` is (or would be) cached."""
    return (root or cache_root()) / f"model-{spec.key()}"


def is_complete(path: Path) -> bool:
    """``build_info.json`` is written last, so its presence means the directory is whole."""
    return (path / "build_info.json").is_file()


def ensure_model(
    spec: ModelSpec = ModelSpec(),
    root: Path | None = None,
    python: str | None = None,
    timeout_s: float = 600.0,
) -> ModelBuild:
    """Return the cached model, building it first (in a subprocess of ``python``) when missing."""
    dest = model_dir(spec, root)
    if is_complete(dest):
        return ModelBuild(True, str(dest), spec.key())
    dest.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f".building-{spec.key()}-", dir=dest.parent))
    env = dict(os.environ)
    # The builder runs as ``-m vllm_runbooks.target.model`` in ``python``, which may be another
    # interpreter: it gets this package alone on its path (a folder holding only a link to it),
    # never the whole site-packages this one was installed into.
    package_link = Path(tempfile.mkdtemp(prefix=".pkg-", dir=dest.parent))
    (package_link / "vllm_runbooks").symlink_to(Path(__file__).resolve().parents[1], target_is_directory=True)
    env["PYTHONPATH"] = os.pathsep.join([str(package_link), env.get("PYTHONPATH", "")])
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
    cmd = [
        python or sys.executable,
        "-m",
        "vllm_runbooks.target.model",
        "--out",
        str(tmp),
        "--spec",
        json.dumps(asdict(spec)),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(package_link, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
        return ModelBuild(
            False,
            str(dest),
            spec.key(),
            elapsed_s=time.monotonic() - start,
            error=f"model build did not finish: {exc}",
        )
    shutil.rmtree(package_link, ignore_errors=True)  # the link only, not the package it points at
    if proc.returncode != 0 or not is_complete(tmp):
        shutil.rmtree(tmp, ignore_errors=True)
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        return ModelBuild(
            False,
            str(dest),
            spec.key(),
            elapsed_s=time.monotonic() - start,
            error=f"model build failed (exit {proc.returncode}):\n{tail}",
        )
    try:
        os.rename(tmp, dest)
    except OSError:  # another process finished first: keep theirs
        shutil.rmtree(tmp, ignore_errors=True)
    return ModelBuild(is_complete(dest), str(dest), spec.key(), built=True, elapsed_s=time.monotonic() - start)


# -- the build itself (runs in the target's Python) -------------------------------------------
def _corpus(spec: ModelSpec) -> list[str]:
    """Seeded text with prose, JSON and tool-call lines, so braces and quotes get BPE merges."""
    rng = random.Random(spec.seed)
    words: tuple[str, ...] = tuple(
        (
            "the a an of to in is it for on with as at by from this that server model cache prefix "
            "token request response driver cuda image node cluster gpu memory latency tool call weather "
            "city unit celsius fahrenheit name value status ok error true false null result query user "
            "assistant system hello world check run test canary load block hit miss time"
        ).split()
    )
    syllables = [c + v for c in "bcdfghklmnprstvwz" for v in "aeiou"] + ["th", "ch", "sh", "er", "ing", "ly"]
    words += tuple("".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(3000))
    keys = ("name", "arguments", "city", "unit", "value", "status", "id", "type", "count", "ok", "query")
    lines = []
    for i in range(spec.corpus_lines):
        kind = i % 4
        if kind == 0:
            lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(4, 16))).capitalize() + ".")
        elif kind == 1:
            obj = {
                rng.choice(keys): rng.choice([rng.choice(words), rng.randint(0, 999), True, None])
                for _ in range(rng.randint(1, 4))
            }
            lines.append(json.dumps(obj))
        elif kind == 2:
            args = {rng.choice(keys): rng.choice(words) for _ in range(rng.randint(1, 3))}
            call = json.dumps({"name": rng.choice(words), "arguments": args})
            lines.append(f"<tool_call>\n{call}\n</tool_call>")
        else:
            lines.append(
                f"<|im_start|>{rng.choice(['user', 'assistant', 'system'])}\n"
                + " ".join(rng.choice(words) for _ in range(rng.randint(2, 10)))
                + "<|im_end|>"
            )
    return lines


def _token_bytes(token: str, byte_decoder: dict[str, int]) -> bytes | None:
    try:
        return bytes(byte_decoder[c] for c in token)
    except KeyError:
        return None


def _biased(raw: bytes) -> bool:
    """Whitespace-only, control-character and partial-UTF-8 tokens: the ones that never end."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    if not text.strip():
        return True
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)


def build_into(out: Path, spec: ModelSpec) -> None:
    """Write config, safetensors weights, tokenizer and generation config into ``out``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(spec.seed)
    random.seed(spec.seed)

    # Tokenizer: byte-level BPE trained on seeded text.
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size,
        special_tokens=SPECIAL_TOKENS,
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(spec), trainer)
    hf_tok = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<unk>",
    )
    hf_tok.add_tokens(TOOL_TOKENS)  # not special: the Hermes parser must see them in the text
    hf_tok.chat_template = CHAT_TEMPLATE
    hf_tok.model_max_length = spec.max_positions
    n_tokens = len(hf_tok)
    vocab = ((n_tokens + 63) // 64) * 64

    eos = hf_tok.convert_tokens_to_ids("<|im_end|>")
    bos = hf_tok.convert_tokens_to_ids("<|endoftext|>")
    config = Qwen2Config(
        vocab_size=vocab,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        max_position_embeddings=spec.max_positions,
        rms_norm_eps=1e-6,
        rope_theta=10000.0,
        tie_word_embeddings=False,
        bos_token_id=bos,
        eos_token_id=eos,
        pad_token_id=bos,
        use_sliding_window=False,
    )
    config.dtype = "bfloat16"
    model = Qwen2ForCausalLM(config).to(torch.float32).eval()

    with torch.no_grad():
        # Residual dimension 0 is a constant carrier for the bias.
        model.model.embed_tokens.weight[:, 0] = 1.0
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight[0, :] = 0.0
            layer.mlp.down_proj.weight[0, :] = 0.0
        probe = torch.arange(min(n_tokens, 256)).unsqueeze(0)
        hidden = model.model(input_ids=probe).last_hidden_state[0, :, 0]
        carrier = float(hidden.mean())
        spread = float(hidden.std())
        byte_decoder = {v: k for k, v in _bytes_to_unicode().items()}
        special = set(SPECIAL_TOKENS) | set(TOOL_TOKENS)
        bias = torch.zeros(vocab)
        for token_id in range(vocab):
            if token_id >= n_tokens:
                bias[token_id] = 2 * spec.bias  # padding rows: never sampled
                continue
            token = hf_tok.convert_ids_to_tokens(token_id)
            if token in special:
                continue
            raw = _token_bytes(token, byte_decoder)
            if raw is None or _biased(raw):
                bias[token_id] = spec.bias
        model.lm_head.weight[:, 0] = bias / carrier

    model = model.to(torch.bfloat16)
    model.generation_config.bos_token_id = bos
    model.generation_config.eos_token_id = [eos, bos]
    model.generation_config.pad_token_id = bos
    model.save_pretrained(out, safe_serialization=True)
    hf_tok.save_pretrained(out)
    info = {
        "builder_version": BUILDER_VERSION,
        "spec": asdict(spec),
        "key": spec.key(),
        "tokens": n_tokens,
        "vocab_size": vocab,
        "biased_tokens": int((bias < 0).sum()) - (vocab - n_tokens),
        "carrier_mean": round(carrier, 4),
        "carrier_std": round(spread, 4),
        "files": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir()) if p.is_file()},
        "note": "random weights, generated locally by vllm_runbooks.target.model; not a language model",
    }
    (out / "build_info.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte→printable-character map used by byte-level BPE token strings."""
    bs = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs), strict=True))


def main(argv: list[str] | None = None) -> int:
    """``python -m vllm_runbooks.target.model --out DIR``: build the model in a fresh interpreter."""
    import argparse

    parser = argparse.ArgumentParser(description="build the tiny local model into a directory")
    parser.add_argument("--out", required=True)
    parser.add_argument("--spec", default="{}", help="ModelSpec fields as JSON")
    args = parser.parse_args(argv)
    spec = ModelSpec(**json.loads(args.spec))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    build_into(out, spec)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
