"""Build glue: map the repository's one copy of the runbooks, notebooks and examples into the package.

Why a setup.py beside pyproject.toml: the repository keeps runbook templates, the companion
notebooks and the sample incidents at the top level (where people look for them), and the wheel
and sdist must carry them inside ``vllm_runbooks/shipped/`` (where ``vllm_runbooks.resources``
finds them with ``importlib.resources``). setuptools' ``package_dir`` does that mapping; the
package list must then be computed, which pyproject.toml alone cannot express. Everything else
about the project is in pyproject.toml.
"""

from setuptools import find_packages, setup

#: package inside the wheel → the repository folder it is built from
SHIPPED = {
    "vllm_runbooks.shipped.runbooks": "runbooks",
    "vllm_runbooks.shipped.notebooks": "notebooks",
    "vllm_runbooks.shipped.examples": "examples",
}

setup(
    packages=[*find_packages("lib"), *SHIPPED],
    package_dir={"": "lib", **SHIPPED},
    package_data={
        "vllm_runbooks": ["data/*.yaml", "data/*.json", "data/**/*.yaml", "data/**/*.json"],
        "vllm_runbooks.shipped.runbooks": ["*.ipynb"],
        "vllm_runbooks.shipped.notebooks": ["*.ipynb"],
        "vllm_runbooks.shipped.examples": ["suite.yaml", "incidents/**/*", "fleet/**/*"],
    },
    exclude_package_data={"": ["*.pyc", "__pycache__/*"]},
)
