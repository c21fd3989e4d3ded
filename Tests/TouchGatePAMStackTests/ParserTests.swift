// Reading pam.d files as Linux-PAM does: controls, continuations, comments, includes, `other`.
import Glibc
import Testing
@testable import TouchGatePAMStack

@Suite struct ParserTests {
    @Test func keywordControlsAreLinuxPAMsActionMaps() {
        let required = PAMControl.keyword("required")!
        #expect(required.action(for: .success) == .ok)
        #expect(required.action(for: .ignore) == .ignore)
        #expect(required.action(for: .authErr) == .bad)
        #expect(PAMControl.keyword("requisite")!.action(for: .authErr) == .die)
        #expect(PAMControl.keyword("sufficient")!.action(for: .success) == .done)
        #expect(PAMControl.keyword("sufficient")!.action(for: .authErr) == .ignore)
        #expect(PAMControl.keyword("optional")!.action(for: .authErr) == .ignore)
    }

    @Test func bracketControlsMapEachResultAndTheDefault() {
        let c = PAMConfigParser.parseControl("[success=2 new_authtok_reqd=done authinfo_unavail=ignore default=die]")
        #expect(c?.action(for: .success) == .jump(2))
        #expect(c?.action(for: .newAuthtokReqd) == .done)
        #expect(c?.action(for: .authinfoUnavail) == .ignore)
        #expect(c?.action(for: .maxtries) == .die)
        #expect(PAMConfigParser.parseControl("[success=zero]") == nil)
        #expect(PAMConfigParser.parseControl("[no_such_result=ok]") == nil)
        #expect(PAMConfigParser.parseControl("[success=0]") == nil)
    }

    @Test func linesKeepTheirNumbersThroughCommentsAndContinuations() {
        let text =
            "# comment\nauth [success=1 \\\n default=ignore] pam_unix.so nullok # trailing\n\n-auth optional pam_x.so a b\n"
        let (lines, errors) = PAMConfigParser.parse(text, file: "svc")
        #expect(errors.isEmpty)
        #expect(lines.count == 2)
        guard case .module(let type, let control, let path, let args, let quiet) = lines[0].kind else {
            Issue.record("not a module line"); return
        }
        #expect(lines[0].number == 2)
        #expect(type == "auth" && path == "pam_unix.so" && args == ["nullok"] && !quiet)
        #expect(control.action(for: .success) == .jump(1))
        guard case .module(_, _, _, let args2, let quiet2) = lines[1].kind else {
            Issue.record("not a module line"); return
        }
        #expect(lines[1].number == 5 && quiet2 && args2 == ["a", "b"])
    }

    @Test func badLinesAreErrorsNamingTheirLineAndTheRestStillCounts() {
        let (lines, errors) = PAMConfigParser.parse(
            "auth required\nbogus required pam_x.so\nauth [x] pam_y.so\nauth required pam_unix.so\n", file: "f")
        #expect(errors.map(\.line) == [1, 2, 3])
        #expect(errors[1].description == "f:2: unknown type 'bogus'")
        #expect(lines.count == 1)
    }

    @Test func includesAreInlinedForTheirTypeAndSubstacksNested() throws {
        let root = try FixtureRoot([
            "svc":
                "auth requisite pam_nologin.so\nauth include inc\n@include all\nauth substack sub\naccount required pam_y.so\n",
            "inc": "auth required pam_a.so\naccount required pam_not_auth.so\n",
            "all": "auth required pam_b.so\nsession required pam_s.so\n",
            "sub": "auth required pam_c.so\n",
        ])
        let stack = root.pam.stack(service: "svc", type: "auth")
        #expect(stack.errors.isEmpty)
        #expect(stack.serviceFile == "svc")
        #expect(stack.entries.map(\.moduleName) == ["pam_nologin", "pam_a", "pam_b", ""])
        #expect(stack.entries[3].substack?.map(\.moduleName) == ["pam_c"])
        #expect(stack.modules.map(\.origin) == ["svc:1", "inc:1", "all:1", "sub:1"])
    }

    @Test func aServiceWithoutAFileIsOther() throws {
        let root = try FixtureRoot(["other": "auth required pam_deny.so\n"])
        let stack = root.pam.stack(service: "nosuch", type: "auth")
        #expect(stack.serviceFile == "other")
        #expect(stack.modules.map(\.moduleName) == ["pam_deny"])
        #expect(!root.pam.hasFile("nosuch"))
    }

    @Test func missingAndLoopingIncludesAreErrors() throws {
        let root = try FixtureRoot(["a": "@include b\n", "b": "@include a\n", "c": "auth include nowhere\n"])
        #expect(root.pam.stack(service: "a", type: "auth").errors.contains { $0.reason.contains("too deep") })
        let c = root.pam.stack(service: "c", type: "auth")
        #expect(c.errors.map(\.description) == ["c:1: cannot read included file 'nowhere'"])
    }

    @Test(.timeLimit(.minutes(1))) func anIncludedFIFOIsUnreadableInsteadOfWaitedOn() throws {
        let root = try FixtureRoot(["c": "auth include pipe\n"])
        #expect(mkfifo(root.path + "/etc/pam.d/pipe", 0o600) == 0)
        let c = root.pam.stack(service: "c", type: "auth")
        #expect(c.errors.map(\.description) == ["c:1: cannot read included file 'pipe'"])
    }

    @Test func servicesAreTheRegularFilesButNotBackups() throws {
        let root = try FixtureRoot(["login": "", "sudo": "", "common-auth.pam-old": "", "x~": "", "su.dpkg-dist": ""])
        #expect(root.pam.services() == ["login", "sudo"])
    }

    /// `--root DIR`: `..` stops at DIR and symlinks, absolute ones too, resolve inside it.
    @Test func nothingOutsideTheRootIsRead() throws {
        let host = try FixtureRoot(["secret": "auth required pam_host_secret.so\n"])
        let root = try FixtureRoot([
            "dots": "@include ../../../../../../../..\(host.path)/etc/pam.d/secret\n",
            "inside": "auth required pam_inside.so\n",
        ])
        try root.symlink("etc/pam.d/absolute", to: host.path + "/etc/pam.d/secret")
        try root.symlink("etc/pam.d/relative", to: "../../../../../../../.." + host.path + "/etc/pam.d/secret")
        try root.symlink("etc/pam.d/system-auth", to: "/etc/pam.d/inside")  // an image's absolute link
        for name in ["dots", "absolute", "relative"] {
            let stack = root.pam.stack(service: name, type: "auth")
            #expect(!stack.modules.contains { $0.moduleName == "pam_host_secret" }, "\(name)")
        }
        #expect(root.pam.stack(service: "system-auth", type: "auth").modules.map(\.moduleName) == ["pam_inside"])
        // Module files are looked for inside the root too.
        try root.makeDirectories("lib/security")
        try root.write("lib/security/pam_inside.so", "")
        try root.symlink("lib/security/pam_out.so", to: host.path + "/etc/pam.d/secret")
        let locator = ModuleLocator(root: root.path)
        #expect(locator.exists("pam_inside.so") && locator.exists("/lib/security/pam_inside.so"))
        #expect(!locator.exists("pam_out.so") && !locator.exists(host.path + "/etc/pam.d/secret"))
    }
}
