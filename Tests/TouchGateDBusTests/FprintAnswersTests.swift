// fprintd's words for the core's answers: every VerifyStatus and EnrollStatus result, and every
// D-Bus error, is one fprintd's clients know (its interface lists them), and each case of the core
// lands where fprintd's own source puts it (docs/readers.md, the table of libfprint's errors).
import Testing
import TouchGateCore
@testable import TouchGateDBus
import TouchGateReader
import TouchGateWire

/// fprintd's result strings (its D-Bus interface's documentation).
private let fprintdVerifyResults: Set<String> = [
    "verify-match", "verify-no-match", "verify-retry-scan", "verify-swipe-too-short",
    "verify-finger-not-centered", "verify-remove-and-retry", "verify-too-fast", "verify-disconnected",
    "verify-unknown-error",
]
private let fprintdEnrollResults: Set<String> = [
    "enroll-completed", "enroll-failed", "enroll-stage-passed", "enroll-retry-scan", "enroll-swipe-too-short",
    "enroll-finger-not-centered", "enroll-remove-and-retry", "enroll-too-fast", "enroll-data-full", "enroll-duplicate",
    "enroll-disconnected", "enroll-unknown-error",
]
/// fprintd's error names (its FprintError enumeration's nicks).
private let fprintdErrors: Set<String> = Set(
    [
        "ClaimDevice", "AlreadyInUse", "Internal", "PermissionDenied", "NoEnrolledPrints", "FingerAlreadyEnrolled",
        "NoActionInProgress", "InvalidFingername", "NoSuchDevice", "PrintsNotDeleted", "PrintsNotDeletedFromDevice",
    ].map { "net.reactivated.Fprint.Error." + $0 })

private let hints: [RetryHint] = [.general, .tooShort, .centerFinger, .removeFinger, .tooFast]

/// Every outcome, with every reason and with none.
private let everyReply: [Reply] = Outcome.allCases.flatMap { outcome in
    [Reply(outcome)] + Reason.allCases.map { Reply(outcome, reason: $0) }
}

@Suite("D-Bus: fprintd's words for the core's answers")
struct FprintAnswersTests {
    @Test("every retry hint has its own fprintd result, for a verify and for an enrollment")
    func retryHints() {
        let verify = hints.map(FprintStatus.verifyRetry)
        let enroll = hints.map(FprintStatus.enrollRetry)
        #expect(Set(verify).count == hints.count)
        #expect(Set(enroll).count == hints.count)
        #expect(Set(verify).isSubset(of: fprintdVerifyResults))
        #expect(Set(enroll).isSubset(of: fprintdEnrollResults))
        #expect(FprintStatus.verifyRetry(.general) == "verify-retry-scan")
        #expect(FprintStatus.enrollRetry(.tooShort) == "enroll-swipe-too-short")
    }

    /// libfprint's FpDeviceRetry codes as fprintd names them: TOO_FAST (4, libfprint 1.94.9) is
    /// fprintd's verify-too-fast and enroll-too-fast; a code this build does not know is a general
    /// retry, as fprintd's default case has it.
    @Test(
        "each of libfprint's retry codes becomes fprintd's result for it",
        arguments: [
            (0, "verify-retry-scan", "enroll-retry-scan"), (1, "verify-swipe-too-short", "enroll-swipe-too-short"),
            (2, "verify-finger-not-centered", "enroll-finger-not-centered"),
            (3, "verify-remove-and-retry", "enroll-remove-and-retry"), (4, "verify-too-fast", "enroll-too-fast"),
            (5, "verify-retry-scan", "enroll-retry-scan"),
        ])
    func libfprintRetryCodes(_ code: Int, _ verify: String, _ enroll: String) {
        #expect(FprintStatus.verifyRetry(RetryHint(libfprintCode: code)) == verify)
        #expect(FprintStatus.enrollRetry(RetryHint(libfprintCode: code)) == enroll)
    }

    @Test("a match, a failed match and a lockout, a reader gone, the daemon's own end of a verify, a stop")
    func verifyResults() {
        #expect(FprintStatus.verifyResult(.success(), stopped: false) == "verify-match")
        #expect(
            FprintStatus.verifyResult(Reply(.authenticationFailed, reason: .maxTries), stopped: false)
                == "verify-no-match")
        // The match that locked biometrics out is still a failed match; the next VerifyStart says why.
        #expect(
            FprintStatus.verifyResult(Reply(.biometryLockout, reason: .lockout), stopped: false) == "verify-no-match")
        for gone in [Reason.removed, .tooHot, .readerProtocol] {
            #expect(
                FprintStatus.verifyResult(Reply(.biometryNotAvailable, reason: gone), stopped: false)
                    == "verify-disconnected")
        }
        #expect(
            FprintStatus.verifyResult(Reply(.biometryNotAvailable, reason: .readerError), stopped: false)
                == "verify-unknown-error")
        // Suspend or shutdown: not a failed match, so pam_fprintd goes to the password at once.
        for ended in [Reason.suspend, .shutdown] {
            #expect(
                FprintStatus.verifyResult(Reply(.systemCancel, reason: ended), stopped: false) == "verify-unknown-error"
            )
        }
        // Stopped by the client (VerifyStop, Release, gone): no match, as in fprintd, whatever the
        // reader did meanwhile, except a match the core recorded, which fprintd reports too.
        #expect(FprintStatus.verifyResult(Reply(.appCancel, reason: .cancelled), stopped: true) == "verify-no-match")
        #expect(
            FprintStatus.verifyResult(Reply(.biometryNotAvailable, reason: .removed), stopped: true)
                == "verify-no-match")
        #expect(FprintStatus.verifyResult(.success(), stopped: true) == "verify-match")
    }

    /// A verify's or an enrollment's final result, and the results fprintd's clients know for it.
    struct Final: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let result: @Sendable (Reply) -> String
        let known: Set<String>
    }
    static let finals = [
        Final(
            testDescription: "verify", result: { FprintStatus.verifyResult($0, stopped: false) },
            known: fprintdVerifyResults),
        Final(testDescription: "enrollment", result: FprintStatus.enrollResult, known: fprintdEnrollResults),
    ]

    @Test(
        "a final answer is always one fprintd's clients know, a stopped one too",
        arguments: finals)
    func finalResultsAreFprintds(_ final: Final) {
        for reply in everyReply {
            #expect(final.known.contains(final.result(reply)), "\(reply.outcome) \(String(describing: reply.reason))")
        }
    }

    @Test("a finished, duplicate, full, disconnected and daemon-ended enrollment")
    func enrollResults() {
        #expect(FprintStatus.enrollResult(.success()) == "enroll-completed")
        #expect(FprintStatus.enrollResult(Reply(.duplicate, reason: .duplicate)) == "enroll-duplicate")
        #expect(FprintStatus.enrollResult(Reply(.internalError, reason: .storageFull)) == "enroll-data-full")
        #expect(FprintStatus.enrollResult(Reply(.internalError, reason: .storage)) == "enroll-failed")
        #expect(FprintStatus.enrollResult(Reply(.biometryNotAvailable, reason: .removed)) == "enroll-disconnected")
        #expect(FprintStatus.enrollResult(Reply(.systemCancel, reason: .suspend)) == "enroll-unknown-error")
        #expect(FprintStatus.enrollResult(Reply(.timeout, reason: .timeout)) == "enroll-unknown-error")
        // Stopped by the client: fprintd's word for a cancelled enrollment.
        #expect(FprintStatus.enrollResult(Reply(.appCancel, reason: .cancelled)) == "enroll-failed")
    }

    @Test("every refusal of the core becomes one of fprintd's errors, with the core's sentence")
    func errorsAreFprintds() async {
        for reply in everyReply where !reply.isSuccess {
            let error = await FprintDevice.error(for: reply)
            #expect(fprintdErrors.contains(error.name), "\(reply.outcome): \(error.name)")
            #expect(!error.message.isEmpty)
        }
        let damaged = await FprintDevice.error(for: Reply(.templateDamaged, reason: .templateDamaged))
        #expect(damaged.name == "net.reactivated.Fprint.Error.NoEnrolledPrints")
        let refused = await FprintDevice.error(for: Reply(.notPermitted, text: .notPermitted))
        #expect(refused.name == "net.reactivated.Fprint.Error.PermissionDenied")
        #expect(refused.message == Text.notPermitted.render(.english))
        let unknown = await FprintDevice.error(for: Reply(.userUnknown, text: .userUnknown("nobody-here")))
        #expect(unknown.name == "net.reactivated.Fprint.Error.NoEnrolledPrints")
        #expect(await FprintDevice.error(for: Reply(.badRequest)).name == "net.reactivated.Fprint.Error.Internal")
    }

    @Test("without polkit, a refusal says whether a password or root was wanted")
    func permissionDenied() async {
        let password = await FprintDevice.permissionDenied(Reply(.notPermitted, reason: .passwordNeeded))
        #expect(password.name == "net.reactivated.Fprint.Error.PermissionDenied")
        #expect(password.message.contains("touchgate enroll"))
        let other = await FprintDevice.permissionDenied(Reply(.notPermitted))
        #expect(other.name == "net.reactivated.Fprint.Error.PermissionDenied")
        #expect(other.message.contains("only root may act for another user"))
    }

    @Test("every error this front-end names is one of fprintd's")
    func busErrorNames() {
        let ours: [BusError] = [
            .claimDevice(), .alreadyInUse("x"), .internalError("x"), .permissionDenied("x"), .noEnrolledPrints("x"),
            .noActionInProgress("x"), .invalidFingername(), .noSuchDevice(), .printsNotDeleted("x"),
            .printsNotDeletedFromDevice("x"),
        ]
        for error in ours { #expect(fprintdErrors.contains(error.name), "\(error.name)") }
        #expect(busError(nil) == BusError(name: "org.freedesktop.DBus.Error.Failed", message: "unknown error"))
    }

    @Test("fprintd's polkit actions, and the core's rights they stand for without polkit")
    func actions() {
        #expect(FprintAction.verify.rawValue == "net.reactivated.fprint.device.verify")
        #expect(FprintAction.enroll.rawValue == "net.reactivated.fprint.device.enroll")
        #expect(FprintAction.setUsername.rawValue == "net.reactivated.fprint.device.setusername")
        #expect(FprintAction.verify.right == .selfOrRoot)
        #expect(FprintAction.setUsername.right == .selfOrRoot)
        #expect(FprintAction.enroll.right == .selfWithPasswordOrRoot)
    }
}
