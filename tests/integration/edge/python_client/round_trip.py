"""Sends a record of every field-report entity set, as the client that openapi-python-client
generated read it, back to its update routes unchanged: read one record of the set
(`fieldreport_<set>_show`), turn it into the update body with `<Set>Update.from_dict(record.to_dict())`
and send it with PUT (`_replace`), then read it again and send that with PATCH (`_update`). Run
by tests/integration/edge/python_client.rs, which seeds and syncs the sets first and names them (the
service's registry of mirrored sets); prints, per set, the records read and written, which the
test compares.

Usage: round_trip.py BASE_URL EMAIL PASSWORD '[{"route": "costCenters", "set": "CostCenters"}, ...]'
"""

import importlib
import json
import re
import sys

from integration_service_client import AuthenticatedClient, Client, models
from integration_service_client.api.auth import login
from integration_service_client.models import LoginRequest


def snake(name):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def operation(route, action):
    return importlib.import_module(f"integration_service_client.api.fieldreport.fieldreport_{snake(route)}_{action}")


def expect(response, status):
    assert response.status_code == status, (response.status_code, response.content)
    return response.parsed


def round_trip(client, route, set_name):
    page = expect(operation(route, "list").sync_detailed(client=client, limit=1), 200)
    record_id = page.data[0].id
    update = getattr(models, f"{set_name}Update")
    read = expect(operation(route, "show").sync_detailed(record_id, client=client), 200)
    put = expect(operation(route, "replace").sync_detailed(record_id, client=client, body=update.from_dict(read.to_dict())), 200)
    again = expect(operation(route, "show").sync_detailed(record_id, client=client), 200)
    patch = expect(operation(route, "update").sync_detailed(record_id, client=client, body=update.from_dict(again.to_dict())), 200)
    return {"read": read.to_dict(), "put": put.data.to_dict(), "again": again.to_dict(), "patch": patch.data.to_dict()}


def main(base, email, password, entities):
    anonymous = Client(base_url=base, raise_on_unexpected_status=True)
    token = expect(login.sync_detailed(client=anonymous, body=LoginRequest(email=email, password=password)), 200)
    client = AuthenticatedClient(base_url=base, token=token.access_token, raise_on_unexpected_status=True)
    print(json.dumps({entity["set"]: round_trip(client, entity["route"], entity["set"]) for entity in json.loads(entities)}))


if __name__ == "__main__":
    main(*sys.argv[1:5])
