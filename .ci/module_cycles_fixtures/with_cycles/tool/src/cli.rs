use crate::Config;

pub fn parse() -> Option<Config> {
    None
}
