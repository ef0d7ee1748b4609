"""vllm-runbooks: evidence, decisions and validation for vLLM launches, as executed notebooks."""

__version__ = "0.1.0"
