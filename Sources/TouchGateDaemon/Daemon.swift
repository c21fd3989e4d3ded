// The daemon's shared state: config, templates, the reader and its queue; the preflight (canEvaluate).
import Logging
import TouchGatePolicy
import TouchGateReader
import TouchGateWire

/// A refusal as the client sees it: code, machine reason, sentence, seconds left.
struct Refusal: Sendable, Equatable {
    var outcome: Outcome
    var reason: String?
    var text: Text?
    var seconds: Int? = nil
}

public final class Daemon: Sendable {
    public let policy: PolicyConfig
    public let allowRemote: Bool
    public let passwordService: String
    let store: TemplateStore
    let reader: any FingerprintReader
    let arbiter = ReaderArbiter()
    let log: Logger

    public init(policy: PolicyConfig, allowRemote: Bool, passwordService: String,
                store: TemplateStore, reader: any FingerprintReader, log: Logger) {
        self.policy = policy
        self.allowRemote = allowRemote
        self.passwordService = passwordService
        self.store = store
        self.reader = reader
        self.log = log
    }

    /// canEvaluate: what an evaluation would end with before it starts, or nil when a prompt makes
    /// sense. Never touches the reader or the disk (finger lists are cached), so it answers in microseconds.
    func preflight(user: String, policy: EvaluationPolicy, rhost: String?) -> Refusal? {
        if let rhost, !rhost.isEmpty, !allowRemote {
            return Refusal(outcome: .biometryNotAvailable, reason: "remote", text: .remoteSession)
        }
        guard reader.info != nil else {
            return Refusal(outcome: .biometryNotAvailable, reason: "noReader", text: .noReader)
        }
        if store.fingers(of: user).isEmpty {
            return Refusal(outcome: .biometryNotEnrolled, reason: "noPrints", text: .notEnrolled)
        }
        return nil
    }

    func recordFingerprintSuccess(user: String) {}
    func recordFailedMatch(user: String) {}

    /// The one mapping from a reader failure to what the client is told.
    static func refusal(for failure: ReaderFailure, timeout: Int) -> Refusal {
        switch failure {
        case .noReader: return Refusal(outcome: .biometryNotAvailable, reason: "noReader", text: .noReader)
        case .removed: return Refusal(outcome: .biometryNotAvailable, reason: "removed", text: .readerRemoved)
        case .tooHot: return Refusal(outcome: .biometryNotAvailable, reason: "tooHot", text: .readerTooHot)
        case .busy: return Refusal(outcome: .biometryNotAvailable, reason: "busy", text: .readerBusy)
        case .timedOut: return Refusal(outcome: .timeout, reason: "timeout", text: .timedOut(seconds: timeout))
        case .cancelled: return Refusal(outcome: .systemCancel, reason: "cancelled", text: .cancelled)
        case .invalidTemplate, .failed:
            return Refusal(outcome: .biometryNotAvailable, reason: "readerError", text: .internalError)
        }
    }
}
