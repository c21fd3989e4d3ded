// The doctor's checks: each turns a fact (config, daemon, reader, PAM, user) into lines with fixes.
import TouchGateL10n
import TouchGateConfig
import TouchGatePAMStack
import TouchGateWire
#if canImport(Glibc)
import Glibc
#endif

enum DoctorChecks {
    /// touchgate.conf under `root` (looked up inside it, symlinks too); also the password service
    /// it names (the default when invalid).
    static func config(root: String) -> (DoctorCheck, String) {
        let tree = RootedTree(root: root)
        let path = tree.hostPath(ConfigFile.defaultPath)
        let restart = L("correct it (touchgate check-config %s), then: systemctl restart touchgated", cli, path)
        do {
            let contents: [UInt8]?
            switch tree.readFile(ConfigFile.defaultPath) {
            case .success(let bytes): contents = bytes
            case .failure(let error): throw ConfigReadError(path: path, reason: "\(error)")
            }
            let config = try ConfigFile.parse(contents: contents)
            if contents == nil {
                return (
                    DoctorCheck("config", .ok, L("%s: none, the defaults apply", cli, path)),
                    config.passwordService
                )
            }
            return (DoctorCheck("config", .ok, L("%s: valid", cli, path)), config.passwordService)
        } catch let error as ConfigError {
            let place = error.line > 0 ? "\(path):\(error.line)" : path
            return (
                DoctorCheck(
                    "config", .problem,
                    L("%s: %s (touchgated refuses to start)", cli, place, error.message), fix: restart),
                DaemonConfig.defaults.passwordService
            )
        } catch {
            return (
                DoctorCheck("config", .problem, "\(path): \(error)", fix: restart),
                DaemonConfig.defaults.passwordService
            )
        }
    }

    /// Whether the daemon answers, and its readers.
    static func daemon(_ client: DaemonClient) -> (checks: [DoctorCheck], reachable: Bool) {
        let devices: [String]
        do {
            devices = try client.call(.devices, []).strings(.device)
        } catch {
            return (
                [
                    DoctorCheck(
                        "daemon", .problem, error.reason,
                        fix: L(
                            "systemctl start touchgated.socket; if it does not stay up: journalctl -u touchgated", cli)),
                    DoctorCheck.skipped("reader", L("fingerprint reader", cli)),
                ], false
            )
        }
        let daemon = DoctorCheck("daemon", .ok, L("touchgated answers at %s", cli, client.socketPath))
        guard !devices.isEmpty else {
            return (
                [
                    daemon,
                    DoctorCheck(
                        "reader", .problem, L("no fingerprint reader found", cli),
                        fix: L("connect a reader libfprint supports, then: systemctl restart touchgated", cli)),
                ], true
            )
        }
        return ([daemon, DoctorCheck("reader", .ok, devices.joined(separator: "; "))], true)
    }

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

    /// The user: enabled, enrolled, and whether a fingerprint would be accepted now.
    static func user(_ user: String, _ client: DaemonClient) -> [DoctorCheck] {
        let name = "user"
        let document: JSONValue
        do {
            let result = try client.call(.status, [Field(.user, user)])
            guard let text = result.joined(.json), let value = JSONValue.parse(text) else {
                return [DoctorCheck(name, .problem, L("touchgated sent no status for %s", cli, user))]
            }
            document = value
        } catch {
            return [DoctorCheck(name, .problem, "\(user): \(error.reason)")]
        }
        var fingers: [String] = []
        if case .array(let list)? = document["fingers"] { fingers = list.compactMap(\.scalarText) }
        return sealing(document) + keyring(document) + userState(user, fingers, document)
    }

    /// The sealed login password (docs/spec.md §12): warned about without a TPM, while the key
    /// file kept without one is still there, and when void.
    static func keyring(_ document: JSONValue) -> [DoctorCheck] {
        var checks: [DoctorCheck] = []
        if document["keyringWithoutTPM"] == .bool(true) {
            checks.append(
                DoctorCheck(
                    "keyring", .note,
                    L("login passwords for the keyring are kept without a TPM: a copy of the disk opens them", cli),
                    fix: L("use a TPM 2.0, or set keyring_without_tpm = no in touchgate.conf", cli)))
        } else if document["keyringKeyFile"] == .bool(true) {
            // Left after keyring_without_tpm was turned off or a TPM came: the daemon retires it at
            // its start once it can; until then the passwords sealed under it stay on disk.
            checks.append(
                DoctorCheck(
                    "keyring", .problem,
                    L(
                        "the keyring key file kept without a TPM is still in the state directory: a copy of the disk opens the passwords sealed under it",
                        cli),
                    fix: L(
                        "the daemon's log says why it could not remove it; it tries again at its next start",
                        cli)))
        }
        switch document["keyring"]?.scalarText {
        case "void":
            // Renewed by the next password login, which needs a print to bind it to.
            let noPrints = document["fingers"] == .array([])
            checks.append(
                DoctorCheck(
                    "keyring", .note, L("the fingers changed: a fingerprint login does not unlock the keyring", cli),
                    fix: noPrints
                        ? L("enroll a finger, then log in once with the password", cli)
                        : L("log in once with the password", cli)))
        case "unavailable" where sealingRefused(document) && document["keyringDetail"] == document["sealingDetail"]:
            // Sealed under the prints' key, which the TPM refuses: sealing's check says the way out.
            checks.append(
                DoctorCheck(
                    "keyring", .problem,
                    L(
                        "the sealed keyring password cannot be opened: the TPM refuses the key it is sealed with (see sealing)",
                        cli),
                    fix: L("after sealing's fix, enroll a finger, then log in once with the password", cli)))
        case "unavailable":
            let detail = document["keyringDetail"]?.scalarText ?? ""
            checks.append(
                DoctorCheck(
                    "keyring", .problem,
                    L("the sealed keyring password cannot be opened now: %s", cli, detail),
                    fix: L("see touchgate status and the daemon's log", cli)))
        default:
            break
        }
        return checks
    }

    /// The user's own state: enrolled, enabled, and whether a fingerprint is taken now.
    static func userState(_ user: String, _ fingers: [String], _ document: JSONValue) -> [DoctorCheck] {
        let name = "user"
        if document["stateReadable"] == .bool(false) {
            return [
                DoctorCheck(
                    name, .problem,
                    L("%s: the state file is damaged; fingerprints are refused until a password success", cli, user),
                    fix: L("authenticate once with the password", cli))
            ]
        }
        // Prints that cannot be trusted are listed as none: say why, not "enroll".
        if let why = document["printsProblem"]?.scalarText, !why.isEmpty {
            return [
                DoctorCheck(
                    name, .problem, L("%s: the prints cannot be used: %s", cli, user, why),
                    fix: L("make the print store root's and writable by root alone (the path is named above)", cli))
            ]
        }
        if fingers.isEmpty {
            return [
                DoctorCheck(
                    name, .problem, L("%s has no enrolled fingerprint", cli, user),
                    fix: L("touchgate enroll (as %s), or: touchgate enroll --user %s", cli, user, user))
            ]
        }
        if document["enabled"] == .bool(false) {
            return [
                DoctorCheck(
                    name, .problem, L("%s turned fingerprint authentication off", cli, user),
                    fix: "touchgate enable --user \(user)")
            ]
        }
        var checks = [
            DoctorCheck(name, .ok, L("%s: enabled, enrolled: %s", cli, user, fingers.joined(separator: ", ")))
        ]
        if case .object(let can)? = document["canEvaluate"], case .int(let code)? = can["code"], code != 0 {
            let reason = can["reason"]?.scalarText.flatMap { $0.isEmpty ? nil : $0 }
            let refused = L(
                "fingerprint refused for now: %s", cli,
                sentence(for: Int32(clamping: code), reason: reason, seconds: nil))
            switch Outcome(rawValue: Int32(clamping: code)) {
            case .passwordRequired?, .biometryLockout?, .passwordBackoff?:
                // What a password success clears.
                checks.append(
                    DoctorCheck(name, .note, refused, fix: L("authenticate once with the password (e.g. sudo -v)", cli))
                )
            case .templateDamaged?:
                var damaged: [String] = []
                if case .array(let list)? = document["damagedFingers"] { damaged = list.compactMap(\.scalarText) }
                let commands = damaged.map { "touchgate enroll --user \(user) --finger \($0)" }
                checks.append(
                    DoctorCheck(
                        name, .problem, refused,
                        fix: L("enroll them again: %s", cli, commands.joined(separator: "; "))))
            case .biometryNotAvailable? where can["reason"]?.scalarText == "printsSealed" && sealingRefused(document):
                // Not "for now": the sealing check above says the way out.
                checks.append(
                    DoctorCheck(
                        name, .note,
                        L(
                            "fingerprint refused: the prints are sealed under a key this computer's TPM refuses (see sealing)",
                            cli)))
            default:
                // The reader or the TPM: the checks above name it; a password changes nothing.
                checks.append(DoctorCheck(name, .note, refused))
            }
        }
        return checks
    }
}
