//! Running the service: the command line, backups, metrics, jobs, the service's own lists read by
//! key (jobs, subscriptions, deliveries), crashes, a database outage, the operator's files, the
//! README tour, mail and storage backends, and the simulators.

mod backup;
mod cli;
mod cli_output;
mod crash;
mod cursor_lists;
mod dashboard_instances;
mod database_outage;
mod jobs;
mod mail_smtp;
mod metrics;
mod metrics_size;
mod operator_files;
mod readme_tour;
mod sandbox;
mod sandbox_erp;
mod storage_s3;
