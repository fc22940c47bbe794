use std::fmt;

use crate::Item;
use crate::e::E;

pub struct D(pub E, pub Item);

impl fmt::Debug for D {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        std::mem::drop(f);
        Ok(())
    }
}
