// Every sentence a person sees from the daemon, looked up in their language in the message
// catalogs (po/; docs/spec.md §8). The msgids are the English sentences.
import TouchGateL10n
import TouchGatePolicy
import TouchGateReader
import TouchGateWire

@_exported import struct TouchGateL10n.Language

public enum Text: Sendable, Equatable {
    case placeFinger(swipe: Bool)
    case enrollPrompt(finger: Finger, stages: Int)
    case retry(RetryHint)
    case noMatch(triesLeft: Int)
    case notRecognised(tries: Int)
    case queued(ahead: Int)
    case recognised
    case enrolled(Finger)
    case enrollStage(Int, Int)
    case alreadyEnrolled(Finger)
    case alreadyEnrolledFor(Finger, user: String)
    case enrolledForAnotherUser
    case noReader
    case readerRemoved
    case readerTooHot
    case readerBusy
    case readerProtocolError
    case readerStorageFull
    case keptOnReader
    case readerFailed
    case enrolledOnReader
    case timedOut(seconds: Int)
    case remoteSession
    case notEnrolled
    case notPermitted
    case userUnknown(String)
    case fingerNotEnrolled(Finger)
    case deleted(Int)
    case internalError
    case badRequest
    case cancelled
    case shuttingDown
    case suspending
    case stateUnreadable
    case printsUnsafe
    case printsSealed
    case printsSealedRefused
    case keyringKept, keyringForgotten, keyringNotKept, keyringNotSealedNow, keyringVoid, keyringClosed
    case enrollNotSealedNow
    case enrollSealingRefused
    case keyringSealingRefused
    case busy
    case templateDamaged(Finger)
    case templatesDamaged([Finger])
    case notEnabled
    case lockout(attempts: Int)
    case passwordRequired(PasswordRequiredReason)
    case backoff(seconds: Int)
    case wrongPassword
    case wrongPasswordBackoff(seconds: Int)
    case passwordNotSet
    case passwordNeeded
    case passwordAccepted
    case done(String)
    /// Several sentences, one per line.
    indirect case lines([Text])

    public func render(_ language: Language) -> String {
        let l = language
        switch self {
        case .lines(let texts): return texts.map { $0.render(language) }.joined(separator: "\n")
        case .placeFinger(let swipe):
            return swipe
                ? L("Swipe your finger across the fingerprint reader", l)
                : L("Place your finger on the fingerprint reader", l)
        case .enrollPrompt(let f, let n):
            return NL(
                "Enrolling %s: scan your finger %d time", "Enrolling %s: scan your finger %d times", n, l, f.rawValue, n
            )
        case .retry(let hint):
            switch hint {
            case .general: return L("The scan did not work, try again", l)
            case .tooShort: return L("Swipe was too short, try again", l)
            case .centerFinger: return L("Centre your finger on the reader and try again", l)
            case .removeFinger: return L("Remove your finger and try again", l)
            case .tooFast: return L("The scan was too fast, try again", l)
            }
        case .noMatch(let left):
            return NL(
                "Fingerprint not recognised, try again (%d try left)",
                "Fingerprint not recognised, try again (%d tries left)", left, l, left)
        case .notRecognised(let n):
            return NL(
                "Fingerprint not recognised after %d try: use your password",
                "Fingerprint not recognised after %d tries: use your password", n, l, n)
        case .queued(let ahead): return L("Waiting for the fingerprint reader (%d ahead in the queue)", l, ahead)
        case .recognised: return L("Fingerprint recognised", l)
        case .enrolled(let f): return L("Enrolled %s", l, f.rawValue)
        case .enrollStage(let k, let n): return L("Scan %d of %d recorded", l, k, n)
        case .alreadyEnrolled(let f): return L("This finger is already enrolled as your %s", l, f.rawValue)
        case .alreadyEnrolledFor(let f, let u):
            return L("This finger is already enrolled as the %s of %s", l, f.rawValue, u)
        case .enrolledForAnotherUser: return L("This finger is already enrolled for another user", l)
        case .noReader: return L("No fingerprint reader available: use your password", l)
        case .readerRemoved: return L("The fingerprint reader was removed: use your password", l)
        case .readerTooHot: return L("The fingerprint reader is too hot: use your password", l)
        case .readerBusy: return L("The fingerprint reader is busy: use your password", l)
        case .readerProtocolError: return L("The fingerprint reader stopped answering properly: use your password", l)
        case .readerStorageFull: return L("The fingerprint reader's storage is full: delete a fingerprint first", l)
        case .readerFailed: return L("The fingerprint reader reported an error: use your password", l)
        case .keptOnReader:
            return L("The fingerprint reader refused to delete its own copy; the daemon's log says why", l)
        case .enrolledOnReader: return L("This finger is already enrolled on the fingerprint reader", l)
        case .timedOut(let s):
            return NL(
                "No finger detected in %d second: use your password",
                "No finger detected in %d seconds: use your password", s, l, s)
        case .remoteSession: return L("Fingerprint is not offered in remote sessions", l)
        case .notEnrolled: return L("No fingerprints enrolled", l)
        case .notPermitted: return L("Not permitted", l)
        case .userUnknown(let u): return L("No such user: %s", l, u)
        case .fingerNotEnrolled(let f): return L("%s is not enrolled", l, f.rawValue)
        case .deleted(let n): return NL("Deleted %d fingerprint", "Deleted %d fingerprints", n, l, n)
        case .internalError: return L("The fingerprint service had an internal error: use your password", l)
        case .badRequest: return L("Malformed request", l)
        case .cancelled: return L("Cancelled", l)
        case .shuttingDown: return L("Fingerprint service stopping: use your password", l)
        case .suspending: return L("The computer is going to sleep: use your password", l)
        case .stateUnreadable:
            return L("Fingerprint unavailable until you enter your password (its saved state could not be read)", l)
        case .printsUnsafe:
            return L("Fingerprint unavailable: its stored files are not safe to use (ask the administrator)", l)
        case .printsSealed:
            return L(
                "Fingerprint unavailable: the prints are sealed to this computer's TPM, which cannot open them now: use your password",
                l)
        case .printsSealedRefused:
            return L(
                "Fingerprint unavailable: this computer's TPM refuses the key the prints are sealed with (ask the administrator): use your password",
                l)
        case .keyringKept: return L("Keyring password kept: a fingerprint login now unlocks your keyring", l)
        case .keyringForgotten: return L("Keyring password forgotten", l)
        case .keyringNotKept:
            return L("Keyring password not kept: this computer cannot seal it (no TPM; ask the administrator)", l)
        case .keyringNotSealedNow:
            return L(
                "Keyring password not kept: the TPM cannot seal it now (touchgate status says why); try again later", l)
        case .enrollNotSealedNow:
            return L("Enrolling is not possible now: the TPM cannot seal prints (touchgate status says why)", l)
        case .keyringSealingRefused:
            return L(
                "Keyring password not kept: this computer's TPM refuses the key it would be sealed with (touchgate doctor says what to do)",
                l)
        case .enrollSealingRefused:
            return L(
                "Enrolling is not possible: this computer's TPM refuses the key prints are sealed with (touchgate doctor says what to do)",
                l)
        case .keyringVoid:
            return L("Keyring not unlocked: fingers changed since it was set up; type your password once", l)
        case .keyringClosed:
            return L("Keyring not unlocked: the sealed password cannot be opened now; type your password", l)
        case .busy: return L("Fingerprint service busy: use your password", l)
        case .templateDamaged(let f):
            return L(
                "The enrolled %s is damaged: enroll it again (touchgate enroll --finger %s)", l, f.rawValue, f.rawValue)
        case .templatesDamaged(let fingers):
            return L(
                "The enrolled fingerprints are damaged (%s): enroll them again, then use your password", l,
                fingers.map(\.rawValue).joined(separator: ", "))
        case .notEnabled: return L("Fingerprint authentication is not enabled for this account", l)
        case .lockout(let n):
            return NL(
                "Fingerprint locked after %d failed attempt: enter your password",
                "Fingerprint locked after %d failed attempts: enter your password", n, l, n)
        case .passwordRequired(let reason):
            switch reason {
            case .boot: return L("Enter your password: it is required once after the computer starts", l)
            case .idle: return L("Enter your password: fingerprint has not been used for a long time", l)
            case .interval: return L("Enter your password: it has not been entered for a while", l)
            case .enrollmentChanged: return L("Enter your password: the enrolled fingerprints changed", l)
            case .adminLock: return L("Enter your password: the administrator locked fingerprint authentication", l)
            }
        case .backoff(let s): return L("Too many wrong passwords: try again in %s", l, Self.duration(s, l))
        case .wrongPassword: return L("Wrong password", l)
        case .wrongPasswordBackoff(let s):
            return L("Wrong password: password entry is locked for %s", l, Self.duration(s, l))
        case .passwordNotSet: return L("This account has no usable password", l)
        case .passwordNeeded: return L("Your password is needed for this", l)
        case .passwordAccepted: return L("Password accepted", l)
        case .done(let what): return what
        }
    }

    /// "45 seconds", "5 minutes", "1 hour": rounded up so the wait is never understated.
    static func duration(_ s: Int, _ l: Language) -> String {
        if s < 60 { return NL("%d second", "%d seconds", s, l, s) }
        if s < 3600 { let m = (s + 59) / 60; return NL("%d minute", "%d minutes", m, l, m) }
        let h = (s + 3599) / 3600
        return NL("%d hour", "%d hours", h, l, h)
    }
}
