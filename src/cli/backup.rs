//! `backup` and `restore`: a copy of the SQLite database taken while the service runs, and its
//! return once every instance has stopped (docs/operations.md, "Backups").

use std::path::Path;

use crate::store::DatabaseUrl;
use crate::store::backup;

pub(super) fn backup(url: &DatabaseUrl, to: &Path) -> anyhow::Result<()> {
    let backup = backup::backup(url, to)?;
    println!(
        "backed up {} to {} ({} bytes, migration {})",
        url.redacted(),
        backup.path.display(),
        backup.bytes,
        backup.migration
    );
    Ok(())
}

pub(super) fn restore(url: &DatabaseUrl, from: &Path) -> anyhow::Result<()> {
    let restore = backup::restore(url, from)?;
    if let Some(set_aside) = &restore.set_aside {
        println!("the database it replaces was moved to {}", set_aside.display());
    }
    println!("restored {} from {} (migration {})", restore.database.display(), from.display(), restore.migration);
    if let Some(reason) = &restore.feed_not_carried {
        eprintln!(
            "warning: the replaced database could not be read ({reason}), so change-feed positions its consumers \
             reached after the backup are not refused: have them export the sets again"
        );
    }
    if restore.migration < restore.known {
        println!(
            "the backup is older than this release: `serve` (or `migrate`) applies migrations {} to {} at its start",
            restore.migration + 1,
            restore.known
        );
    }
    println!(
        "next: start the service, then bring the mirrors up to date (`fieldreport sync`, `erp pull`) and push what \
         waits (`fieldreport post`)"
    );
    Ok(())
}
