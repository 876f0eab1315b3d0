"""Drives the client that openapi-generator's `python` generator made from spec/openapi.json,
as a consumer would: log in, list the companies, read one, and send it back unchanged to its
update route (PUT). Run by tests/integration/edge/generated_clients.rs with the generated package on
PYTHONPATH; prints one JSON object of what it saw, which the test checks.

Usage: openapi_generator_python.py BASE_URL EMAIL PASSWORD
"""

import json
import sys

import openapi_generator_client as client


def main(base, email, password):
    configuration = client.Configuration(host=base)
    with client.ApiClient(configuration) as api:
        token = client.AuthApi(api).login(client.LoginRequest(email=email, password=password))
        assert isinstance(token, client.LoginResponse), type(token)
        configuration.access_token = token.access_token
        fieldreport = client.FieldreportApi(api)
        page = fieldreport.fieldreport_companies_list()
        assert isinstance(page, client.CompaniesPage), type(page)
        company = fieldreport.fieldreport_companies_show(page.data[0].id)
        assert isinstance(company, client.Company), type(company)
        written = fieldreport.fieldreport_companies_replace(company.id, client.CompaniesUpdate.from_dict(company.to_dict()))
        assert isinstance(written, client.CompaniesWrite), type(written)
        print(json.dumps({
            "token_type": token.token_type, "listed": [c.id for c in page.data],
            "read": company.to_dict(), "written": written.data.to_dict(),
        }))


if __name__ == "__main__":
    main(*sys.argv[1:4])
