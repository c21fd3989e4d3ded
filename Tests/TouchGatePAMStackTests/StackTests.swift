// Stacks as Debian 12's libpam builds them: includes, substacks, rejected lines kept, `other` per
// type, /usr/lib/pam.d after /etc/pam.d, and never a file outside the root.
import Glibc
import Testing
@testable import TouchGatePAMStack

@Suite struct StackTests {
    @Test func includesAreInlinedForTheirTypeAndSubstacksOneLevelDeeper() throws {
        let root = try FixtureRoot([
            "svc":
                "auth requisite pam_nologin.so\nauth include inc\n@include all\nauth substack sub\naccount required pam_y.so\n",
            "inc": "auth required pam_a.so\naccount required pam_not_auth.so\n",
            "all": "auth required pam_b.so\nsession required pam_s.so\n",
            "sub": "auth required pam_c.so\n",
        ])
        let stack = root.pam.stack(service: "svc", type: "auth")
        #expect(stack.errors.isEmpty && stack.failure == nil)
        #expect(stack.serviceFile == "svc")
        #expect(stack.entries.map(\.moduleName) == ["pam_nologin", "pam_a", "pam_b", "sub", "pam_c"])
        #expect(stack.entries.map(\.kind) == [.module, .module, .module, .substack, .module])
        #expect(stack.entries.map(\.level) == [0, 0, 0, 0, 1])
        #expect(stack.modules.map(\.origin) == ["svc:1", "inc:1", "all:1", "sub:1"])
    }

    @Test func aServiceWithoutAFileIsOther() throws {
        let root = try FixtureRoot(["other": "auth required pam_deny.so\n"])
        let stack = root.pam.stack(service: "nosuch", type: "auth")
        #expect(stack.serviceFile == "other")
        #expect(stack.modules.map(\.moduleName) == ["pam_deny"])
        #expect(!root.pam.hasFile("nosuch"))
    }

    /// `_pam_dispatch` falls back to `other` for each type the service has no line of.
    @Test func otherStandsInForEachTypeTheServiceLacks() throws {
        let root = try FixtureRoot([
            "svc": "account required pam_permit.so\n", "other": "auth required pam_touchgate.so\n",
            "inc": "account required pam_permit.so\n", "viaInclude": "auth include inc\n",
        ])
        let auth = root.pam.stack(service: "svc", type: "auth")
        #expect(auth.serviceFile == "other" && auth.modules.map(\.moduleName) == ["pam_touchgate"])
        #expect(root.pam.stack(service: "svc", type: "account").serviceFile == "svc")
        // An include that brings no auth line leaves none either.
        #expect(root.pam.stack(service: "viaInclude", type: "auth").serviceFile == "other")
    }

    @Test func aRejectedLineStaysInItsPlaceFailing() throws {
        let root = try FixtureRoot([
            "svc": "auth sufficent pam_touchgate.so\nauth requried pam_unix.so\nauht required pam_x.so\nauth required\n"
        ])
        let stack = root.pam.stack(service: "svc", type: "auth")
        try #require(stack.entries.map(\.kind) == [.module, .module, .mustFail, .mustFail])
        #expect(stack.entries[0].control == .allBad && stack.entries[1].control == .allBad)
        #expect(stack.entries.map(\.origin) == ["svc:1", "svc:2", "svc:3", "svc:4"])
        #expect(stack.errors.map(\.line) == [1, 2, 3, 4])
        #expect(stack.entries[2].namesTouchgate == false && stack.entries[0].namesTouchgate)
    }

    /// A missing `include` or `substack` file is one failing line (every result bad); a missing
    /// `@include` in a service's own file fails the whole service.
    @Test func unreadableIncludes() throws {
        let root = try FixtureRoot([
            "c": "auth include nowhere\nauth required pam_permit.so\n",
            "s": "auth substack nowhere\n",
            "at": "@include nowhere\nauth required pam_permit.so\n",
            "nested": "auth include at\n",
        ])
        let c = root.pam.stack(service: "c", type: "auth")
        #expect(c.errors.map(\.description) == ["c:1: cannot read included file 'nowhere'"])
        #expect(c.entries.map(\.kind) == [.mustFail, .module] && c.failure == nil)
        #expect(root.pam.stack(service: "s", type: "auth").entries.map(\.kind) == [.substack, .mustFail])
        #expect(
            root.pam.stack(service: "at", type: "auth").failure?.description
                == "at:1: cannot read included file 'nowhere'")
        // Included for auth, the failing @include is a failing line there (and the rest stays).
        let nested = root.pam.stack(service: "nested", type: "auth")
        #expect(nested.failure == nil && nested.entries.map(\.kind) == [.mustFail, .module])
    }

    @Test func aFileLibpamStopsReadingFailsTheService() throws {
        let root = try FixtureRoot([
            "login": "auth required pam_unix.so\nauth optional pam_touchgate.so report \\\n",
            "sudo": "auth include broken\nauth required pam_permit.so\n",
            "broken": "auth required pam_a.so\nauth required pam_b.so \\\n",
        ])
        let login = root.pam.stack(service: "login", type: "auth")
        #expect(login.failure?.line == 2)
        // Included, it is the include line that fails; the lines read before stay.
        let sudo = root.pam.stack(service: "sudo", type: "auth")
        #expect(sudo.failure == nil && sudo.entries.map(\.moduleName) == ["pam_a", "broken", "pam_permit"])
        #expect(sudo.entries.map(\.kind) == [.module, .mustFail, .module])
    }

    /// libpam names each line after its module; a name that leaves nothing fails the file, even on
    /// a line of another type.
    @Test func aModuleNameThatNamesNothingFailsTheService() throws {
        let root = try FixtureRoot(["svc": "auth required pam_a.so\nsession required /x/\n"])
        #expect(root.pam.stack(service: "svc", type: "auth").failure?.line == 2)
    }

    @Test func aBrokenOtherFailsEveryService() throws {
        let root = try FixtureRoot(["login": "auth required pam_unix.so\n", "other": "@include nowhere\n"])
        #expect(root.pam.stack(service: "login", type: "auth").failure != nil)
    }

    /// An include loop: Linux-PAM 1.5.2 reads the file again inside itself, one more file open and
    /// one call deeper each time, until it can open no more files (every authentication then
    /// fails, or pam_start does) or the application crashes. Doctor says so at once, for a file
    /// that includes itself three times too (libpam would never finish that one).
    @Test(.timeLimit(.minutes(1))) func anIncludeLoopFailsTheServiceAndEndsAtOnce() throws {
        let root = try FixtureRoot([
            "loop": "auth include loop\nauth include loop\nauth include loop\nauth required pam_permit.so\n",
            "a": "auth include b\n", "b": "@include a\n",
            "acct": "auth required pam_permit.so\naccount include acct\n",
        ])
        let started = ContinuousClock.now
        #expect(
            root.pam.stack(service: "loop", type: "auth").failure
                == PAMSyntaxError(
                    file: "loop", line: 1,
                    reason:
                        "an include loop ('loop' is included inside itself): Linux-PAM reads it until it runs out of open files or crashes"
                ))
        #expect(
            root.pam.stack(service: "a", type: "auth").failure?.description.hasPrefix("b:1: an include loop") == true)
        // Linux-PAM reads every type's lines when it starts the service: a loop of account lines too.
        #expect(root.pam.stack(service: "acct", type: "auth").failure?.line == 2)
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    /// A substack is one level deeper each time: libpam 1.5.2 loads nothing 16 deep, and the line
    /// there fails (a substack of itself then a pam_permit line: Permission denied).
    @Test func aSubstackOfItselfEndsSixteenDeep() throws {
        let root = try FixtureRoot(["sub": "auth substack sub\nauth required pam_permit.so\n"])
        let sub = root.pam.stack(service: "sub", type: "auth")
        #expect(sub.failure == nil && sub.unreviewed == nil)
        let kinds: [StackEntry.Kind] =
            Array(repeating: .substack, count: 16) + [.mustFail] + Array(repeating: .module, count: 16)
        #expect(sub.entries.map(\.kind) == kinds)
        #expect(sub.entries.map(\.level).max() == 15)
        #expect(sub.errors.map(\.description) == ["sub:1: substacks nested 16 deep: Linux-PAM reads none deeper"])
        #expect(PAMSimulator.run(sub.entries) { _ in .success }.result == .permDenied)
    }

    /// Includes that multiply (each file three times the next) are not followed without end.
    @Test(.timeLimit(.minutes(1))) func includesWithoutEndAreNotReviewed() throws {
        let root = try FixtureRoot(["fan": "auth substack fan\nauth substack fan\nauth substack fan\n"])
        let started = ContinuousClock.now
        let fan = root.pam.stack(service: "fan", type: "auth")
        #expect(fan.unreviewed?.reason.hasSuffix(": not reviewed") == true && fan.failure == nil)
        #expect(ContinuousClock.now - started < .seconds(10))
    }

    /// A review reads and parses each file once, however many stacks include it.
    @Test func eachFileIsReadOnce() throws {
        let root = try FixtureRoot([
            "login": debianLogin, "sudo": debianSudo, "other": debianOther, "common-auth": debianCommonAuth,
            "common-account": "account required pam_unix.so\n",
        ])
        let pam = root.pam
        for service in ["login", "sudo", "nosuch"] {
            #expect(pam.stack(service: service, type: "auth").modules.map(\.origin).contains("common-auth:1"))
        }
        // login, sudo, nosuch and other as services; common-auth, common-account and
        // common-session-noninteractive (missing) as includes.
        #expect(pam.files.lookupCount == 7)
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

    /// Debian's libpam opens /usr/lib/pam.d/NAME when /etc/pam.d/NAME is not there (polkitd
    /// installs polkit-1 there), for a service's file and `other`.
    @Test func usrLibPamDComesAfterEtcPamD() throws {
        let root = try FixtureRoot([
            "login": "auth include common-auth\n", "common-auth": "auth required pam_unix.so\n",
        ])
        try root.makeDirectories("usr/lib/pam.d")
        try root.write("usr/lib/pam.d/polkit-1", "@include common-auth\n@include /usr/lib/pam.d/vendor-auth\n")
        try root.write("usr/lib/pam.d/vendor-auth", "auth required pam_vendor.so\n")
        try root.write("usr/lib/pam.d/login", "auth required pam_shadowed.so\n")
        try root.write("usr/lib/pam.d/other", "auth required pam_vendor_other.so\n")
        #expect(root.pam.services() == ["common-auth", "login", "other", "polkit-1", "vendor-auth"])
        let polkit = root.pam.stack(service: "polkit-1", type: "auth")
        #expect(polkit.serviceFile == "/usr/lib/pam.d/polkit-1" && polkit.errors.isEmpty && polkit.failure == nil)
        #expect(polkit.modules.map(\.origin) == ["common-auth:1", "/usr/lib/pam.d/vendor-auth:1"])
        #expect(root.pam.stack(service: "login", type: "auth").modules.map(\.moduleName) == ["pam_unix"])
        #expect(root.pam.stack(service: "nosuch", type: "auth").modules.map(\.moduleName) == ["pam_vendor_other"])
    }

    /// An `include`, `substack` or `@include` of a name without a directory opens /etc/pam.d/NAME
    /// alone (Debian 12's libpam, services in /etc/pam.d and /usr/lib/pam.d alike): a file only in
    /// /usr/lib/pam.d is one it cannot read.
    @Test func anIncludeIsLookedForInEtcPamDAlone() throws {
        let root = try FixtureRoot([
            "inc": "auth include vendor\nauth required pam_permit.so\n", "sub": "auth substack vendor\n",
            "at": "@include vendor\nauth required pam_permit.so\n",
        ])
        try root.makeDirectories("usr/lib/pam.d")
        try root.write("usr/lib/pam.d/vendor", "auth required pam_vendor.so\n")
        try root.write("usr/lib/pam.d/vendorsvc", "auth include vendor\n")
        let inc = root.pam.stack(service: "inc", type: "auth")
        #expect(inc.errors.map(\.description) == ["inc:1: cannot read included file 'vendor'"])
        #expect(inc.entries.map(\.kind) == [.mustFail, .module] && inc.failure == nil)
        #expect(root.pam.stack(service: "sub", type: "auth").entries.map(\.kind) == [.substack, .mustFail])
        #expect(
            root.pam.stack(service: "at", type: "auth").failure?.description
                == "at:1: cannot read included file 'vendor'")
        #expect(root.pam.stack(service: "vendorsvc", type: "auth").entries.map(\.kind) == [.mustFail])
    }

    /// libpam reads a file to its end, however long: a service file over 1 MiB is read whole, not
    /// taken for missing (and `other` run instead).
    @Test func aLongFileIsReadToItsEnd() throws {
        let padding = String(repeating: "# " + String(repeating: "x", count: 97) + "\n", count: 11_000)
        let root = try FixtureRoot([
            "myapp": padding + "auth [success=1 default=ignore] pam_touchgate.so\nauth sufficient pam_permit.so\n",
            "other": "auth required pam_deny.so\n",
        ])
        #expect(root.pam.hasFile("myapp"))
        let stack = root.pam.stack(service: "myapp", type: "auth")
        #expect(stack.serviceFile == "myapp" && stack.unreviewed == nil)
        #expect(stack.modules.map(\.origin) == ["myapp:11001", "myapp:11002"])
    }

    /// A file past the size doctor reads is not reviewed: never missing, never `other` instead.
    @Test func aFileTooLargeToReadIsNotReviewed() throws {
        let big = String(repeating: "#\n", count: 3000) + "auth required pam_permit.so\n"
        let root = try FixtureRoot([
            "myapp": big, "inc": "auth include big\n", "big": big, "other": "auth required pam_deny.so\n",
        ])
        let pam = PAMDirectory(root: root.path, maxFileSize: 4096)
        #expect(pam.hasFile("myapp"))
        let own = pam.stack(service: "myapp", type: "auth")
        #expect(own.unreviewed?.description == "myapp: over 4096 bytes: not read")
        #expect(own.serviceFile == "myapp" && own.entries.isEmpty)
        #expect(pam.stack(service: "inc", type: "auth").unreviewed?.description == "big: over 4096 bytes: not read")
        // A large `other` leaves every service unreviewed: Linux-PAM reads it for each.
        try root.write("etc/pam.d/other", big)
        try root.write("etc/pam.d/small", "auth required pam_permit.so\n")
        let now = PAMDirectory(root: root.path, maxFileSize: 4096)
        #expect(now.stack(service: "small", type: "auth").unreviewed?.file == "other")
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
        #expect(root.pam.stack(service: "dots", type: "auth").failure != nil)
        for name in ["absolute", "relative"] {
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
