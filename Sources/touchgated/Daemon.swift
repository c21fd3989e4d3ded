// touchgated's life: config, wiring, readiness, signals, shutdown. The flags (Touchgated.swift) and a
// start without arguments (systemd's) both come here.
import Glibc
import Logging
import TouchGateConfig
import TouchGateCore
import TouchGateDBus
import TouchGateReader
import TouchGateSocket
import TouchGateThreads

/// What the daemon is told at start. A field left nil falls back to the environment systemd sets,
/// then to the default (docs/spec.md §6, touchgated(8)).
struct DaemonOptions: Sendable {
    static let defaultBootIdFile = "/proc/sys/kernel/random/boot_id"

    var socket: String?
    var stateDir: String?
    var printStore: String?
    var config: String?
    var bootIdFile = DaemonOptions.defaultBootIdFile
    var debug = false

    /// $CONFIGURATION_DIRECTORY/touchgate.conf under systemd (ConfigurationDirectory=), else
    /// /etc/touchgate/touchgate.conf.
    var configPath: String {
        config ?? environment("CONFIGURATION_DIRECTORY").map { "\(firstPath($0))/touchgate.conf" } ?? ConfigFile.defaultPath
    }
}

/// Runs the daemon until SIGTERM, SIGINT or SIGHUP; returns the exit status. A reason it cannot
/// start is one line on stderr and status 1.
func serve(_ options: DaemonOptions) -> Int32 {
    let configPath = options.configPath
    let level: Logger.Level = options.debug ? .debug : .info
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
    do { settings = try ConfigFile.load(path: configPath) } catch {
        // An invalid file stops the daemon at start, with the line and the reason.
        return startFailure("\(configPath): \(error)")
    }
    let socketPath = options.socket ?? environment("RUNTIME_DIRECTORY").map { "\(firstPath($0))/touchgated.sock" }
        ?? "/run/touchgate/touchgated.sock"
    let stateDirectory = options.stateDir ?? environment("STATE_DIRECTORY").map(firstPath) ?? "/var/lib/touchgate"
    let printDirectory = options.printStore ?? settings.printStore

    // Signals are taken by sigwait below, so no thread is interrupted by them.
    var signals = sigset_t()
    sigemptyset(&signals)
    for s in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, s) }
    pthread_sigmask(SIG_BLOCK, &signals, nil)
    signal(SIGPIPE, SIG_IGN)

    // The boot identity decides passwordRequired(boot); without it that rule cannot hold, so stop.
    guard let bootID = readSmallFile(options.bootIdFile)?.trimmingWhitespace, !bootID.isEmpty else {
        return startFailure("cannot read the boot identity from \(options.bootIdFile)")
    }
    let state: Directory, prints: Directory
    do { state = try Directory.openRoot(stateDirectory) } catch { return startFailure("state directory \(stateDirectory): \(error)") }
    do { prints = try Directory.openRoot(printDirectory) } catch { return startFailure("print store \(printDirectory): \(error)") }
    let stale = StartUp.removeStaleTemporaries(state: state, printStore: prints)
    if stale > 0 { log.notice("removed \(stale) temporary files left by interrupted writes") }

    let reader = LibfprintReader { message in log.info("\(message)") }
    StartUp.migrateLegacyPrints(state: state, files: PrintFiles(root: prints, reader: reader)) { log.notice("\($0)") }

    let listenFD: Int32
    let boundPath: String?
    if let passed = ListeningSocket.fromActivation() {
        listenFD = passed
        boundPath = nil
    } else {
        do { listenFD = try ListeningSocket.bind(socketPath) } catch { return startFailure("socket \(socketPath): \(error)") }
        boundPath = socketPath
    }
    let setup = CoreSetup(policy: settings.policy, allowRemote: settings.allowRemote, bootID: bootID,
                          stateDirectory: state, printStore: prints, reader: reader,
                          passwords: PAMPasswordChecker(service: settings.passwordService), log: log, audit: audit)
    let started: Result<Listener, StorageError> = onCoreLoop {
        do throws(StorageError) {
            let core = try Core(setup)
            return .success(Listener(core: core, fd: listenFD, log: log))
        } catch { return .failure(error) }
    }
    let listener: Listener
    switch started {
    case .success(let l): listener = l
    case .failure(let error): return startFailure("state directory \(stateDirectory): \(error)")
    }
    ListeningSocket.notifyReady()
    log.info("listening on \(boundPath ?? "the socket passed by systemd")")
    if settings.fprintdAPI {
        // After READY, so the bus never delays the first PAM prompt; and after the reader has
        // settled, so libfprint's start-up (reader thread) and GDBus's (core loop) never run
        // GLib's one-time initialisation side by side.
        CoreLoop.shared.post {
            CoreLoop.shared.task {
                _ = await listener.core.readerDescription()
                _ = await FprintFrontEnd.start(core: listener.core, log: log)
            }
        }
    }

    var received: Int32 = 0
    sigwait(&signals, &received)
    log.info("stopping on signal \(received)")
    let stopped = Semaphore()
    CoreLoop.shared.post {
        CoreLoop.shared.task {
            await stop(listener)
            stopped.signal()
        }
    }
    stopped.wait()
    if let boundPath { _ = unlink(boundPath) }
    return EXIT_SUCCESS
}

/// Shutdown: no new clients; every prompt ends with systemCancel and says why; replies go out
/// (within a second); state is flushed and the reader closed.
@CoreActor private func stop(_ listener: Listener) async {
    listener.stopAccepting()
    listener.core.beginShutdown()
    let drained = OneShot<Void>()
    let deadline = LoopTimer(after: 1000) { drained.set(()) }
    let poll = LoopTimer(milliseconds: 10) {
        if listener.busyConnections == 0 { drained.set(()) }
        return !drained.isSet
    }
    await drained.wait()
    deadline.cancel()
    poll.cancel()
    await listener.core.finishShutdown()
}

/// The D-Bus front-end, kept for the daemon's life.
@CoreActor private enum FprintFrontEnd {
    static var service: FprintService?
    static func start(core: Core, log: Logger) async -> Bool {
        let s = FprintService(core: core, log: log)
        service = s
        return await s.start()
    }
}

/// Runs `body` on the core loop and waits for its result (start-up only).
private func onCoreLoop<T: Sendable>(_ body: @escaping @Sendable @CoreActor () -> T) -> T {
    let done = Semaphore()
    let box = ResultBox<T>()
    CoreLoop.shared.post { box.value = body(); done.signal() }
    done.wait()
    return box.value!
}

private final class ResultBox<T>: @unchecked Sendable { var value: T? }

/// A reason the daemon cannot start: one line on stderr and exit status 1 (not a usage error).
private func startFailure(_ reason: String) -> Int32 {
    let line = "touchgated: \(reason)\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
    return EXIT_FAILURE
}

private func environment(_ name: String) -> String? {
    guard let p = getenv(name), p.pointee != 0 else { return nil }
    return String(cString: p)
}

/// systemd joins several directories with ':'; the first is ours.
private func firstPath(_ value: String) -> String { String(value.split(separator: ":").first ?? "") }

func readSmallFile(_ path: String, limit: Int = 256) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: limit)
    var count = 0
    while count < limit {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, limit - count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        count += n
    }
    guard count > 0 else { return nil }
    return String(decoding: buffer[0..<count], as: UTF8.self)
}

extension String {
    /// Without the blanks (space, tab, CR, LF) at either end; by bytes, so no Unicode tables are
    /// touched for a 37-byte boot id.
    var trimmingWhitespace: String {
        let bytes = Array(utf8)
        let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }
        guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
