// A scripted fingerprint reader: each operation runs on a thread of its own, as libfprint's do.
import Synchronization
import TouchGateReader
import TouchGateThreads

/// Plays back scripted scans. Unscripted verifications fail (`.failed`), unscripted enrollments
/// complete; `.hold` waits until the core cancels the operation and then ends it as cancelled.
public final class StubReader: FingerprintReader, FingerprintReaders, Sendable {
    public enum Scan: Sendable, Equatable {
        case match(Int)
        case noMatch
        /// A retry hint; the same attempt goes on with the next step.
        case retry(RetryHint)
        case fail(ReaderFailure)
        /// Waits for the cancellation, then ends with `.cancelled`.
        case hold
        /// Waits until the test calls `releaseScan()`, then matches (template 0).
        case matchOnRelease

        public static let match = Scan.match(0)
    }

    public enum Enrollment: Sendable, Equatable {
        case complete
        case fail(ReaderFailure)
        case hold
        /// Waits for the cancellation, then completes all the same (a chip that finished as the
        /// cancel came: its print is stored on it).
        case completeOnCancel
        /// Waits until the test calls `releaseScan()`, cancelled or not, then completes.
        case completeOnRelease
    }

    private struct State {
        var info: ReaderInfo?
        var scans: [Scan] = []
        var enrollments: [Enrollment] = []
        var verified: [[[UInt8]]] = []
        var timeouts: [Int?] = []
        var enrolled: [(user: String, finger: Int)] = []
        var cancelled = 0
        var closed = 0
        var serial = 0
        var chipDeletions: [ChipDeletion] = []
        var chipDeleted: [[[UInt8]]] = []
        var chipListing = 0
        var chipHeld = false
        var chipClears = 0
    }

    private let state: Mutex<State>
    private let released = Semaphore()
    private let chipReleased = Semaphore()

    /// Lets a `.matchOnRelease` scan, or a `.completeOnRelease` enrollment, end.
    public func releaseScan() { released.signal() }

    public static let defaultInfo = ReaderInfo(
        name: "Stub reader", driver: "stub", deviceID: "stub-0",
        enrollStages: 3, supportsIdentify: false, isSwipe: false)

    public init(info: ReaderInfo? = StubReader.defaultInfo) {
        state = Mutex(State(info: info))
    }

    public var info: ReaderInfo? { state.withLock { $0.info } }

    /// The scans the next verifications play, one per attempt (a retry hint shares its attempt).
    public func script(_ scans: Scan...) { state.withLock { $0.scans += scans } }

    public func scriptEnrollment(_ steps: Enrollment...) { state.withLock { $0.enrollments += steps } }

    /// What the next deletions from the reader's own storage answer (unscripted: all deleted).
    public func scriptChipDeletion(_ results: ChipDeletion...) { state.withLock { $0.chipDeletions += results } }
    /// The templates each deletion from the reader's own storage was given, in order.
    public var chipDeletions: [[[UInt8]]] { state.withLock { $0.chipDeleted } }

    public func deleteFromDevice(_ templates: [[UInt8]], completion: @escaping @Sendable (ChipDeletion) -> Void) {
        let (result, held) = state.withLock { s in
            s.chipDeleted.append(templates)
            defer { s.chipHeld = false }
            let result =
                s.chipDeletions.isEmpty ? ChipDeletion(deleted: templates.count) : s.chipDeletions.removeFirst()
            return (result, s.chipHeld)
        }
        guard held else { return completion(result) }
        let released = chipReleased
        _ = startThread(name: "stub-chip") {
            released.wait()
            completion(result)
        }
    }

    /// Makes the next deletion from or clearing of the reader's own storage wait until
    /// `releaseChip()`, on a thread of its own (a chip that answers late).
    public func holdChip() { state.withLock { $0.chipHeld = true } }
    public func releaseChip() { chipReleased.signal() }
    /// How many clearings of the reader's own storage ended.
    public var chipClears: Int { state.withLock { $0.chipClears } }

    public func clearStorage(completion: @escaping @Sendable (String?) -> Void) {
        let held = state.withLock { s in
            defer { s.chipHeld = false }
            return s.chipHeld
        }
        let clear: @Sendable () -> Void = { [self] in
            state.withLock { $0.chipClears += 1 }
            completion(nil)
        }
        guard held else { return clear() }
        let released = chipReleased
        _ = startThread(name: "stub-chip") {
            released.wait()
            clear()
        }
    }

    /// The templates each verification was given, in order.
    public var verifications: [[[UInt8]]] { state.withLock { $0.verified } }
    /// The deadline each verification was given, in order (nil: none, it waits until cancelled).
    public var verifyTimeouts: [Int?] { state.withLock { $0.timeouts } }
    public var enrollments: [(user: String, finger: Int)] { state.withLock { $0.enrolled } }
    /// Operations that ended because the core cancelled them.
    public var cancellations: Int { state.withLock { $0.cancelled } }
    public var closes: Int { state.withLock { $0.closed } }

    /// A print this reader's `describe` reads back: what libfprint's serialized prints carry.
    public func print(user: String, finger: Int, payload: String = "ridges") -> [UInt8] {
        let info = self.info ?? Self.defaultInfo
        return StubPrint(driver: info.driver, deviceID: info.deviceID, finger: finger, user: user, payload: payload)
            .bytes
    }

    // MARK: FingerprintReaders (a machine with this one reader, or none while it has no info)

    public var served: [any FingerprintReader] { info == nil ? [] : [self] }

    public func whenOpened(_ completion: @escaping @Sendable () -> Void) { completion() }

    public var chipListing: Int { state.withLock { $0.chipListing } }
    /// As a match-on-chip reader listed anew with another result (opened again, say).
    public func chipListingChanged() { state.withLock { $0.chipListing += 1 } }

    public func describe(_ template: [UInt8]) -> PrintDescription? {
        StubPrint(template).map {
            PrintDescription(driver: $0.driver, deviceID: $0.deviceID, finger: $0.finger, username: $0.user)
        }
    }

    public func close(completion: @escaping @Sendable () -> Void) {
        state.withLock {
            $0.info = nil; $0.closed += 1
        }
        onOwnThread(completion)
    }

    public func reopen(completion: @escaping @Sendable (Bool) -> Void) {
        state.withLock { $0.info = Self.defaultInfo }
        onOwnThread { completion(true) }
    }

    /// Plays the next scripted scan, as a verification does (its templates are the gallery).
    public func identify(
        gallery: [[UInt8]], wholeGallery: Bool, cancellation: Cancellation,
        retry: @escaping @Sendable (RetryHint) -> Void,
        completion: @escaping @Sendable (Result<ScanResult, ReaderFailure>) -> Void
    ) {
        verify(
            templates: gallery, timeoutSeconds: nil, cancellation: cancellation, retry: retry, completion: completion)
    }

    public func verify(
        templates: [[UInt8]], timeoutSeconds: Int?, cancellation: Cancellation,
        retry: @escaping @Sendable (RetryHint) -> Void,
        completion: @escaping @Sendable (Result<ScanResult, ReaderFailure>) -> Void
    ) {
        let steps = state.withLock { s -> [Scan] in
            s.verified.append(templates)
            s.timeouts.append(timeoutSeconds)
            var steps: [Scan] = []
            while let next = s.scans.first {
                s.scans.removeFirst()
                steps.append(next)
                if case .retry = next { continue }
                break
            }
            return steps
        }
        onOwnThread { [self] in
            for step in steps {
                if cancellation.isCancelled { return finishCancelled(completion) }
                switch step {
                case .retry(let hint): retry(hint)
                case .match(let index): return completion(.success(.match(index)))
                case .noMatch: return completion(.success(.noMatch))
                case .fail(let failure): return completion(.failure(failure))
                case .hold: return waitForCancellation(cancellation) { self.finishCancelled(completion) }
                case .matchOnRelease:
                    released.wait()
                    return completion(.success(.match(0)))
                }
            }
            completion(.failure(.failed("no scripted scan")))
        }
    }

    public func enroll(
        user: String, fingerIndex: Int, cancellation: Cancellation,
        progress: @escaping @Sendable (EnrollEvent) -> Void,
        completion: @escaping @Sendable (Result<[UInt8], ReaderFailure>) -> Void
    ) {
        let (step, stages, serial) = state.withLock { s -> (Enrollment, Int, Int) in
            s.enrolled.append((user, fingerIndex))
            s.serial += 1
            let step = s.enrollments.isEmpty ? Enrollment.complete : s.enrollments.removeFirst()
            return (step, s.info?.enrollStages ?? 0, s.serial)
        }
        let template = print(user: user, finger: fingerIndex, payload: "enrolled-\(serial)")
        onOwnThread { [self] in
            switch step {
            case .complete:
                for k in 1...max(1, stages) {
                    if cancellation.isCancelled { return finishCancelled(completion) }
                    progress(.stage(completed: k, of: stages))
                }
                completion(.success(template))
            case .fail(let failure): completion(.failure(failure))
            case .hold: waitForCancellation(cancellation) { self.finishCancelled(completion) }
            case .completeOnCancel: waitForCancellation(cancellation) { completion(.success(template)) }
            case .completeOnRelease:
                released.wait()
                completion(.success(template))
            }
        }
    }

    // MARK: threads

    private func finishCancelled<T>(_ completion: @Sendable (Result<T, ReaderFailure>) -> Void) {
        state.withLock { $0.cancelled += 1 }
        completion(.failure(.cancelled))
    }

    /// Blocks this operation's thread until the core cancels, then runs `then` on it.
    private func waitForCancellation(_ cancellation: Cancellation, then: () -> Void) {
        let woken = Semaphore()
        cancellation.setHook { woken.signal() }
        woken.wait()
        cancellation.setHook(nil)
        then()
    }

    private func onOwnThread(_ body: @escaping @Sendable () -> Void) {
        guard startThread(name: "stub-reader", body) else { fatalError("cannot start a stub reader thread") }
    }
}

/// The stub's serialized print: fields libfprint keeps in its own, separated by 0x01.
public struct StubPrint: Sendable, Equatable {
    public var driver: String
    public var deviceID: String
    public var finger: Int
    public var user: String
    public var payload: String

    static let magic = "stub-print"

    public init(driver: String, deviceID: String, finger: Int, user: String, payload: String) {
        self.driver = driver; self.deviceID = deviceID; self.finger = finger; self.user = user; self.payload = payload
    }

    /// nil for bytes that are not a stub print (what libfprint does with a damaged file).
    public init?(_ bytes: [UInt8]) {
        let parts = bytes.split(separator: 0x01, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        guard parts.count == 6, parts[0] == Self.magic, let finger = Int(parts[3]) else { return nil }
        self.init(driver: parts[1], deviceID: parts[2], finger: finger, user: parts[4], payload: parts[5])
    }

    public var bytes: [UInt8] {
        Array([Self.magic, driver, deviceID, String(finger), user, payload].joined(separator: "\u{1}").utf8)
    }
}
