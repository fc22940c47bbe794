use super::Item;
use crate::c::C;

pub fn make(_: C) -> Item {
    Item
}
