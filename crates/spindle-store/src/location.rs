//! Where the data lives, as `spindle serve --db` names it.

use std::path::{Path, PathBuf};

/// A database location: a SQLite file path, or a PostgreSQL connection URL.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file (created when missing).
    Sqlite(PathBuf),
    /// A PostgreSQL connection string: `postgres://user:password@host:port/database?...` or
    /// `postgresql://...` (`?host=/run/postgresql` for a Unix socket).
    Postgres(String),
}

impl Location {
    /// Reads `--db`: a `postgres://` or `postgresql://` URL names PostgreSQL, anything else a
    /// SQLite file.
    pub fn parse(text: &str) -> Location {
        if is_postgres_url(text) {
            Location::Postgres(text.to_string())
        } else {
            Location::Sqlite(PathBuf::from(text))
        }
    }

    /// As [`Location::parse`], for a value already held as a path.
    pub fn from_path(path: &Path) -> Location {
        match path.to_str() {
            Some(text) if is_postgres_url(text) => Location::Postgres(text.to_string()),
            _ => Location::Sqlite(path.to_path_buf()),
        }
    }
}

fn is_postgres_url(text: &str) -> bool {
    let lower = text.get(..13).unwrap_or(text).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// The password never reaches a log line or an error message.
impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Location::Postgres(url) => f
                .debug_tuple("Postgres")
                .field(&crate::postgres::describe_url(url))
                .finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_postgres_and_everything_else_is_a_file() {
        assert_eq!(
            Location::parse("postgres://u@h/db"),
            Location::Postgres("postgres://u@h/db".into())
        );
        assert_eq!(
            Location::parse("PostgreSQL://h/db"),
            Location::Postgres("PostgreSQL://h/db".into())
        );
        assert_eq!(
            Location::parse("spindle.db"),
            Location::Sqlite("spindle.db".into())
        );
        assert_eq!(
            Location::parse("./postgres://x"),
            Location::Sqlite("./postgres://x".into())
        );
        assert_eq!(
            Location::from_path(Path::new("postgresql:///db?host=/tmp")),
            Location::Postgres("postgresql:///db?host=/tmp".into())
        );
    }

    #[test]
    fn debug_output_hides_the_password() {
        let text = format!(
            "{:?}",
            Location::parse("postgres://alice:s3cret@db.example:6543/spindle")
        );
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("db.example:6543/spindle"), "{text}");
    }
}
