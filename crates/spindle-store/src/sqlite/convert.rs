//! SQLite's errors as the store's: one place for the store, its leases and its batch log.

use crate::types::StoreError;

pub(super) fn write_error(e: rusqlite::Error) -> StoreError {
    StoreError::Write(e.to_string())
}

pub(super) fn read_error(e: rusqlite::Error) -> StoreError {
    StoreError::Read(e.to_string())
}
