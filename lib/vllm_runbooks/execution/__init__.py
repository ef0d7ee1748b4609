"""The execution layer: everything that knows about templates, parameters, run directories,
run.json, notebook output and HTML copies.

``templates`` (finding templates, the one parameters-cell reader), ``parameters`` (checks before a
run), ``runner`` (``run_runbook``), ``runjson`` (run.json, the manifest, the manifest-checked
artefact reader), ``notebook_output`` / ``report_view`` / ``offline_html`` (what a run writes for
people), ``scraps``, ``suite``, ``junit`` and ``runs`` (reading runs back). Importing this package
imports none of them: reading a result must not pull in papermill.
"""
