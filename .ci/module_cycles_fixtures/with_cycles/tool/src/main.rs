mod cli;

pub struct Config;

fn main() {
    cli::parse();
}
