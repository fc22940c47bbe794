// A module brought in by `use`, then a path through it.
use crate::t;

pub struct U;

pub fn h() -> Option<t::inner::I> {
    None
}
