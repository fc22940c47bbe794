use crate::q::*;

pub fn g() -> Option<Q> {
    None
}
