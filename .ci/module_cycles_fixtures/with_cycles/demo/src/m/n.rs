use super::M;

pub fn helper() -> Option<M> {
    None
}
