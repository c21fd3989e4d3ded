// Reading pam.d files as Debian 12's libpam (Linux-PAM 1.5.2) does: controls, continuations,
// comments, rejected lines. What each case does was checked against the real library.
import Glibc
import Testing
@testable import TouchGatePAMStack

/// The module lines of `text` as (module, arguments).
func modules(_ text: String) -> [(String?, [String])] {
    PAMConfigParser.parse(text, file: "f").lines.compactMap {
        guard case .module(_, _, let module, let args, _, _) = $0.kind else { return nil }
        return (module, args)
    }
}

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
        #expect(PAMControl.keyword("Required") == required)
        #expect(PAMControl.keyword("definitive") == nil)
    }

    func control(_ text: String) -> (PAMControl, String?) { PAMControl.parse(Array(text.utf8)) }

    @Test func bracketControlsMapEachResultAndTheDefault() {
        let (c, error) = control("success=2 new_authtok_reqd=done authinfo_unavail=ignore default=die")
        #expect(error == nil)
        #expect(c.action(for: .success) == .jump(2))
        #expect(c.action(for: .newAuthtokReqd) == .done)
        #expect(c.action(for: .authinfoUnavail) == .ignore)
        #expect(c.action(for: .maxtries) == .die)
    }

    /// `_pam_set_default_control(actions, _PAM_ACTION_BAD)` after the parse.
    @Test func aResultTheControlDoesNotNameFails() {
        let (c, error) = control("success=2")
        #expect(error == nil)
        #expect(c.action(for: .success) == .jump(2))
        #expect(c.action(for: .authinfoUnavail) == .bad)
        #expect(c.action(for: .ignore) == .bad)
    }

    /// Linux-PAM compares with strncmp: the case counts, a name is matched by its start, and a
    /// control it cannot parse makes every result `bad`.
    @Test func controlsLinuxPAMRejectsMakeEveryResultBad() {
        for text in [
            "SUCCESS=done DEFAULT=ignore", "success=OK", "definitive", "success=+1", "success=0", "success=00",
            "success=1x", "successful=ok", "success=", "no_such_result=ok", "success=oka",
        ] {
            let (c, error) = control(text)
            #expect(c == .allBad, "\(text)")
            #expect(error != nil, "\(text)")
        }
        #expect(control("SUCCESS=done").1 == "expecting return value; [...SUCCESS=done]")
        #expect(control("success=OK").1 == "expecting jump number; [...OK]")
    }

    @Test func controlsLinuxPAMAcceptsThoughTheyLookOdd() {
        let spaced = control(" success = done  default = ignore ")
        #expect(spaced.1 == nil && spaced.0.action(for: .success) == .done && spaced.0.action(for: .authErr) == .ignore)
        // No blank is needed after an action: `okdefault` is `ok` then `default`.
        let glued = control("success=okdefault=ignore")
        #expect(glued.1 == nil && glued.0.action(for: .success) == .ok && glued.0.action(for: .authErr) == .ignore)
        // A second default fills only what is still unset; a later value overrides.
        let twice = control("default=ignore default=bad success=ok")
        #expect(twice.0.action(for: .authErr) == .ignore && twice.0.action(for: .success) == .ok)
        #expect(control("success=ok default=ignore success=bad").0.action(for: .success) == .bad)
        #expect(control("incomplete=ignore conv_again=ignore").1 == nil)
    }

    /// `_pam_parse_control` reads the number into a 32-bit int that wraps: -1 to -5 are the named
    /// actions (ok, done, bad, die, reset), -6 leaves the result unset, 0 is rejected and other
    /// negatives are a jump Linux-PAM calls bad. Each was run through Debian 12's libpam.
    @Test func jumpNumbersWrapAsLinuxPAMsInt() {
        #expect(control("success=4294967295 default=bad").0.action(for: .success) == .ok)
        #expect(control("success=4294967294").0.action(for: .success) == .done)
        #expect(control("success=4294967291 default=ignore").0.action(for: .success) == .reset)
        #expect(control("success=4294967298 default=ignore").0.action(for: .success) == .jump(2))
        // -6: unset, so `default` (before or after it) or else `bad` decides.
        #expect(control("success=4294967290 default=ok").0.action(for: .success) == .ok)
        #expect(control("default=ok success=4294967290").0.action(for: .success) == .bad)
        #expect(control("success=4294967290").0.action(for: .success) == .bad)
        #expect(control("success=4294967289 default=ignore").0.action(for: .success) == .jump(-7))
        #expect(control("success=2147483648 default=ignore").0.action(for: .success) == .jump(-2_147_483_648))
        let zero = control("success=4294967296 default=ok")
        #expect(zero.0 == .allBad && zero.1 == "expecting non-zero; [... default=ok]")
    }

    @Test func anUnbracketedValueActionControlIsParsedToo() throws {
        let lines = PAMConfigParser.parse("auth success=ok pam_a.so\n", file: "f").lines
        guard case .module(_, let c, _, _, _, let rejected) = try #require(lines.first).kind else {
            Issue.record("not a module line")
            return
        }
        #expect(!rejected && c.action(for: .success) == .ok && c.action(for: .authErr) == .bad)
    }

    @Test func linesKeepTheirNumbersThroughCommentsAndContinuations() {
        let text =
            "# comment\nauth [success=1 \\\n default=ignore] pam_unix.so nullok # trailing\n\n-auth optional pam_x.so a b\n"
        let parsed = PAMConfigParser.parse(text, file: "svc")
        #expect(parsed.errors.isEmpty && parsed.failure == nil)
        #expect(parsed.lines.count == 2)
        guard case .module(let type, let control, let path, let args, let quiet, _) = parsed.lines[0].kind else {
            Issue.record("not a module line")
            return
        }
        #expect(parsed.lines[0].number == 2)
        #expect(type == "auth" && path == "pam_unix.so" && args == ["nullok"] && !quiet)
        #expect(control.action(for: .success) == .jump(1))
        guard case .module(_, _, _, let args2, let quiet2, _) = parsed.lines[1].kind else {
            Issue.record("not a module line")
            return
        }
        #expect(parsed.lines[1].number == 5 && quiet2 && args2 == ["a", "b"])
    }

    /// 1.5.2 skips a blank or comment line inside a continuation and glues the next line on: the
    /// line after a commented-out argument becomes arguments.
    @Test func aContinuationGoesOnPastBlankAndCommentLines() {
        for gap in ["#\ttry_first_pass", "", "   "] {
            let text = "auth [success=1 default=ignore] pam_unix.so nullok \\\n\(gap)\nauth requisite pam_deny.so\n"
            let parsed = PAMConfigParser.parse(text, file: "f")
            let lines = modules(text)
            #expect(lines.count == 1)
            #expect(lines.first?.0 == "pam_unix.so")
            #expect(lines.first?.1 == ["nullok", "auth", "requisite", "pam_deny.so"])
            #expect(parsed.errors.map(\.line) == [1])
            #expect(parsed.errors.first?.reason.contains("line 3") == true)
        }
    }

    /// Linux-PAM looks back past blanks for the `\`.
    @Test func blanksAfterTheBackslashStillContinue() {
        let lines = modules("auth required pam_touchgate.so \\   \n\ttimeout=10\nauth required pam_unix.so\n")
        #expect(lines.map(\.0) == ["pam_touchgate.so", "pam_unix.so"])
        #expect(lines.first?.1 == ["timeout=10"])
    }

    @Test func aBackslashBeforeACommentIsAWordNotAContinuation() {
        let lines = modules("auth required pam_a.so x \\ # note\nauth required pam_b.so\n")
        #expect(lines.map(\.0) == ["pam_a.so", "pam_b.so"])
        #expect(lines.first?.1 == ["x", "\\"])
    }

    /// "Incomplete read": libpam fails the file, so the service cannot start.
    @Test func aContinuationAtTheEndOfTheFileFailsIt() {
        for end in ["auth optional pam_touchgate.so report \\\n", "auth optional pam_x.so \\\n\n# c\n", "a b c \\"] {
            let parsed = PAMConfigParser.parse("auth required pam_unix.so\n" + end, file: "f")
            #expect(parsed.failure?.line == 2, "\(end)")
            #expect(parsed.lines.count == 1)
        }
    }

    /// A CRLF file: the '\r' stays in each line's last word (`pam_deny.so\r` is no module), which
    /// Swift's "\r\n" Character would hide.
    @Test func aCarriageReturnStaysInTheLastWord() {
        let text = "auth [success=1 default=ignore] pam_unix.so\r\nauth requisite pam_deny.so\r\n"
        let parsed = PAMConfigParser.parse(text, file: "f")
        #expect(modules(text).map(\.0) == ["pam_unix.so\r", "pam_deny.so\r"])
        #expect(parsed.errors.map(\.line) == [1, 2])
        #expect(parsed.errors.allSatisfy { $0.reason.contains("carriage return") })
        // Nor does a `\` before the '\r' continue the line.
        #expect(modules("auth required pam_a.so \\\r\nauth required pam_b.so\n").count == 2)
    }

    /// fgets reads at most 1023 bytes at once: a longer line goes on as a line of its own. A
    /// continuation that fills the buffer to its last byte makes libpam read on forever.
    @Test func aLineLongerThanLibpamsBufferIsCutInTwo() {
        let long = "auth required pam_a.so " + String(repeating: "x", count: 1000) + " pam_b.so b\n"
        let lines = modules(long)
        #expect(lines.map(\.0) == ["pam_a.so", nil])  // `pam_b.so` is the second line's type
        #expect(lines.first?.1 == [String(repeating: "x", count: 1000)])
        let endless = "auth required pam_a.so " + String(repeating: "x", count: 999) + "\\\nauth required pam_b.so\n"
        #expect(PAMConfigParser.parse(endless, file: "f").failure?.line == 1)
    }

    @Test func wordsInBracketsAreOneWordWithoutTheBrackets() {
        let lines = modules("auth [success=ok]pam_a.so [a b\\]c] d[e f]\n")
        #expect(lines.first?.0 == "pam_a.so")
        #expect(lines.first?.1 == ["a b]c", "d[e", "f]"])
    }

    /// Linux-PAM keeps a line it rejects, failing: nothing after it moves up.
    @Test func rejectedLinesStayWhereTheyAreAndFail() {
        let parsed = PAMConfigParser.parse(
            "auth required\nbogus required pam_x.so\nauth [x] pam_y.so\nauth\nauth required pam_unix.so\n", file: "f")
        #expect(parsed.errors.map(\.line) == [1, 2, 3, 4])
        #expect(parsed.errors[1].description == "f:2: unknown type 'bogus': Linux-PAM fails this line")
        #expect(parsed.lines.count == 5)
        let rejected = parsed.lines.map { line -> Bool in
            if case .module(_, _, _, _, _, let rejected) = line.kind { return rejected }
            return false
        }
        // `[x]` is a control Linux-PAM cannot parse: the module runs, every result fails.
        #expect(rejected == [true, true, false, true, false])
    }

    @Test func atIncludeTakesItsFileAndIgnoresWhatFollows() {
        let lines = PAMConfigParser.parse("@include common-auth extra\n  -@INCLUDE other-file\n", file: "f").lines
        #expect(lines.map(\.kind) == [.includeAll("common-auth"), .includeAll("other-file")])
    }
}
