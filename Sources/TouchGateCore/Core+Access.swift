// Who may do what (docs/spec.md §5), decided once from the caller's credentials, whichever door they used.
import TouchGatePolicy
import TouchGateWire

/// The rights of docs/spec.md §5's table.
public enum Right: Sendable {
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
        if let refusal = await refusalForAnotherAccount(caller, user, right) { return refusal }
        switch await names.exists(user) {
        case true?: break
        case false?: return Refusal(.userUnknown, reason: nil, text: .userUnknown(user))
        case nil: return Self.accountsBusy
        }
        guard Self.needsPassword(caller, right) else { return nil }
        guard let password else { return Self.passwordNeeded }
        let ctx = EventContext(user: user, origin: origin, policy: policy, byUID: caller.uid)
        switch await verifyPassword(ctx, password) {
        case .correct: return nil
        case .refused(let refusal): return refusal
        }
    }

    /// docs/spec.md §5's table alone, before any account is looked up: nil when `caller` may act
    /// on `user` with `right` (`withPassword`: the request carries the user's password);
    /// otherwise notPermitted, with reason `passwordNeeded` when only the password is missing.
    /// For a front-end that has no authority of its own to ask (D-Bus without polkit).
    public func permission(_ caller: Caller, _ user: String, _ right: Right, withPassword: Bool = false) async
        -> Refusal?
    {
        if let refusal = await refusalForAnotherAccount(caller, user, right) { return refusal }
        return Self.needsPassword(caller, right) && !withPassword ? Self.passwordNeeded : nil
    }

    /// notPermitted when the caller acts on an account not theirs without being root (or being
    /// granted it by polkit), or asks a root-only action.
    private func refusalForAnotherAccount(_ caller: Caller, _ user: String, _ right: Right) async -> Refusal? {
        if caller.isRoot || (right != .rootOnly && caller.grants.contains(.actForOthers)) { return nil }
        let own: String?
        do { own = try await names.name(of: caller.uid) } catch { return Self.accountsBusy }
        guard own == user else {
            if let more = clientNotices.admit(caller.uid) {
                // The name is the client's, unchecked here (D-Bus's username): one bounded word.
                log.notice(
                    "refused a request for another user\(more)",
                    metadata: ["user": "\(Self.shownName(user))", "uid": "\(caller.uid)"])
            }
            return Refusal(.notPermitted, reason: nil, text: .notPermitted)
        }
        if right == .rootOnly {
            if let more = clientNotices.admit(caller.uid) {
                log.notice(
                    "refused: needs root\(more)", metadata: ["user": "\(Self.shownName(user))", "uid": "\(caller.uid)"])
            }
            return Refusal(.notPermitted, reason: nil, text: .notPermitted)
        }
        return nil
    }

    /// A name a client sent, for a log line: at most 64 bytes of it, each outside a plain set as \xHH.
    public static func shownName(_ user: String) -> String {
        user.utf8.count <= 64 ? oneWord(user) : oneWord(String(decoding: user.utf8.prefix(64), as: UTF8.self)) + "..."
    }

    /// The user's own prints change only with their password, unless root or polkit's enroll says so.
    private static func needsPassword(_ caller: Caller, _ right: Right) -> Bool {
        right == .selfWithPasswordOrRoot && !caller.isRoot && !caller.grants.contains(.changePrints)
    }

    static let passwordNeeded = Refusal(.notPermitted, reason: .passwordNeeded, text: .passwordNeeded)
    /// The account look-ups' queue is full: refused at once, not mistaken for an unknown account.
    static let accountsBusy = Refusal(.busy, reason: .busy, text: .busy)

    /// The caller's account name (nil for root callers that need none, or an unknown uid).
    func name(of caller: Caller) async -> String? {
        (try? await names.name(of: caller.uid)) ?? nil
    }
}
