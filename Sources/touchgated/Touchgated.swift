// touchgated: its flags, and the start without them.
import ArgumentParser
import Glibc

@main
struct Touchgated: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "touchgated",
        abstract: "The touchgate daemon: fingerprint readers, policy and counters for pam_touchgate.so.")

    @Option(
        help:
            "Unix socket to listen on (default: $RUNTIME_DIRECTORY/touchgated.sock, else /run/touchgate/touchgated.sock; a socket passed by systemd is used instead)."
    )
    var socket: String?

    @Option(help: "State directory for counters and the secret (default: $STATE_DIRECTORY, else /var/lib/touchgate).")
    var stateDir: String?

    @Option(
        help:
            "Where enrolled prints are kept, in fprintd's layout (default: the config's print_store, else /var/lib/fprint)."
    )
    var printStore: String?

    @Option(
        help:
            "Configuration file; a missing file means defaults, an invalid one stops the daemon (default: $CONFIGURATION_DIRECTORY/touchgate.conf, else /etc/touchgate/touchgate.conf)."
    )
    var config: String?

    @Option(help: "Where the boot identity is read.")
    var bootIdFile: String = DaemonOptions.defaultBootIdFile

    @Flag(help: "Log debug details (never a template byte or a password).")
    var debug = false

    @Flag(
        help:
            "Write every sealed print back in the clear, in fprintd's format, and exit (with the daemon stopped, before going back to fprintd). Until the mark it leaves in the state directory is removed, the daemon starts only with seal = no."
    )
    var exportPrints = false

    /// The arguments as the kernel recorded them. A statically linked Swift runtime captures argv
    /// in an ELF constructor, which some preloaded libraries (pam_wrapper, used by the tests and
    /// the benchmark) leave empty; /proc/self/cmdline is always right.
    ///
    /// Without arguments — how systemd starts it — every setting is a default or comes from the
    /// environment, so the daemon starts at once: the argument parser's reflection costs a few
    /// milliseconds at every start (docs/benchmark-changes.md).
    static func main() {
        // Each request's sentences are in its own LOCALE; gettext would let the daemon's own
        // LANGUAGE (one started by hand from a shell) choose over it, for everyone.
        unsetenv("LANGUAGE")
        let recorded = readSmallFile("/proc/self/cmdline", limit: 1 << 16).map {
            $0.split(separator: "\0", omittingEmptySubsequences: false).dropFirst().dropLast().map(String.init)
        }
        let arguments = recorded ?? Array(CommandLine.arguments.dropFirst())
        if arguments.isEmpty { Glibc.exit(serve(DaemonOptions())) }
        main(arguments)
    }

    func run() throws {
        let options = DaemonOptions(
            socket: socket, stateDir: stateDir, printStore: printStore, config: config,
            bootIdFile: bootIdFile, debug: debug, exportPrints: exportPrints)
        let status = serve(options)
        if status != EXIT_SUCCESS { throw ExitCode(status) }
    }
}
