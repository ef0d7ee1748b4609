"""Canary steps: every module here registers its step(s) with ``@register``; nothing else lists them."""
