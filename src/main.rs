use clap::Parser;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp_millis()
        .init();
    let cli = sessfs::cli::Cli::parse();
    if let Err(e) = sessfs::cli::run(cli) {
        eprintln!("sessfs: {e:#}");
        std::process::exit(1);
    }
}
