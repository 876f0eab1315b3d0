//! The `integration-service` binary: the command line is `integration_service::cli`.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    integration_service::cli::main()
}
