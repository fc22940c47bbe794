//! spindle-web: placeholder, filled in by its issue.
#![deny(missing_docs)]
