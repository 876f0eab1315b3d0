"""Schemathesis hooks of `.ci/fuzz`: authentication, records to find, bounds for the operations
that block by design, the server-error check, and the request count.

Loaded by schemathesis from `.ci/fuzz.d/schemathesis.toml` (`hooks = ...`). Reads
FUZZ_BASE_URL, FUZZ_EMAIL, FUZZ_PASSWORD (the user `.ci/fuzz` created) and FUZZ_COUNT_FILE
(where the number of requests is written at exit).
"""

import atexit
import json
import os
import random
import threading
from collections import Counter

import requests
import schemathesis
from schemathesis.core.parameters import ParameterLocation

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


def _seed() -> dict:
    """Records for the generated requests to find: random ids mostly answer 404, which checks
    only the error shape. Three financing requests at the leasing simulator, the field-report
    mirror (three records of every entity set, created through the service), ERP customers,
    contacts and articles. Returns known ids by path parameter (`record` by entity route)."""
    headers = {"Authorization": f"Bearer {_login()}"}

    def call(method, path, **kwargs):
        answer = requests.request(method, f"{BASE_URL}{path}", headers=headers, timeout=120, **kwargs)
        answer.raise_for_status()
        return answer.json()

    doc = requests.get(f"{BASE_URL}/docs/openapi.json", timeout=30).json()
    example = doc["components"]["schemas"]["FinancingRequestPayload"]["example"]
    financing_ids = [call("POST", "/api/v1/leasing", json=example)["data"]["FinancingId"] for _ in range(3)]
    records = {}
    for entity in call("GET", "/api/v1/fieldreport/show")["data"]:
        route = entity["entity"]
        records[route] = [
            call("POST", f"/api/v1/fieldreport/{route}", json={"Id": f"fuzz-{n}", "Version": 1})["data"]["Id"]
            for n in range(3)
        ]
    erp = {}
    for model in ("customer", "contact", "article"):
        call("GET", f"/api/v1/erp/setup/{model}")
        erp[model] = [record["id"] for record in call("GET", f"/api/v1/erp/show/{model}")["data"]]
    return {"financingId": financing_ids, "record": records, "erp": erp}


KNOWN = _seed()
_choice = random.Random(int(os.environ.get("FUZZ_SEED", "0")))


def _use_known_ids(case) -> None:
    """In the coverage and fuzzing phases, half of the valid path parameters that name a record
    are replaced by a known one (schemathesis re-validates an edited case, so the checks judge
    what was sent). Invalid (negative) ones stay as generated, and the stateful phase keeps
    the ids it took from the records it created."""
    parameters = case.path_parameters
    meta = getattr(case, "_meta", None)
    if not parameters or meta is None or meta.phase.name not in ("coverage", "fuzzing"):
        return
    if meta.is_negative_at(ParameterLocation.PATH):
        return
    if _choice.random() < 0.5:
        return
    path = case.operation.path
    if "financingId" in parameters:
        parameters["financingId"] = _choice.choice(KNOWN["financingId"])
    if "record" in parameters:
        route = path.split("/")[4]
        if KNOWN["record"].get(route):
            parameters["record"] = _choice.choice(KNOWN["record"][route])
    if path in ("/api/v1/erp/show/{model}/{entity}", "/api/v1/erp/update/{model}/{entity}"):
        model = _choice.choice(sorted(KNOWN["erp"]))
        if KNOWN["erp"][model]:
            parameters["model"] = model
            parameters["entity"] = _choice.choice(KNOWN["erp"][model])


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
    _use_known_ids(case)
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
