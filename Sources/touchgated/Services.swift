// touchgated's services in their order: the Linux audit records, the reader, the core (state), the
// socket listener, then readiness (READY=1); once the reader has settled, the sleep watcher and
// fprintd's D-Bus API.
// SIGTERM ends every prompt in the core, then stops them in reverse, each awaited.
import CTouchGateLoop
import Logging
import TouchGateCore
import TouchGateDBus
import TouchGateReader
import TouchGateSocket

@CoreActor final class DaemonServices {
    let core: Core
    let group: ServiceGroup
    private let fprintdAPI: Bool
    private let log: Logger

    init(
        readers: any FingerprintReaders, core: Core, listener: Listener, socketPath: String?, fprintdAPI: Bool,
        linuxAudit: AuditSender, log: Logger
    ) {
        self.core = core
        self.fprintdAPI = fprintdAPI
        self.log = log
        group = ServiceGroup(log: log)
        group.add(LinuxAuditService(linuxAudit, log: log), required: true)
        group.add(ReaderService(readers, log: log), required: true)
        group.add(core, required: true)
        group.add(listener, required: true)
        group.add(Readiness(socketPath: socketPath, log: log), required: true)
    }

    /// Starts the services the daemon cannot serve without and tells `ready` how that went (nil:
    /// serving; else why not, everything started already stopped again); then the bus's services.
    func start(ready: @escaping @Sendable (String?) -> Void) async {
        let failure = await group.start()
        ready(failure)
        guard failure == nil else { return }
        core.beginSealing()
        // After READY, so the bus never delays the first PAM prompt; and after the reader has
        // settled, so libfprint's start-up (reader thread) and GDBus's (core loop) never run
        // GLib's one-time initialisation side by side.
        group.add(ReaderSettled(core: core), required: false)
        group.add(SleepWatcher(core: core, log: log), required: false)
        if fprintdAPI {
            let log = log
            group.add(
                FprintService(core: core, log: log) { releaseFreeHeap(after: "a D-Bus claim", log: log) },
                required: false)
        }
        _ = await group.start()
    }

    /// Every prompt ends with systemCancel and says why; then the services stop, last first.
    func shutdown() async {
        core.beginShutdown()
        await group.shutdown()
    }
}

/// READY=1 to systemd once the socket is served.
@CoreActor private final class Readiness: DaemonService {
    let socketPath: String?
    let log: Logger
    nonisolated var serviceName: String { "readiness" }
    init(socketPath: String?, log: Logger) { self.socketPath = socketPath; self.log = log }

    func start() async -> ServiceStart {
        if let failure = ListeningSocket.notifyReady() {
            log.error("cannot tell systemd the daemon is ready: \(failure)")
        }
        log.info("listening on \(socketPath ?? "the socket passed by systemd")")
        return .running
    }

    func shutdown() async {}
}

/// Waits until the readers' first opening has ended (found, or not), so what follows starts after it.
@CoreActor private final class ReaderSettled: DaemonService {
    let core: Core
    nonisolated var serviceName: String { "reader settled" }
    init(core: Core) { self.core = core }

    func start() async -> ServiceStart {
        await core.firstOpeningEnded()
        return .running
    }

    func shutdown() async {}
}

/// Gives the kernel back the free pages the heap holds, at the end of a spell of clients: what a
/// burst of connections or an image reader's buffers left behind (docs/benchmark-memory.md, tenth
/// round). Off every authentication's path; a D-Bus Release's reply waits for it (microseconds).
@CoreActor func releaseFreeHeap(after spell: String, log: Logger) {
    tg_release_free_heap()
    log.debug("gave the heap's free pages back to the kernel after \(spell)")
}
