// Per-user policy state (<state>/users/<user>/state.json): kept in memory, written by a worker pool,
// on disk before any reply that reports a failure; a lost write only ever leaves the policy stricter.
// A match that changes nothing but the time of the last fingerprint success is written within a
// minute, with the next other change, or at shutdown, whichever comes first: that is most
// authentications, and losing it only ends the windows that start at that time sooner.
import FoundationEssentials
import Glibc
import TouchGatePolicy

public enum StoredState: Sendable, Equatable {
    case state(UserState)
    /// The file exists but cannot be trusted or read as a state (the reason says why): that user's
    /// biometrics stay refused until a password success (fail closed); it is never reset to zero.
    case corrupt(String)

    /// The state to build on: an unreadable one counts as locked out (and opted in, since it had
    /// prints), so only a password success ever leaves it; and it may have held a back-off, so
    /// its wrong passwords count on from the threshold: the first one backs off. Whatever is made
    /// of it (a disable, a lock) keeps both.
    public func stateOrFailClosed(_ policy: Policy) -> UserState {
        switch self {
        case .state(let s): return s
        case .corrupt:
            return UserState(
                enabled: true, biometryLockedOut: true,
                consecutiveWrongPasswords: max(policy.config.passwordBackoffAfter - 1, 0))
        }
    }

    public var isCorrupt: Bool { if case .corrupt = self { return true } else { return false } }
}

/// When a change must be on disk relative to the reply that reports it.
public enum Durability: Sendable {
    /// Failures, admin actions: the reply waits for the disk (docs/spec.md §9, `kill -9` loses nothing).
    case beforeReply
    /// Successes: losing the write leaves counters higher and successes older — stricter, never weaker.
    /// One that only moves `lastFingerprintSuccess` later is deferred (`UserStateStore.deferral`).
    case afterReply
}

@CoreActor final class UserStateStore {
    private let users: Directory
    private let policy: Policy
    private let clock: any WallClock
    private let pool: WorkerPool
    private let log: (String) -> Void
    private let deferral: Int
    private let retry: Int
    private let writeDeadline: Int
    private let readFile: FileReader
    private var entries: [String: Entry] = [:]
    private var loading: [String: OneShot<Result<StoredState, StorageError>>] = [:]

    /// How long a deferred change may wait for the disk, in milliseconds.
    nonisolated static let deferralMilliseconds = 60_000
    /// After a write failed: the first wait before it is tried again, doubled after each failure
    /// up to a minute (a full or read-only disk stays so for a while).
    nonisolated static let retryMilliseconds = 1000
    /// How long a reply waits for its change to be on disk before it is answered as a storage
    /// failure (the change stays in memory and its write goes on): a hung disk must not hold a
    /// prompt, and the reader it has, without end.
    nonisolated static let writeDeadlineMilliseconds = 5000

    private final class Entry {
        var stored: StoredState
        var version = 0
        var durable = 0
        var writing = false
        var moveAside = false
        /// Set while a deferred change waits for its write.
        var deferred: LoopTimer?
        /// Set while a failed write waits to be tried again; `failures` in a row so far.
        var retry: LoopTimer?
        var failures = 0
        var waiters: [(version: Int, done: OneShot<StorageError?>)] = []
        init(_ stored: StoredState) { self.stored = stored }
    }

    nonisolated static let fileName = "state.json"

    /// Reads one user's file: what it holds, `.corrupt` when it is not a state; throws what the
    /// file system said (a test gives one that fails as a failing disk does).
    typealias FileReader =
        @Sendable (_ user: String, _ users: Directory, _ policy: Policy, _ now: Instant)
        throws(StorageError) -> StoredState

    init(
        users: Directory, policy: Policy, clock: any WallClock, pool: WorkerPool,
        deferral: Int = UserStateStore.deferralMilliseconds, retry: Int = UserStateStore.retryMilliseconds,
        writeDeadline: Int = UserStateStore.writeDeadlineMilliseconds,
        readFile: @escaping FileReader = UserStateStore.readState,
        log: @escaping (String) -> Void
    ) {
        self.readFile = readFile
        self.deferral = deferral
        self.retry = retry
        self.writeDeadline = writeDeadline
        self.users = users
        self.policy = policy
        self.clock = clock
        self.pool = pool
        self.log = log
    }

    /// The state as last decided, reading it from disk the first time.
    func load(_ user: String) async -> StoredState {
        do { return try await entry(user).stored } catch { return .corrupt(error.description) }
    }

    /// The state as last decided; throws when it could not be read now (the storage queue is
    /// full, or the file system failed: an I/O error, no file descriptor left), which a caller that
    /// must judge a back-off refuses on instead of guessing.
    func read(_ user: String) async throws(StorageError) -> StoredState { try await entry(user).stored }

    /// How many changes the user's state has had in memory (nil: not read yet).
    func version(_ user: String) -> Int? { entries[user]?.version }

    /// The state if it was read already (the preflight's fast path).
    func cached(_ user: String) -> StoredState? { entries[user]?.stored }

    /// Applies `change` and records the result, on disk before returning for `.beforeReply`.
    /// Throws when that write failed; the new state is kept in memory either way (it only adds
    /// what happened, so keeping it is never weaker than the disk). `overUnreadable`: a state the
    /// disk fails to read with an error that lasts (EIO: `persists`) is taken as unreadable
    /// (`.corrupt`), so the change replaces it and keeps it aside; an administrator's action,
    /// which would otherwise never get past a file that keeps failing. A passing failure (no
    /// descriptor or memory left now) fails the change: the file, and what it holds, stays.
    @discardableResult
    func update(
        _ user: String, _ durability: Durability, overUnreadable: Bool = false,
        _ change: (StoredState) -> UserState
    ) async throws(StorageError) -> UserState {
        let e = try await entry(user, unreadableIsCorrupt: overUnreadable)
        let next = change(e.stored)
        let deferrable = durability == .afterReply && Self.onlyLaterFingerprintSuccess(e.stored, next)
        if e.stored.isCorrupt { e.moveAside = true }  // kept for inspection, not overwritten
        e.stored = .state(next)
        e.version += 1
        let version = e.version
        if deferrable { deferWrite(user, e) } else { scheduleWrite(user, e) }
        guard durability == .beforeReply else { return next }
        let done = OneShot<StorageError?>()
        if e.durable >= version { done.set(nil) } else { e.waiters.append((version, done)) }
        let late = LoopTimer(after: writeDeadline) { done.set(.io("write the state of \(user)", ETIMEDOUT)) }
        defer { late.cancel() }
        if let error = await done.wait() { throw error }
        return next
    }

    /// Waits until every change made so far is on disk (or failed), e.g. before the daemon exits;
    /// deferred ones are written now.
    func flush() async {
        for (user, e) in entries where e.durable < e.version {
            scheduleWrite(user, e)
            let done = OneShot<StorageError?>()
            e.waiters.append((e.version, done))
            _ = await done.wait()
        }
    }

    // MARK: reading

    /// The user's entry, read from disk the first time. Throws when it could not be read now (the
    /// storage queue is full, or the file system failed): nothing is cached then, so the next
    /// request reads it again, and nothing may be written, which would replace a good file.
    private func entry(_ user: String, unreadableIsCorrupt: Bool = false) async throws(StorageError) -> Entry {
        if let e = entries[user] { return e }
        if let pending = loading[user] {
            // The reader adopts what it read; a failure is each waiter's too.
            if case .failure(let error) = await pending.wait() {
                if unreadableIsCorrupt, Self.persists(error) {
                    return entries[user] ?? adopt(user, .corrupt(error.description))
                }
                throw error
            }
            guard let e = entries[user] else { throw .unsafe("the state of \(user) could not be read now") }
            return e
        }
        let pending = OneShot<Result<StoredState, StorageError>>()
        loading[user] = pending
        let (users, policy, now, readFile) = (self.users, self.policy, clock.now(), self.readFile)
        let read: Result<StoredState, StorageError>
        do {
            read = try await pool.run {
                Self.read { () throws(StorageError) in try readFile(user, users, policy, now) }
            }
        } catch {
            read = .failure(.unsafe("storage queue full"))
        }
        loading[user] = nil
        pending.set(read)
        switch read {
        case .failure(let error):
            log("cannot read the state of \(user) now: \(error)")
            if unreadableIsCorrupt, Self.persists(error) {
                return entries[user] ?? adopt(user, .corrupt(error.description))
            }
            throw error
        case .success(let stored):
            if case .corrupt(let why) = stored { log("state of \(user) refused: \(why)") }
            return entries[user] ?? adopt(user, stored)
        }
    }

    /// Whether a failed read says the file cannot be read, not only that it could not be now: an
    /// I/O error (EIO and the like) does, a lack the next read may not meet (no descriptor,
    /// memory or buffer left, interrupted, try again) does not. Nothing but an `.io` failure.
    nonisolated static func persists(_ error: StorageError) -> Bool {
        guard case .io(_, let code) = error else { return false }
        return ![EMFILE, ENFILE, ENOMEM, EINTR, EAGAIN, EWOULDBLOCK, ENOBUFS].contains(code)
    }

    private func adopt(_ user: String, _ stored: StoredState) -> Entry {
        let e = Entry(stored)
        entries[user] = e
        return e
    }

    /// What the file holds, `.corrupt` when it cannot be trusted (a symlink, not a regular file,
    /// another owner, too large) or is not a state; a failure of the file system itself (an I/O
    /// error, no descriptor or memory left) is no verdict on the file: the read failed.
    private nonisolated static func read(_ readFile: () throws(StorageError) -> StoredState) -> Result<
        StoredState, StorageError
    > {
        Result(catching: readFile).flatMapError { error in
            if case .io = error { return .failure(error) }
            return .success(.corrupt(error.description))
        }
    }

    nonisolated static func readState(
        _ user: String, users: Directory, policy: Policy, now: Instant
    ) throws(StorageError) -> StoredState {
        // No state yet: nothing was ever disabled. Enrolling is what opts in, so prints found
        // without a state were enrolled elsewhere (fprintd) and count as opted in; the policy
        // still asks the password once for them (enrollmentChanged). No prints: not enrolled.
        guard let dir = try users.subdirectory(user),
            let bytes = try dir.read(fileName, limit: 64 * 1024)
        else { return .state(UserState(enabled: true)) }
        guard let state = try? JSONDecoder().decode(UserState.self, from: Data(bytes)) else {
            return .corrupt("\(users.path)/\(user)/\(fileName) is not a valid state")
        }
        // A back-off end pushed far ahead by a clock jump is pulled back to one step from now.
        return .state(policy.backoffCappedToItsStep(state, at: now))
    }

    /// Whether `user` has a change in memory that no write has been started for (a deferred one).
    func hasDeferredChange(_ user: String) -> Bool { entries[user]?.deferred != nil }

    /// Waits until `user`'s changes so far are on disk, without hastening a deferred one.
    func waitUntilDurable(_ user: String) async {
        guard let e = entries[user], e.durable < e.version else { return }
        let done = OneShot<StorageError?>()
        e.waiters.append((e.version, done))
        _ = await done.wait()
    }

    // MARK: writing

    /// A fingerprint match that changed nothing else: no counter to clear, no rule to lift.
    private nonisolated static func onlyLaterFingerprintSuccess(_ before: StoredState, _ after: UserState) -> Bool {
        guard case .state(var s) = before, let now = after.lastFingerprintSuccess,
            now >= s.lastFingerprintSuccess ?? now
        else { return false }
        s.lastFingerprintSuccess = now
        return s == after
    }

    /// Starts the write later, unless one is due already; any other change writes it sooner.
    private func deferWrite(_ user: String, _ e: Entry) {
        guard e.deferred == nil, !e.writing else { return }
        // Written from a task, so the timer is dropped after its callback has returned.
        e.deferred = LoopTimer(after: deferral) { [self] in CoreLoop.shared.task { self.scheduleWrite(user, e) } }
    }

    /// One write per user at a time; changes made meanwhile are written together afterwards.
    private func scheduleWrite(_ user: String, _ e: Entry) {
        e.deferred?.cancel()
        e.deferred = nil
        e.retry?.cancel()
        e.retry = nil
        guard !e.writing, e.durable < e.version, case .state(let state) = e.stored else { return }
        e.writing = true
        let version = e.version
        let moveAside = e.moveAside
        e.moveAside = false
        let (users, stamp) = (self.users, clock.now())
        CoreLoop.shared.task { [self] in
            let outcome: StorageError?
            do {
                outcome = try await pool.run {
                    Self.write(state, user: user, users: users, moveAside: moveAside, stamp: stamp)
                }
            } catch {
                outcome = .unsafe("storage queue full")
            }
            e.writing = false
            if let outcome {
                if moveAside { e.moveAside = true }
            } else {
                if e.failures > 0 { log("the state of \(user) is written again") }
                e.failures = 0
                e.durable = max(e.durable, version)
            }
            // A failure answers every waiter: a later change is written with this one, which
            // the disk just refused, and is tried again only later (`retryLater`).
            let (ready, waiting) = e.waiters.partitioned { outcome != nil || $0.version <= version }
            e.waiters = waiting
            for w in ready { w.done.set(outcome) }
            if let outcome {
                retryLater(user, e, after: outcome)
            } else {
                scheduleWrite(user, e)  // what changed while it was written
            }
        }
    }

    /// A failed write is tried again later, not at once: a disk that refused one write refuses
    /// the next too, and trying in a loop would only spin and fill the log. A new change, a
    /// flush or the timer tries sooner or then.
    private func retryLater(_ user: String, _ e: Entry, after outcome: StorageError) {
        e.failures += 1
        let wait = min(retry << min(e.failures - 1, 6), max(retry, 60_000))
        log("cannot write the state of \(user): \(outcome); trying again in \(wait) ms")
        e.retry = LoopTimer(after: wait) { [self] in CoreLoop.shared.task { self.scheduleWrite(user, e) } }
    }

    private nonisolated static func write(
        _ state: UserState, user: String, users: Directory,
        moveAside: Bool, stamp: Instant
    ) -> StorageError? {
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data: Data
            do { data = try encoder.encode(state) } catch { return .unsafe("cannot encode state: \(error)") }
            guard let dir = try users.subdirectory(user, create: true) else {
                return .unsafe("no directory for \(user)")
            }
            if moveAside {
                // The corrupt entry stays the state until the new one takes its place, in one step:
                // a failed write or a crash leaves it (refused, fail closed), never no file, which
                // would read as a fresh state.
                try dir.replace(fileName, Array(data), keepingOldAs: "\(fileName).corrupt-\(stamp)")
            } else {
                try dir.writeAtomically(fileName, Array(data))
            }
            return nil
        } catch {
            return error
        }
    }
}

extension Array {
    /// The elements that satisfy `belongs`, and the others, each in their order.
    func partitioned(_ belongs: (Element) -> Bool) -> ([Element], [Element]) {
        var yes: [Element] = [], no: [Element] = []
        for e in self { if belongs(e) { yes.append(e) } else { no.append(e) } }
        return (yes, no)
    }
}
