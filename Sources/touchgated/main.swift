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
            // Audit records go to syslog (authpriv) and, for the operator, to stderr as well.
            var stream = StreamLogHandler.standardError(label: label)
            stream.logLevel = level
            guard label == "touchgate.audit" else { return stream }
            return MultiplexLogHandler([stream, SyslogLogHandler(identifier: "touchgated")])
        }
        let log = Logger(label: "touchgated")
        let audit = Logger(label: "touchgate.audit")

        let settings: DaemonConfig
        do {
            settings = try ConfigFile.load(path: config)
        } catch {
            // An invalid file stops the daemon at start, with the line and the reason.
            throw startFailure("\(config): \(error)")
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

        // The boot identity decides passwordRequired(boot); without it that rule cannot hold, so stop.
        guard let bootID = try? String(contentsOfFile: bootIdFile, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines), !bootID.isEmpty else {
            throw startFailure("cannot read the boot identity from \(bootIdFile)")
        }
        let reader = LibfprintReader { message in log.info("\(message)") }
        let daemon: Daemon
        do {
            daemon = try Daemon(policy: settings.policy, allowRemote: settings.allowRemote,
                                stateDirectory: stateDirectory, bootID: bootID, reader: reader,
                                passwords: PAMPasswordChecker(service: settings.passwordService),
                                log: log, audit: audit)
        } catch {
            throw startFailure("state directory \(stateDirectory): \(error)")
        }
        let server: Server
        do { server = try Server(daemon: daemon, socketPath: socketPath) } catch {
            throw startFailure("socket \(socketPath): \(error)")
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

/// A reason the daemon cannot start: one line on stderr and exit status 1 (not a usage error).
private func startFailure(_ reason: String) -> ExitCode {
    FileHandle.standardError.write(Data("touchgated: \(reason)\n".utf8))
    return ExitCode.failure
}
