mod config;

fn main() {
    match config::load("settings.toml") {
        Ok(text) => println!("{} bytes of settings", text.len()),
        Err(e) => eprintln!("{e}"),
    }
}
