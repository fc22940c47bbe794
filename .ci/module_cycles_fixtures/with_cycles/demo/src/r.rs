pub struct R;

pub fn f() {
    crate::s::g()
}
