// Stacks run as Linux-PAM's dispatcher runs them: jumps, done, die, bad, and nothing decided.
import Testing
@testable import TouchGatePAMStack

/// An assembled stack from one file's text, as service "t".
func stack(_ text: String) throws -> [StackEntry] {
    let root = try FixtureRoot(["t": text])
    return root.pam.stack(service: "t", type: "auth").entries
}

/// Runs `entries` with each module's result given by its name.
func run(_ entries: [StackEntry], _ results: [String: PAMResult]) -> SimulationOutcome {
    PAMSimulator.run(entries) { results[$0.moduleName] ?? .ignore }
}

@Suite struct SimulationTests {
    @Test func debiansCommonAuthSucceedsOnlyWhenUnixDoes() throws {
        let s = try stack(debianCommonAuth)
        #expect(run(s, ["pam_unix": .success, "pam_deny": .authErr, "pam_permit": .success]).result == .success)
        let failed = run(s, ["pam_unix": .authErr, "pam_deny": .authErr, "pam_permit": .success])
        #expect(failed.result == .authErr)
        #expect(failed.calls.map(\.entry.moduleName) == ["pam_unix", "pam_deny"])
    }

    @Test func aJumpSkipsThatManyLines() throws {
        let s = try stack(debianCommonAuthWithTouchgate)
        let byFinger = run(s, ["pam_touchgate": .success, "pam_permit": .success, "pam_deny": .authErr])
        #expect(byFinger.result == .success)
        #expect(byFinger.calls.map(\.entry.origin) == ["t:2", "t:7", "t:9"])
    }

    @Test func jumpingPastTheEndFails() throws {
        let s = try stack("auth [success=3 default=ignore] pam_a.so\nauth required pam_permit.so\n")
        #expect(run(s, ["pam_a": .success, "pam_permit": .success]).result == .permDenied)
    }

    /// A number that wrapped below -6 is no jump to Linux-PAM: "bad jump in stack", the stack
    /// fails and goes on with the next line.
    @Test func aNegativeJumpFailsTheStackWhereItStands() throws {
        let s = try stack("auth [success=4294967289 default=ignore] pam_a.so\nauth required pam_permit.so\n")
        let out = run(s, ["pam_a": .success, "pam_permit": .success])
        #expect(out.result == .permDenied && out.calls.map(\.entry.moduleName) == ["pam_a", "pam_permit"])
    }

    @Test func sufficientEndsTheStackOnSuccessUnlessSomethingFailedBefore() throws {
        let s = try stack("auth required pam_r.so\nauth sufficient pam_s.so\nauth required pam_deny.so\n")
        #expect(run(s, ["pam_r": .success, "pam_s": .success, "pam_deny": .authErr]).result == .success)
        let earlier = run(s, ["pam_r": .authErr, "pam_s": .success, "pam_deny": .authErr])
        #expect(earlier.result == .authErr)
        #expect(earlier.calls.count == 3)
    }

    @Test func requisiteEndsTheStackAtOnce() throws {
        let s = try stack("auth requisite pam_q.so\nauth required pam_permit.so\n")
        let out = run(s, ["pam_q": .authinfoUnavail, "pam_permit": .success])
        #expect(out.result == .authinfoUnavail)
        #expect(out.calls.count == 1)
    }

    @Test func aStackWhereNothingDecidedFails() throws {
        let s = try stack("auth optional pam_o.so\n")
        #expect(run(s, ["pam_o": .ignore]).result == .permDenied)
        #expect(run(s, ["pam_o": .authErr]).result == .permDenied)
    }

    /// The substack's modules share the service's impression: once a failure made it negative,
    /// `done` no longer ends the substack (Linux-PAM ran the report line after a wrong password only).
    @Test func aSubstackGoesOnWithTheStacksStateSoFar() throws {
        let root = try FixtureRoot([
            "t":
                "auth [success=done default=ignore] pam_touchgate.so\nauth required pam_unix.so\nauth substack sub\n",
            "sub":
                "auth [success=done default=ignore] pam_succeed_if.so uid >= 0\nauth optional pam_touchgate.so report\n",
        ])
        let s = root.pam.stack(service: "t", type: "auth").entries
        let results: [String: PAMResult] = ["pam_touchgate": .authinfoUnavail, "pam_succeed_if": .success]
        var wrong = results
        wrong["pam_unix"] = .authErr
        let afterWrong = PAMSimulator.run(s) { $0.arguments == ["report"] ? .ignore : wrong[$0.moduleName] }
        #expect(afterWrong.result == .authErr && afterWrong.calls.last?.entry.origin == "sub:2")
        var right = results
        right["pam_unix"] = .success
        let afterRight = PAMSimulator.run(s) { $0.arguments == ["report"] ? .ignore : right[$0.moduleName] }
        #expect(afterRight.result == .success && afterRight.calls.last?.entry.origin == "sub:1")
    }

    @Test func aJumpPastTheEndOfASubstackFailsAndGoesOnAfterIt() throws {
        let root = try FixtureRoot([
            "t": "auth substack sub\nauth required pam_after.so\n",
            "sub": "auth [success=2 default=ignore] pam_in.so\nauth required pam_permit.so\n",
        ])
        let out = run(root.pam.stack(service: "t", type: "auth").entries, ["pam_in": .success, "pam_after": .success])
        #expect(out.calls.map(\.entry.moduleName) == ["pam_in", "pam_after"])
        #expect(out.result == .permDenied)
    }

    /// pam_authenticate takes PAM_IGNORE as the status when an `ok` meets it first.
    @Test func okOnIgnoreMakesIgnoreTheResult() throws {
        let s = try stack("auth [default=ok] pam_a.so\nauth required pam_b.so\n")
        #expect(run(s, ["pam_a": .ignore, "pam_b": .success]).result == .ignore)
    }

    @Test func aRejectedLineFailsWithPermDeniedWhereItStands() throws {
        let s = try stack("auth optional pam_a.so\nbogus required pam_x.so\nauth sufficient pam_b.so\n")
        let out = run(s, ["pam_a": .success, "pam_b": .success])
        #expect(out.result == .permDenied && out.calls.map(\.entry.moduleName) == ["pam_a", "pam_b"])
    }

    @Test func aSubstacksDoneEndsOnlyTheSubstack() throws {
        let root = try FixtureRoot([
            "t": "auth substack s\nauth required pam_after.so\n",
            "s": "auth sufficient pam_in.so\nauth required pam_deny.so\n",
        ])
        let s = root.pam.stack(service: "t", type: "auth").entries
        let out = run(s, ["pam_in": .success, "pam_after": .authErr, "pam_deny": .authErr])
        #expect(out.calls.map(\.entry.moduleName) == ["pam_in", "pam_after"])
        #expect(out.result == .authErr)
    }
}
