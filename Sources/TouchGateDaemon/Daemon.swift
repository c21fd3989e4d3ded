// The daemon's shared state and its decisions: canEvaluate, what each outcome records, events.
import Logging
import TouchGatePolicy
import TouchGateReader
import TouchGateWire

/// A refusal as the client sees it: code, machine reason, sentence, seconds left.
struct Refusal: Sendable, Equatable, Error {
    var outcome: Outcome
    var reason: String?
    var text: Text?
    var seconds: Int? = nil
    /// deviceOwnerAuthentication: the client should ask for the password now (VERIFY_PASSWORD).
    var askPassword = false
}

/// Who asked and from where, for events and audit.
struct RequestContext: Sendable {
    var user: String
    var service: String?
    var tty: String?
    var rhost: String?
    var policy: EvaluationPolicy?
    var byUID: UInt32
}

public final class Daemon: Sendable {
    public let config: PolicyConfig
    let policyEngine: Policy
    public let allowRemote: Bool
    let store: TemplateStore
    let states: UserStateStore
    let reader: any FingerprintReader
    let passwords: any PasswordVerifying
    let domainKey: DomainStateKey
    let bootID: String
    let arbiter = ReaderArbiter()
    let events: EventBus
    let log: Logger

    public init(policy: PolicyConfig, allowRemote: Bool, stateDirectory: String, bootID: String,
                reader: any FingerprintReader, passwords: any PasswordVerifying,
                log: Logger, audit: Logger) throws(StorageError) {
        self.config = policy
        self.policyEngine = Policy(config: policy)
        self.allowRemote = allowRemote
        self.store = try TemplateStore(stateDirectory: stateDirectory)
        self.states = UserStateStore(stateDirectory: stateDirectory, policy: Policy(config: policy))
        self.domainKey = try DomainStateKey(stateDirectory: stateDirectory)
        self.bootID = bootID
        self.reader = reader
        self.passwords = passwords
        self.log = log
        self.events = EventBus(audit: audit)
    }

    func environment(for user: String) -> Environment {
        Environment(now: Clock.now(), bootID: bootID,
                    enrollmentSnapshot: snapshot(of: user), readerAvailable: reader.info != nil)
    }

    /// Order-independent identity of the user's set of prints (nil: none).
    func snapshot(of user: String) -> String? {
        enrollmentSnapshot(fingers: store.prints(of: user).map { "\($0.finger.rawValue):\($0.digest)" })
    }

    // MARK: canEvaluate

    /// What an evaluation would end with before it starts, or nil when a prompt makes sense.
    /// Never touches the reader; prints and states are cached, so it answers in microseconds.
    func preflight(user: String, policy: EvaluationPolicy, rhost: String?) -> Refusal? {
        if let rhost, !rhost.isEmpty, !allowRemote {
            return Refusal(outcome: .biometryNotAvailable, reason: "remote", text: .remoteSession)
        }
        let env = environment(for: user)
        guard case .state(let state) = states.load(user) else {
            return Refusal(outcome: .biometryLockout, reason: "stateUnreadable", text: .stateUnreadable)
        }
        if env.enrollmentSnapshot != nil && !state.enabled {
            return Refusal(outcome: .biometryNotEnrolled, reason: "notEnabled", text: .notEnabled)
        }
        switch policyEngine.canEvaluateBiometrics(state, in: env) {
        case .available: return nil
        case .refused(let r): return refusal(for: r)
        }
    }

    /// The refusal of a `biometrics-or-password` evaluation: when the fingerprint is locked out, a
    /// password is required, or the tries are used up, the password comes next — unless password
    /// entry itself is in back-off, which the person is told at once instead of after typing.
    func offeringPassword(_ refusal: Refusal, user: String) -> Refusal {
        let passwordNext = refusal.outcome == .biometryLockout || refusal.outcome == .passwordRequired
            || (refusal.outcome == .authenticationFailed && refusal.reason == "maxTries")
        guard passwordNext else { return refusal }
        var offer = refusal
        if case .state(let s) = states.load(user),
           case .refused(.backoff(let left)) = policyEngine.canAttemptPassword(s, at: Clock.now()) {
            offer.text = .lines([refusal.text, .backoff(seconds: Int(left))].compactMap { $0 })
        } else {
            offer.askPassword = true
        }
        return offer
    }

    func refusal(for r: BiometricRefusal) -> Refusal {
        switch r {
        case .notAvailable: return Refusal(outcome: .biometryNotAvailable, reason: "noReader", text: .noReader)
        case .notEnrolled: return Refusal(outcome: .biometryNotEnrolled, reason: "noPrints", text: .notEnrolled)
        case .lockout:
            return Refusal(outcome: .biometryLockout, reason: "lockout", text: .lockout(attempts: config.lockoutThreshold))
        case .passwordRequired(let reason):
            return Refusal(outcome: .passwordRequired, reason: reason.rawValue, text: .passwordRequired(reason))
        }
    }

    // MARK: what outcomes record (on disk before the reply)

    /// A failed match: counts toward lockout. Returns the lockout refusal when this failure caused it.
    func recordFailedMatch(_ ctx: RequestContext) throws(StorageError) -> Refusal? {
        var locked = false
        let s = try states.update(ctx.user) { stored in
            let (next, became) = policyEngine.recordFailedMatch(stored.stateOrFailClosed, at: Clock.now())
            locked = became
            return next
        }
        guard locked else { return nil }
        var e = event("lockout", ctx, method: "fingerprint", outcome: .biometryLockout, reason: "lockout")
        e.failedMatches = s.consecutiveFailedMatches
        events.publish(e)
        return refusal(for: .lockout)
    }

    func recordFingerprintSuccess(_ ctx: RequestContext) {
        do {
            try states.update(ctx.user) { stored in
                policyEngine.recordFingerprintSuccess(stored.stateOrFailClosed, at: Clock.now())
            }
        } catch {
            // The match happened; a lost reset only leaves the counters higher (fail closed).
            log.error("cannot record fingerprint success: \(error)")
        }
    }

    /// A password success clears lockout, every passwordRequired reason and the back-off.
    func recordPasswordSuccess(_ ctx: RequestContext, enable: Bool = false) throws(StorageError) {
        let env = environment(for: ctx.user)
        var wasLocked = false
        try states.update(ctx.user) { stored in
            var s: UserState
            switch stored {
            case .state(let current): s = current
            case .corrupt:
                // Start afresh, opted in when prints exist (enrolling is what opts in).
                s = UserState()
                s.enabled = env.enrollmentSnapshot != nil
            }
            wasLocked = s.biometryLockedOut || s.adminLocked
            if enable { s = policyEngine.enable(s) }
            return policyEngine.recordPasswordSuccess(s, in: env)
        }
        if wasLocked { events.publish(event("unlock", ctx, method: "password", outcome: .success, reason: "passwordSuccess")) }
    }

    enum PasswordOutcome: Equatable {
        case correct
        case refused(Refusal)
    }

    /// Checks a typed password the daemon itself received: back-off first (a locked attempt is not
    /// even checked, so there is no oracle), then PAM; every answer is recorded before it is returned,
    /// and every refusal is published here (callers publish only successes).
    func verifyPassword(_ ctx: RequestContext, _ password: String) -> PasswordOutcome {
        let stored = states.load(ctx.user)
        if case .state(let s) = stored, case .refused(.backoff(let left)) = policyEngine.canAttemptPassword(s, at: Clock.now()) {
            events.publish(event("outcome", ctx, method: "password", outcome: .passwordBackoff, reason: "backoff"))
            return .refused(Refusal(outcome: .passwordBackoff, reason: "backoff", text: .backoff(seconds: Int(left)), seconds: Int(left)))
        }
        switch passwords.check(user: ctx.user, password: password) {
        case .correct:
            do { try recordPasswordSuccess(ctx) } catch {
                log.error("cannot record password success: \(error)")
                return .refused(Refusal(outcome: .internalError, reason: "storage", text: .internalError))
            }
            return .correct
        case .wrong:
            var backoff: Int64?
            var count = 0
            do {
                try states.update(ctx.user) { stored in
                    let (next, b) = policyEngine.recordWrongPassword(stored.stateOrFailClosed, at: Clock.now())
                    backoff = b
                    count = next.consecutiveWrongPasswords
                    return next
                }
            } catch {
                log.error("cannot record wrong password: \(error)")
                return .refused(Refusal(outcome: .internalError, reason: "storage", text: .internalError))
            }
            var e = event("outcome", ctx, method: "password", outcome: .authenticationFailed, reason: "wrongPassword")
            e.wrongPasswords = count
            events.publish(e)
            if let backoff {
                return .refused(Refusal(outcome: .authenticationFailed, reason: "wrongPassword",
                                        text: .wrongPasswordBackoff(seconds: Int(backoff)), seconds: Int(backoff)))
            }
            return .refused(Refusal(outcome: .authenticationFailed, reason: "wrongPassword", text: .wrongPassword))
        case .notSet:
            events.publish(event("outcome", ctx, method: "password", outcome: .passwordNotSet, reason: "passwordNotSet"))
            return .refused(Refusal(outcome: .passwordNotSet, reason: "passwordNotSet", text: .passwordNotSet))
        case .unavailable(let why):
            log.error("password check unavailable: \(why)")
            return .refused(Refusal(outcome: .internalError, reason: "passwordService", text: .internalError))
        }
    }

    // MARK: admin

    func adminChange(_ ctx: RequestContext, action: String, _ change: @escaping (UserState) -> UserState) throws(StorageError) {
        // An admin action never turns an unreadable state into a clean one.
        try states.update(ctx.user) { stored in change(stored.stateOrFailClosed) }
        events.publish(event("admin", ctx, method: "admin", outcome: .success, reason: action))
    }

    // MARK: events

    func event(_ kind: String, _ ctx: RequestContext, method: String?, outcome: Outcome, reason: String?) -> AuthEvent {
        var e = AuthEvent(event: kind, user: ctx.user)
        e.service = ctx.service
        e.tty = ctx.tty
        e.rhost = ctx.rhost
        e.policy = ctx.policy?.name
        e.method = method
        e.code = outcome.rawValue
        e.outcome = outcome.name
        e.reason = reason
        e.byUID = ctx.byUID
        return e
    }

    func publishOutcome(_ ctx: RequestContext, method: String?, outcome: Outcome, reason: String?) {
        var e = event("outcome", ctx, method: method, outcome: outcome, reason: reason)
        if case .state(let s) = states.load(ctx.user) {
            e.failedMatches = s.consecutiveFailedMatches
            e.wrongPasswords = s.consecutiveWrongPasswords
        }
        events.publish(e)
    }

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
