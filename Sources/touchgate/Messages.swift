// The CLI's own words in the caller's language (gettext catalogs, docs/spec.md §8), and a sentence for each outcome.
import TouchGateL10n
import TouchGateWire

/// The language of the person running the command: LC_ALL, LC_MESSAGES, LANG. Only the catalogs
/// that exist are used (zh_CN today), so a traditional-script locale gets English, not the wrong script.
let cli = Language.ofProcess

/// What a RESULT with a non-zero code means, when the daemon sent no MESSAGE.
func sentence(for code: Int32, reason: String?, seconds: Int32?) -> String {
    guard let outcome = Outcome(rawValue: code) else {
        return L("touchgated answered with unknown code %s", cli, code)
    }
    switch outcome {
    case .success: return L("success", cli)
    case .authenticationFailed:
        return reason.flatMap(Reason.init(rawValue:)) == .wrongPassword
            ? L("wrong password", cli) : L("fingerprint not recognised", cli)
    case .userCancel: return L("cancelled", cli)
    case .userFallback: return L("the password was chosen instead", cli)
    case .systemCancel: return L("cancelled by the system", cli)
    case .passwordNotSet: return L("the account has no usable password", cli)
    case .biometryNotAvailable: return unavailable(reason.flatMap(Reason.init(rawValue:)))
    case .biometryNotEnrolled:
        return L("no fingerprints enrolled, or fingerprint authentication is not enabled", cli)
    case .biometryLockout:
        return L("fingerprint authentication is locked: enter your password", cli)
    case .appCancel: return L("cancelled", cli)
    case .invalidContext: return L("the request is no longer valid", cli)
    case .passwordRequired: return passwordFirst(reason)
    case .passwordBackoff:
        if let seconds { return L("too many wrong passwords: try again in %s s", cli, seconds) }
        return L("too many wrong passwords: try again later", cli)
    case .notInteractive: return L("a prompt would be needed", cli)
    case .userUnknown: return L("no such user", cli)
    case .notPermitted: return L("not permitted", cli)
    case .badRequest: return L("touchgated refused the request as malformed", cli)
    case .internalError: return L("internal error in touchgated", cli)
    case .notFound: return L("no such finger enrolled", cli)
    case .timeout: return L("no finger was presented in time", cli)
    case .templateDamaged: return L("the enrolled fingerprints are damaged: enroll them again", cli)
    case .busy: return L("touchgated is busy (too many requests at once): try again", cli)
    case .duplicate: return L("this finger is already enrolled", cli)
    }
}

/// Why passwordRequired, in words (docs/spec.md §3's rules); a reason this CLI does not know is
/// named as the daemon sent it.
private func passwordFirst(_ reason: String?) -> String {
    switch reason {
    case "boot"?: return L("a password is required first: once after the computer starts", cli)
    case "idle"?: return L("a password is required first: the fingerprint has not been used for a long time", cli)
    case "interval"?: return L("a password is required first: it has not been entered for a while", cli)
    case "enrollmentChanged"?: return L("a password is required first: the enrolled fingerprints changed", cli)
    case "adminLock"?:
        return L("a password is required first: the administrator locked fingerprint authentication", cli)
    case let other?: return L("a password is required first%s", cli, " (\(other))")
    case nil: return L("a password is required first%s", cli, "")
    }
}

/// Why biometryNotAvailable: the reader, the session or the prints, as its reason says.
private func unavailable(_ reason: Reason?) -> String {
    switch reason {
    case .removed?: return L("the fingerprint reader was removed", cli)
    case .tooHot?: return L("the fingerprint reader is too hot", cli)
    case .busy?: return L("the fingerprint reader is busy", cli)
    case .readerError?, .readerProtocol?: return L("the fingerprint reader reported an error", cli)
    case .remote?: return L("fingerprints are not offered in remote sessions", cli)
    case .printsUnsafe?: return L("the stored prints are not safe to use", cli)
    case .printsSealed?: return L("the prints are sealed to this computer's TPM, which cannot open them now", cli)
    default: return L("no fingerprint reader is available", cli)
    }
}

/// The line to show for a PROGRESS frame, or nil for keepalives and empty frames.
func progressLine(_ frame: Frame, enrolling finger: String? = nil) -> String? {
    let message = frame.string(.message).flatMap { $0.isEmpty ? nil : $0 }
    let kind = frame.int(.progress).flatMap(ProgressKind.init(rawValue:))
    switch kind {
    case .keepalive:
        return nil
    case .enrollStage:
        let stage = frame.int(.stage).map(String.init) ?? "?"
        let stages = frame.int(.stages).map(String.init) ?? "?"
        let head = L("Enrolling %s: stage %s/%s", cli, finger ?? L("finger", cli), stage, stages)
        return message.map { "\(head) — \($0)" } ?? head
    case .prompt:
        return message ?? L("Touch the fingerprint reader.", cli)
    case .retry:
        return message ?? L("Try again.", cli)
    case .noMatch:
        return message ?? L("Not recognised, try again.", cli)
    case .queued:
        return message ?? L("Waiting for the fingerprint reader…", cli)
    case .note, nil:
        return message
    }
}
