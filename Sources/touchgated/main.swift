// touchgated: flags, config, wiring, signals. Ready when the socket accepts connections.
import ArgumentParser
import Foundation
import Glibc
import Logging
import TouchGateConfig
import TouchGateDaemon
import TouchGateReader

@main
struct Touchgated: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "touchgated",
        abstract: "The touchgate daemon: fingerprint readers, policy and counters for pam_touchgate.so.")

    @Option(help: "Unix socket to listen on (default: $RUNTIME_DIRECTORY/touchgated.sock, else /run/touchgate/touchgated.sock).")
    var socket: String?

    @Option(help: "State directory for templates, counters and the secret (default: $STATE_DIRECTORY, else /var/lib/touchgate).")
    var stateDir: String?

    @Option(help: "Configuration file; a missing file means defaults, an invalid one stops the daemon.")
    var config: String = ConfigFile.defaultPath

    @Option(help: "Where the boot identity is read.")
    var bootIdFile: String = "/proc/sys/kernel/random/boot_id"

    @Flag(help: "Log debug details (never a template byte or a password).")
    var debug = false

    func run() throws {
        let env = ProcessInfo.processInfo.environment
        let level: Logger.Level = debug ? .debug : .info
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        let log = Logger(label: "touchgated")

        let settings: DaemonConfig
        do {
            settings = try ConfigFile.load(path: config)
        } catch {
            // An invalid file stops the daemon at start, with the line and the reason.
            throw ValidationError("\(config): \(error)")
        }
        let socketPath = socket ?? env["RUNTIME_DIRECTORY"].map { "\($0.split(separator: ":").first ?? "")/touchgated.sock" }
            ?? "/run/touchgate/touchgated.sock"
        let stateDirectory = stateDir ?? env["STATE_DIRECTORY"].flatMap { $0.split(separator: ":").first.map(String.init) }
            ?? "/var/lib/touchgate"

        // Signals are taken by sigwait below, so no thread is interrupted by them.
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, s) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)

        let store: TemplateStore
        do { store = try TemplateStore(stateDirectory: stateDirectory) } catch {
            throw ValidationError("state directory \(stateDirectory): \(error)")
        }
        let reader = LibfprintReader { message in log.info("\(message)") }
        let daemon = Daemon(policy: settings.policy, allowRemote: settings.allowRemote,
                            passwordService: settings.passwordService, store: store, reader: reader, log: log)
        let server: Server
        do { server = try Server(daemon: daemon, socketPath: socketPath) } catch {
            throw ValidationError("socket \(socketPath): \(error)")
        }
        Thread.detachNewThread { server.run() }
        server.notifyReady()
        log.info("listening on \(socketPath)")

        var received: Int32 = 0
        sigwait(&signals, &received)
        log.info("stopping on signal \(received)")
        server.removeSocket()
    }
}
