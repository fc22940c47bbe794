pub mod y;

pub struct Top;
