// Nested braces one way, `super::super::` in code the other way.
use crate::x::{
    Top,
    y::{Helper, Other as Renamed},
};

pub fn f(_: Top, _: Helper, _: Renamed) {}
