// The doctor's checks of the PAM stacks: which services offer the fingerprint, what is wrong in
// their stacks, the daemon's own password service, and pam_faillock beside the fingerprint line.
import TouchGateL10n
import TouchGatePAMStack

extension DoctorChecks {
    /// Which services offer the fingerprint, and what is wrong in their stacks.
    static func pam(_ review: PAMReview) -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        let offering = review.services.filter(\.offersFingerprint)
        if offering.isEmpty {
            // A line Linux-PAM rejects is corrected, not the fingerprint added again through common-auth.
            let fix =
                review.services.contains(where: \.namesTouchgate)
                ? L("correct the PAM lines named below", cli) : "pam-auth-update --enable touchgate"
            checks.append(DoctorCheck("pam", .problem, L("no PAM service offers the fingerprint", cli), fix: fix))
        } else {
            let names = offering.map { shown($0.service) }.joined(separator: ", ")
            let source = review.commonAuthFingerprint ? L(" (through common-auth)", cli) : ""
            checks.append(DoctorCheck("pam", .ok, L("fingerprint offered by: %s%s", cli, names, source)))
        }
        if review.commonAuthFingerprint && !review.commonAuthReport {
            checks.append(
                DoctorCheck(
                    "pam", .problem,
                    L("common-auth has no report line: a password cannot clear a fingerprint lockout", cli),
                    fix: "pam-auth-update --enable touchgate-report"))
        }
        for service in review.services {
            for problem in service.problems {
                if case .faillockCountsFingerprint = problem { continue }  // the faillock check says it
                checks.append(stackProblem(problem, in: service.service))
            }
        }
        for line in review.leftoverLines {
            checks.append(stackProblem(.missingModule(module: line.module, origin: line.origin), in: line.service))
        }
        return checks
    }

    static func stackProblem(_ problem: StackProblem, in service: String) -> DoctorCheck {
        let name = "pam \(shown(service))"
        switch problem {
        case .serviceFails(let error):
            return DoctorCheck(
                name, .problem,
                L(
                    "Linux-PAM cannot start this service, every authentication through it fails: %s", cli,
                    shown("\(error)")),
                fix: L("correct the line", cli))
        case .fingerprintBlocksPassword(let how):
            return DoctorCheck(
                name, .problem,
                L("when the fingerprint fails (%s) the right password is refused too", cli, how),
                fix: L("give the pam_touchgate.so line default=ignore, as the touchgate profile does", cli))
        case .noReportAfterPassword:
            return DoctorCheck(
                name, .problem,
                L(
                    "a password success never reaches a report line: it cannot clear a lockout or the after-boot rule",
                    cli),
                fix: L(
                    "after the password module: auth optional pam_touchgate.so report (pam-auth-update --enable touchgate-report)",
                    cli))
        case .reportAfterWrongPassword(let origin):
            return DoctorCheck(
                name, .problem,
                L(
                    "the report line at %s is reached after a wrong password: it would clear a lockout without the password",
                    cli, shown(origin)),
                fix: L("place it where only a password success leads (after pam_unix's success jump)", cli))
        case .acceptsWrongPassword:
            return DoctorCheck(
                name, .problem, L("the stack succeeds with a wrong password and no finger", cli),
                fix: L("end the password part with pam_deny.so, as common-auth does", cli))
        case .conditionGrants(let module, let origin):
            return DoctorCheck(
                name, .note,
                L(
                    "%s at %s lets a person in without password or finger when its condition holds", cli, shown(module),
                    shown(origin)))
        case .faillockCountsFingerprint(let origin):
            return DoctorCheck(
                name, .problem,
                L(
                    "pam_faillock authfail at %s runs although the password was right: a fingerprint failure counts against the password",
                    cli, shown(origin)),
                fix: L(
                    "put the pam_touchgate.so line after pam_faillock preauth and let its failure go on to the password module (default=ignore)",
                    cli))
        case .missingModule(let module, let origin):
            return DoctorCheck(
                name, .problem, L("%s: %s is not installed", cli, shown(origin), shown(module)),
                fix: L("install the package that provides %s, or remove the line", cli, shown(module)))
        case .syntax(let error):
            return DoctorCheck(name, .problem, shown("\(error)"), fix: L("correct the line", cli))
        case .notReviewed(let error):
            return DoctorCheck(name, .problem, L("doctor cannot review this service: %s", cli, shown("\(error)")))
        }
    }

    /// The daemon's own password service.
    static func passwordService(_ r: PasswordServiceReview) -> [DoctorCheck] {
        let name = "password"
        let service = shown(r.service)
        guard r.exists else {
            let fallback = r.file.map { L(" (Linux-PAM would use '%s')", cli, shown($0)) } ?? ""
            return [
                DoctorCheck(
                    name, .problem, L("no /etc/pam.d/%s%s", cli, service, fallback),
                    fix: L("apt install --reinstall touchgate, or create it with: auth required pam_unix.so", cli))
            ]
        }
        var checks: [DoctorCheck] = []
        if r.authFromOther {
            checks.append(
                DoctorCheck(
                    name, .problem, L("service '%s' has no auth line: Linux-PAM runs those of 'other'", cli, service),
                    fix: L("add: auth required pam_unix.so", cli)))
        }
        if !r.touchgateLines.isEmpty {
            checks.append(
                DoctorCheck(
                    name, .problem,
                    L(
                        "service '%s' reaches pam_touchgate.so (%s): the daemon would ask itself for a finger", cli,
                        service, r.touchgateLines.map(shown).joined(separator: ", ")),
                    fix: L(
                        "list the password modules in /etc/pam.d/%s instead of including common-auth", cli, service)))
        }
        if !r.acceptsPassword {
            checks.append(
                DoctorCheck(
                    name, .problem, L("service '%s' accepts no password", cli, service),
                    fix: L("add: auth required pam_unix.so", cli)))
        }
        if !r.refusesWrongPassword {
            checks.append(
                DoctorCheck(
                    name, .problem, L("service '%s' accepts a wrong password", cli, service),
                    fix: L("remove pam_permit.so lines that can decide it", cli)))
        }
        if !r.missingFromLogin.isEmpty, let reference = r.comparedWith {
            let lacking = r.missingFromLogin.map(shown).joined(separator: ", ")
            checks.append(
                DoctorCheck(
                    name, .problem,
                    L(
                        "'%s' also uses %s, which service '%s' lacks: they accept different passwords", cli, reference,
                        lacking, service),
                    fix: L(
                        "copy those lines (%s) into /etc/pam.d/%s", cli,
                        r.missingFromLoginLines.map(shown).joined(separator: ", "), service)))
        }
        for problem in r.problems { checks.append(stackProblem(problem, in: r.service)) }
        if checks.isEmpty {
            let modules = r.passwordModules.map(shown).joined(separator: ", ")
            checks.append(
                DoctorCheck(
                    name, .ok,
                    L("service '%s' checks passwords with %s, without pam_touchgate.so", cli, service, modules)))
        }
        let networked = r.passwordModules.filter(ModuleRole.networkModules.contains).map { "\($0).so" }
        if !networked.isEmpty {
            checks.append(
                DoctorCheck(
                    name, .note,
                    L(
                        "service '%s' uses %s, which reach their servers over the network; the daemon's unit opens none",
                        cli, service, networked.joined(separator: ", ")),
                    fix: L(
                        "a drop-in for touchgated.service adding AF_INET AF_INET6 to RestrictAddressFamilies= and the servers to IPAddressAllow=",
                        cli)))
        }
        return checks
    }

    static func faillock(_ review: PAMReview) -> DoctorCheck {
        guard review.faillockInUse else { return DoctorCheck("faillock", .ok, L("pam_faillock is not used", cli)) }
        for service in review.services {
            for case .faillockCountsFingerprint(let origin) in service.problems {
                return stackProblem(.faillockCountsFingerprint(origin), in: service.service)
            }
        }
        return DoctorCheck("faillock", .ok, L("a fingerprint failure does not count against pam_faillock", cli))
    }
}
