//! The ERP area (`src/erp/`, `api/erp/`): webhooks, the helper routes, and registering the
//! webhooks from the command line.

mod routes;
mod webhook_registration;
