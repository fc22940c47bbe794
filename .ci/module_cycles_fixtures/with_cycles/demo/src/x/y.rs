pub struct Helper;
pub struct Other;

pub fn g() {
    super::super::p::f(super::Top, Helper, Other);
}
