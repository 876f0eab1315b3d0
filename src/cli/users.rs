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
        /// Make the user an operator: they may subscribe to every financing request's events
        /// and cancel anyone's jobs (docs/api.md, "Who sees what").
        #[arg(long)]
        operator: bool,
    },
    /// Change a user: whether they are an operator.
    Update {
        #[arg(long)]
        email: String,
        /// `true` makes the user an operator, `false` no longer one.
        #[arg(long, value_name = "true|false", action = clap::ArgAction::Set)]
        operator: bool,
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
    /// Create a named token for an automation and print it once (`<id>|<secret>`).
    Create {
        #[arg(long)]
        email: String,
        /// A name of the user's own (unique per user; `login` is kept for login tokens).
        #[arg(long)]
        name: String,
        /// An ability the token holds; repeat for more. Without any: every ability (`*`).
        /// One of `*`, `leasing`, `fieldreport:read`, `fieldreport:write`, `fieldreport:tools`,
        /// `erp`, `jobs`.
        #[arg(long = "ability", value_name = "ABILITY")]
        abilities: Vec<String>,
        /// Days until the token stops working; without it, until it is revoked.
        #[arg(long, value_name = "DAYS")]
        expires_in_days: Option<u64>,
    },
    /// List a user's tokens: names, abilities, created, last used and expiry (never secrets).
    List {
        #[arg(long)]
        email: String,
    },
    /// Revoke a user's token by name (`login`: every login token), or every token with `--all`.
    #[command(group(clap::ArgGroup::new("which").required(true).args(["name", "all"])))]
    Revoke {
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        all: bool,
    },
}

pub(super) async fn user(services: &Services, command: UserCommand) -> anyhow::Result<()> {
    let auth = &services.auth;
    match command {
        UserCommand::Create { email, name, password_stdin: _, operator } => {
            let mut password = String::new();
            std::io::stdin().lock().read_line(&mut password)?;
            let password = password.trim_end_matches(['\r', '\n']);
            let user = auth.create_user(&email, name.as_deref(), password, operator).await?;
            let role = if user.operator { "operator" } else { "user" };
            println!("created {role} {} <{}> (id {})", user.name, user.email, user.id);
        }
        UserCommand::Update { email, operator } => {
            let user = auth.set_operator(&email, operator).await?;
            let role = if user.operator { "an operator" } else { "not an operator" };
            println!("{} <{}> is {role}", user.name, user.email);
        }
        UserCommand::List => {
            for user in auth.list_users().await? {
                let role = if user.operator { "\toperator" } else { "" };
                println!("{}\t{}\t{}{role}", user.id, user.email, user.name);
            }
        }
        UserCommand::Delete { email } => {
            auth.delete_user(&email).await?;
            println!("deleted user {email} and their tokens");
        }
    }
    services.store.close().await;
    Ok(())
}

pub(super) async fn token(services: &Services, command: TokenCommand) -> anyhow::Result<()> {
    match command {
        TokenCommand::Create { email, name, abilities, expires_in_days } => {
            let token = services.auth.create_token(&email, &name, &abilities, expires_in_days).await?;
            // The token alone on standard output, so that a script can capture it.
            println!("{token}");
            eprintln!("created token {:?} for {email}; it is shown only once", name.trim());
        }
        TokenCommand::List { email } => {
            // Read before the header is printed: an unknown user is the error alone.
            let tokens = services.auth.list_tokens(&email).await?;
            println!("NAME\tABILITIES\tCREATED\tLAST USED\tEXPIRES");
            for token in tokens {
                let abilities: Vec<&str> = token.abilities.iter().map(|a| a.as_str()).collect();
                println!(
                    "{}\t{}\t{}\t{}\t{}",
                    token.name,
                    abilities.join(","),
                    time(Some(token.created_at)),
                    time(token.last_used_at),
                    time(token.expires_at),
                );
            }
        }
        TokenCommand::Revoke { email, name: Some(name), .. } => {
            let count = services.auth.revoke_named(&email, &name).await?;
            println!("revoked {count} token(s) named {:?} of {email}", name.trim());
        }
        TokenCommand::Revoke { email, name: None, .. } => {
            let count = services.auth.revoke_all(&email).await?;
            println!("revoked {count} token(s) of {email}");
        }
    }
    services.store.close().await;
    Ok(())
}

/// An epoch-milliseconds time as RFC 3339 in UTC, `-` when there is none.
fn time(at: Option<i64>) -> String {
    at.and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| "-".into())
}
