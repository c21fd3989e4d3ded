// What the doctor finds in whole pam.d trees: the packaged setup is clean; each mistake is named.
import Glibc
import Testing
@testable import TouchGatePAMStack

func review(_ files: [String: String], passwordService: String = "touchgate") throws -> PAMReview {
    let root = try FixtureRoot(files)
    return PAMReview.review(root: root.path, passwordService: passwordService)
}

/// Every result of the fingerprint line but a match, as a problem names them.
let everyFailure = "authinfo_unavail, maxtries, auth_err, user_unknown, system_err, buf_err, conv_err, abort"

/// Debian with touchgate's profiles enabled and the shipped password service.
let packaged: [String: String] = [
    "common-auth": debianCommonAuthWithTouchgate, "common-account": "account required pam_unix.so\n",
    "common-session-noninteractive": "session required pam_unix.so\n",
    "login": debianLogin, "sudo": debianSudo, "other": debianOther, "touchgate": shippedPasswordService,
]

@Suite struct ReviewTests {
    @Test func thePackagedSetupHasNoProblem() throws {
        let r = try review(packaged)
        #expect(r.services.map(\.service) == ["login", "other", "sudo"])
        #expect(r.services.allSatisfy { $0.problems.isEmpty && $0.fingerprintSuffices && $0.hasPasswordModule })
        #expect(r.commonAuthFingerprint && r.commonAuthReport)
        #expect(!r.faillockInUse)
        let p = r.passwordService
        #expect(p.exists && p.touchgateLines.isEmpty && p.acceptsPassword && p.refusesWrongPassword)
        #expect(p.passwordModules == ["pam_unix"] && p.missingFromLogin.isEmpty && p.problems.isEmpty)
        #expect(p.comparedWith == "login")
    }

    @Test func withoutTheProfileNoServiceOffersTheFingerprint() throws {
        var files = packaged
        files["common-auth"] = debianCommonAuth
        let r = try review(files)
        #expect(r.services.isEmpty && !r.commonAuthFingerprint && !r.commonAuthReport)
    }

    @Test func withoutTheReportLineAPasswordCannotClearALockout() throws {
        var files = packaged
        files["common-auth"] = "auth [success=2 default=ignore] pam_touchgate.so\n" + debianCommonAuth
        let r = try review(files)
        #expect(r.commonAuthFingerprint && !r.commonAuthReport)
        #expect(r.services.first { $0.service == "sudo" }?.problems == [.noReportAfterPassword])
    }

    @Test func biometricsOrPasswordNeedsNoReportLine() throws {
        let r = try review([
            "vlock":
                "auth sufficient pam_touchgate.so policy=biometrics-or-password\nauth required pam_unix.so try_first_pass\n"
        ])
        #expect(r.services.first?.problems == [])
    }

    @Test func aRequiredFingerprintLineStandsBetweenTheUserAndThePassword() throws {
        let r = try review([
            "su": "auth required pam_touchgate.so\nauth required pam_unix.so\nauth optional pam_touchgate.so report\n"
        ])
        let problems = r.services.first?.problems ?? []
        #expect(problems.contains(.fingerprintBlocksPassword(everyFailure)))
        #expect(r.services.first?.fingerprintSuffices == false)
    }

    @Test func aReportLineAWrongPasswordReachesIsFound() throws {
        let r = try review([
            "sudo": """
            auth [success=2 default=ignore] pam_touchgate.so
            auth optional pam_touchgate.so report
            auth [success=1 default=ignore] pam_unix.so
            auth requisite pam_deny.so
            auth required pam_permit.so

            """
        ])
        #expect(r.services.first?.problems == [.reportAfterWrongPassword("sudo:2")])
    }

    @Test func aStackThatAcceptsAWrongPasswordIsFound() throws {
        let r = try review([
            "bad":
                "auth sufficient pam_touchgate.so\nauth optional pam_unix.so\nauth required pam_permit.so\nauth optional pam_touchgate.so report\n"
        ])
        let problems = r.services.first?.problems ?? []
        #expect(problems.contains(.acceptsWrongPassword))
        #expect(problems.contains(.reportAfterWrongPassword("bad:4")))
    }

    /// common-auth with pam_faillock around pam_unix; `authsucc` is the control of its authsucc line.
    func faillockCommonAuth(authsucc: String) -> String {
        """
        auth required pam_faillock.so preauth
        auth [success=3 default=ignore] pam_touchgate.so
        auth [success=2 default=ignore] pam_unix.so nullok try_first_pass
        auth [default=die] pam_faillock.so authfail
        auth requisite pam_deny.so
        auth \(authsucc) pam_faillock.so authsucc
        auth required pam_permit.so
        auth optional pam_touchgate.so report

        """
    }

    @Test func faillockAroundThePasswordAloneIsFine() throws {
        var files = packaged
        files["common-auth"] = faillockCommonAuth(authsucc: "required")
        let r = try review(files)
        #expect(r.faillockInUse)
        #expect(r.services.allSatisfy { $0.problems.isEmpty })
        // The password service lacks pam_faillock that login has: they would differ.
        #expect(r.passwordService.missingFromLogin == ["pam_faillock"])
    }

    @Test func aSufficientAuthsuccEndsTheStackBeforeTheReportLine() throws {
        var files = packaged
        files["common-auth"] = faillockCommonAuth(authsucc: "sufficient")
        let r = try review(files)
        #expect(r.services.allSatisfy { $0.problems == [.noReportAfterPassword] })
    }

    @Test func faillockThatAFingerprintFailureReachesIsFound() throws {
        let r = try review([
            "login": """
            auth required pam_faillock.so preauth
            auth [success=3 default=bad] pam_touchgate.so
            auth [default=die] pam_faillock.so authfail
            auth [success=1 default=ignore] pam_unix.so
            auth requisite pam_deny.so
            auth required pam_permit.so

            """
        ])
        let problems = r.services.first?.problems ?? []
        #expect(problems.contains(.faillockCountsFingerprint("login:3")))
        #expect(problems.contains(.fingerprintBlocksPassword(everyFailure)))
    }

    @Test func aGDMStyleFingerprintServiceHasNoPasswordToCheck() throws {
        let r = try review(["gdm-fingerprint": "auth required pam_touchgate.so noinput\n"])
        let s = try #require(r.services.first)
        #expect(!s.hasPasswordModule && s.fingerprintSuffices && s.problems.isEmpty)
    }

    /// Without a password module a failed finger has to fail the stack too: one that lets the
    /// person in anyway accepts anybody (Debian 12's libpam, the finger failing: Success).
    @Test func aFingerprintServiceThatLetsInWithoutTheFingerIsFound() throws {
        let r = try review([
            "myapp": "auth [success=1 default=ignore] pam_touchgate.so\nauth sufficient pam_permit.so\n"
        ])
        let s = try #require(r.services.first)
        #expect(!s.hasPasswordModule && s.problems == [.acceptsWrongPassword])
    }

    @Test func aPasswordServiceThatIncludesCommonAuthReachesTouchgate() throws {
        var files = packaged
        files["touchgate"] = "@include common-auth\n"
        let p = try review(files).passwordService
        #expect(p.touchgateLines == ["common-auth:2", "common-auth:9"])
        #expect(p.acceptsPassword && p.refusesWrongPassword)
    }

    @Test func aMissingPasswordServiceFallsBackToOther() throws {
        var files = packaged
        files["touchgate"] = nil
        let p = try review(files).passwordService
        #expect(!p.exists && p.file == "other" && !p.touchgateLines.isEmpty)
    }

    @Test func aPasswordServiceThatAcceptsAnythingOrNothingIsFound() throws {
        var files = packaged
        files["touchgate"] = "auth required pam_permit.so\n"
        let anything = try review(files).passwordService
        #expect(!anything.acceptsPassword && !anything.refusesWrongPassword)
        files["touchgate"] = "auth required pam_unix.so\nauth required pam_deny.so\n"
        let nothing = try review(files).passwordService
        #expect(!nothing.acceptsPassword && nothing.refusesWrongPassword)
    }

    @Test func passwordModulesLoginUsesAndTheServiceLacksAreNamed() throws {
        var files = packaged
        files["common-auth"] = """
            auth [success=3 default=ignore] pam_touchgate.so
            auth [success=2 default=ignore] pam_unix.so nullok try_first_pass
            auth [success=1 default=ignore] pam_sss.so use_first_pass
            auth requisite pam_deny.so
            auth required pam_permit.so
            auth optional pam_touchgate.so report

            """
        let r = try review(files)
        #expect(r.passwordService.missingFromLogin == ["pam_sss"])
        #expect(r.services.allSatisfy { $0.problems.isEmpty })
    }

    @Test func missingModulesAreFoundWhereTheRootHasSecurityDirectories() throws {
        let root = try FixtureRoot(packaged)
        try root.makeDirectory("lib")
        try root.makeDirectory("lib/x86_64-linux-gnu")
        try root.makeDirectory("lib/x86_64-linux-gnu/security")
        for m in ["pam_unix.so", "pam_deny.so", "pam_permit.so", "pam_faildelay.so", "pam_nologin.so", "pam_group.so"] {
            try root.write("lib/x86_64-linux-gnu/security/\(m)", "")
        }
        let locator = ModuleLocator(root: root.path)
        #expect(locator.directories == [root.path + "/lib/x86_64-linux-gnu/security"])
        let r = PAMReview.review(root: root.path, passwordService: "touchgate", modules: locator)
        let login = try #require(r.services.first { $0.service == "login" })
        #expect(login.problems.contains(.missingModule(module: "pam_touchgate.so", origin: "common-auth:2")))
        #expect(r.passwordService.problems.isEmpty)
    }

    /// libpam-fprintd goes with fprintd: a service left with its line (GDM's fingerprint service)
    /// fails there, and doctor names it although it offers no touchgate fingerprint.
    @Test func anotherFingerprintModulesLineLeftWithoutItsModuleIsNamed() throws {
        let root = try FixtureRoot(packaged)
        try root.write("etc/pam.d/gdm-fingerprint", "auth required pam_fprintd.so\n")
        try root.write("etc/pam.d/kde-fingerprint", "auth required pam_fprintd.so\n")
        try root.makeDirectory("lib")
        try root.makeDirectory("lib/x86_64-linux-gnu")
        try root.makeDirectory("lib/x86_64-linux-gnu/security")
        for m in ["pam_unix.so", "pam_deny.so", "pam_permit.so", "pam_touchgate.so", "pam_fprintd.so"] {
            try root.write("lib/x86_64-linux-gnu/security/\(m)", "")
        }
        let installed = PAMReview.review(
            root: root.path, passwordService: "touchgate", modules: ModuleLocator(root: root.path))
        #expect(installed.leftoverLines == [])

        #expect(unlink(root.path + "/lib/x86_64-linux-gnu/security/pam_fprintd.so") == 0)
        let gone = PAMReview.review(
            root: root.path, passwordService: "touchgate", modules: ModuleLocator(root: root.path))
        #expect(
            gone.leftoverLines == [
                LeftoverLine(service: "gdm-fingerprint", module: "pam_fprintd.so", origin: "gdm-fingerprint:1"),
                LeftoverLine(service: "kde-fingerprint", module: "pam_fprintd.so", origin: "kde-fingerprint:1"),
            ])
        #expect(!gone.services.contains { $0.service == "gdm-fingerprint" })
    }
}
