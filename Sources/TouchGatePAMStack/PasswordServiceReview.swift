// The daemon's own PAM service: it must check the passwords login checks, without pam_touchgate.so.

/// The daemon's own PAM service (config `password_service`).
public struct PasswordServiceReview: Equatable, Sendable {
    public let service: String
    /// Whether pam.d has a file for it (else Linux-PAM would use `other`).
    public let exists: Bool
    /// The file whose auth lines Linux-PAM runs: the service's, `other` (when the service has no
    /// file or no auth line), or nil.
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
    /// Where those modules' lines are (`common-auth:3`).
    public let missingFromLoginLines: [String]
    /// The service login's passwords were compared with (`login`, else `common-auth`).
    public let comparedWith: String?
    public let problems: [StackProblem]

    /// The service has a file, but no auth line of its own: Linux-PAM runs `other`'s.
    public var authFromOther: Bool { exists && file == "other" }
}

extension PAMReview {
    static func reviewPasswordService(
        _ name: String, _ pam: PAMDirectory,
        _ missing: @escaping (StackEntry) -> Bool
    ) -> PasswordServiceReview {
        let stack = pam.stack(service: name, type: "auth")
        if let why = stack.unreviewed {
            // Nothing said about a stack doctor did not see whole, but that.
            return PasswordServiceReview(
                service: name, exists: pam.hasFile(name), file: stack.serviceFile, touchgateLines: [],
                passwordModules: [], acceptsPassword: true, refusesWrongPassword: true, missingFromLogin: [],
                missingFromLoginLines: [], comparedWith: nil, problems: [.notReviewed(why)])
        }
        let modules = stack.modules
        var problems = stack.failure.map { [StackProblem.serviceFails($0)] } ?? []
        problems += stack.errors.map(StackProblem.syntax)
        problems += modules.filter {
            missing($0) && (!$0.quietIfMissing || $0.control.action(for: .moduleUnknown) != .ignore)
        }
        .map { StackProblem.missingModule(module: $0.module, origin: $0.origin) }
        let passwords = modules.filter { ModuleRole($0) == .password }
        // The daemon asks no finger of itself: its pam_touchgate lines, if any, answer "unavailable".
        func run(_ acceptedBy: String?) -> SimulationOutcome {
            PAMSimulator.run(stack.entries) {
                Scenario(fingerprint: .authinfoUnavail, acceptedBy: acceptedBy).result(of: $0, missing: missing)
            }
        }
        let works = stack.failure == nil
        let accepts = works && passwords.contains { run($0.origin).succeeded }
        let refuses = !works || !run(nil).succeeded

        // The passwords login accepts: the modules of its stack that judge them.
        let reference = pam.hasFile("login") ? "login" : (pam.hasFile("common-auth") ? "common-auth" : nil)
        var lacking: [String] = []
        var lackingLines: [String] = []
        if let reference {
            let own = Set(modules.map(\.moduleName))
            for entry in pam.stack(service: reference, type: "auth").modules {
                let role = ModuleRole(entry)
                guard role == .password || role.isFaillock, !own.contains(entry.moduleName) else { continue }
                if !lacking.contains(entry.moduleName) { lacking.append(entry.moduleName) }
                lackingLines.append(entry.origin)
            }
        }
        return PasswordServiceReview(
            service: name, exists: pam.hasFile(name), file: stack.serviceFile,
            touchgateLines: stack.entries.filter(\.namesTouchgate).map(\.origin),
            passwordModules: passwords.map(\.moduleName), acceptsPassword: accepts, refusesWrongPassword: refuses,
            missingFromLogin: lacking, missingFromLoginLines: lackingLines, comparedWith: reference, problems: problems)
    }
}
