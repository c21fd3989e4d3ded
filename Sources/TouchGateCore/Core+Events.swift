// The core's events: the audit record of each outcome, built from who asked and from where
// (docs/logging.md), and the limit on the records a client can cause at will.
import Logging
import TouchGatePolicy
import TouchGateWire

extension Core {
    func event(_ kind: String, _ ctx: EventContext, method: String?, outcome: Outcome, reason: String?) -> AuthEvent {
        var e = AuthEvent(event: kind, user: ctx.user, at: clock.now())
        e.service = ctx.origin.service
        e.tty = ctx.origin.tty
        e.rhost = ctx.origin.rhost
        e.policy = ctx.policy?.name
        e.method = method
        e.code = outcome.rawValue
        e.outcome = outcome.name
        e.reason = reason
        e.byUID = ctx.byUID
        return e
    }

    func event(_ kind: String, _ ctx: EventContext, method: String?, outcome: Outcome, reason: Reason?) -> AuthEvent {
        event(kind, ctx, method: method, outcome: outcome, reason: reason?.rawValue)
    }

    func publishOutcome(_ ctx: EventContext, method: String?, outcome: Outcome, reason: Reason?) {
        var e = event("outcome", ctx, method: method, outcome: outcome, reason: reason)
        if case .state(let s)? = states.cached(ctx.user) {
            e.failedMatches = s.consecutiveFailedMatches
            e.wrongPasswords = s.consecutiveWrongPasswords
        }
        // A success or a failed match or password judged something (the failed match that locks
        // out too), and each takes a finger or a password check (one at a time, backed off):
        // always recorded. Any other outcome only to the limit, the lines left out said in one
        // ordinary line after the last one written (docs/logging.md).
        let judged =
            outcome == .success || outcome == .authenticationFailed || (outcome == .biometryLockout && method != nil)
        let note = judged ? "" : refusalNotices.admit(RefusalSource(uid: ctx.byUID, user: ctx.user))
        events.publish(e, inJournal: note != nil)
        if let note, !note.isEmpty { log.notice("outcome records of refusals\(note)") }
    }

    /// A line a client can cause at will (each request, each connection): written within
    /// `clientNotices`' limit for the uid that caused it.
    public func clientLine(
        _ level: Logger.Level = .notice, uid: UInt32, _ message: String, metadata: Logger.Metadata = [:]
    ) {
        guard let more = clientNotices.admit(uid) else { return }
        log.log(level: level, "\(message)\(more)", metadata: metadata)
    }
}

/// Whose refusals an outcome line counts against: the caller, and the account it asked for.
struct RefusalSource: Hashable {
    var uid: UInt32
    var user: String
}

/// Who asked, for whom and from where: for events and audit.
struct EventContext: Sendable {
    var user: String
    var origin: Origin
    var policy: EvaluationPolicy?
    var byUID: UInt32
}
