// An item of a/mod.rs: the edge goes to a/mod.rs, not to a/b.rs.
pub struct C(pub crate::a::Item);
