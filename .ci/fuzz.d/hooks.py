"""Schemathesis hooks of `.ci/fuzz`: authentication, bounds for the operations that block by
design, the server-error check, and the request count.

Loaded by schemathesis from `.ci/fuzz.d/schemathesis.toml` (`hooks = ...`). Reads
FUZZ_BASE_URL, FUZZ_EMAIL, FUZZ_PASSWORD (the user `.ci/fuzz` created) and FUZZ_COUNT_FILE
(where the number of requests is written at exit).
"""

import atexit
import json
import os
import threading
from collections import Counter

import requests
import schemathesis

BASE_URL = os.environ["FUZZ_BASE_URL"]
EMAIL = os.environ["FUZZ_EMAIL"]
PASSWORD = os.environ["FUZZ_PASSWORD"]
COUNT_FILE = os.environ["FUZZ_COUNT_FILE"]

# Operations that wait by design: `wait-ready-to-sign` sleeps `sleep_milliseconds` up to
# `max_attempts` times (up to 100 × 60 s by the document), and the one-shot flow does the same
# wait inside. Valid values are bounded to at most 3 reads 20 ms apart, so that each call
# takes well under a second; values outside the documented range are left alone, so the
# service's refusal of them (422) is still tested.
MAX_ATTEMPTS = 3
MAX_SLEEP_MS = 20

_lock = threading.Lock()
_requests = Counter()


def _login() -> str:
    answer = requests.post(f"{BASE_URL}/api/v1/login", json={"email": EMAIL, "password": PASSWORD}, timeout=30)
    answer.raise_for_status()
    return answer.json()["access_token"]


@schemathesis.auth()
class BearerToken:
    """The fuzz user's token on every request. `POST /api/v1/logout` revokes the token it is
    called with, so each of its calls gets a token of its own: the shared one stays valid."""

    def get(self, case, ctx):
        return _login()

    def set(self, case, token, ctx):
        if ctx.operation.definition.raw.get("operationId") == "logout":
            token = _login()
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}


def _bounded(value, limit, low):
    """`value` brought down to `limit` when it is a valid (documented) value above it."""
    if isinstance(value, int) and not isinstance(value, bool) and low <= value and value > limit:
        return limit
    return value


def _bound_wait(holder: dict) -> dict:
    """The wait parameters of a query or body, bounded; absent ones (the defaults, 10 reads
    1 s apart) are set to the bounds."""
    holder["max_attempts"] = _bounded(holder.get("max_attempts", MAX_ATTEMPTS), MAX_ATTEMPTS, 1)
    holder["sleep_milliseconds"] = _bounded(holder.get("sleep_milliseconds", MAX_SLEEP_MS), MAX_SLEEP_MS, 0)
    return holder


@schemathesis.hook
def before_call(context, case, kwargs):
    operation = context.operation.definition.raw.get("operationId")
    if operation == "leasing_wait_ready_to_sign" and isinstance(case.query or {}, dict):
        case.query = _bound_wait(dict(case.query or {}))
    elif operation == "leasing_request_flow" and isinstance(case.body, dict):
        _bound_wait(case.body)


@schemathesis.hook
def after_call(context, case, response):
    with _lock:
        _requests[context.operation.label] += 1


@atexit.register
def _write_count():
    with _lock:
        summary = {"requests": sum(_requests.values()), "operations": len(_requests), "per_operation": dict(_requests)}
    with open(COUNT_FILE, "w") as out:
        json.dump(summary, out, indent=1, sort_keys=True)


@schemathesis.check
def server_error_is_documented(ctx, response, case):
    """A 5xx answer passes only if the document lists that very status for the operation (the
    document has no `5XX` catch-all; response_schema_conformance then checks its body and
    `error_code`, which is never `internal_error`). Any other 5xx is a defect."""
    status = response.status_code
    if status < 500:
        return None
    documented = case.operation.definition.raw.get("responses", {})
    if str(status) not in documented:
        raise AssertionError(
            f"Undocumented server error {status} on {case.operation.label}: {response.text[:500]}"
        )
    try:
        code = json.loads(response.text).get("error_code")
    except ValueError:
        raise AssertionError(f"Server error {status} without a JSON error body: {response.text[:500]}")
    if code == "internal_error":
        raise AssertionError(f"Internal error {status} on {case.operation.label}: {response.text[:500]}")
    return None
