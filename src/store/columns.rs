//! How the row structs read the columns whose stored form is not their field's type, through
//! `#[sqlx(try_from = "...")]` on a `#[derive(sqlx::FromRow)]` field.

/// A flag stored as an INTEGER 0 or 1: the schema has no BOOLEAN, which SQLite lacks, and
/// sqlx's `Any` driver decodes a `bool` only from a boolean column.
#[derive(sqlx::Type)]
#[sqlx(transparent, no_pg_array)]
pub struct IntBool(i64);

impl From<IntBool> for bool {
    fn from(flag: IntBool) -> bool {
        flag.0 != 0
    }
}

/// A list of names stored as one space-separated text.
#[derive(sqlx::Type)]
#[sqlx(transparent, no_pg_array)]
pub struct SpaceSeparated(String);

impl From<SpaceSeparated> for Vec<String> {
    fn from(names: SpaceSeparated) -> Vec<String> {
        names.0.split_whitespace().map(str::to_string).collect()
    }
}
