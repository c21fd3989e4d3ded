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
    /// Whether the driver feels a finger on it (libfprint's finger-status); announced only while
    /// someone watches it (`FingerprintReaders.watchFinger`).
    public var fingerPresent = false
    /// Whether the driver waits for a finger now (libfprint's finger-status NEEDED, which an image
    /// device clears between captures); true where nothing says otherwise. Announced as above.
    public var fingerWanted = true
    /// A match-on-chip reader that keeps its own copy of each print it enrolled (libfprint's
    /// storage feature): a deletion deletes that copy too.
    public var hasStorage = false
    /// Whether such a reader can list what its storage holds (libfprint's storage-list feature).
    public var listsStorage = false

    /// Scans an enrollment takes: the driver's stages, and on a reader that can identify one more
    /// first, which checks that the finger is not enrolled already (fprintd counts it the same way).
    public var enrollScans: Int { enrollStages + (supportsIdentify ? 1 : 0) }
    public init(
        name: String, driver: String, deviceID: String, enrollStages: Int, supportsIdentify: Bool, isSwipe: Bool
    ) {
        self.name = name; self.driver = driver; self.deviceID = deviceID
        self.enrollStages = enrollStages; self.supportsIdentify = supportsIdentify; self.isSwipe = isSwipe
    }
}

/// A scan the reader could not use; not a failed match (docs/spec.md §3: relayed, not counted).
/// The values are libfprint's FpDeviceRetry codes (TOO_FAST, 4, since libfprint 1.94.9).
public enum RetryHint: Int, Sendable, CaseIterable {
    case general = 0, tooShort, centerFinger, removeFinger, tooFast

    /// The hint for libfprint's code; one this build does not know (a later libfprint's) is the
    /// general one, as fprintd reports it.
    public init(libfprintCode code: Int) { self = RetryHint(rawValue: code) ?? .general }
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
    /// The reader holds none of the prints it was given (FP_DEVICE_ERROR_DATA_NOT_FOUND). A verify
    /// or identify answers it as no match instead; only an enrollment's own stages end with it.
    case printsNotFound
    /// The driver lost the conversation with the device (FP_DEVICE_ERROR_PROTO): fprintd calls it
    /// a disconnection.
    case protocolError
    /// The reader's own print storage is full (match-on-chip readers).
    case storageFull
    /// The reader itself refused the finger as already enrolled (match-on-chip readers).
    case duplicate
    /// Another of libfprint's device errors (general, not supported, not open, already open…).
    case deviceError(Int32)
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
    /// On a match-on-chip reader: whether the chip still holds the print (nil on other readers,
    /// or when its list could not be read).
    public var onDevice: Bool?
    public init(driver: String, deviceID: String, finger: Int, username: String?, onDevice: Bool? = nil) {
        self.driver = driver; self.deviceID = deviceID; self.finger = finger; self.username = username
        self.onDevice = onDevice
    }
}

/// What deleting prints from a reader's own storage did: how many it deleted, and why one stayed
/// there (nil: none did; a print the reader no longer held is gone, as was wanted).
public struct ChipDeletion: Sendable, Equatable {
    public var deleted: Int
    public var failure: String?
    public init(deleted: Int, failure: String? = nil) { self.deleted = deleted; self.failure = failure }
}

/// One fingerprint reader. Operations are asynchronous: callbacks come on the readers' thread, in
/// order, and `completion` is called exactly once.
public protocol FingerprintReader: AnyObject, Sendable {
    /// The reader, or nil once it was removed (or closed).
    var info: ReaderInfo? { get }

    func enroll(
        user: String, fingerIndex: Int, cancellation: Cancellation,
        progress: @escaping @Sendable (EnrollEvent) -> Void,
        completion: @escaping @Sendable (Result<[UInt8], ReaderFailure>) -> Void)

    /// Deletes these prints from the reader's own storage (match-on-chip readers; nothing on the
    /// others), after their files went; `completion` says what went there and what stayed.
    func deleteFromDevice(_ templates: [[UInt8]], completion: @escaping @Sendable (ChipDeletion) -> Void)

    /// Match-on-chip readers whose storage is full: deletes one print the reader holds that is none
    /// of `owned` (every print the store has for it: the others are another system's, or an earlier
    /// install's), as fprintd does; `completion` tells whether one was deleted.
    func deleteOnePrintNotIn(_ owned: [[UInt8]], completion: @escaping @Sendable (Bool) -> Void)

    /// Match-on-chip readers: deletes every print the reader's own storage holds; `completion`
    /// gets nil when done, else why not.
    func clearStorage(completion: @escaping @Sendable (String?) -> Void)

    /// One scan identified against every print of `gallery` (which may be empty), on a reader that
    /// can identify: the first scan of an enrollment. Retry hints restart the wait; no timeout.
    /// `.match(i)` is an index into `gallery`. With `wholeGallery` (it holds every print the store
    /// has for this reader), a print of the scanned finger that the reader's own storage holds
    /// and none of the gallery matched is no one's, and is deleted there; without, it is kept.
    func identify(
        gallery: [[UInt8]], wholeGallery: Bool, cancellation: Cancellation,
        retry: @escaping @Sendable (RetryHint) -> Void,
        completion: @escaping @Sendable (Result<ScanResult, ReaderFailure>) -> Void)

    /// One attempt: waits up to `timeoutSeconds` (nil: until cancelled) for a usable scan (retry
    /// hints restart the wait) and reports whether it matched one of `templates`. Identify and
    /// verify report it as soon as libfprint does; the reader may go on ending the operation (an
    /// image reader until the finger is lifted), and its next operation waits for that.
    func verify(
        templates: [[UInt8]], timeoutSeconds: Int?, cancellation: Cancellation,
        retry: @escaping @Sendable (RetryHint) -> Void,
        completion: @escaping @Sendable (Result<ScanResult, ReaderFailure>) -> Void)
}

extension FingerprintReader {
    public func deleteFromDevice(_ templates: [[UInt8]], completion: @escaping @Sendable (ChipDeletion) -> Void) {
        completion(ChipDeletion(deleted: 0))
    }
    public func deleteOnePrintNotIn(_ owned: [[UInt8]], completion: @escaping @Sendable (Bool) -> Void) {
        completion(false)
    }
    public func clearStorage(completion: @escaping @Sendable (String?) -> Void) { completion(nil) }
}

/// Every reader the daemon serves: libfprint's whole list, and the ones plugged in later.
public protocol FingerprintReaders: AnyObject, Sendable {
    /// The readers served now, in the order libfprint found them; the first is the default one.
    var served: [any FingerprintReader] { get }

    /// Calls `completion` (from any thread) once the first attempt to open the readers has ended,
    /// successfully or not; until then `served` may still lack a reader that is there.
    func whenOpened(_ completion: @escaping @Sendable () -> Void)

    /// The metadata of a serialized print, or nil when libfprint cannot read it (a damaged file).
    /// Callable from any thread; never touches a device.
    func describe(_ template: [UInt8]) -> PrintDescription?

    /// Whether `describe` can judge a print at all: false when libfprint itself could not be
    /// loaded, so that no print is called damaged for that.
    var describesPrints: Bool { get }

    /// Changes whenever what a match-on-chip reader holds may have changed (a reader opened, its
    /// prints listed with another result): judgements made by `describe` before are stale.
    var chipListing: Int { get }

    /// Calls `handler` (on the readers' thread) with every served reader's description whenever
    /// one changes (its enroll stages; the finger's status while it is watched), one is unplugged
    /// or one is added.
    func onChange(_ handler: @escaping @Sendable ([ReaderInfo]) -> Void)

    /// Starts (or, with false, ends one) watching of the finger's status: while any watching goes
    /// on, its changes are announced to the `onChange` handlers. Unwatched, they only update
    /// `info`, so a prompt nobody shows the finger to wakes no other thread for it.
    func watchFinger(_ watching: Bool)

    /// Closes every reader (shutdown, suspend); `served` is empty until `reopen`.
    func close(completion: @escaping @Sendable () -> Void)

    /// Opens the readers again (resume); `completion` tells whether one is open.
    func reopen(completion: @escaping @Sendable (Bool) -> Void)
}

extension FingerprintReaders {
    public var describesPrints: Bool { true }
    public var chipListing: Int { 0 }
    public func onChange(_ handler: @escaping @Sendable ([ReaderInfo]) -> Void) {}
    public func watchFinger(_ watching: Bool) {}

    /// The reader a request names (`selector`: its driver, its name, or DRIVER/DEVICE-ID), or the
    /// default one when it names none; nil when none is served or none matches.
    public func reader(_ selector: String?) -> (any FingerprintReader)? {
        let served = self.served
        guard let selector else { return served.first }
        return served.first { $0.info?.matches(selector) == true }
    }
}

extension ReaderInfo {
    /// The name that means this reader and no other in a request: DRIVER/DEVICE-ID.
    public var selector: String { "\(driver)/\(deviceID)" }

    /// Whether a request's reader name means this reader: its driver (`synaptics`), its name, or
    /// its `selector` (two readers of one driver).
    public func matches(_ name: String) -> Bool {
        name == driver || name == self.name || name == selector
    }
}
