"""Drives the Python client that openapi-python-client generated from spec/openapi.json, as a
consumer would: log in, create and read a financing request, create, patch and delete a
field-report company, read the companies back by key (cursor pages) and copy them from their
change feed (positions passed on as `since`). Run by tests/integration/edge/python_client.rs with the generated package on
PYTHONPATH; prints one JSON object of what it saw, which the test checks.

Usage: drive.py BASE_URL EMAIL PASSWORD
"""

import json
import sys

from integration_service_client import AuthenticatedClient, Client
from integration_service_client.api.auth import login
from integration_service_client.api.fieldreport import (
    fieldreport_companies_changes,
    fieldreport_companies_create,
    fieldreport_companies_delete,
    fieldreport_companies_list,
    fieldreport_companies_show,
    fieldreport_companies_update,
)
from integration_service_client.api.leasing import leasing_create, leasing_show
from integration_service_client.models import (
    CompaniesChangePage,
    CompaniesPage,
    CompaniesUpdate,
    CompaniesWrite,
    Company,
    FinancingRequestPayload,
    LoginRequest,
    LoginResponse,
    NewCompanies,
    RequestEnvelope,
)
from integration_service_client.types import UNSET


def expect(response, status, kind):
    """The parsed answer, after checking its status and the type the client read it as."""
    assert response.status_code == status, (response.status_code, response.content)
    assert isinstance(response.parsed, kind), (type(response.parsed), response.content)
    return response.parsed


def read_back(client):
    """Every company's Id, read by key one a page, each page's next_cursor passed on as `after`."""
    ids, cursor = [], UNSET
    while True:
        page = expect(fieldreport_companies_list.sync_detailed(client=client, after=cursor, limit=1), 200, CompaniesPage)
        assert page.meta is UNSET, page
        ids.extend(company.id for company in page.data)
        if page.next_cursor is UNSET:
            return ids
        cursor = page.next_cursor


def copy_by_feed(client):
    """A copy of the companies from their change feed's start, one change a page, each page's
    next_cursor passed on as `since` until a page has no change: the Ids it holds."""
    copy, since = {}, UNSET
    while True:
        page = expect(fieldreport_companies_changes.sync_detailed(client=client, since=since, limit=1), 200,
                      CompaniesChangePage)
        if not page.data:
            assert page.next_cursor == since or since is UNSET, page
            return sorted(copy)
        for change in page.data:
            if change.change.value == "upsert":
                copy[change.id] = change.record
            else:
                copy.pop(change.id, None)
        since = page.next_cursor


def main(base, email, password):
    seen = {}
    anonymous = Client(base_url=base, raise_on_unexpected_status=True)
    token = expect(login.sync_detailed(client=anonymous, body=LoginRequest(email=email, password=password)), 200, LoginResponse)
    seen["token_type"] = token.token_type
    client = AuthenticatedClient(base_url=base, token=token.access_token, raise_on_unexpected_status=True)

    request = FinancingRequestPayload.from_dict({
        "ProductType": "ClassicLease", "FinancingAmount": 2598.0, "Period": 48, "Currency": "EUR",
        "PaymentFrequency": "Monthly", "PaymentMethod": "DirectDebit",
        "Lessee": {"CompanyName": "Python GmbH", "LegalFormId": 1, "Email": "lessee@python.example",
                   "Addresses": [{"Line1": "Hauptstr. 1", "PostCode": "10115", "City": "Berlin", "Country": "DE", "Type": "Main"}]},
        "FinancingObjects": [{"Quantity": 2, "ObjectTypeId": 1, "Name": "Laptop", "NetPricePerObject": 1299.0}],
    })
    created = expect(leasing_create.sync_detailed(client=client, body=request, idempotency_key="python-1"), 201, RequestEnvelope)
    financing_id = created.data.financing_id
    shown = expect(leasing_show.sync_detailed(financing_id, client=client), 200, RequestEnvelope)
    seen["leasing"] = {"created": financing_id, "shown": shown.data.financing_id,
                       "company": shown.data.lessee.company_name, "state": shown.data.state}

    new = NewCompanies(id="python-1", version=1, name="Python Bikes GmbH")
    write = expect(fieldreport_companies_create.sync_detailed(client=client, body=new), 201, CompaniesWrite)
    record = write.data.id
    assert isinstance(record, str), record
    patched = expect(
        fieldreport_companies_update.sync_detailed(record, client=client, body=CompaniesUpdate(name="Python Cycles GmbH", version=1)),
        200, CompaniesWrite)
    stale = fieldreport_companies_update.sync_detailed(record, client=client, body=CompaniesUpdate(name="Lost", version=1))
    second = expect(fieldreport_companies_create.sync_detailed(client=client, body=NewCompanies(id="python-2", version=1)),
                    201, CompaniesWrite).data.id
    seen["read_back"] = {"written": [record, second], "read": read_back(client), "copied": copy_by_feed(client)}
    fieldreport_companies_delete.sync_detailed(second, client=client)
    shown = expect(fieldreport_companies_show.sync_detailed(record, client=client), 200, Company)
    deleted = fieldreport_companies_delete.sync_detailed(record, client=client)
    gone = fieldreport_companies_show.sync_detailed(record, client=client)
    seen["fieldreport"] = {
        "created": write.data.name, "patched": patched.data.name, "version": patched.data.version,
        "stale": stale.status_code, "shown": shown.name, "main_contact": None if shown.main_contact is UNSET else "set",
        "deleted": deleted.status_code, "gone": gone.status_code,
    }
    print(json.dumps(seen))


if __name__ == "__main__":
    main(*sys.argv[1:4])
