fn main() {
    sessfs::alloc::configure();
    // A shell asking for completions (`COMPLETE=bash sessfs -- …`) is answered and exits here.
    clap_complete::CompleteEnv::with_factory(<sessfs::cli::Cli as clap::CommandFactory>::command)
        .var(sessfs::shell::VAR)
        .complete();
    // `fuser::session` warns only that it could not unmount again what `sessfs umount`
    // (fusermount3 -u) already unmounted: noise in the log of every stopped mount. Set
    // before `RUST_LOG` is read, so `RUST_LOG=warn` keeps it quiet and naming the module
    // there still overrides it.
    env_logger::Builder::new()
        .filter_level(log::LevelFilter::Warn)
        .filter_module("fuser::session", log::LevelFilter::Error)
        .parse_env(env_logger::Env::default())
        .format_timestamp_millis()
        // A mount's stderr is its log file: bounded (see `CappedLog`).
        .target(env_logger::Target::Pipe(Box::new(
            sessfs::mount::CappedLog::new(std::io::stderr(), sessfs::mount::LOG_LIMIT),
        )))
        .init();
    let cli = <sessfs::cli::Cli as clap::Parser>::parse();
    if !matches!(cli.command, sessfs::cli::Command::Mount { .. }) {
        // `sessfs list | head` should end quietly when head is done, as other Unix tools
        // do, rather than fail on a closed pipe. (The mount process keeps the default.)
        // SAFETY: resetting a signal disposition before any thread starts.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    if let Err(e) = sessfs::cli::run(cli) {
        eprintln!("sessfs: {e:#}");
        std::process::exit(1);
    }
}
