// Accepts clients on the core loop: connection caps per person and in all (with a reserve for
// root's own logins), a clear refusal past them, and no crash or spin when descriptors run out.
import CTouchGateLoop
import Glibc
import Logging
import TouchGateCore
import TouchGateWire

public struct ConnectionLimits: Sendable {
    /// Per person (real uid; a setuid client counts against whoever ran it).
    public var perUser = 16
    /// All connections of processes run by non-root users together.
    public var total = 256
    /// More, for processes run by root (login, gdm, systemd): an attacker's connections never
    /// lock the console out.
    public var rootReserve = 64
    /// A connection with no request in progress is closed after this long.
    public var idleMilliseconds = 10_000
    /// A request must arrive whole this soon after its first byte.
    public var slowSenderMilliseconds = 2_000
    /// Output a client has not read, past which it is dropped (a stalled monitor).
    public var outputLimit = 256 * 1024
    public init() {}
}

@CoreActor public final class Listener {
    public let core: Core
    let log: Logger
    let limits: ConnectionLimits
    private let fd: Int32
    private var watch: FDWatch?
    private var pauseTimer: LoopTimer?
    private var sweeper: LoopTimer?
    private var spare: Int32 = -1
    private var connections: [ObjectIdentifier: ClientConnection] = [:]
    private var perPerson: [UInt32: Int] = [:]
    private var nonRootCount = 0
    private var rootCount = 0
    private var lastExhaustionLog: Int64 = 0
    /// The daemon is stopping: a client that connects is told so at once (docs/spec.md §6).
    private var closing = false
    /// The listener is no longer watched at all.
    private var stopped = false
    /// Set during shutdown's drain, when no request is running any more.
    private var idle: OneShot<Void>?
    /// Runs on a sweep after clients have come and gone, once none has a request running (a
    /// monitor's open stream does not count): the end of a busy spell.
    private let afterClients: @CoreActor () -> Void
    /// Connections closed since `afterClients` last ran.
    private var closedSinceAfterClients = 0

    /// Where a client's login session is told remote or not.
    let sessions: LoginSessions

    public init(
        core: Core, fd: Int32, limits: ConnectionLimits = ConnectionLimits(), log: Logger,
        sessions: LoginSessions = LoginSessions(), afterClients: @escaping @CoreActor () -> Void = {}
    ) {
        self.core = core
        self.sessions = sessions
        self.fd = fd
        self.log = log
        self.afterClients = afterClients
        var limits = limits
        // Never promise more connections than descriptors: keep 64 for files, the reader, PAM.
        var rl = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &rl) == 0, rl.rlim_cur != rlim_t.max {
            let budget = max(8, Int(rl.rlim_cur) - 64)
            limits.rootReserve = min(limits.rootReserve, max(4, budget / 4))
            limits.total = min(limits.total, max(4, budget - limits.rootReserve))
        }
        self.limits = limits
        spare = open("/dev/null", O_RDONLY | O_CLOEXEC)
        watch = FDWatch(fd: fd, events: .readable) { [weak self] _ in self?.acceptBatch() ?? false }
    }

    /// Stops watching the listener for good; connections already open finish their requests.
    public func stopAccepting() {
        closing = true
        stopped = true
        watch?.cancel()
        pauseTimer?.cancel()
    }

    /// Requests still running, for shutdown's drain.
    public var busyConnections: Int { connections.values.filter(\.isBusy).count }

    /// Shutdown: a client that connects from now on is refused at once as the daemon stops (it
    /// would otherwise wait in the backlog, unanswered, until the daemon exits); then waits until
    /// every running request has answered (the core has told each prompt to end), at most
    /// `deadlineMilliseconds`. Told by the connections, not polled.
    public func drain(deadlineMilliseconds: Int = 1000) async {
        closing = true
        let idle = OneShot<Void>()
        self.idle = idle
        requestEnded()
        let late = LoopTimer(after: deadlineMilliseconds) { idle.set(()) }
        await idle.wait()
        late.cancel()
    }

    /// A connection's request answered, or the connection went: the drain may be over.
    func requestEnded() {
        if let idle, !idle.isSet, busyConnections == 0 { idle.set(()) }
    }
    public var connectionCount: Int { connections.count }

    /// Accepts what is waiting, up to a batch, so one flood cannot starve the loop.
    private func acceptBatch() -> Bool {
        for _ in 0..<64 {
            let client = tg_accept(fd)
            if client >= 0 {
                // Descriptors are to be had again: a spare lost to a race at the last exhaustion
                // (another thread took the slot it freed) is taken back.
                if spare < 0 { spare = open("/dev/null", O_RDONLY | O_CLOEXEC) }
                admit(client)
                continue
            }
            switch errno {
            case EAGAIN, EWOULDBLOCK: return true
            case EINTR, ECONNABORTED, EPROTO: continue
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                refuseWithSpareDescriptor(errno)
                return pause()
            default:
                log.error("accept: \(String(cString: strerror(errno)))")
                return pause()
            }
        }
        return true
    }

    /// Out of descriptors: the spare one is freed for a moment so the waiting client hears why
    /// instead of hanging in the backlog; the daemon keeps serving the clients it has.
    private func refuseWithSpareDescriptor(_ error: Int32) {
        let now = monotonicMilliseconds()
        if now - lastExhaustionLog > 5000 {
            lastExhaustionLog = now
            log.error("accept: \(String(cString: strerror(error))): refusing new connections until descriptors free up")
        }
        guard spare >= 0 else { return }
        close(spare)
        let client = tg_accept(fd)
        if client >= 0 {
            ClientConnection.refuse(client, .busy, text: .busy)
            close(client)
        }
        spare = open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    /// Stops watching the listener for a moment, so a persistent error does not spin the loop.
    private func pause() -> Bool {
        watch?.cancel()
        watch = nil
        pauseTimer = LoopTimer(after: 100) { [weak self] in
            guard let self, !self.stopped else { return }
            self.watch = FDWatch(fd: self.fd, events: .readable) { [weak self] _ in self?.acceptBatch() ?? false }
        }
        return false
    }

    private func admit(_ client: Int32) {
        var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0
        guard tg_peer_credentials(client, &pid, &uid, &gid) == 0 else { close(client); return }
        // Accounting by who ran the process: sudo's effective uid is 0, its real uid the person's.
        let person: UInt32 = uid == 0 ? UInt32(truncatingIfNeeded: max(0, tg_process_real_uid(pid))) : uid
        let rootRun = person == 0
        let mine = perPerson[person, default: 0]
        let refused: Bool
        if rootRun {
            // Root-run clients may use what others leave, plus a reserve nobody else can take.
            refused = nonRootCount + rootCount >= limits.total + limits.rootReserve
        } else {
            refused = mine >= limits.perUser || nonRootCount >= limits.total
        }
        if closing {
            ClientConnection.refuse(client, .systemCancel, text: .shuttingDown)
            close(client)
            return
        }
        if refused {
            if let more = core.clientNotices.admit(person) {
                log.notice(
                    "refused a connection: too many (uid \(person), \(mine) open, \(connections.count) in all)\(more)")
            }
            ClientConnection.refuse(client, .busy, text: .busy)
            close(client)
            return
        }
        perPerson[person] = mine + 1
        if rootRun { rootCount += 1 } else { nonRootCount += 1 }
        let connection = ClientConnection(
            fd: client, caller: Caller(uid: uid, pid: pid), person: person, listener: self)
        connections[ObjectIdentifier(connection)] = connection
        if sweeper == nil {
            sweeper = LoopTimer(milliseconds: 500) { [weak self] in self?.sweep() ?? false }
        }
    }

    func forget(_ connection: ClientConnection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        let person = connection.person
        let left = perPerson[person, default: 1] - 1
        perPerson[person] = left > 0 ? left : nil
        if person == 0 { rootCount -= 1 } else { nonRootCount -= 1 }
        closedSinceAfterClients += 1
        requestEnded()
    }

    /// Closes idle connections and slow senders, and calls `afterClients` at the end of a busy
    /// spell; runs while there are connections.
    private func sweep() -> Bool {
        let now = monotonicMilliseconds()
        for c in Array(connections.values) { c.checkDeadlines(now: now) }
        if closedSinceAfterClients > 0, !connections.values.contains(where: \.isBusy) {
            closedSinceAfterClients = 0
            afterClients()
        }
        guard connections.isEmpty else { return true }
        sweeper = nil
        return false
    }
}

/// The socket listener as a service: it accepts from the moment it is made (systemd may already
/// hold clients in the backlog); stopping is the drain.
extension Listener: DaemonService {
    public nonisolated var serviceName: String { "socket listener" }
    public func start() async -> ServiceStart { .running }
    public func shutdown() async { await drain() }
}
