// A parent that uses its child (not only declares it); the child reaches back with `super::`.
mod n;

pub struct M;

pub fn run() {
    n::helper();
}
