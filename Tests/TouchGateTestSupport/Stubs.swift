// The rest of the world the core is given in tests: accounts, a clock, a password checker, logs.
import Logging
import Synchronization
import TouchGateCore
import TouchGatePolicy

/// A table of accounts instead of NSS.
public struct TableAccounts: AccountDirectory {
    public let uids: [String: UInt32]
    public init(_ uids: [String: UInt32] = TableAccounts.standard) { self.uids = uids }

    public static let standard: [String: UInt32] = ["root": 0, "alice": 1000, "bob": 1001, "carol": 1002]

    public func name(uid: UInt32) -> String? { uids.first { $0.value == uid }?.key }
    public func uid(name: String) -> UInt32? { uids[name] }
}

/// A wall clock that moves only when told to.
public final class TestClock: WallClock {
    private let current: Mutex<Instant>
    /// 2023-11-14, an arbitrary fixed start.
    public static let start: Instant = 1_700_000_000

    public init(_ start: Instant = TestClock.start) { current = Mutex(start) }

    public func now() -> Instant { current.withLock { $0 } }
    public func advance(_ seconds: Int64) { current.withLock { $0 += seconds } }
}

/// Stands in for PAM: one password is correct, every other is wrong; keeps count of the checks.
public final class StubPasswords: PasswordVerifying {
    public let correctPassword: String
    private let checked = Mutex<[String]>([])
    private let answer = Mutex<PasswordCheck?>(nil)

    public init(correctPassword: String = "correct horse") { self.correctPassword = correctPassword }

    /// How many passwords reached the checker (a refused attempt in back-off never does).
    public var calls: Int { checked.withLock { $0.count } }
    /// Makes every check answer `check` (nil: back to comparing with the correct password).
    public func answerAlways(_ check: PasswordCheck?) { answer.withLock { $0 = check } }

    public func check(user: String, password: String) -> PasswordCheck {
        checked.withLock { $0.append(user) }
        if let fixed = answer.withLock({ $0 }) { return fixed }
        return password == correctPassword ? .correct : .wrong
    }
}

/// Collects what is handed to it from any thread.
public final class Collector<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    public init() {}
    public func append(_ item: Element) { items.withLock { $0.append(item) } }
    public var all: [Element] { items.withLock { $0 } }
}

/// A log handler that keeps every message, to read the audit trail back; and in `written`, when
/// given, those at info or above: what the daemon writes unless it is started with --debug.
public struct CollectingLogHandler: LogHandler {
    public let lines: Collector<String>
    public let written: Collector<String>?
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .trace
    public init(lines: Collector<String>, written: Collector<String>? = nil) {
        self.lines = lines
        self.written = written
    }
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    public func log(event: LogEvent) {
        lines.append(event.message.description)
        if event.level >= .info { written?.append(event.message.description) }
    }
}

public let quietLogger = Logger(label: "touchgate.tests", factory: { _ in SwiftLogNoOpLogHandler() })

public func collectingLogger(_ lines: Collector<String>, written: Collector<String>? = nil) -> Logger {
    Logger(label: "touchgate.tests.audit", factory: { _ in CollectingLogHandler(lines: lines, written: written) })
}
