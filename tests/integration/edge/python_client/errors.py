"""Provokes the error answers of the service, each through the client that openapi-python-client
generated, strict as a consumer would run it (`raise_on_unexpected_status=True`): the client must
take the status as one the operation declares and read the body into its typed model, with the
`error_code` the service sent (an `error_code` outside the model's enum raises `ValueError`, a
status the operation does not declare raises `UnexpectedStatus`). Faults are injected into the
simulators over plain HTTP, as the tests do. Run by tests/integration/edge/python_client.rs, which
names the answers the service can give and the ones not provoked here (and why); prints one
JSON object: the answers provoked and the failures, which the test checks.

Usage: errors.py BASE_URL EMAIL PASSWORD '{"reader": TOKEN, "other": TOKEN, "fieldreport": URL, "leasing": URL, "webhook_secret": TEXT}'
"""

import json
import sys
import time
import traceback
import urllib.request

from integration_service_client import AuthenticatedClient, Client
from integration_service_client.api.auth import current_user, login
from integration_service_client.api.erp import erp_show_model, erp_webhook_post
from integration_service_client.api.fieldreport import (
    fieldreport_companies_changes,
    fieldreport_companies_create,
    fieldreport_companies_list,
    fieldreport_companies_show,
    fieldreport_companies_update,
    fieldreport_sync,
)
from integration_service_client.api.jobs import jobs_cancel, jobs_create, jobs_show
from integration_service_client.api.leasing import (
    leasing_create,
    leasing_subscription_create,
    leasing_wait_ready_to_sign,
)
from integration_service_client.models import (
    CompaniesUpdate,
    FinancingRequestPayload,
    JobCreate,
    JobCreateKind,
    LoginRequest,
    NewCompanies,
    SubscriptionCreate,
    WebhookPayload,
)

seen, failures = [], []


def post_json(url, body, method="POST"):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method=method,
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        return answer.status


def fault(root, rule):
    """A fault of the simulator at `root` (its `/__sandbox/faults`)."""
    post_json(f"{root}/__sandbox/faults", rule)


def clear_faults(root):
    urllib.request.urlopen(urllib.request.Request(f"{root}/__sandbox/faults", method="DELETE")).close()


def check(status, code, name, call):
    """Calls `call` (a generated operation's `sync_detailed`) and records what the client read."""
    try:
        response = call()
        parsed = response.parsed
        got = getattr(parsed, "error_code", None)
        got = getattr(got, "value", got)
        assert response.status_code == status, f"status {response.status_code}, expected {status}: {response.content!r}"
        assert got == code, f"error_code {got!r} read as {type(parsed).__name__}, expected {code!r}: {response.content!r}"
        seen.append({"status": status, "code": code, "operation": name, "model": type(parsed).__name__})
    except Exception:  # noqa: BLE001 — every failure is reported, the driver goes on
        failures.append({"status": status, "code": code, "operation": name, "error": traceback.format_exc()})


def leasing_request(company):
    return FinancingRequestPayload.from_dict({
        "ProductType": "ClassicLease", "FinancingAmount": 2598.0, "Period": 48, "Currency": "EUR",
        "PaymentFrequency": "Monthly", "PaymentMethod": "DirectDebit",
        "Lessee": {"CompanyName": company, "LegalFormId": 1, "Email": "lessee@python.example",
                   "Addresses": [{"Line1": "Hauptstr. 1", "PostCode": "10115", "City": "Berlin", "Country": "DE", "Type": "Main"}]},
        "FinancingObjects": [{"Quantity": 2, "ObjectTypeId": 1, "Name": "Laptop", "NetPricePerObject": 1299.0}],
    })


def main(base, email, password, more):
    more = json.loads(more)
    anonymous = Client(base_url=base, raise_on_unexpected_status=True)
    token = login.sync_detailed(client=anonymous, body=LoginRequest(email=email, password=password)).parsed.access_token
    client = AuthenticatedClient(base_url=base, token=token, raise_on_unexpected_status=True)
    reader = AuthenticatedClient(base_url=base, token=more["reader"], raise_on_unexpected_status=True)
    other = AuthenticatedClient(base_url=base, token=more["other"], raise_on_unexpected_status=True)
    fieldreport, leasing = more["fieldreport"], more["leasing"]

    # The guard and the login.
    stranger = AuthenticatedClient(base_url=base, token="1|not-a-token", raise_on_unexpected_status=True)
    check(401, "unauthenticated", "current_user", lambda: current_user.sync_detailed(client=stranger))
    check(401, "invalid_credentials", "login",
          lambda: login.sync_detailed(client=anonymous, body=LoginRequest(email=email, password="wrong password")))
    check(403, "missing_ability", "fieldreport_companies_create",
          lambda: fieldreport_companies_create.sync_detailed(client=reader, body=NewCompanies(id="denied", version=1)))

    # Requests the service refuses before any work: a malformed query, a body over the limit,
    # an invalid body, an unknown record.
    check(400, "bad_request", "fieldreport_companies_list",
          lambda: fieldreport_companies_list.sync_detailed(client=client, limit=-1))
    check(413, "payload_too_large", "fieldreport_companies_create",
          lambda: fieldreport_companies_create.sync_detailed(client=client, body=NewCompanies(id="big", version=1, name="x" * (2 << 20))))
    check(422, "validation_failed", "fieldreport_companies_create",
          lambda: fieldreport_companies_create.sync_detailed(client=client, body=NewCompanies(id="", version=1)))
    check(404, "not_found", "fieldreport_companies_show",
          lambda: fieldreport_companies_show.sync_detailed("no-such-company", client=client))
    check(404, "not_found", "erp_show_model", lambda: erp_show_model.sync_detailed("no_such_model", client=client))
    # A position of the change feed that this database never answered (newer than its newest change).
    check(410, "cursor_expired", "fieldreport_companies_changes",
          lambda: fieldreport_companies_changes.sync_detailed(client=client, since="999999999"))

    # A stale Version, and the upstream's own conflict.
    created = fieldreport_companies_create.sync_detailed(client=client, body=NewCompanies(id="errors-1", version=1, name="Errors GmbH"))
    assert created.status_code == 201, created.content
    record = created.parsed.data.id  # the field-report system's Id
    check(409, "conflict", "fieldreport_companies_update",
          lambda: fieldreport_companies_update.sync_detailed(record, client=client, body=CompaniesUpdate(name="Stale", version=7)))
    fault(fieldreport, {"path_prefix": "/odata/Companies", "status": 409, "times": 1})
    check(409, "upstream_conflict", "fieldreport_companies_update",
          lambda: fieldreport_companies_update.sync_detailed(record, client=client, body=CompaniesUpdate(name="Conflicting")))
    clear_faults(fieldreport)

    # The field-report system failing a read (a sync of one set): every attempt fails alike.
    for status, code, rule in [
        (502, "upstream_error", {"status": 500}),
        (502, "upstream_invalid_response", {"status": 200, "body": "not json"}),
        (502, "upstream_unavailable", {"status": 0}),
        (503, "upstream_busy", {"status": 429, "retry_after_seconds": 1}),
        (504, "upstream_timeout", {"status": 200, "delay_ms": 4000}),
    ]:
        fault(fieldreport, {"path_prefix": "/odata/Companies", "times": 100, **rule})
        check(status, code, "fieldreport_sync", lambda: fieldreport_sync.sync_detailed("companies", client=client))
        clear_faults(fieldreport)

    # The leasing provider's answers (500 with the leasing code, `success: false`).
    for marker, code in [("[declined]", "declined"), ("[cancelled]", "cancelled"), ("[missing-info]", "missing_info"),
                         ("[never-ready]", "not_ready_to_sign"), ("[contract-printed]", "already_past_signing")]:
        financing = leasing_create.sync_detailed(client=client, body=leasing_request(f"Errors GmbH {marker}"))
        assert financing.status_code == 201, financing.content
        financing_id = financing.parsed.data.financing_id
        check(500, code, "leasing_wait_ready_to_sign",
              lambda: leasing_wait_ready_to_sign.sync_detailed(financing_id, client=client, max_attempts=2, sleep_milliseconds=10))
    for code, rule in [
        ("upstream_error", {"status": 500}),
        ("upstream_rejected", {"status": 400}),
        ("upstream_invalid_response", {"status": 200, "body": "not json"}),
        ("upstream_unavailable", {"status": 0}),
        ("upstream_busy", {"status": 429, "retry_after_seconds": 1}),
        ("upstream_timeout", {"status": 200, "delay_ms": 4000}),
    ]:
        fault(leasing, {"path_prefix": "/", "times": 100, **rule})
        check(500, code, "leasing_create", lambda: leasing_create.sync_detailed(client=client, body=leasing_request("Errors GmbH")))
        clear_faults(leasing)

    # Subscriptions over the limit (LEASING_SUBSCRIPTIONS_PER_USER=1).
    hook = SubscriptionCreate(url="http://127.0.0.1:9/leasing-events")
    first = leasing_subscription_create.sync_detailed(client=client, body=hook)
    assert first.status_code == 201, first.content
    check(409, "too_many_subscriptions", "leasing_subscription_create",
          lambda: leasing_subscription_create.sync_detailed(client=client, body=hook))

    # Idempotency-Keys: one sent again with another body, and one past the rate
    # (IDEMPOTENCY_KEYS_PER_MINUTE_PER_USER=2; a repeat of a stored key is not counted).
    def keyed(company, key):
        return lambda: leasing_create.sync_detailed(client=client, body=leasing_request(company), idempotency_key=key)
    assert keyed("Keyed GmbH", "errors-1")().status_code == 201
    check(422, "idempotency_key_reused", "leasing_create", keyed("Other GmbH", "errors-1"))
    assert keyed("Keyed GmbH", "errors-2")().status_code == 201
    check(429, "too_many_idempotency_keys", "leasing_create", keyed("Keyed GmbH", "errors-3"))

    # Financing requests past the rate (LEASING_CREATES_PER_MINUTE_PER_USER=20), by another
    # user, whose allowance the creates above did not touch.
    for n in range(20):
        made = leasing_create.sync_detailed(client=other, body=leasing_request(f"Rated GmbH {n}"))
        assert made.status_code == 201, made.content
    check(429, "too_many_financing_requests", "leasing_create",
          lambda: leasing_create.sync_detailed(client=other, body=leasing_request("Rated GmbH")))

    # Jobs: someone else's, an ended one, too many (JOBS_PER_MINUTE_PER_USER=2).
    job = jobs_create.sync_detailed(client=client, body=JobCreate(kind=JobCreateKind.FIELDREPORT_SYNC, target="tags"))
    assert job.status_code == 202, job.content
    job_id = job.parsed.id
    check(403, "not_job_owner", "jobs_cancel", lambda: jobs_cancel.sync_detailed(job_id, client=other))
    while jobs_show.sync_detailed(job_id, client=client).parsed.status.value in ("queued", "running"):
        time.sleep(0.05)
    check(409, "job_ended", "jobs_cancel", lambda: jobs_cancel.sync_detailed(job_id, client=client))
    jobs_create.sync_detailed(client=client, body=JobCreate(kind=JobCreateKind.FIELDREPORT_SYNC, target="tags"))
    check(429, "too_many_jobs", "jobs_create",
          lambda: jobs_create.sync_detailed(client=client, body=JobCreate(kind=JobCreateKind.FIELDREPORT_SYNC, target="tags")))

    # ERP webhooks: from outside ERP_WEBHOOK_ALLOWLIST (the address a trusted proxy names),
    # and without ERP_WEBHOOK_SECRET.
    payload = WebhookPayload.from_dict({"entityName": "customer", "entityId": "1", "type": "update"})
    foreign = Client(base_url=base, raise_on_unexpected_status=True, headers={"x-forwarded-for": "203.0.113.7"})
    check(403, "forbidden_source", "erp_webhook_post", lambda: erp_webhook_post.sync_detailed(client=foreign, body=payload))
    check(401, "invalid_webhook_secret", "erp_webhook_post",
          lambda: erp_webhook_post.sync_detailed(client=anonymous, body=payload, secret="not the secret"))

    # Last, as it locks this address out of logging in as this user for a while.
    for _ in range(50):
        answer = login.sync_detailed(client=anonymous, body=LoginRequest(email=email, password="wrong password"))
        if answer.status_code == 429:
            break
    check(429, "too_many_attempts", "login",
          lambda: login.sync_detailed(client=anonymous, body=LoginRequest(email=email, password="wrong password")))

    print(json.dumps({"seen": seen, "failures": failures}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
