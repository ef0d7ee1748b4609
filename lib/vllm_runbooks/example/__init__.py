"""The smallest runbook package, for ``runbooks/_template.ipynb``: copy its shape for a new runbook.

Why it ships: the template imports ``vllm_runbooks.example.stage``, and a test executes the
template end to end, so the skeleton a new engineer copies is known to run (config → run → a
result that shows, glues and saves itself).
"""
