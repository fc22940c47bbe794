//! Doc links such as [`crate::d::D`] are not imports.

#[cfg(test)]
use crate::d::D;

pub struct E;

/* crate::d::D /* nested crate::d */ still a comment crate::d */

pub fn text() -> (&'static str, &'static str, char, char) {
    ("crate::d::D \" crate::d", r#"crate::d::D " crate::d"#, '"', '\'')
}

pub fn chars<'a>(s: &'a str) -> impl Iterator<Item = char> + use<'a> {
    s.chars()
}

#[cfg(test)]
mod e_tests;

#[cfg(all(test, unix))]
mod tests {
    use crate::d::D;
}
