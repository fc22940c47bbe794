// An inline module is part of its file.
pub mod inner {
    use crate::u::U;

    pub struct I(pub U);
}
