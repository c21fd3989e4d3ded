// A core on private directories with the stub reader, a table of accounts, a test clock and passwords.
import Logging
import TouchGateCore
import TouchGatePolicy
import TouchGateReader
import TouchGateWire

extension Caller {
    public static let root = Caller(uid: 0, pid: 1)
    public static let alice = Caller(uid: 1000, pid: 4100)
    public static let bob = Caller(uid: 1001, pid: 4101)
    /// A uid no account has.
    public static let stranger = Caller(uid: 4242, pid: 4102)
}

/// One test's world. Several cores may be made on it in turn: a daemon restart.
@CoreActor public final class TestBed {
    public let root: String
    public let reader: StubReader
    public let passwords: StubPasswords
    public let clock: TestClock
    public let accounts: TableAccounts
    /// Every audit line of every core made here.
    public let audit = Collector<String>()
    /// Every line the cores made here logged.
    public let logged = Collector<String>()
    /// Those at info or above: what the daemon writes unless it is started with --debug.
    public let written = Collector<String>()
    /// The cores made here, in turn: their pending state writes land before the directory goes.
    public private(set) var cores: [Core] = []

    public var statePath: String { "\(root)/state" }
    public var storePath: String { "\(root)/prints" }

    public init(
        root: String, reader: StubReader = StubReader(), passwords: StubPasswords = StubPasswords(),
        clock: TestClock = TestClock(), accounts: TableAccounts = TableAccounts()
    ) {
        self.root = root
        self.reader = reader
        self.passwords = passwords
        self.clock = clock
        self.accounts = accounts
    }

    public func setup(
        bootID: String = "boot-1", allowRemote: Bool = false, policy: PolicyConfig = .defaults,
        reader: (any FingerprintReaders)? = nil
    ) throws -> CoreSetup {
        CoreSetup(
            policy: policy, allowRemote: allowRemote, bootID: bootID,
            stateDirectory: try Directory.openRoot(statePath), printStore: try Directory.openRoot(storePath),
            readers: reader ?? self.reader, passwords: passwords, accounts: accounts, clock: clock,
            log: collectingLogger(logged, written: written), audit: collectingLogger(audit))
    }

    /// A core as the daemon starts it on these directories.
    public func makeCore(
        bootID: String = "boot-1", allowRemote: Bool = false, policy: PolicyConfig = .defaults,
        reader: (any FingerprintReaders)? = nil
    ) throws -> Core {
        let core = try Core(setup(bootID: bootID, allowRemote: allowRemote, policy: policy, reader: reader))
        cores.append(core)
        return core
    }

    /// Where the stub reader's print of `finger` for `user` lives in fprintd's layout.
    public func printPath(_ user: String, _ finger: Finger) -> String {
        let info = reader.info ?? StubReader.defaultInfo
        return "\(storePath)/\(user)/\(info.driver)/\(info.deviceID)/\(String(finger.fpFinger, radix: 16))"
    }

    public func statePath(_ user: String) -> String { "\(statePath)/users/\(user)/state.json" }

    /// The user's state as it is on disk now (nil: no file).
    public func stateOnDisk(_ user: String) throws -> UserState? {
        guard let bytes = contents(statePath(user)) else { return nil }
        return try decodeJSON(UserState.self, bytes)
    }
}

/// Runs `body` with a test bed on a fresh temporary directory.
@CoreActor public func withTestBed<T>(
    reader: StubReader = StubReader(), passwords: StubPasswords = StubPasswords(),
    _ body: (TestBed) async throws -> T
) async throws -> T {
    try await withTemporaryDirectory { dir in
        let bed = TestBed(root: dir, reader: reader, passwords: passwords)
        let result: Result<T, any Error>
        do { result = .success(try await body(bed)) } catch { result = .failure(error) }
        // A state write made after a reply (not awaited by it) could otherwise land while the
        // directory is being removed, and leave part of it behind.
        for core in bed.cores { await core.shutdown() }
        return try result.get()
    }
}
