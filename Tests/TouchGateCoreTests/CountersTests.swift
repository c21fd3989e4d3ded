// What each outcome records: biometric lockout and password back-off, on disk and across restarts
// (docs/spec.md §3, §9).
import Logging
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: lockout and passwords")
@CoreActor struct CountersTests {
    // MARK: biometric lockout

    @Test func theFifthConsecutiveFailedMatchLocksBiometricsOut() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let events = await core.collectEvents(user: "alice")

            var answers: [Refusal?] = []
            for _ in 1...5 { answers.append(try await core.recordFailedMatch(context())) }

            #expect(answers == [nil, nil, nil, nil, lockoutRefusal])
            #expect(await core.preflight() == lockoutRefusal)
            #expect(events.all.count == 1)
            #expect(events.all.first?.contains(#""event":"lockout""#) == true)
            #expect(events.all.first?.contains(#""failedMatches":5"#) == true)
        }
    }

    /// The fifth failure is made, and holds, even when the disk refuses it: the reply says the
    /// disk failed, and the lockout is still announced, as every lockout is.
    @Test func aLockoutTheDiskRefusesIsStillAnnounced() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let events = await core.collectEvents(user: "alice")
            for _ in 1...4 { _ = try await core.recordFailedMatch(context()) }
            // The user's directory is gone and a file stands in its place: no write lands.
            let dir = "\(bed.statePath)/users/alice"
            removeTree(dir)
            try plantFile(dir, "in the way")
            await #expect(throws: StorageError.unsafe("\(dir) is not a directory")) {
                try await core.recordFailedMatch(context())
            }
            #expect(await core.preflight() == lockoutRefusal)
            #expect(events.all.count == 1 && events.all[0].contains(#""event":"lockout""#), "\(events.all)")
        }
    }

    @Test func furtherFailedMatchesAfterLockoutDoNotAnnounceItAgain() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            for _ in 1...5 { _ = try await core.recordFailedMatch(context()) }
            #expect(try await core.recordFailedMatch(context()) == nil)
            #expect(await core.preflight() == lockoutRefusal)
        }
    }

    @Test func aFingerprintSuccessResetsTheCountBeforeLockout() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            for _ in 1...4 { _ = try await core.recordFailedMatch(context()) }
            try await core.states.update("alice", .afterReply) {
                core.policyEngine.recordFingerprintSuccess($0.stateOrFailClosed(core.policyEngine), at: bed.clock.now())
            }
            for _ in 1...4 { #expect(try await core.recordFailedMatch(context()) == nil) }
            #expect(await core.preflight() == nil)
        }
    }

    @Test func lockoutSurvivesARestart() async throws {
        try await withTestBed { bed in
            let before = try bed.makeCore()
            try await bed.readyUser(before)
            for _ in 1...5 { _ = try await before.recordFailedMatch(context()) }

            let after = try bed.makeCore()
            #expect(await after.preflight() == lockoutRefusal)
            let s = try #require(await after.state())
            #expect(s.consecutiveFailedMatches == 5)
            #expect(s.biometryLockedOut)
        }
    }

    @Test func eachFailedMatchIsOnDiskBeforeItIsReported() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            for count in 1...3 {
                _ = try await core.recordFailedMatch(context())
                // The file itself, as a restart after kill -9 right after the reply would read it.
                #expect(try bed.stateOnDisk("alice")?.consecutiveFailedMatches == count)
            }
        }
    }

    // MARK: passwords

    @Test func theFifthWrongPasswordStartsAOneMinuteBackoffAndTheNextIsNotEvenChecked() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)

            var answers: [PasswordOutcome] = []
            for i in 1...5 { answers.append(await core.verifyPassword(context(), "wrong-\(i)")) }
            #expect(Array(answers.prefix(4)) == Array(repeating: .refused(wrongPasswordRefusal), count: 4))
            var lastWrong = Refusal(
                .authenticationFailed, reason: .wrongPassword, text: .wrongPasswordBackoff(seconds: 60), seconds: 60)
            lastWrong.byPassword = true
            #expect(answers.last == .refused(lastWrong))
            #expect(bed.passwords.calls == 5)

            // Even the right password is refused unchecked while the back-off runs: no oracle.
            bed.clock.advance(15)
            let refused = await core.verifyPassword(context(), bed.passwords.correctPassword)
            #expect(
                refused
                    == .refused(Refusal(.passwordBackoff, reason: .backoff, text: .backoff(seconds: 45), seconds: 45)))
            #expect(bed.passwords.calls == 5)

            // Once it ran out, the password is checked again.
            bed.clock.advance(45)
            #expect(await core.verifyPassword(context(), bed.passwords.correctPassword) == .correct)
            #expect(bed.passwords.calls == 6)
        }
    }

    @Test func theBackoffSurvivesARestart() async throws {
        try await withTestBed { bed in
            let before = try bed.makeCore()
            try await bed.readyUser(before)
            for i in 1...5 { _ = await before.verifyPassword(context(), "wrong-\(i)") }

            let after = try bed.makeCore()
            guard case .refused(let refusal) = await after.verifyPassword(context(), bed.passwords.correctPassword)
            else {
                Issue.record("a restart ended the back-off")
                return
            }
            #expect(refusal.outcome == .passwordBackoff)
            #expect(bed.passwords.calls == 5)
        }
    }

    @Test func theRightPasswordClearsLockoutAndTheWrongPasswordCount() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            for _ in 1...5 { _ = try await core.recordFailedMatch(context()) }
            for i in 1...3 { _ = await core.verifyPassword(context(), "wrong-\(i)") }
            #expect(await core.preflight() == lockoutRefusal)

            let events = await core.collectEvents()
            #expect(await core.verifyPassword(context(), bed.passwords.correctPassword) == .correct)

            #expect(await core.preflight() == nil)
            #expect(bed.passwords.calls == 4)
            await core.states.flush()
            let s = try #require(await (try bed.makeCore()).state())
            #expect(s.consecutiveFailedMatches == 0)
            #expect(!s.biometryLockedOut)
            #expect(s.consecutiveWrongPasswords == 0)
            #expect(events.all.count == 2)
            #expect(events.all.first?.contains(#""event":"unlock""#) == true)
            #expect(events.all.last?.contains(#""outcome":"success""#) == true)
        }
    }

    @Test func typedPasswordsNeverReachEventsOrTheAuditLog() async throws {
        try await withTestBed(passwords: StubPasswords(correctPassword: "Tr0ub4dor&3")) { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            for _ in 1...5 { _ = try await core.recordFailedMatch(context()) }
            let events = await core.collectEvents()

            _ = await core.verifyPassword(context(), "hunter2-typo")
            _ = await core.verifyPassword(context(), "Tr0ub4dor&3")

            #expect(events.all.count == 3)  // the wrong one; the right one's unlock and outcome
            #expect(bed.audit.all.count >= 3)
            for line in events.all + bed.audit.all {
                #expect(!line.contains("hunter2-typo"), "\(line)")
                #expect(!line.contains("Tr0ub4dor&3"), "\(line)")
            }
            #expect(events.all.first?.contains(#""wrongPasswords":1"#) == true)
        }
    }
}
