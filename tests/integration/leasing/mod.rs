//! The leasing area (`src/leasing/`, `api/leasing/`): the step-by-step routes, the one-shot
//! flow, owners, the calculator, the provider's mTLS, and the state watcher.

mod calculate;
mod flow;
mod mtls;
mod owners;
mod provider;
mod requests;
mod watch;
