// The doctor's checks: each turns a fact (config, daemon, reader, user) into lines with fixes; the PAM
// stacks' in DoctorChecks+PAM.swift, sealing's in DoctorChecks+Sealing.swift.
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
