// touchgated's life: config, wiring, readiness, signals, shutdown. The flags (Touchgated.swift) and a
// start without arguments (systemd's) both come here.
import CTouchGateLoop
import Glibc
import Logging
import TouchGateConfig
import TouchGateCore
import TouchGateDBus
import TouchGateReader
import TouchGateSocket
import TouchGateThreads
import TouchGateWire

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
    /// Write sealed prints back in the clear and exit, instead of serving.
    var exportPrints = false

    /// $CONFIGURATION_DIRECTORY/touchgate.conf under systemd (ConfigurationDirectory=), else
    /// /etc/touchgate/touchgate.conf.
    var configPath: String {
        config ?? environment("CONFIGURATION_DIRECTORY").map { "\(firstPath($0))/touchgate.conf" }
            ?? ConfigFile.defaultPath
    }
}

/// Runs the daemon until SIGTERM, SIGINT or SIGHUP; returns the exit status. A reason it cannot
/// start is one line on stderr and status 1.
func serve(_ options: DaemonOptions) -> Int32 {
    // tpm2-tss writes its own warnings to stderr (a TPM that refuses a blob, say); the daemon says
    // what failed in its own words instead. An administrator's TSS2_LOG is left as it is.
    setenv("TSS2_LOG", "all+none", 0)
    // One malloc arena for every thread, set before the first thread starts. glibc gives each
    // thread that allocates an arena of its own (up to eight per CPU); this daemon's dozen threads
    // allocate little and seldom at once, and their arenas cost 0.1 MB (docs/benchmark-memory.md).
    tg_one_malloc_arena()
    // The data key and sealed login passwords live in this process's memory: never in a core file.
    if tg_no_core_dumps() != 0 {
        return startFailure("cannot turn off core dumps: \(String(cString: strerror(errno)))")
    }
    let configPath = options.configPath
    let level: Logger.Level = options.debug ? .debug : .info
    LogSetup.bootstrap(level: level)
    let log = Logger(label: "touchgated")
    let audit = Logger(label: LogSetup.auditLabel)

    let settings: DaemonConfig
    if options.exportPrints {
        // The package's removal runs the export: a broken line must not cost the prints (purge
        // then deletes the key that opens them), so each is told and left out.
        settings = ConfigFile.loadLeniently(path: configPath) { printWarning("\(configPath): \($0): line left out") }
    } else {
        // An invalid file stops the daemon at start, with the line and the reason.
        do { settings = try ConfigFile.load(path: configPath) } catch {
            return startFailure("\(configPath): \(error)")
        }
    }
    let socketPath =
        options.socket ?? environment("RUNTIME_DIRECTORY").map { "\(firstPath($0))/touchgated.sock" }
        ?? "/run/touchgate/touchgated.sock"
    let stateDirectory = options.stateDir ?? environment("STATE_DIRECTORY").map(firstPath) ?? "/var/lib/touchgate"
    let printDirectory = options.printStore ?? settings.printStore

    // Signals are taken by sigwait below, so no thread is interrupted by them.
    var signals = sigset_t()
    sigemptyset(&signals)
    for s in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&signals, s) }
    pthread_sigmask(SIG_BLOCK, &signals, nil)
    signal(SIGPIPE, SIG_IGN)
    // A process a PAM module forks (pam_exec's program, a helper) starts as processes do: no
    // signal blocked, SIGPIPE's default action; the daemon's own choices are not its.
    pthread_atfork(nil, nil) {
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
        signal(SIGPIPE, SIG_DFL)
    }

    // Socket activation's variables are read and unset before any other thread runs: unsetenv
    // beside a getenv in another thread (libfprint's, GLib's) is not safe.
    var passed: Int32?
    if !options.exportPrints {
        do { passed = try ListeningSocket.fromActivation() } catch { return startFailure("\(error)") }
    }

    let state: Directory, prints: Directory
    do { state = try Directory.openRoot(stateDirectory) } catch {
        return startFailure("state directory \(stateDirectory): \(error)")
    }
    if options.exportPrints {
        // Where the prints are, for the package's purge (touchgate.conf, which names the store, is
        // gone by then): written before anything here can fail (a daemon still running, a signal,
        // a store that cannot be opened), and removed only once every print is in the clear.
        do { try state.writeAtomically(PrintSealing.leftSealedName, Array("\(printDirectory)\n".utf8)) } catch {
            printWarning("\(state.path)/\(PrintSealing.leftSealedName): \(error)")
        }
    }
    // One process at a time on the state and the prints: two daemons, or a daemon and the export,
    // would each rewrite what the other just wrote (an export undone by a daemon sealing again).
    do {
        guard try state.takeExclusively() else {
            return startFailure(
                "touchgated is running (it holds \(stateDirectory)): stop it first"
                    + (options.exportPrints ? " (systemctl stop touchgated.socket touchgated.service)" : ""))
        }
    } catch { return startFailure("\(error)") }
    // The export makes no print store (a purge would leave it behind): none, nothing to export.
    if options.exportPrints && access(printDirectory, F_OK) != 0 && errno == ENOENT {
        removeLeftSealedRecord(state)
        print("touchgated: no print store at \(printDirectory): nothing to export")
        return EXIT_SUCCESS
    }
    // A start after the export refuses before it opens the readers, so it lets go of the state at
    // once (a D-Bus activation during the package's removal must not hold up its export).
    if !options.exportPrints && state.contains(PrintSealing.exportedName) {
        let mark = "\(state.path)/\(PrintSealing.exportedName)"
        guard settings.seal == .no else {
            return startFailure(
                "the prints were written back in the clear (touchgated --export-prints), and this start would "
                    + "seal them again: remove \(mark) to use touchgate with sealing, or set seal = no")
        }
        do { try state.remove(PrintSealing.exportedName) } catch { return startFailure("\(error)") }
        log.notice("prints stay in the clear (seal = no): removed \(mark), left by touchgated --export-prints")
    }
    // The readers only now: a second daemon must not open what the running one holds.
    let readers = LibfprintReaders { message in log.info("\(message)") }
    // Every way out from here waits until their thread has loaded libfprint and opened them (at
    // most 10 s; after a stop, until 8 s after the signal, under the prerm's 10 s before SIGKILL):
    // an exit while it does aborts in GLib's type registration (seen as SIGABRT).
    var settleWithin = 10_000
    defer { settle(readers, within: settleWithin) }
    do { prints = try Directory.openRoot(printDirectory) } catch {
        return startFailure("print store \(printDirectory): \(error)")
    }
    // The export opens the key sealed before whatever `seal` says now, and never makes one.
    let sealing = PrintSealing(
        mode: settings.seal, sealer: TPMSealer(tcti: settings.tpm, pcrs: settings.sealPCRs), state: state,
        openOnly: options.exportPrints)
    if options.exportPrints {
        // The mark first: a daemon started from now on refuses, instead of sealing what is written
        // back. One already there (the package's removal wrote it) is kept: who wrote it counts.
        do {
            if !state.contains(PrintSealing.exportedName) {
                try state.writeAtomically(
                    PrintSealing.exportedName, Array("written by touchgated --export-prints\n".utf8))
            }
        } catch { return startFailure("prints not exported: \(error)") }
        // No sigwait here: Ctrl-C or SIGTERM ends the export at once (each print file is
        // replaced whole, so one cut short leaves every file either sealed or in the clear).
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        return exportPrints(PrintFiles(root: prints, reader: readers, sealing: sealing), state: state)
    }
    // The boot identity decides passwordRequired(boot); without it that rule cannot hold, so stop.
    guard let bootID = readSmallFile(options.bootIdFile)?.trimmingWhitespace, !bootID.isEmpty else {
        return startFailure("cannot read the boot identity from \(options.bootIdFile)")
    }
    let stale = StartUp.removeStaleTemporaries(state: state, printStore: prints)
    if stale > 0 { log.notice("removed \(stale) temporary files left by interrupted writes") }

    StartUp.migrateLegacyPrints(state: state, files: PrintFiles(root: prints, reader: readers)) { log.notice("\($0)") }

    let listenFD: Int32
    let boundPath: String?
    var boundIdentity: [UInt64]?
    if let passed {
        listenFD = passed
        boundPath = nil
    } else {
        do { listenFD = try ListeningSocket.bind(socketPath) } catch {
            return startFailure("socket \(socketPath): \(error)")
        }
        boundPath = socketPath
        boundIdentity = ListeningSocket.identity(of: socketPath)
    }
    /// A start that fails from here on takes back the socket file it bound: no stale file is left
    /// for the next start or a client to find.
    let failStart = { (reason: String) -> Int32 in
        if let boundPath { ListeningSocket.remove(boundPath, ifStill: boundIdentity) }
        return startFailure(reason)
    }
    var wiring = CoreSetup(
        policy: settings.policy, allowRemote: settings.allowRemote, bootID: bootID,
        stateDirectory: state, printStore: prints, readers: readers,
        passwords: PAMPasswordChecker(service: settings.passwordService), log: log, audit: audit)
    wiring.sealing = sealing
    wiring.keyringServices = settings.keyringServices
    wiring.keyringWithoutTPM = settings.keyringWithoutTPM
    let linuxAudit = AuditSender(channel: LibauditChannel(), log: log)
    wiring.linuxAudit = { linuxAudit.record($0) }
    let setup = wiring
    let services: Result<DaemonServices, StorageError> = onCoreLoop {
        do throws(StorageError) {
            let core = try Core(setup)
            let listener = Listener(core: core, fd: listenFD, log: log) {
                releaseFreeHeap(after: "a spell of socket clients", log: log)
            }
            return .success(
                DaemonServices(
                    readers: readers, core: core, listener: listener, socketPath: boundPath,
                    fprintdAPI: settings.fprintdAPI, linuxAudit: linuxAudit, log: log))
        } catch { return .failure(error) }
    }
    let daemon: DaemonServices
    switch services {
    case .success(let d): daemon = d
    case .failure(let error): return failStart("state directory \(stateDirectory): \(error)")
    }
    // Main waits for the services up to readiness; those on the bus start later, while it serves.
    let started = Semaphore()
    let outcome = StartOutcome()
    CoreLoop.shared.post {
        CoreLoop.shared.task {
            await daemon.start {
                outcome.failure = $0; started.signal()
            }
        }
    }
    started.wait()
    if let failure = outcome.failure { return failStart(failure) }

    var received: Int32 = 0
    sigwait(&signals, &received)
    let signalled = monotonicMilliseconds()
    log.info("stopping on signal \(received)")
    let stopped = Semaphore()
    CoreLoop.shared.post {
        CoreLoop.shared.task {
            await daemon.shutdown()
            stopped.signal()
        }
    }
    stopped.wait()
    settleWithin = max(0, 8000 - Int(monotonicMilliseconds() - signalled))
    if let boundPath { ListeningSocket.remove(boundPath, ifStill: boundIdentity) }
    return EXIT_SUCCESS
}

/// `--export-prints`: every sealed print written back in the clear, in fprintd's format (before
/// going back to fprintd); exit status 1 when one stayed sealed. Until all are, the store's path
/// stays recorded in the state directory for the package's purge, which keeps their key.
private func exportPrints(_ files: PrintFiles, state: Directory) -> Int32 {
    let count: Int
    do { count = try files.exportClear { print("touchgated: \($0)") } } catch {
        return startFailure("prints not exported: \(error)")
    }
    removeLeftSealedRecord(state)
    print("touchgated: \(count) sealed print\(count == 1 ? "" : "s") written back in the clear in \(files.root.path)")
    return EXIT_SUCCESS
}

/// Every print is in the clear: the purge's record of where sealed ones are is not needed.
private func removeLeftSealedRecord(_ state: Directory) {
    do { try state.remove(PrintSealing.leftSealedName) } catch {
        printWarning("\(state.path)/\(PrintSealing.leftSealedName): \(error)")
    }
}

/// Runs `body` on the core loop and waits for its result (start-up only).
private func onCoreLoop<T: Sendable>(_ body: @escaping @Sendable @CoreActor () -> T) -> T {
    let done = Semaphore()
    let box = ResultBox<T>()
    CoreLoop.shared.post {
        box.value = body(); done.signal()
    }
    done.wait()
    return box.value!
}

private final class ResultBox<T>: @unchecked Sendable { var value: T? }

/// Why the first services could not start (nil: they did), handed from the loop to main.
private final class StartOutcome: @unchecked Sendable { var failure: String? }

/// A line on stderr that does not stop what is being done.
private func printWarning(_ text: String) {
    let line = "touchgated: \(text)\n"
    _ = line.withCString { write(STDERR_FILENO, $0, strlen($0)) }
}

/// Waits, at most `within` ms, until the reader thread has done opening: not to exit under it.
private func settle(_ readers: LibfprintReaders, within: Int) {
    let opened = Semaphore()
    readers.whenOpened { opened.signal() }
    if !opened.wait(milliseconds: within) {
        printWarning("the readers did not finish opening within \(within) ms; exiting anyway")
    }
}

/// A reason the daemon cannot start: one line on stderr and exit status 1 (not a usage error).
private func startFailure(_ reason: String) -> Int32 {
    printWarning(reason)
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
        guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
