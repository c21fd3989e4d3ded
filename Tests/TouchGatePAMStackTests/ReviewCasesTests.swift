// Stacks that Debian 12's Linux-PAM runs differently from how they read at a glance: each was run
// through the real library (pam_wrapper and pamtester, the fingerprint returning each result),
// and the doctor has to find what it found.
import Testing
@testable import TouchGatePAMStack

/// Debian's common-auth password part after `first`, with the report line.
func loginStack(_ first: String) -> String {
    """
    \(first)
    auth [success=1 default=ignore] pam_unix.so
    auth requisite pam_deny.so
    auth required pam_permit.so
    auth optional pam_touchgate.so report

    """
}

func problems(_ files: [String: String], of service: String = "login") throws -> [StackProblem]? {
    try review(files).services.first { $0.service == service }?.problems
}

@Suite struct ReviewCasesTests {
    /// Linux-PAM: with system_err (a daemon fault) or auth_err a wrong password logs in and the
    /// report line runs. Only authinfo_unavail and maxtries were played before.
    @Test func everyResultOfTheFingerprintLineIsPlayed() throws {
        let open = try problems([
            "login": loginStack("auth [success=2 authinfo_unavail=ignore maxtries=ignore default=2] pam_touchgate.so")
        ])
        #expect(open?.contains(.acceptsWrongPassword) == true)
        #expect(open?.contains(.reportAfterWrongPassword("login:5")) == true)
        // And with default=die the right password is refused when the daemon fails.
        let locked = try problems([
            "login": loginStack(
                "auth [success=done authinfo_unavail=ignore maxtries=ignore default=die] pam_touchgate.so")
        ])
        #expect(
            locked == [.fingerprintBlocksPassword("auth_err, user_unknown, system_err, buf_err, conv_err, abort")])
    }

    /// `[success=2]` alone: every other result is `bad`, so a failed finger refuses the password.
    @Test func aControlWithoutDefaultFailsTheRestOfTheResults() throws {
        #expect(
            try problems(["login": loginStack("auth [success=2] pam_touchgate.so")]) == [
                .fingerprintBlocksPassword(everyFailure)
            ])
    }

    /// `definitive` and upper case are controls Linux-PAM rejects: nothing gets in.
    @Test func aControlLinuxPAMRejectsIsNamedAndPlayedAsItFails() throws {
        for control in ["definitive", "[SUCCESS=done DEFAULT=ignore]", "sufficent"] {
            let r = try review(["login": "auth \(control) pam_touchgate.so\nauth required pam_unix.so\n"])
            let login = try #require(r.services.first, "\(control)")
            #expect(login.problems.first.map { if case .syntax = $0 { true } else { false } } == true, "\(control)")
            #expect(login.problems.contains(.fingerprintBlocksPassword(everyFailure)), "\(control)")
            #expect(!login.fingerprintSuffices, "\(control)")
        }
    }

    /// Blanks around `=` are Linux-PAM's: the line works, no problem, the service offers the finger.
    @Test func blanksAroundTheEqualsSignAreFine() throws {
        let r = try review(["login": loginStack("auth [success = 2 default = ignore] pam_touchgate.so")])
        #expect(r.services.map(\.service) == ["login"] && r.services.first?.problems == [])
        #expect(r.services.first?.offersFingerprint == true)
    }

    /// A commented-out continued argument: Linux-PAM 1.5 glues `auth requisite pam_deny.so` on as
    /// pam_unix's arguments, so a wrong password gets in.
    @Test func aContinuationPastACommentIsPlayedAsLibpamReadsIt() throws {
        let text = loginStack("auth [success=2 default=ignore] pam_touchgate.so").replacing(
            "pam_unix.so\n", with: "pam_unix.so nullok \\\n#\ttry_first_pass\n")
        let p = try #require(try problems(["login": text]))
        #expect(p.contains(.acceptsWrongPassword))
        #expect(p.contains(.reportAfterWrongPassword("login:6")))
        #expect(p.contains { if case .syntax(let e) = $0 { e.line == 2 } else { false } })
    }

    @Test func aFileEndingInAContinuationMakesTheServiceFail() throws {
        let text = loginStack("auth [success=2 default=ignore] pam_touchgate.so") + "auth optional pam_x.so \\\n"
        let r = try review(["login": text])
        let login = try #require(r.services.first)
        #expect(login.problems.first.map { if case .serviceFails = $0 { true } else { false } } == true)
        #expect(!login.offersFingerprint)
    }

    /// CRLF: `pam_touchgate.so\r` is no module Linux-PAM can load; the service is still named.
    @Test func aCRLFFileIsNamedNotDropped() throws {
        let text = loginStack("auth [success=2 default=ignore] pam_touchgate.so").replacing("\n", with: "\r\n")
        let root = try FixtureRoot(["login": text])
        try root.makeDirectories("lib/security")
        for m in ["pam_unix.so", "pam_deny.so", "pam_permit.so", "pam_touchgate.so"] {
            try root.write("lib/security/\(m)", "")
        }
        let r = PAMReview.review(root: root.path, passwordService: "touchgate", modules: ModuleLocator(root: root.path))
        let login = try #require(r.services.first)
        #expect(!login.fingerprintLines.contains("login:1"))
        #expect(login.problems.contains(.missingModule(module: "pam_touchgate.so\r", origin: "login:1")))
        #expect(
            login.problems.contains {
                if case .syntax(let e) = $0 { e.reason.contains("carriage return") } else { false }
            })
    }

    /// A type Linux-PAM rejects on the fingerprint line: the line stays, failing; the service is
    /// reviewed, not left out.
    @Test func aRejectedFingerprintLineKeepsItsService() throws {
        let r = try review([
            "login": loginStack("auht [success=2 default=ignore] pam_touchgate.so"), "sudo": debianSudo,
        ])
        let login = try #require(r.services.first { $0.service == "login" })
        #expect(!login.offersFingerprint && login.fingerprintLines.isEmpty)
        #expect(
            login.problems.contains(
                .syntax(
                    PAMSyntaxError(file: "login", line: 1, reason: "unknown type 'auht': Linux-PAM fails this line"))))
    }

    /// A condition that skips the fingerprint line for some: for the others, a failing finger
    /// refuses the right password (the conditions are played both ways).
    @Test func aLineOnlySomeReachIsChecked() throws {
        let text =
            "auth [success=1 default=ignore] pam_succeed_if.so user ingroup nofinger quiet\nauth required pam_touchgate.so\n"
            + String(loginStack("").dropFirst())
        let p = try #require(try problems(["login": text]))
        #expect(p.contains(.fingerprintBlocksPassword(everyFailure)))
    }

    /// lightdm's nopasswdlogin: a way in by design, a note; the password part is as it should be.
    @Test func aConditionThatLetsSomeInIsANote() throws {
        var files = packaged
        files["lightdm"] = """
            auth requisite pam_nologin.so
            auth sufficient pam_succeed_if.so user ingroup nopasswdlogin
            @include common-auth
            -auth optional pam_gnome_keyring.so

            """
        let p = try #require(try problems(files, of: "lightdm"))
        #expect(p == [.conditionGrants(module: "pam_succeed_if.so", origin: "lightdm:2")])
    }

    /// A condition that jumped earlier does not make a wrong password's way in a design: pam_unix
    /// was asked and refused the password, and the stack still let the person in (Linux-PAM 1.5.2,
    /// pam_deny standing in for the finger and the password: Success).
    @Test func aWrongPasswordLetInAfterAConditionJumpedIsAProblem() throws {
        let p = try #require(
            try problems(
                [
                    "myapp": """
                    auth [success=1 default=ignore] pam_succeed_if.so uid >= 1000 quiet
                    auth requisite pam_deny.so
                    auth [success=3 default=ignore] pam_touchgate.so
                    auth [success=1 default=ignore] pam_unix.so
                    auth sufficient pam_permit.so
                    auth optional pam_touchgate.so report
                    auth required pam_permit.so

                    """
                ], of: "myapp"))
        #expect(p == [.acceptsWrongPassword])
    }

    /// 4294967291 is -5 in Linux-PAM's int: `reset`, which wipes out the refused password
    /// (Debian 12's libpam, pam_deny standing in for the finger and the password: Success).
    @Test func aJumpNumberThatWrapsToResetLetsAWrongPasswordIn() throws {
        let p = try problems([
            "login": """
            auth [success=2 default=ignore] pam_touchgate.so
            auth [success=1 default=ignore] pam_unix.so
            auth required pam_deny.so
            auth [success=4294967291 default=ignore] pam_permit.so
            auth required pam_permit.so
            auth optional pam_touchgate.so report

            """
        ])
        #expect(p?.contains(.acceptsWrongPassword) == true)
    }

    /// A service file doctor does not read whole is a problem, not a service that uses `other`.
    @Test func aServiceFileTooLargeToReadIsAProblem() throws {
        var files = packaged
        files["myapp"] = String(repeating: "#\n", count: 3000) + "auth sufficient pam_permit.so\n"
        files["touchgate"] = files["myapp"]
        let root = try FixtureRoot(files)
        let r = PAMReview.review(pam: PAMDirectory(root: root.path, maxFileSize: 4096), passwordService: "touchgate")
        let myapp = try #require(r.services.first { $0.service == "myapp" })
        #expect(
            myapp.problems == [
                .notReviewed(PAMSyntaxError(file: "myapp", line: 0, reason: "over 4096 bytes: not read"))
            ])
        #expect(!myapp.offersFingerprint)
        #expect(
            r.passwordService.problems == [
                .notReviewed(PAMSyntaxError(file: "touchgate", line: 0, reason: "over 4096 bytes: not read"))
            ])
    }

    /// A password service whose file has no auth line runs `other`'s: common-auth, pam_touchgate.
    @Test func aPasswordServiceWithoutAuthLinesRunsOthers() throws {
        var files = packaged
        files["touchgate"] = "#auth required pam_unix.so\naccount required pam_deny.so\n"
        let p = try review(files).passwordService
        #expect(p.exists && p.authFromOther && p.file == "other")
        #expect(p.touchgateLines == ["common-auth:2", "common-auth:9"])
    }

    /// A substack shares the service's state: its report line runs after a wrong password only.
    @Test func aSubstacksReportLineAfterAWrongPasswordIsFound() throws {
        let p = try problems([
            "login":
                "auth [success=done default=ignore] pam_touchgate.so\nauth required pam_unix.so\nauth substack sub\n",
            "sub":
                "auth [success=done default=ignore] pam_succeed_if.so uid >= 0\nauth optional pam_touchgate.so report\n",
        ])
        #expect(p?.contains(.reportAfterWrongPassword("sub:2")) == true)
    }

    /// A service Linux-PAM cannot start is named whatever it offers; a broken `other` fails them all.
    @Test func servicesLinuxPAMCannotStartAreNamed() throws {
        var files = packaged
        files["other"] = "@include common-auht\n"
        let r = try review(files)
        #expect(r.services.map(\.service) == ["login", "other", "sudo"])
        for service in r.services {
            #expect(
                service.problems == [
                    .serviceFails(
                        PAMSyntaxError(file: "other", line: 1, reason: "cannot read included file 'common-auht'"))
                ])
            #expect(!service.offersFingerprint)
        }
    }

    /// A `-type` line only keeps Linux-PAM from logging the missing module: the line still fails
    /// (PAM_MODULE_UNKNOWN), and a `required` one fails the stack.
    @Test func aQuietLineWhoseModuleIsMissingStillFails() throws {
        let root = try FixtureRoot([
            "login": "-auth required pam_gone.so\n" + loginStack("auth [success=2 default=ignore] pam_touchgate.so"),
            "sudo": "-auth optional pam_gone.so\n" + loginStack("auth [success=2 default=ignore] pam_touchgate.so"),
        ])
        try root.makeDirectories("lib/security")
        for m in ["pam_unix.so", "pam_deny.so", "pam_permit.so", "pam_touchgate.so"] {
            try root.write("lib/security/\(m)", "")
        }
        let r = PAMReview.review(root: root.path, passwordService: "touchgate", modules: ModuleLocator(root: root.path))
        let login = try #require(r.services.first { $0.service == "login" })
        #expect(login.problems.contains(.missingModule(module: "pam_gone.so", origin: "login:1")))
        #expect(!login.fingerprintSuffices)
        // Nobody gets in, with a finger or a password: not the fingerprint line's doing.
        #expect(!login.problems.contains { if case .fingerprintBlocksPassword = $0 { true } else { false } })
        // Where the failure is ignored, nothing to say.
        #expect(r.services.first { $0.service == "sudo" }?.problems == [])
    }
}
