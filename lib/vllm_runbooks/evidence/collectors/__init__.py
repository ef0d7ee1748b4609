"""Evidence collectors: every module here registers its collector(s) with ``@register``.

Nothing else lists them: ``registry.discover`` imports each module, and ``order=`` sets the order
of collection and display. Add a collector by adding a module.
"""
