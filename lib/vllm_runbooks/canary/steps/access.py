"""Canary step 8: access control — a request without the key must be refused.

Why: a change of image or launch command can silently drop ``--api-key`` (or the gateway in front
of the server). When a key is configured (the variable named by ``api_key_env`` is set), a
request without it and one with a wrong key must get 401/403. An endpoint that answers without
any key configured is a warning finding: anyone who reaches it can use it.
"""

from __future__ import annotations

import os
import secrets

import httpx

from ...client import clean_text, direct_http_client
from ...execution.parameters import is_env_name
from ..registry import Outcome, StepContext, failed, passed, register, skipped

REFUSED = (401, 403)


def _status(ctx: StepContext, headers: dict[str, str]) -> tuple[int | None, str]:
    try:
        with direct_http_client(timeout=httpx.Timeout(ctx.timeout, connect=min(5.0, ctx.timeout))) as http:
            r = http.get(ctx.client.base_url + "/v1/models", headers=headers)
            return r.status_code, clean_text(r.text[:200])
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"


@register("access_control", "Access control (requests without the key)", 8)
def access_control(ctx: StepContext) -> Outcome:
    """/v1/models without a key and with a wrong key: refused when a key is configured."""
    name = ctx.config.api_key_env
    key_set = bool(name and os.environ.get(name))
    shown = name if name is None or is_env_name(name) else "(not a variable name: not shown, it may be the key)"
    without, body = _status(ctx, {})
    wrong, _ = _status(ctx, {"Authorization": f"Bearer wrong-{secrets.token_hex(8)}"})
    details = {
        "key_configured": key_set,
        "api_key_env": shown,
        "without_key": without,
        "wrong_key": wrong,
    }
    if without is None:
        return failed(f"/v1/models could not be reached: {body}", **details)
    if key_set:
        if without not in REFUSED and not 200 <= without < 300:
            return failed(f"/v1/models answered HTTP {without}: access control cannot be judged", body, **details)
        problems = [
            f"{label} answered HTTP {code}"
            for label, code in (("without a key", without), ("with a wrong key", wrong))
            if code not in REFUSED
        ]
        if problems:
            return failed("a key is configured but not enforced: " + "; ".join(problems), **details)
        return passed(f"requests without the key and with a wrong key are refused (HTTP {without}, {wrong})", **details)
    if without in REFUSED:
        return passed(f"the endpoint refuses requests without a key (HTTP {without})", **details)
    if not 200 <= without < 300:
        return failed(
            f"/v1/models answered HTTP {without} without a key: access control cannot be judged", body, **details
        )
    warning = (
        f"warning: the endpoint answers without any API key (HTTP {without}); no key is configured "
        f"({shown or 'api_key_env'} unset): anyone who reaches it can use it"
    )
    return skipped(warning, not_applicable=True, warning=warning, **details)
