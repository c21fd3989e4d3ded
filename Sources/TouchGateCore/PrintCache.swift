// The prints of each user on each reader, read once from disk (on the storage pool) and kept
// until the daemon itself changes them or a match-on-chip reader's prints change; and the
// account-name lookups of callers, briefly cached.
import Glibc
import TouchGateWire

@CoreActor final class PrintCache {
    let files: PrintFiles
    private let pool: WorkerPool
    private let log: (String) -> Void
    private var cache: [String: [DeviceKey: PrintList]] = [:]
    private var entries: [String: [String]] = [:]
    /// The readers' `chipListing` the cached judgements were made under.
    private var listing = 0
    /// A print sealed shut is read again, and its line written, at every request for the user's
    /// prints, which a client can make at will: those lines are limited per user (LogThrottle).
    private let unused = LogThrottle<String> { "the prints of \($0)" }

    init(files: PrintFiles, pool: WorkerPool, log: @escaping (String) -> Void = { _ in }) {
        self.files = files
        self.pool = pool
        self.log = log
    }

    /// The user's prints on `device`; with no device (no reader) the prints of every reader, uncached.
    func list(_ user: String, device: DeviceKey?) async -> PrintList {
        guard let device else {
            let files = self.files
            return (try? await pool.run { files.listAllDevices(user) }) ?? .unsafe("storage queue full")
        }
        dropIfChipChanged()
        if let hit = cache[user]?[device] { return hit }
        let files = self.files, before = changes
        guard let list = try? await pool.run({ files.list(user, device: device) }) else {
            return .unsafe("storage queue full")  // not cached: the next request reads again
        }
        // A print sealed shut (the TPM did not answer) is asked for again next time; so is a list
        // read while the prints changed (it may be from before the change).
        if !list.prints.contains(where: \.closed), changes == before { cache[user, default: [:]][device] = list }
        for p in list.prints {
            if let why = p.problem, let more = unused.admit(user) {
                log("\(user)'s \(p.finger.rawValue) print is not used: \(why)\(more)")
            }
        }
        return list
    }

    /// Whether a print can be used depends on what its match-on-chip reader holds: once that may
    /// have changed (a reader opened, its prints listed anew), every list is read again.
    private func dropIfChipChanged() {
        let now = files.reader.chipListing
        guard now != listing else { return }
        cache.removeAll()
        entries.removeAll()
        listing = now
    }

    func invalidate(_ user: String) {
        cache[user] = nil
        entries[user] = nil
        invalidations += 1
    }

    /// Moves whenever a cached list may no longer hold (the daemon changed someone's prints, or a
    /// chip's listing changed): a prompt that saw it unchanged since it read its prints needs no
    /// second look at them.
    var changes: Int { invalidations + files.reader.chipListing }  // both only grow
    private var invalidations = 0

    /// The user's prints on every reader as the enrollment snapshot takes them, cached as the
    /// lists are; nil when they cannot be read now.
    func snapshotEntries(_ user: String) async -> [String]? {
        dropIfChipChanged()
        if let hit = entries[user] { return hit }
        let files = self.files, known = cache[user] ?? [:], before = changes
        guard let found = (try? await pool.run { files.snapshotEntries(user, known: known) }) ?? nil else { return nil }
        if changes == before { entries[user] = found }  // else it may be from before the change
        return found
    }

    /// Where sealing stands (nil: this store does not seal); may ask the TPM, so on the pool.
    func sealingState() async -> DataKeyState? {
        guard let sealing = files.sealing else { return nil }
        return try? await pool.run { sealing.keyState() }
    }

    func templates(_ user: String, device: DeviceKey, fingers: [Finger]) async throws(StorageError) -> [[UInt8]] {
        try await run { files throws(StorageError) in
            var out: [[UInt8]] = []
            for f in fingers {
                if let bytes = try files.template(user, device: device, finger: f) { out.append(bytes) }
            }
            return out
        }
    }

    func gallery(device: DeviceKey) async throws(StorageError) -> [GalleryPrint] {
        try await run { files in files.gallery(device: device) }
    }

    func everyTemplate(device: DeviceKey) async throws(StorageError) -> [[UInt8]]? {
        try await run { files in files.everyTemplate(device: device) }
    }

    func save(_ bytes: [UInt8], user: String, device: DeviceKey, finger: Finger) async throws(StorageError) {
        defer { invalidate(user) }
        try await run { files throws(StorageError) in try files.save(bytes, user: user, device: device, finger: finger)
        }
    }

    /// Deletes on `device`, or on every reader's directory when nil: the fingers removed, and the
    /// first file that could not be.
    func delete(_ user: String, device: DeviceKey?, fingers: [Finger]) async throws(StorageError) -> PrintDeletion {
        defer { invalidate(user) }
        return try await run { files throws(StorageError) in try files.delete(user, device: device, fingers: fingers) }
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable (PrintFiles) throws(StorageError) -> T)
        async throws(StorageError) -> T
    {
        let files = self.files
        let result: Result<T, StorageError>
        do {
            result = try await pool.run { () -> Result<T, StorageError> in
                do throws(StorageError) { return .success(try body(files)) } catch { return .failure(error) }
            }
        } catch { throw .unsafe("storage queue full") }
        return try result.get()
    }
}

/// uid → account name, from NSS on the accounts pool, remembered for a few seconds: a burst of
/// requests from one client costs one lookup, and a renamed account is seen soon after.
@CoreActor final class NameCache {
    private let accounts: any AccountDirectory
    private let pool: WorkerPool
    private var names: [UInt32: (name: String?, until: Int64)] = [:]
    static let lifetimeMilliseconds: Int64 = 5000

    init(accounts: any AccountDirectory, pool: WorkerPool) {
        self.accounts = accounts
        self.pool = pool
    }

    /// The account of `uid` (nil: none); throws when the look-up could not be queued.
    func name(of uid: UInt32) async throws(PoolBusy) -> String? {
        let now = monotonicMilliseconds()
        if let hit = names[uid], hit.until > now { return hit.name }
        let accounts = self.accounts
        let found = try await pool.run { accounts.name(uid: uid) }
        if names.count > 1024 { names.removeAll() }
        names[uid] = (found, now + Self.lifetimeMilliseconds)
        return found
    }

    /// Whether the account exists (never cached: a deleted account must stop at once); nil when
    /// the look-up could not be queued.
    func exists(_ user: String) async -> Bool? {
        let accounts = self.accounts
        return try? await pool.run { accounts.uid(name: user) != nil }
    }
}
