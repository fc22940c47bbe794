pub use crate::r::R;

pub struct Q;
