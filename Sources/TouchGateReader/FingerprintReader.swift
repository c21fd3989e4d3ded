// What the daemon needs from a fingerprint reader, independent of libfprint.
import Synchronization

public struct ReaderInfo: Sendable, Equatable {
    public var name: String
    public var driver: String
    public var deviceID: String
    public var enrollStages: Int
    public var supportsIdentify: Bool
    /// Swipe sensor (else press): decides the prompt's wording.
    public var isSwipe: Bool
    public init(name: String, driver: String, deviceID: String, enrollStages: Int, supportsIdentify: Bool, isSwipe: Bool) {
        self.name = name; self.driver = driver; self.deviceID = deviceID
        self.enrollStages = enrollStages; self.supportsIdentify = supportsIdentify; self.isSwipe = isSwipe
    }
}

/// A scan the reader could not use; not a failed match (docs/spec.md §3: relayed, not counted).
public enum RetryHint: Int, Sendable {
    case general = 0, tooShort, centerFinger, removeFinger
}

/// Why a reader operation ended without a result. libfprint's GError domains map here, once.
public enum ReaderFailure: Error, Sendable, Equatable {
    case noReader
    case removed
    case tooHot
    case cancelled
    case timedOut
    case busy
    case invalidTemplate
    case failed(String)
}

public enum EnrollEvent: Sendable, Equatable {
    case stage(completed: Int, of: Int)
    case retry(RetryHint)
}

public enum ScanResult: Sendable, Equatable {
    /// Index into the templates passed to `verify`.
    case match(Int)
    case noMatch
}

/// Cancels one reader operation from any thread; safe to call before, during or after it runs.
public final class Cancellation: Sendable {
    private let state = Mutex<(cancelled: Bool, hook: (@Sendable () -> Void)?)>((false, nil))
    public init() {}

    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    public func cancel() {
        let hook = state.withLock { s -> (@Sendable () -> Void)? in
            guard !s.cancelled else { return nil }
            s.cancelled = true
            return s.hook
        }
        hook?()
    }

    /// Installs what `cancel()` must do while an operation runs; runs it at once if already cancelled.
    package func setHook(_ hook: (@Sendable () -> Void)?) {
        let runNow = state.withLock { s -> Bool in
            s.hook = hook
            return s.cancelled && hook != nil
        }
        if runNow { hook?() }
    }
}

/// What a serialized print says about itself (libfprint's print metadata).
public struct PrintDescription: Sendable, Equatable {
    public var driver: String
    public var deviceID: String
    /// libfprint's FpFinger number (1 = left thumb … 10 = right little finger; 0 unknown).
    public var finger: Int
    public var username: String?
    public init(driver: String, deviceID: String, finger: Int, username: String?) {
        self.driver = driver; self.deviceID = deviceID; self.finger = finger; self.username = username
    }
}

/// A fingerprint reader. Operations are asynchronous: callbacks come on the reader's own thread,
/// in order, and `completion` is called exactly once.
public protocol FingerprintReader: AnyObject, Sendable {
    /// The reader, or nil when there is none (or it was removed).
    var info: ReaderInfo? { get }

    func enroll(user: String, fingerIndex: Int, cancellation: Cancellation,
                progress: @escaping @Sendable (EnrollEvent) -> Void,
                completion: @escaping @Sendable (Result<[UInt8], ReaderFailure>) -> Void)

    /// Calls `completion` (from any thread) once the first attempt to open a reader has ended,
    /// successfully or not; until then `info` may still be nil for a reader that is there.
    func whenOpened(_ completion: @escaping @Sendable () -> Void)

    /// The metadata of a serialized print, or nil when libfprint cannot read it (a damaged file).
    /// Callable from any thread; never touches the device.
    func describe(_ template: [UInt8]) -> PrintDescription?

    /// Whether `describe` can judge a print at all: false when libfprint itself could not be
    /// loaded, so that no print is called damaged for that.
    var describesPrints: Bool { get }

    /// Closes the device (shutdown, suspend); later operations fail with `.noReader` until `reopen`.
    func close(completion: @escaping @Sendable () -> Void)

    /// Opens the first reader again (resume); `completion` tells whether one is open.
    func reopen(completion: @escaping @Sendable (Bool) -> Void)

    /// One attempt: waits up to `timeoutSeconds` for a usable scan (retry hints restart the wait)
    /// and reports whether it matched one of `templates`.
    func verify(templates: [[UInt8]], timeoutSeconds: Int, cancellation: Cancellation,
                retry: @escaping @Sendable (RetryHint) -> Void,
                completion: @escaping @Sendable (Result<ScanResult, ReaderFailure>) -> Void)
}

extension FingerprintReader {
    public var describesPrints: Bool { true }
}
