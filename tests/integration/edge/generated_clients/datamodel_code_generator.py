"""Drives the pydantic models that datamodel-code-generator made from spec/openapi.json (it
makes models, not calls: the calls are httpx's), as a consumer would: log in, list the
companies, read one, and send it back unchanged to its update route (PUT), each body written
from a model and each answer read into one. Run by tests/integration/edge/generated_clients.rs with
the generated module on PYTHONPATH; prints one JSON object of what it saw, which the test checks.

Usage: datamodel_code_generator.py BASE_URL EMAIL PASSWORD
"""

import json
import sys

import httpx

import datamodel_models as models


def body(model):
    """A model as the JSON it stands for: only the fields it was given, by their wire names."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def answer(response, status, model):
    assert response.status_code == status, (response.status_code, response.text)
    return model.model_validate(response.json())


def main(base, email, password):
    with httpx.Client(base_url=base) as http:
        login = models.LoginRequest(email=email, password=password)
        token = answer(http.post("/api/v1/login", json=body(login)), 200, models.LoginResponse)
        http.headers["authorization"] = f"Bearer {token.access_token}"
        page = answer(http.get("/api/v1/fieldreport/companies"), 200, models.CompaniesPage)
        record = page.data[0].Id
        company = answer(http.get(f"/api/v1/fieldreport/companies/{record}"), 200, models.Company)
        update = models.CompaniesUpdate.model_validate(body(company))
        written = answer(http.put(f"/api/v1/fieldreport/companies/{record}", json=body(update)), 200, models.CompaniesWrite)
        print(json.dumps({
            "token_type": token.token_type, "listed": [c.Id for c in page.data],
            "read": body(company), "written": body(written.data),
        }))


if __name__ == "__main__":
    main(*sys.argv[1:4])
