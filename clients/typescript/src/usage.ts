// A consumer of integration-service in TypeScript: the types come from `schema.ts` (generated
// by openapi-typescript from spec/openapi.json, `npm run generate`), the calls go through
// openapi-fetch. `tsc --noEmit` (CI: .ci/typescript-client) checks this file against the
// document; the `@ts-expect-error` lines prove that the types are precise, not `any`.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";

type Schemas = components["schemas"];
type ApiError = Schemas["ApiError"];

/** Throws the service's error body (`message`, `error_code`, `request_id`) as an Error. */
function fail(error: ApiError): never {
  throw new Error(`${error.error_code}: ${error.message} (request ${error.request_id})`);
}

/** Logs in and answers a client that sends the token on every call. */
export async function login(baseUrl: string, email: string, password: string) {
  const anonymous = createClient<paths>({ baseUrl });
  const { data, error } = await anonymous.POST("/api/v1/login", { body: { email, password } });
  if (error) fail(error);
  const token: string = data.access_token;
  const client = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${token}` } });
  const me = await client.GET("/api/v1/user");
  if (me.error) fail(me.error);
  const user: Schemas["CurrentUser"] = me.data;
  return { client, user };
}

type Client = Awaited<ReturnType<typeof login>>["client"];

const request: Schemas["FinancingRequestPayload"] = {
  ProductType: "ClassicLease",
  FinancingAmount: 2598.0,
  Period: 48,
  Currency: "EUR",
  PaymentFrequency: "Monthly",
  PaymentMethod: "DirectDebit",
  Lessee: {
    CompanyName: "ACME GmbH",
    LegalFormId: 1,
    Email: "office@acme.example",
    Addresses: [{ Line1: "Hauptstr. 1", PostCode: "10115", City: "Berlin", Country: "DE", Type: "Main" }],
  },
  FinancingObjects: [{ Quantity: 2, ObjectTypeId: 1, Name: "Laptop", NetPricePerObject: 1299.0 }],
};

/** Creates a financing request (safe to retry with the same key), reads it, runs the one-shot flow. */
export async function leasing(client: Client): Promise<Schemas["FlowResult"]> {
  const created = await client.POST("/api/v1/leasing", {
    params: { header: { "idempotency-key": "order-4711" } },
    body: request,
  });
  if (created.error) fail(created.error);
  const id: string = created.data.data.FinancingId;
  const state: string = created.data.meta.state;

  const shown = await client.GET("/api/v1/leasing/{financingId}", { params: { path: { financingId: id } } });
  if (shown.error) fail(shown.error);
  const readyToSign: boolean = shown.data.meta.ready_to_sign;

  const flow = await client.POST("/api/v1/leasing/leasing/request-flow", {
    body: {
      request_payload: request,
      e_signature_payload: { SignerName: "Max Mustermann", SignerEmail: "max@acme.example" },
      sleep_milliseconds: 0,
    },
  });
  if (flow.error) fail(flow.error);
  console.log(`request ${id} was ${state} (ready to sign: ${readyToSign}); flow ${flow.data.data.flowId}`);
  return flow.data.data;
}

/** Creates a company in the field-report mirror (forwarded upstream), renames it, reads it back. */
export async function fieldReport(client: Client): Promise<Schemas["Company"]> {
  const created = await client.POST("/api/v1/fieldreport/companies", {
    body: { Id: "new", Version: 1, Name: "ACME GmbH", IsPhysicalPerson: false },
  });
  if (created.error) fail(created.error);
  const record = String(created.data.data.Id);
  const updated = await client.PATCH("/api/v1/fieldreport/companies/{record}", {
    params: { path: { record } },
    body: { Name: "ACME Holding GmbH" },
  });
  if (updated.error) fail(updated.error);
  const shown = await client.GET("/api/v1/fieldreport/companies/{record}", { params: { path: { record } } });
  if (shown.error) fail(shown.error);
  return shown.data;
}

/** Compile-time checks: each line below must be refused by the types. */
export async function refusedByTheTypes(client: Client) {
  // @ts-expect-error the login body needs a password
  await createClient<paths>({ baseUrl: "" }).POST("/api/v1/login", { body: { email: "a@example.com" } });
  // @ts-expect-error Period is a number
  const wrongPeriod: Schemas["FinancingRequestPayload"] = { Period: "48" };
  // @ts-expect-error there is no such path
  await client.GET("/api/v1/leasings");
  // @ts-expect-error the path parameter is required
  await client.GET("/api/v1/leasing/{financingId}", {});
  const shown = await client.GET("/api/v1/user");
  // @ts-expect-error data may be undefined until the error is ruled out
  const email: string = shown.data.email;
  return { wrongPeriod, email };
}
