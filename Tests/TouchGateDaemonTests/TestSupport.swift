// Fixtures for the daemon tests: private temp directories, file facts, and stubs for the reader and PAM.
import Crypto
import Foundation
import Glibc
import Logging
import Synchronization
@testable import TouchGateDaemon
import TouchGatePolicy
import TouchGateReader
import TouchGateWire

struct TestSetupError: Error, CustomStringConvertible {
    let description: String
}

/// Runs `body` with a fresh directory under the system temp directory, removed afterwards.
func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let template = FileManager.default.temporaryDirectory
        .appendingPathComponent("touchgate-daemon-tests.XXXXXX").path
    var buffer = Array(template.utf8CString)
    guard let made = mkdtemp(&buffer) else { throw TestSetupError(description: "mkdtemp: \(errno)") }
    let dir = String(cString: made)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    return try body(dir)
}

/// Permission bits of `path` itself (never through a symlink), or nil when it does not exist.
func permissions(_ path: String) -> mode_t? {
    var st = stat()
    guard lstat(path, &st) == 0 else { return nil }
    return st.st_mode & 0o7777
}

/// The file type bits of `path` itself (S_IFREG, S_IFDIR, S_IFLNK), or nil when it does not exist.
func fileType(_ path: String) -> mode_t? {
    var st = stat()
    guard lstat(path, &st) == 0 else { return nil }
    return st.st_mode & S_IFMT
}

/// Writes `bytes` plainly (not through the code under test) with the given mode.
func plantFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) throws {
    guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
        throw TestSetupError(description: "cannot create \(path)")
    }
    guard chmod(path, mode) == 0 else { throw TestSetupError(description: "chmod \(path): \(errno)") }
}

func plantFile(_ path: String, _ text: String, mode: mode_t = 0o600) throws {
    try plantFile(path, Array(text.utf8), mode: mode)
}

func plantSymlink(at path: String, to target: String) throws {
    guard symlink(target, path) == 0 else { throw TestSetupError(description: "symlink \(path): \(errno)") }
}

func plantDirectory(_ path: String, mode: mode_t) throws {
    guard mkdir(path, mode) == 0, chmod(path, mode) == 0 else {
        throw TestSetupError(description: "mkdir \(path): \(errno)")
    }
}

/// The bytes of a file, following symlinks (used for checking what a symlink's target holds).
func contents(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { Array($0) }
}

func directoryEntries(_ dir: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted()
}

/// Plain SHA-256 in lowercase hex, from swift-crypto (the reference, not the code under test).
func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

let quietLogger = Logger(label: "touchgate.daemon-tests", factory: { _ in SwiftLogNoOpLogHandler() })

/// Collects what is handed to it from any thread.
final class Collector<Element: Sendable>: Sendable {
    private let items = Mutex<[Element]>([])
    func append(_ item: Element) { items.withLock { $0.append(item) } }
    var all: [Element] { items.withLock { $0 } }
}

/// A log handler that keeps every message, to read the audit trail back.
struct CollectingLogHandler: LogHandler {
    let lines: Collector<String>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        lines.append(event.message.description)
    }
}

/// A reader that is present (or not) and never scans: preflight must not touch the reader at all.
final class StubReader: FingerprintReader {
    let info: ReaderInfo?
    let operations = Collector<String>()
    init(info: ReaderInfo?) { self.info = info }

    static let present = StubReader(info: ReaderInfo(
        name: "Stub reader", driver: "stub", deviceID: "stub-0", enrollStages: 5,
        supportsIdentify: false, isSwipe: false))
    static let absent = StubReader(info: nil)

    func enroll(user: String, fingerIndex: Int, cancellation: Cancellation,
                progress: @escaping @Sendable (EnrollEvent) -> Void,
                completion: @escaping @Sendable (Result<[UInt8], ReaderFailure>) -> Void) {
        operations.append("enroll")
        completion(.failure(.noReader))
    }

    func verify(templates: [[UInt8]], timeoutSeconds: Int, cancellation: Cancellation,
                retry: @escaping @Sendable (RetryHint) -> Void,
                completion: @escaping @Sendable (Result<ScanResult, ReaderFailure>) -> Void) {
        operations.append("verify")
        completion(.failure(.noReader))
    }
}

/// Stands in for PAM: one password is correct, every other is wrong; counts the checks it was asked for.
final class StubPasswords: PasswordVerifying {
    let correctPassword: String
    let checked = Collector<String>()
    init(correctPassword: String = "correct horse") { self.correctPassword = correctPassword }

    var calls: Int { checked.all.count }

    func check(user: String, password: String) -> PasswordCheck {
        checked.append(user)
        return password == correctPassword ? .correct : .wrong
    }
}

func makeDaemon(stateDirectory: String, bootID: String = "boot-1", allowRemote: Bool = false,
                reader: StubReader = .present, passwords: StubPasswords = StubPasswords(),
                audit: Logger = quietLogger) throws -> Daemon {
    try Daemon(policy: .defaults, allowRemote: allowRemote, stateDirectory: stateDirectory, bootID: bootID,
               reader: reader, passwords: passwords, log: quietLogger, audit: audit)
}

func request(for user: String = "alice", rhost: String? = nil) -> RequestContext {
    RequestContext(user: user, service: "sudo", tty: "pts/3", rhost: rhost, policy: .biometrics, byUID: 0)
}

/// What `touchgate enroll` does once the reader produced a template: store it and opt the user in.
func enroll(_ daemon: Daemon, user: String = "alice", finger: Finger = .rightIndex,
            template: [UInt8] = Array("template-of-alice".utf8)) throws {
    try daemon.store.save(template, user: user, finger: finger)
    try daemon.adminChange(request(for: user), action: "enroll:\(finger.rawValue)") { var s = $0; s.enabled = true; return s }
}

/// Enrolled, opted in and with a password typed this boot: nothing refuses the fingerprint.
func readyUser(_ daemon: Daemon, user: String = "alice") throws {
    try enroll(daemon, user: user)
    try daemon.recordPasswordSuccess(request(for: user))
}
