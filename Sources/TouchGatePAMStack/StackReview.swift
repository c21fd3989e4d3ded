// What `touchgate doctor` finds in pam.d: which services offer the fingerprint and whether each
// stack keeps touchgate's promises; whether the daemon's password service is sane.

/// Something wrong with one stack, for a person to fix.
public enum StackProblem: Equatable, Sendable {
    /// Linux-PAM cannot start the service at all: every authentication through it fails.
    case serviceFails(PAMSyntaxError)
    /// A fingerprint failure ends the stack even when the password is right: the results that do.
    case fingerprintBlocksPassword(String)
    /// A password success never reaches the report line, so it cannot clear a lockout.
    case noReportAfterPassword
    /// The report line is reached after a wrong password: a lockout would clear without one.
    case reportAfterWrongPassword(String)
    /// The stack succeeds with every password wrong and no finger.
    case acceptsWrongPassword
    /// A condition line lets some people in without password or finger (a note: by design, often).
    case conditionGrants(module: String, origin: String)
    /// pam_faillock's authfail runs although the password was right: a fingerprint failure counts.
    case faillockCountsFingerprint(String)
    /// A module file that is not installed.
    case missingModule(module: String, origin: String)
    /// Lines Linux-PAM rejects, includes it cannot follow.
    case syntax(PAMSyntaxError)
    /// A file doctor does not read (too large): the stack is not reviewed.
    case notReviewed(PAMSyntaxError)
}

/// One service whose stack reaches pam_touchgate.so's fingerprint line, or names it in a line
/// Linux-PAM rejects, or that Linux-PAM cannot start.
public struct ServiceReview: Equatable, Sendable {
    public let service: String
    /// Where its working fingerprint lines come from (`common-auth:17`).
    public let fingerprintLines: [String]
    /// Whether a matching finger alone authenticates (no: a second factor, or a mistake).
    public let fingerprintSuffices: Bool
    /// Whether a password module follows (a GDM-style fingerprint-only service has none).
    public let hasPasswordModule: Bool
    public let problems: [StackProblem]
    /// Whether some line of its stack names pam_touchgate.so (working or not).
    public let namesTouchgate: Bool

    /// Whether the fingerprint works there: Linux-PAM starts the service and calls the module.
    public var offersFingerprint: Bool {
        !fingerprintLines.isEmpty && !problems.contains { if case .serviceFails = $0 { true } else { false } }
    }

    /// A service whose stack doctor could not build.
    static func unreviewed(_ service: String, _ why: PAMSyntaxError) -> ServiceReview {
        ServiceReview(
            service: service, fingerprintLines: [], fingerprintSuffices: false, hasPasswordModule: false,
            problems: [.notReviewed(why)], namesTouchgate: false)
    }
}

/// Another fingerprint module's line (pam_fprintd's, say) whose module is not installed: left
/// behind when its package went (libpam-fprintd goes with fprintd), it fails in that service.
public struct LeftoverLine: Equatable, Sendable {
    public let service: String
    public let module: String
    public let origin: String
}

public struct PAMReview: Equatable, Sendable {
    /// Services whose stacks reach or name pam_touchgate.so's fingerprint line, and those Linux-PAM
    /// cannot start, sorted by name.
    public let services: [ServiceReview]
    /// In the services that offer no touchgate fingerprint: other fingerprint modules' lines whose
    /// module is not installed.
    public let leftoverLines: [LeftoverLine]
    /// Whether common-auth holds the fingerprint line and the report line (pam-auth-update profiles).
    public let commonAuthFingerprint: Bool
    public let commonAuthReport: Bool
    /// Whether any auth stack uses pam_faillock.
    public let faillockInUse: Bool
    public let passwordService: PasswordServiceReview

    /// The results pam_touchgate.so's fingerprint line returns when it does not match (pam/:
    /// tg_outcome.c, tg_env.c, pam_get_user's). PAM_INCOMPLETE is not played: the stack stops
    /// there, to be resumed by the application.
    public static let fingerprintFailures: [PAMResult] = [
        .authinfoUnavail, .maxtries, .authErr, .userUnknown, .systemErr, .bufErr, .convErr, .abort,
    ]

    /// Reviews every service in `root`'s pam.d directories and the password service `passwordService`.
    /// `modules` tells which module files exist; nil skips that check.
    public static func review(
        root: String = "/", passwordService: String,
        modules: ModuleLocator? = nil
    ) -> PAMReview {
        review(pam: PAMDirectory(root: root), passwordService: passwordService, modules: modules)
    }

    static func review(pam: PAMDirectory, passwordService: String, modules: ModuleLocator? = nil) -> PAMReview {
        let missing: (StackEntry) -> Bool = { entry in
            entry.kind == .module && (modules.map { !$0.exists(entry.module) } ?? false)
        }
        var services: [ServiceReview] = []
        var leftovers: [LeftoverLine] = []
        var faillock = false
        for name in pam.services() where !name.hasPrefix("common-") && name != passwordService {
            let stack = pam.stack(service: name, type: "auth")
            if stack.modules.contains(where: { ModuleRole($0).isFaillock }) { faillock = true }
            if let review = reviewService(name, stack, missing) {
                services.append(review)
            } else {
                leftovers += stack.modules.filter { ModuleRole($0) == .otherFingerprint && missing($0) }
                    .map { LeftoverLine(service: name, module: $0.module, origin: $0.origin) }
            }
        }
        // What services' `@include common-auth` reads: /etc/pam.d's file alone.
        let commonAuth = "/etc/pam.d/common-auth"
        let common = pam.hasFile(commonAuth) ? pam.stack(service: commonAuth, type: "auth").modules : []
        if common.contains(where: { ModuleRole($0).isFaillock }) { faillock = true }
        return PAMReview(
            services: services, leftoverLines: leftovers,
            commonAuthFingerprint: common.contains { ModuleRole($0).isFingerprint },
            commonAuthReport: common.contains { ModuleRole($0) == .report },
            faillockInUse: faillock,
            passwordService: reviewPasswordService(passwordService, pam, missing))
    }

    /// nil when the service has no fingerprint line.
    static func reviewService(
        _ name: String, _ stack: AssembledStack,
        _ missing: @escaping (StackEntry) -> Bool
    ) -> ServiceReview? {
        if let why = stack.unreviewed { return .unreviewed(name, why) }
        let modules = stack.modules
        let fingerprints = modules.filter { ModuleRole($0).isFingerprint }
        // A pam_touchgate line Linux-PAM rejects, or one it would never reach, still makes the
        // service one to review: the person meant it to offer the finger.
        let rejected = stack.entries.contains { entry in
            let role = ModuleRole(entry)
            return entry.namesTouchgate
                && (entry.kind == .mustFail || missing(entry) || !role.isFingerprint && role != .report)
        }
        // A service Linux-PAM cannot start is said, whatever it was meant to offer (a broken `other`
        // fails every service).
        guard !fingerprints.isEmpty || rejected || stack.failure != nil else { return nil }
        if let failure = stack.failure {
            return ServiceReview(
                service: name, fingerprintLines: fingerprints.map(\.origin), fingerprintSuffices: false,
                hasPasswordModule: modules.contains { ModuleRole($0) == .password },
                problems: [.serviceFails(failure)] + stack.errors.map(StackProblem.syntax),
                namesTouchgate: stack.entries.contains(where: \.namesTouchgate))
        }
        var problems = stack.errors.map(StackProblem.syntax)
        // A `-type` line's missing module still fails the line; it matters where that failure counts.
        problems += modules.filter {
            missing($0) && (!$0.quietIfMissing || $0.control.action(for: .moduleUnknown) != .ignore)
        }
        .map { StackProblem.missingModule(module: $0.module, origin: $0.origin) }
        let play = StackPlay(entries: stack.entries, missing: missing)
        problems += play.problems()
        return ServiceReview(
            service: name, fingerprintLines: fingerprints.map(\.origin),
            fingerprintSuffices: play.fingerprintSuffices(),
            hasPasswordModule: !play.passwords.isEmpty, problems: problems,
            namesTouchgate: stack.entries.contains(where: \.namesTouchgate))
    }
}

/// The imagined authentications through one stack: every way its conditions turn out, every
/// result of the fingerprint line, the right password for each password module and a wrong one.
struct StackPlay {
    let entries: [StackEntry]
    let missing: (StackEntry) -> Bool
    let passwords: [StackEntry]
    let conditions: [Set<String>]

    init(entries: [StackEntry], missing: @escaping (StackEntry) -> Bool) {
        self.entries = entries
        self.missing = missing
        passwords = entries.filter { $0.kind == .module && ModuleRole($0) == .password }
        conditions = Scenario.conditionOutcomes(entries)
    }

    func run(_ scenario: Scenario) -> SimulationOutcome {
        PAMSimulator.run(entries) { scenario.result(of: $0, missing: missing) }
    }

    static func isReport(_ entry: StackEntry) -> Bool { ModuleRole(entry) == .report }
    static func isAuthfail(_ entry: StackEntry) -> Bool { ModuleRole(entry) == .faillock(.authfail) }
    static func isFingerprint(_ entry: StackEntry) -> Bool { ModuleRole(entry).isFingerprint }

    /// The condition line whose success ended the stack or jumped (a way in by design), if any.
    static func grantingCondition(_ outcome: SimulationOutcome) -> StackEntry? {
        outcome.calls.first { call in
            guard ModuleRole(call.entry) == .condition, call.result == .success else { return false }
            switch call.entry.control.action(for: .success) {
            case .done: return true
            case .jump(let n): return n > 0
            default: return false
            }
        }?.entry
    }

    /// Whether a matching finger alone authenticates somewhere, not by a condition's grace.
    func fingerprintSuffices() -> Bool {
        conditions.contains { failing in
            let out = run(Scenario(fingerprint: .success, failing: failing))
            return out.succeeded && out.reached(Self.isFingerprint) && Self.grantingCondition(out) == nil
        }
    }

    func problems() -> [StackProblem] {
        var problems: [StackProblem] = []
        func add(_ problem: StackProblem) { if !problems.contains(problem) { problems.append(problem) } }
        let eitherOr = entries.contains { $0.kind == .module && ModuleRole($0) == .fingerprint(eitherOr: true) }
        var blocked: [PAMResult] = []
        var unreported = false
        for failing in conditions {
            let byFinger = run(Scenario(fingerprint: .success, failing: failing))
            if byFinger.succeeded, let line = byFinger.calls.first(where: { Self.isAuthfail($0.entry) }) {
                add(.faillockCountsFingerprint(line.entry.origin))
            }
            for failure in PAMReview.fingerprintFailures {
                // Each right password (none in a fingerprint-only service).
                if !passwords.isEmpty {
                    var accepted = false
                    for password in passwords {
                        // The right password: what the stack does without the fingerprint line, and with it.
                        let without = run(Scenario(fingerprint: nil, acceptedBy: password.origin, failing: failing))
                        let with = run(Scenario(fingerprint: failure, acceptedBy: password.origin, failing: failing))
                        if without.succeeded && !with.succeeded && !blocked.contains(failure) {
                            blocked.append(failure)
                        }
                        accepted = accepted || with.succeeded
                        let typed = with.calls.contains { $0.entry.origin == password.origin && $0.result == .success }
                        if with.succeeded && typed && !with.reached(Self.isReport) { unreported = true }
                        // The password was right: pam_faillock's authfail can only be counting the finger.
                        if with.reached(Self.isFingerprint),
                            let line = with.calls.first(where: { Self.isAuthfail($0.entry) })
                        {
                            add(.faillockCountsFingerprint(line.entry.origin))
                        }
                    }
                    // With every condition passing, some password has to get through where a finger
                    // does (a stack that lets nobody in is not the fingerprint line's doing).
                    if failing.isEmpty && byFinger.succeeded && !accepted && !blocked.contains(failure) {
                        blocked.append(failure)
                    }
                }
                // Every password wrong, or none asked for: the failed finger has to fail the stack.
                let wrong = run(Scenario(fingerprint: failure, failing: failing))
                if wrong.succeeded {
                    // A condition's grace is a way in only where no password was refused on the
                    // way: a stack that asked a password module, heard no and let the person in
                    // accepts a wrong password, whatever a condition jumped over before.
                    let refused = wrong.calls.contains { ModuleRole($0.entry) == .password && $0.result != .success }
                    if !refused, let grant = Self.grantingCondition(wrong) {
                        add(.conditionGrants(module: grant.module, origin: grant.origin))
                    } else {
                        add(.acceptsWrongPassword)
                    }
                }
                if let line = wrong.calls.first(where: { Self.isReport($0.entry) }) {
                    add(.reportAfterWrongPassword(line.entry.origin))
                }
            }
        }
        if !blocked.isEmpty { add(.fingerprintBlocksPassword(blocked.map(\.keyword).joined(separator: ", "))) }
        // With biometrics-or-password the daemon checks the password itself; no report needed.
        if unreported && blocked.isEmpty && !eitherOr { add(.noReportAfterPassword) }
        return problems
    }
}

extension ModuleRole {
    var isFaillock: Bool { if case .faillock = self { return true } else { return false } }
}
