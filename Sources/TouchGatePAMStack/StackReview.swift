// What `touchgate doctor` finds in /etc/pam.d: which services offer the fingerprint and whether
// each stack keeps touchgate's promises; whether the daemon's password service is sane.

/// Something wrong with one stack, for a person to fix.
public enum StackProblem: Equatable, Sendable {
    /// A fingerprint failure ends the stack even when the password is right.
    case fingerprintBlocksPassword(String)
    /// A password success never reaches the report line, so it cannot clear a lockout.
    case noReportAfterPassword
    /// The report line is reached after a wrong password: a lockout would clear without one.
    case reportAfterWrongPassword(String)
    /// The stack succeeds with every password wrong and no finger.
    case acceptsWrongPassword
    /// pam_faillock's authfail runs although the password was right: a fingerprint failure counts.
    case faillockCountsFingerprint(String)
    /// A module file that is not installed.
    case missingModule(module: String, origin: String)
    /// Lines Linux-PAM rejects, includes it cannot follow.
    case syntax(PAMSyntaxError)
}

/// One service that offers the fingerprint.
public struct ServiceReview: Equatable, Sendable {
    public let service: String
    /// Where its fingerprint lines come from (`common-auth:17`).
    public let fingerprintLines: [String]
    /// Whether a matching finger alone authenticates (no: a second factor, or a mistake).
    public let fingerprintSuffices: Bool
    /// Whether a password module follows (a GDM-style fingerprint-only service has none).
    public let hasPasswordModule: Bool
    public let problems: [StackProblem]
}

/// The daemon's own PAM service (config `password_service`).
public struct PasswordServiceReview: Equatable, Sendable {
    public let service: String
    /// Whether /etc/pam.d has a file for it (else Linux-PAM would use `other`).
    public let exists: Bool
    /// The file Linux-PAM would read: the service, `other`, or nil.
    public let file: String?
    /// pam_touchgate.so lines it reaches (it must have none: the daemon would ask itself).
    public let touchgateLines: [String]
    /// The password modules it uses, in order.
    public let passwordModules: [String]
    /// Some password is accepted, and a wrong one refused.
    public let acceptsPassword: Bool
    public let refusesWrongPassword: Bool
    /// Modules login uses to check passwords (and pam_faillock) that this service lacks.
    public let missingFromLogin: [String]
    /// The service login's passwords were compared with (`login`, else `common-auth`).
    public let comparedWith: String?
    public let problems: [StackProblem]
}

/// Another fingerprint module's line (pam_fprintd's, say) whose module is not installed: left
/// behind when its package went (libpam-fprintd goes with fprintd), it fails in that service.
public struct LeftoverLine: Equatable, Sendable {
    public let service: String
    public let module: String
    public let origin: String
}

public struct PAMReview: Equatable, Sendable {
    /// Services offering the fingerprint, sorted by name.
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

    /// Reviews every service in `root`/etc/pam.d and the password service `passwordService`.
    /// `modules` tells which module files exist; nil skips that check.
    public static func review(
        root: String = "/", passwordService: String,
        modules: ModuleLocator? = nil
    ) -> PAMReview {
        let pam = PAMDirectory(root: root)
        let missing: (StackEntry) -> Bool = { entry in modules.map { !$0.exists(entry.module) } ?? false }
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
        let common = pam.hasFile("common-auth") ? pam.stack(service: "common-auth", type: "auth").modules : []
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
        let modules = stack.modules
        let fingerprints = modules.filter { ModuleRole($0).isFingerprint }
        guard !fingerprints.isEmpty else { return nil }
        var problems = stack.errors.map(StackProblem.syntax)
        problems += modules.filter(missing).filter { !$0.quietIfMissing }
            .map { StackProblem.missingModule(module: $0.module, origin: $0.origin) }
        func run(_ scenario: Scenario) -> SimulationOutcome {
            PAMSimulator.run(stack.entries) { scenario.result(of: $0, missing: missing) }
        }
        let isReport: (StackEntry) -> Bool = { ModuleRole($0) == .report }
        let isAuthfail: (StackEntry) -> Bool = { ModuleRole($0) == .faillock(.authfail) }
        let passwords = modules.filter { ModuleRole($0) == .password }
        let eitherOr = fingerprints.contains { ModuleRole($0) == .fingerprint(eitherOr: true) }

        let byFinger = run(Scenario(fingerprint: .success))
        if byFinger.succeeded, let line = byFinger.calls.first(where: { isAuthfail($0.entry) }) {
            problems.append(.faillockCountsFingerprint(line.entry.origin))
        }
        if !passwords.isEmpty {
            // The module's two ways of not matching: the person chose the password, or no match.
            var blocked: String?
            var reported = true
            for failure in [PAMResult.authinfoUnavail, .maxtries] {
                let outcomes = passwords.map { run(Scenario(fingerprint: failure, acceptedBy: $0.origin)) }
                if !outcomes.contains(where: \.succeeded) { blocked = blocked ?? failure.keyword }
                for outcome in outcomes {
                    if outcome.succeeded && !outcome.reached(isReport) { reported = false }
                    // The password was right: pam_faillock's authfail can only be counting the finger.
                    if let line = outcome.calls.first(where: { isAuthfail($0.entry) }),
                        !problems.contains(.faillockCountsFingerprint(line.entry.origin))
                    {
                        problems.append(.faillockCountsFingerprint(line.entry.origin))
                    }
                }
                let wrong = run(Scenario(fingerprint: failure))
                if wrong.succeeded, !problems.contains(.acceptsWrongPassword) { problems.append(.acceptsWrongPassword) }
                if let line = wrong.calls.first(where: { isReport($0.entry) }),
                    !problems.contains(.reportAfterWrongPassword(line.entry.origin))
                {
                    problems.append(.reportAfterWrongPassword(line.entry.origin))
                }
            }
            if let blocked { problems.append(.fingerprintBlocksPassword(blocked)) }
            // With biometrics-or-password the daemon checks the password itself; no report needed.
            if !reported && blocked == nil && !eitherOr { problems.append(.noReportAfterPassword) }
        }
        return ServiceReview(
            service: name, fingerprintLines: fingerprints.map(\.origin),
            fingerprintSuffices: byFinger.succeeded, hasPasswordModule: !passwords.isEmpty,
            problems: problems)
    }

    static func reviewPasswordService(
        _ name: String, _ pam: PAMDirectory,
        _ missing: @escaping (StackEntry) -> Bool
    ) -> PasswordServiceReview {
        let stack = pam.stack(service: name, type: "auth")
        let modules = stack.modules
        var problems = stack.errors.map(StackProblem.syntax)
        problems += modules.filter(missing).filter { !$0.quietIfMissing }
            .map { StackProblem.missingModule(module: $0.module, origin: $0.origin) }
        let passwords = modules.filter { ModuleRole($0) == .password }
        // The daemon asks no finger of itself: its pam_touchgate lines, if any, answer "unavailable".
        func run(_ acceptedBy: String?) -> SimulationOutcome {
            PAMSimulator.run(stack.entries) {
                Scenario(fingerprint: .authinfoUnavail, acceptedBy: acceptedBy).result(of: $0, missing: missing)
            }
        }
        let accepts = passwords.contains { run($0.origin).succeeded }
        let refuses = !run(nil).succeeded

        // The passwords login accepts: the modules of its stack that judge them.
        let reference = pam.hasFile("login") ? "login" : (pam.hasFile("common-auth") ? "common-auth" : nil)
        var lacking: [String] = []
        if let reference {
            let own = Set(modules.map(\.moduleName))
            for entry in pam.stack(service: reference, type: "auth").modules {
                let role = ModuleRole(entry)
                guard role == .password || role.isFaillock else { continue }
                if !own.contains(entry.moduleName) && !lacking.contains(entry.moduleName) {
                    lacking.append(entry.moduleName)
                }
            }
        }
        return PasswordServiceReview(
            service: name, exists: pam.hasFile(name), file: stack.serviceFile,
            touchgateLines: modules.filter { $0.moduleName == "pam_touchgate" }.map(\.origin),
            passwordModules: passwords.map(\.moduleName), acceptsPassword: accepts, refusesWrongPassword: refuses,
            missingFromLogin: lacking, comparedWith: reference, problems: problems)
    }
}

extension ModuleRole {
    var isFaillock: Bool { if case .faillock = self { return true } else { return false } }
}
