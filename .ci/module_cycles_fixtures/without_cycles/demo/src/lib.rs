mod a;
mod c;
mod d;
mod e;

// Re-exports: `crate::Item` in d.rs leads to a/mod.rs, not back here.
pub use a::Item;
pub use d::D;
