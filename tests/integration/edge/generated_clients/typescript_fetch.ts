// Drives the client that openapi-generator's `typescript-fetch` generator made from
// spec/openapi.json, as a consumer would: log in, list the companies by key (each page's
// `next_cursor` passed on as `after`), copy them from their change feed (each `next_cursor`
// passed on as `since`), read one, and send it back unchanged to its update route (PUT). tests/integration/edge/generated_clients.rs compiles it with
// the generated sources (tsc --strict) and runs it with Node.js; it prints one JSON object of
// what it saw, which the test checks.
//
// Usage: node typescript_fetch.js BASE_URL EMAIL PASSWORD

import {
  AuthApi,
  CompaniesChangePage,
  CompaniesPage,
  CompaniesUpdateFromJSON,
  CompanyToJSON,
  Configuration,
  FieldreportApi,
} from "./generated/index";

// typescript-fetch keeps a record's additional properties by spreading the JSON it read into
// the model, so `CompanyToJSON` writes each field twice: under its wire name (`Name`) and under
// the model's (`name`). What the driver prints is the wire's half: the fields whose names start
// with a capital, as every field-report field's does.
function wire(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(wire);
  }
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).filter(([key]) => /^[A-Z]/.test(key)).map(([key, field]) => [key, wire(field)]),
    );
  }
  return value;
}

declare const process: { argv: string[]; exitCode?: number };

async function main(base: string, email: string, password: string): Promise<void> {
  const token = await new AuthApi(new Configuration({ basePath: base })).login({ loginRequest: { email, password } });
  const fieldreport = new FieldreportApi(new Configuration({ basePath: base, accessToken: async () => token.accessToken }));
  // One company a page, by cursor, to the last page (which has no `nextCursor`).
  const listed: (string | undefined)[] = [];
  let after: string | undefined = undefined;
  do {
    const page: CompaniesPage = await fieldreport.fieldreportCompaniesList({ limit: 1, after });
    listed.push(...page.data.map((c) => c.id));
    after = page.nextCursor;
  } while (after !== undefined);
  // The change feed from its start, one change a page, until a page has none.
  const copied = new Set<string>();
  let since: string | undefined = undefined;
  for (;;) {
    const changes: CompaniesChangePage = await fieldreport.fieldreportCompaniesChanges({ limit: 1, since });
    if (changes.data.length === 0) {
      break;
    }
    for (const change of changes.data) {
      if (change.change === "upsert") {
        copied.add(change.id);
      } else {
        copied.delete(change.id);
      }
    }
    since = changes.nextCursor;
  }
  // A record's `Id` is optional in its schema (the field-report system's model).
  const record = listed[0];
  if (record === undefined) {
    throw new Error("a listed company without an Id");
  }
  const company = await fieldreport.fieldreportCompaniesShow({ record });
  const written = await fieldreport.fieldreportCompaniesReplace({
    record,
    companiesUpdate: CompaniesUpdateFromJSON(CompanyToJSON(company)),
  });
  console.log(JSON.stringify({
    token_type: token.tokenType,
    listed,
    copied: [...copied].sort(),
    read: wire(CompanyToJSON(company)),
    written: wire(CompanyToJSON(written.data)),
  }));
}

main(process.argv[2], process.argv[3], process.argv[4]).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
