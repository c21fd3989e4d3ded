// The daemon's core: one place that decides, for every front-end (socket, D-Bus), on one thread.
import Logging
import TouchGatePolicy
import TouchGateReader
import TouchGateWire

/// What the core is built from. Everything that touches the world comes in here, so tests can
/// pass a stub reader, a table of accounts, a fixed clock.
public struct CoreSetup: Sendable {
    public var policy: PolicyConfig
    public var allowRemote: Bool
    public var bootID: String
    public var stateDirectory: Directory
    public var printStore: Directory
    /// Every reader served (LibfprintReaders); requests use the default one or the one they name.
    public var readers: any FingerprintReaders
    public var passwords: any PasswordVerifying
    public var accounts: any AccountDirectory
    public var clock: any WallClock
    public var log: Logger
    public var audit: Logger
    /// Hands each event to the Linux audit system (the daemon's LinuxAudit); must not block.
    public var linuxAudit: (@Sendable (AuthEvent) -> Void)?
    /// Longest wait for the password service before the check is given up as failed.
    public var passwordCheckDeadlineMilliseconds = 30_000
    /// Prints sealed to the machine (PrintSealing.swift); nil keeps them in the clear.
    public var sealing: PrintSealing?
    /// The services a sealed login password may be released to, and whether it may be kept
    /// without a TPM (docs/spec.md §12).
    public var keyringServices: [String] = []
    public var keyringWithoutTPM = false

    public init(
        policy: PolicyConfig, allowRemote: Bool, bootID: String, stateDirectory: Directory,
        printStore: Directory, readers: any FingerprintReaders, passwords: any PasswordVerifying,
        accounts: any AccountDirectory = SystemAccounts(), clock: any WallClock = SystemClock(),
        log: Logger, audit: Logger
    ) {
        self.policy = policy; self.allowRemote = allowRemote; self.bootID = bootID
        self.stateDirectory = stateDirectory; self.printStore = printStore; self.readers = readers
        self.passwords = passwords; self.accounts = accounts; self.clock = clock; self.log = log; self.audit = audit
    }
}

@CoreActor public final class Core {
    public let config: PolicyConfig
    let policyEngine: Policy
    let allowRemote: Bool
    let bootID: String
    let readers: any FingerprintReaders
    let passwords: any PasswordVerifying
    let accounts: any AccountDirectory
    let clock: any WallClock
    public let log: Logger
    let passwordDeadline: Int

    let states: UserStateStore
    let prints: PrintCache
    let keyring: KeyringFiles
    let keyringServices: Set<String>
    let domainKey: DomainStateKey
    let events: EventBus
    let queue = ReaderQueue()
    let names: NameCache

    /// Blocking work, each kind on its own threads so one slow kind never starves another.
    let accountPool = WorkerPool(name: "accounts", threads: 2, queueLimit: 256)
    let passwordPool = WorkerPool(name: "passwords", threads: 2, queueLimit: 64, stackSize: 1 << 20)
    let storagePool = WorkerPool(name: "storage", threads: 2, queueLimit: 1024)

    /// Prompts running now; shutdown and suspend end them with systemCancel.
    var activePrompts: [ObjectIdentifier: ActivePrompt] = [:]
    public internal(set) var stopping = false
    let readerSettled = OneShot<Void>()
    /// The readers' first opening outlasted its deadline: requests no longer wait for it.
    var openingOverdue = false
    /// Set while the readers open again after a resume: requests wait for it (at most the
    /// resume's own deadline), as they wait for the first opening, instead of finding no reader
    /// while USB comes back (Core+Lifecycle.swift).
    var reopening: OneShot<Void>?
    /// From the suspend (logind's PrepareForSleep) until the resume: the readers are closed for
    /// sleep, not missing (the D-Bus front-end answers as fprintd's suspended device does).
    public internal(set) var asleep = false
    /// Each user's password checks, one at a time, so the back-off is judged on every earlier
    /// answer (Core+Passwords.swift).
    let passwordTurns = UserTurns()
    /// Users whose password check was given up on at its deadline and is still in PAM.
    var passwordChecksOverdue: Set<String> = []
    /// Passwords being verified (checked and their answer recorded): the stop waits for them
    /// before the state's last flush (Core+Lifecycle.swift), told when the last one ends.
    var passwordsBeingVerified = 0
    var passwordsVerified: OneShot<Void>?
    /// When the stop began (monotonic milliseconds): what bounds that wait.
    var stopBegan: Int64 = 0
    /// Each user's keyring file changes, one at a time (Core+Keyring.swift).
    let keyringTurns = UserTurns()
    /// The next sealing pass, while the TPM could not be used at the last one.
    var sealingRetry: LoopTimer?
    /// Log lines a client causes at will (refused connections and requests, malformed ones),
    /// within one limit per uid for every front-end (LogThrottle).
    public let clientNotices = LogThrottle<UInt32> { "uid \($0)" }
    /// The journal's outcome lines of refusals that judged no finger and no password (a remote
    /// session, no prints, a lockout, a back-off, a cancel): a client can cause them at will too.
    /// Limited per caller and user, so one user cannot push others' records past journald's limit.
    let refusalNotices = LogThrottle<RefusalSource> { "uid \($0.uid) for \($0.user)" }

    public init(_ setup: CoreSetup) throws(StorageError) {
        config = setup.policy
        policyEngine = Policy(config: setup.policy)
        allowRemote = setup.allowRemote
        bootID = setup.bootID
        readers = setup.readers
        passwords = setup.passwords
        accounts = setup.accounts
        clock = setup.clock
        log = setup.log
        passwordDeadline = setup.passwordCheckDeadlineMilliseconds
        events = EventBus(audit: setup.audit, linuxAudit: setup.linuxAudit)
        domainKey = try DomainStateKey(stateDirectory: setup.stateDirectory)
        guard let users = try setup.stateDirectory.subdirectory("users", create: true) else {
            throw .unsafe("\(setup.stateDirectory.path)/users cannot be created")
        }
        let log = setup.log
        states = UserStateStore(
            users: users, policy: policyEngine, clock: setup.clock, pool: storagePool,
            log: { log.error("\($0)") })
        prints = PrintCache(
            files: PrintFiles(root: setup.printStore, reader: setup.readers, sealing: setup.sealing),
            pool: storagePool, log: { log.notice("\($0)") })
        names = NameCache(accounts: setup.accounts, pool: accountPool)
        keyring = KeyringFiles(
            users: users,
            key: KeyringKey(sealing: setup.sealing, withoutTPM: setup.keyringWithoutTPM, state: setup.stateDirectory))
        keyringServices = Set(setup.keyringServices)
        let settled = readerSettled
        setup.readers.whenOpened { CoreLoop.shared.post { settled.set(()) } }
    }

    /// Once the daemon is ready (the TPM is never asked before, docs/spec.md §9): the first
    /// sealing pass, and the keyring key file retired if it is no longer the key (§12).
    public func beginSealing() {
        if let sealing = prints.files.sealing { sealStore(prints.files, sealing) }
        CoreLoop.shared.task { [self] in await retireKeyringKeyFile() }
    }

    /// Seals the prints still in the clear, on the storage threads, and says where sealing
    /// stands. While the TPM cannot be used the pass is made again, after the key's retry
    /// interval and then twice as long each time up to an hour (said once; then at debug level),
    /// so prints found in the clear at start do not stay so for the daemon's life, and a TPM that
    /// stays away costs little.
    private func sealStore(_ files: PrintFiles, _ sealing: PrintSealing, pass: Int = 0) {
        let pool = storagePool, log = self.log
        _ = CoreLoop.shared.task { [weak self] in
            let report = try? await pool.run { () -> (String, again: Bool) in
                let count = files.sealExisting { log.warning("\($0)") }
                switch sealing.keyState() {
                case .ready: return ("prints are sealed to the TPM (\(count) sealed now)", false)
                case .off(let why): return ("prints are kept in the clear: \(why)", false)
                case .unavailable(let why):
                    return ("sealed prints cannot be opened and none is enrolled: \(why); asked again later", true)
                case .refused(_, let why):
                    // Asked again all the same: bound PCRs may come back (the kernel booted before).
                    return ("sealed prints cannot be opened and none is enrolled: \(why)", true)
                }
            }
            let busy = "the print store could not be checked for sealing: the storage threads are busy"
            let again = report?.again ?? true
            log.log(level: pass > 0 && again ? .debug : .notice, "\(report?.0 ?? busy)")
            guard let self, !self.stopping, again else { return }
            let first = max(Int(clamping: sealing.retryAfterMilliseconds), 1000)
            let wait = min(first << min(pass, 12), 3_600_000)
            self.sealingRetry = LoopTimer(after: wait) { [weak self] in
                self?.sealStore(files, sealing, pass: pass + 1)
            }
        }
    }

    /// Calls `handler` on the core loop with every served reader's description whenever one
    /// changes, is unplugged or is added.
    public nonisolated func onReadersChanged(_ handler: @escaping @CoreActor @Sendable ([ReaderInfo]) -> Void) {
        readers.onChange { infos in CoreLoop.shared.post { handler(infos) } }
    }

    /// Whether the reader `selector` names is open and served now.
    public nonisolated func serves(_ selector: String) -> Bool { readers.reader(selector) != nil }

    /// Starts (true) or ends one watching of the finger's status, whose changes then reach the
    /// `onReadersChanged` handlers; returns the reader's description as it is once watching has
    /// begun, so the watcher starts from the driver's present state.
    public nonisolated func watchFinger(_ watching: Bool, on selector: String) -> ReaderInfo? {
        readers.watchFinger(watching)
        return readers.reader(selector)?.info
    }

    /// How long requests wait for the readers' first opening: a driver stuck in its open would
    /// otherwise hold every request. Past it, requests are answered at once with the readers open
    /// so far (none: no reader), and the opening goes on.
    static let readerOpeningMilliseconds = 10_000

    /// Once the readers' first opening has ended, or its deadline has passed (said once).
    private func readersOpened() async {
        if let reopening { await reopening.wait() }
        guard !readerSettled.isSet, !openingOverdue else { return }
        let settled = readerSettled
        let ended = await Self.finishes(within: Self.readerOpeningMilliseconds) { done in
            _ = CoreLoop.shared.task {
                await settled.wait()
                done()
            }
        }
        if !ended && !openingOverdue {
            openingOverdue = true
            log.error(
                "the readers' first opening has not ended within \(Self.readerOpeningMilliseconds) ms; requests are answered with the readers open so far"
            )
        }
    }

    /// The reader a request names (`selector`: docs/readers.md; nil: the default one) and its
    /// description, once the readers' first opening has ended (or outlasted its deadline); nil when
    /// it is not served.
    func served(_ selector: String?) async -> ServedReader? {
        await readersOpened()
        guard let reader = readers.reader(selector), let info = reader.info else { return nil }
        return ServedReader(reader: reader, info: info)
    }

    func readerInfo(_ selector: String?) async -> ReaderInfo? { await served(selector)?.info }

    /// Every reader served, the default one first, with its description, once the readers' first
    /// opening has ended (or outlasted its deadline).
    func servedReaders() async -> [ServedReader] {
        await readersOpened()
        return readers.served.compactMap { reader in reader.info.map { ServedReader(reader: reader, info: $0) } }
    }

    // MARK: canEvaluate

    /// What a person is told when their prints stay sealed: that the TPM cannot open them now, or,
    /// when it refused their key for good, that it refuses it, which only the administrator mends.
    var sealedText: Text { prints.files.sealing?.refusal == nil ? .printsSealed : .printsSealedRefused }

    /// What an evaluation would end with before it starts, or nil when a prompt makes sense.
    /// Never touches the reader; prints and states are cached, so it answers in microseconds.
    /// `reader`: the reader the request names (nil: the default one).
    func preflight(user: String, rhost: String?, reader: String?) async -> Refusal? {
        if let rhost, !rhost.isEmpty, !allowRemote {
            return Refusal(.biometryNotAvailable, reason: .remote, text: .remoteSession)
        }
        let info = await readerInfo(reader)
        // A full storage queue is not a state that cannot be trusted: `internal` (docs/spec.md §9).
        guard let stored = try? await states.read(user) else { return Self.storageFailure }
        // A state that reads as one but holds values no change can make is no more trusted than
        // a file that is not one: refused alike, never as a lockout no failed match made; the
        // policy keeps it locked until a password success (docs/spec.md §9).
        guard case .state(var state) = stored, state.isConsistent else { return Self.stateUnreadable }
        let list = await prints.list(user, device: info?.deviceKey)
        if case .unsafe(let why) = list {
            log.error("prints of \(user) refused: \(why)")
            return Refusal(.biometryNotAvailable, reason: .printsUnsafe, text: .printsUnsafe)
        }
        let env = await environment(user, prints: list.prints, readerAvailable: info != nil)
        // Judged on the state as it is after those reads, which may have waited for the storage
        // threads: a lock, a disable or a failed match that came meanwhile counts (docs/spec.md §3).
        if case .state(let now)? = states.cached(user) { state = now }
        guard state.isConsistent else { return Self.stateUnreadable }
        if env.enrolledHere && !state.enabled {
            return Refusal(.biometryNotEnrolled, reason: .notEnabled, text: .notEnabled)
        }
        let damaged = list.prints.filter(\.needsEnrolling).map(\.finger)
        if case .refused(let r) = policyEngine.canEvaluateBiometrics(state, in: env) {
            // A damaged print is a changed one (enrollmentChanged); say which needs enrolling again now.
            var refused = refusal(for: r)
            if !damaged.isEmpty, r != .notAvailable, r != .notEnrolled, let text = refused.text {
                refused.text = .lines([text] + damaged.map { .templateDamaged($0) })
            }
            return refused
        }
        if !list.prints.contains(where: \.matchable), list.prints.contains(where: \.closed) {
            return Refusal(.biometryNotAvailable, reason: .printsSealed, text: sealedText)
        }
        if damaged.count == list.prints.count {
            var refusal = Refusal(.templateDamaged, reason: .templateDamaged, text: .templatesDamaged(damaged))
            refusal.fingers = damaged
            return refusal
        }
        return nil
    }

    /// `prints`: the user's on the reader asked for (or on every reader, when none is served).
    func environment(_ user: String, prints: [EnrolledPrint], readerAvailable: Bool) async -> Environment {
        Environment(
            now: clock.now(), bootID: bootID, enrollmentSnapshot: await enrollmentSnapshot(user, here: prints),
            readerAvailable: readerAvailable, enrolledHere: !prints.isEmpty)
    }

    /// The identity of the user's prints on every reader (docs/spec.md §3, enrollmentChanged), so
    /// that another reader served is no enrollment change; of `here` when the store cannot be read
    /// in full now.
    func enrollmentSnapshot(_ user: String, here: [EnrolledPrint]) async -> String? {
        guard let entries = await prints.snapshotEntries(user) else { return Self.snapshot(here) }
        return TouchGatePolicy.enrollmentSnapshot(fingers: entries)
    }

    /// Order-independent identity of the set of prints (nil: none); damaged ones count too.
    static func snapshot(_ prints: [EnrolledPrint]) -> String? {
        TouchGatePolicy.enrollmentSnapshot(fingers: prints.map(\.identity))
    }

    func refusal(for r: BiometricRefusal) -> Refusal {
        switch r {
        case .notAvailable: return Refusal(.biometryNotAvailable, reason: .noReader, text: .noReader)
        case .notEnrolled: return Refusal(.biometryNotEnrolled, reason: .noPrints, text: .notEnrolled)
        case .lockout:
            return Refusal(.biometryLockout, reason: .lockout, text: .lockout(attempts: config.lockoutThreshold))
        case .passwordRequired(let reason):
            return Refusal(.passwordRequired, reason: Reason(reason), text: .passwordRequired(reason))
        }
    }

    /// The one mapping from a reader failure to what the client is told.
    func refusal(for failure: ReaderFailure, timeout: Int) -> Refusal {
        switch failure {
        case .noReader: return Refusal(.biometryNotAvailable, reason: .noReader, text: .noReader)
        case .removed: return Refusal(.biometryNotAvailable, reason: .removed, text: .readerRemoved)
        case .tooHot: return Refusal(.biometryNotAvailable, reason: .tooHot, text: .readerTooHot)
        case .busy: return Refusal(.biometryNotAvailable, reason: .busy, text: .readerBusy)
        case .timedOut: return Refusal(.timeout, reason: .timeout, text: .timedOut(seconds: timeout))
        case .cancelled: return Refusal(.systemCancel, reason: .cancelled, text: .cancelled)
        case .protocolError: return Refusal(.biometryNotAvailable, reason: .readerProtocol, text: .readerProtocolError)
        case .storageFull: return Refusal(.internalError, reason: .storageFull, text: .readerStorageFull)
        case .duplicate: return Refusal(.duplicate, reason: .duplicate, text: .enrolledOnReader)
        case .deviceError: return Refusal(.biometryNotAvailable, reason: .readerError, text: .readerFailed)
        case .invalidTemplate, .printsNotFound, .failed:
            return Refusal(.biometryNotAvailable, reason: .readerError, text: .internalError)
        }
    }

    static let storageFailure = Refusal(.internalError, reason: .storage, text: .internalError)
    static let stateUnreadable = Refusal(.biometryLockout, reason: .stateUnreadable, text: .stateUnreadable)
    static let shutdownRefusal = Refusal(.systemCancel, reason: .shutdown, text: .shuttingDown)
}

extension Reason {
    /// passwordRequired's reasons travel under the same names.
    init(_ r: PasswordRequiredReason) {
        switch r {
        case .boot: self = .boot
        case .idle: self = .idle
        case .interval: self = .interval
        case .enrollmentChanged: self = .enrollmentChanged
        case .adminLock: self = .adminLock
        }
    }
}

extension ReaderInfo {
    public var deviceKey: DeviceKey { DeviceKey(driver: driver, deviceID: deviceID) }
}

/// A reader a request runs on, with its description when it was chosen.
struct ServedReader {
    let reader: any FingerprintReader
    let info: ReaderInfo
}

extension Core {
    /// Every reader served, the default one first, once their first opening has ended (or outlasted
    /// its deadline).
    public func readerDescriptions() async -> [ReaderInfo] { await servedReaders().map(\.info) }

    /// Once the readers' first opening has ended, however long that takes: for what must start
    /// only after it (the bus services, which would otherwise run GLib's one-time start-up beside
    /// libfprint's), never for a request.
    public func firstOpeningEnded() async { await readerSettled.wait() }

    /// The account name of a uid (NSS, on the accounts pool), for front-ends that take "" as "me".
    /// Nil for an unknown uid or when the look-up could not be queued.
    public func accountName(uid: UInt32) async -> String? { (try? await names.name(of: uid)) ?? nil }
}
