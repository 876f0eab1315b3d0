//! `user` and `token`: users and their personal access tokens.

use std::io::BufRead;

use crate::assembly::Services;

use clap::Subcommand;

#[derive(Subcommand)]
pub(super) enum UserCommand {
    /// Create a user; the password is read from the first line of standard input.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: Option<String>,
        /// Read the password from standard input (required: passwords never go on the command line).
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// List users.
    List,
    /// Delete a user and every token of theirs.
    Delete {
        #[arg(long)]
        email: String,
    },
}

#[derive(Subcommand)]
pub(super) enum TokenCommand {
    /// Revoke every token of a user.
    Revoke {
        #[arg(long)]
        email: String,
    },
}

pub(super) async fn user(services: &Services, command: UserCommand) -> anyhow::Result<()> {
    let auth = &services.auth;
    match command {
        UserCommand::Create { email, name, password_stdin: _ } => {
            let mut password = String::new();
            std::io::stdin().lock().read_line(&mut password)?;
            let password = password.trim_end_matches(['\r', '\n']);
            let user = auth.create_user(&email, name.as_deref(), password).await.map_err(describe)?;
            println!("created user {} <{}> (id {})", user.name, user.email, user.id);
        }
        UserCommand::List => {
            for user in auth.list_users().await.map_err(describe)? {
                println!("{}\t{}\t{}", user.id, user.email, user.name);
            }
        }
        UserCommand::Delete { email } => {
            auth.delete_user(&email).await.map_err(describe)?;
            println!("deleted user {email} and their tokens");
        }
    }
    services.store.close().await;
    Ok(())
}

pub(super) async fn token(services: &Services, command: TokenCommand) -> anyhow::Result<()> {
    match command {
        TokenCommand::Revoke { email } => {
            let count = services.auth.revoke_all(&email).await.map_err(describe)?;
            println!("revoked {count} token(s) of {email}");
        }
    }
    services.store.close().await;
    Ok(())
}

/// Turns validation errors into readable lines for the terminal.
fn describe(error: crate::auth::AuthError) -> anyhow::Error {
    match error {
        crate::auth::AuthError::Invalid(fields) => {
            let lines: Vec<String> =
                fields.iter().flat_map(|(f, ms)| ms.iter().map(move |m| format!("{f}: {m}"))).collect();
            anyhow::anyhow!(lines.join("; "))
        }
        other => anyhow::anyhow!(other),
    }
}
