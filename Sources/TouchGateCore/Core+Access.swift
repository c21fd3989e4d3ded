// Who may do what (docs/spec.md §5), decided once from the caller's credentials, whichever door they used.
import TouchGatePolicy
import TouchGateWire

/// The rights of docs/spec.md §5's table.
enum Right {
    /// evaluate, canEvaluate, list, status, disable, domain state: root, or the user themself.
    case selfOrRoot
    /// lock, reset, password-success reports: root only.
    case rootOnly
    /// enroll, delete, enable: root, or the user themself with their password.
    case selfWithPasswordOrRoot
}

extension Core {
    /// nil when `caller` may act on `user` with `right`; otherwise the refusal to send. Rights
    /// come from the caller's uid only, never from what the request claims. A user who may not
    /// act on another account is told "not permitted" before anything about whether it exists.
    func authorize(
        _ caller: Caller, _ user: String, _ right: Right, password: String? = nil,
        origin: Origin = Origin(), policy: EvaluationPolicy? = nil
    ) async -> Refusal? {
        guard isValidAccountName(user) else { return Refusal(.userUnknown, reason: nil, text: .userUnknown(user)) }
        if !caller.isRoot && !(right != .rootOnly && caller.grants.contains(.actForOthers)) {
            guard await names.name(of: caller.uid) == user else {
                log.notice("refused a request for another user", metadata: ["user": "\(user)", "uid": "\(caller.uid)"])
                return Refusal(.notPermitted, reason: nil, text: .notPermitted)
            }
            if right == .rootOnly {
                log.notice("refused: needs root", metadata: ["user": "\(user)", "uid": "\(caller.uid)"])
                return Refusal(.notPermitted, reason: nil, text: .notPermitted)
            }
        }
        guard await names.exists(user) == true else {
            return Refusal(.userUnknown, reason: nil, text: .userUnknown(user))
        }
        guard right == .selfWithPasswordOrRoot, !caller.isRoot, !caller.grants.contains(.changePrints) else {
            return nil
        }
        guard let password else { return Refusal(.notPermitted, reason: .passwordNeeded, text: .passwordNeeded) }
        let ctx = EventContext(user: user, origin: origin, policy: policy, byUID: caller.uid)
        switch await verifyPassword(ctx, password) {
        case .correct: return nil
        case .refused(let refusal): return refusal
        }
    }

    /// The caller's account name (nil for root callers that need none, or an unknown uid).
    func name(of caller: Caller) async -> String? {
        await names.name(of: caller.uid)
    }
}
