// Daemon: canEvaluate answers and what each outcome records, across restarts (SPEC §3, §9).
import Foundation
import Logging
import Testing
@testable import TouchGateDaemon
import TouchGatePolicy
import TouchGateWire

@Suite("Daemon")
struct DaemonTests {
    let remoteRefusal = Refusal(outcome: .biometryNotAvailable, reason: "remote", text: .remoteSession)
    let lockoutRefusal = Refusal(outcome: .biometryLockout, reason: "lockout", text: .lockout(attempts: 5))
    let bootRefusal = Refusal(outcome: .passwordRequired, reason: "boot", text: .passwordRequired(.boot))
    let stateUnreadableRefusal = Refusal(outcome: .biometryLockout, reason: "stateUnreadable", text: .stateUnreadable)
    let wrongPassword = Daemon.PasswordOutcome.refused(
        Refusal(outcome: .authenticationFailed, reason: "wrongPassword", text: .wrongPassword))

    func preflight(_ daemon: Daemon, _ user: String = "alice", rhost: String? = nil) -> Refusal? {
        daemon.preflight(user: user, policy: .biometrics, rhost: rhost)
    }

    // MARK: canEvaluate

    @Test func aRemoteSessionIsRefusedUnlessRemoteIsAllowed() throws {
        try withTemporaryDirectory { dir in
            let local = try makeDaemon(stateDirectory: dir, allowRemote: false)
            try readyUser(local)
            #expect(preflight(local, rhost: "10.0.0.7") == remoteRefusal)
            #expect(preflight(local, rhost: "") == nil)
            #expect(preflight(local, rhost: nil) == nil)

            let remoteAllowed = try makeDaemon(stateDirectory: dir, allowRemote: true)
            #expect(preflight(remoteAllowed, rhost: "10.0.0.7") == nil)
        }
    }

    @Test func aRemoteSessionIsRefusedBeforeAnythingElseIsLookedAt() throws {
        try withTemporaryDirectory { dir in
            let daemon = try makeDaemon(stateDirectory: dir, reader: StubReader.absent)
            #expect(preflight(daemon, rhost: "attacker.example") == remoteRefusal)
        }
    }

    @Test func withoutAReaderBiometryIsNotAvailable() throws {
        try withTemporaryDirectory { dir in
            try readyUser(try makeDaemon(stateDirectory: dir))
            let readerless = try makeDaemon(stateDirectory: dir, reader: StubReader(info: nil))
            #expect(preflight(readerless) == Refusal(outcome: .biometryNotAvailable, reason: "noReader", text: .noReader))
        }
    }

    @Test func withoutPrintsBiometryIsNotEnrolled() throws {
        try withTemporaryDirectory { dir in
            let daemon = try makeDaemon(stateDirectory: dir)
            #expect(preflight(daemon) == Refusal(outcome: .biometryNotEnrolled, reason: "noPrints", text: .notEnrolled))
        }
    }

    @Test func printsWithoutOptingInAreNotEnabled() throws {
        try withTemporaryDirectory { dir in
            let daemon = try makeDaemon(stateDirectory: dir)
            try daemon.store.save([1], user: "alice", finger: .rightIndex)
            #expect(preflight(daemon) == Refusal(outcome: .biometryNotEnrolled, reason: "notEnabled", text: .notEnabled))
        }
    }

    @Test func afterEnrollingAPasswordIsRequiredOnceThisBoot() throws {
        try withTemporaryDirectory { dir in
            let daemon = try makeDaemon(stateDirectory: dir)
            try enroll(daemon)
            #expect(preflight(daemon) == bootRefusal)
        }
    }

    @Test func afterAPasswordSuccessTheFingerprintIsAvailable() throws {
        try withTemporaryDirectory { dir in
            let reader = StubReader(info: StubReader.present.info)
            let daemon = try makeDaemon(stateDirectory: dir, reader: reader)
            try enroll(daemon)
            try daemon.recordPasswordSuccess(request())
            #expect(preflight(daemon) == nil)
            // canEvaluate never touches the reader.
            #expect(reader.operations.all == [])
        }
    }

    @Test func aNewBootRequiresThePasswordAgain() throws {
        try withTemporaryDirectory { dir in
            try readyUser(try makeDaemon(stateDirectory: dir, bootID: "boot-1"))
            #expect(preflight(try makeDaemon(stateDirectory: dir, bootID: "boot-1")) == nil)
            #expect(preflight(try makeDaemon(stateDirectory: dir, bootID: "boot-2")) == bootRefusal)
        }
    }

    @Test func changingThePrintsRequiresThePassword() throws {
        try withTemporaryDirectory { dir in
            let daemon = try makeDaemon(stateDirectory: dir)
            try readyUser(daemon)
            try daemon.store.save([7, 7], user: "alice", finger: .leftThumb)
            #expect(preflight(daemon) == Refusal(outcome: .passwordRequired, reason: "enrollmentChanged",
                                                 text: .passwordRequired(.enrollmentChanged)))
            try daemon.store.delete(user: "alice", fingers: [.leftThumb])
            #expect(preflight(daemon) == nil)
        }
    }

    @Test func oneUsersStateDoesNotAnswerForAnother() throws {
        try withTemporaryDirectory { dir in
            let daemon = try makeDaemon(stateDirectory: dir)
            try readyUser(daemon, user: "alice")
            try enroll(daemon, user: "bob")
            #expect(preflight(daemon, "alice") == nil)
            #expect(preflight(daemon, "bob") == bootRefusal)
        }
    }

    // MARK: biometric lockout

    @Test func theFifthConsecutiveFailedMatchLocksBiometricsOut() throws {
        try withTemporaryDirectory { dir in
            let daemon = try makeDaemon(stateDirectory: dir)
            try readyUser(daemon)
            let events = Collector<String>()
            _ = daemon.events.subscribe(user: "alice") { events.append($0) }

            var answers: [Refusal?] = []
            for _ in 1...5 { answers.append(try daemon.recordFailedMatch(request())) }

            #expect(answers == [nil, nil, nil, nil, lockoutRefusal])
            #expect(preflight(daemon) == lockoutRefusal)
            #expect(events.all.count == 1)
            #expect(events.all.first?.contains(#""event":"lockout""#) == true)
            #expect(events.all.first?.contains(#""failedMatches":5"#) == true)
        }
    }

    @Test func furtherFailedMatchesAfterLockoutDoNotAnnounceItAgain() throws {
        try withTemporaryDirectory { dir in
            let daemon = try makeDaemon(stateDirectory: dir)
            try readyUser(daemon)
            for _ in 1...5 { _ = try daemon.recordFailedMatch(request()) }
            #expect(try daemon.recordFailedMatch(request()) == nil)
            #expect(preflight(daemon) == lockoutRefusal)
        }
    }

    @Test func aFingerprintSuccessResetsTheCountBeforeLockout() throws {
        try withTemporaryDirectory { dir in
            let daemon = try makeDaemon(stateDirectory: dir)
            try readyUser(daemon)
            for _ in 1...4 { _ = try daemon.recordFailedMatch(request()) }
            daemon.recordFingerprintSuccess(request())
            for _ in 1...4 { #expect(try daemon.recordFailedMatch(request()) == nil) }
            #expect(preflight(daemon) == nil)
        }
    }

    @Test func lockoutSurvivesARestart() throws {
        try withTemporaryDirectory { dir in
            let before = try makeDaemon(stateDirectory: dir)
            try readyUser(before)
            for _ in 1...5 { _ = try before.recordFailedMatch(request()) }

            let after = try makeDaemon(stateDirectory: dir)
            #expect(preflight(after) == lockoutRefusal)
            guard case .state(let s) = after.states.load("alice") else {
                Issue.record("state unreadable after restart")
                return
            }
            #expect(s.consecutiveFailedMatches == 5)
            #expect(s.biometryLockedOut)
        }
    }

    @Test func eachFailedMatchIsOnDiskBeforeItIsReported() throws {
        try withTemporaryDirectory { dir in
            let daemon = try makeDaemon(stateDirectory: dir)
            try readyUser(daemon)
            for count in 1...3 {
                _ = try daemon.recordFailedMatch(request())
                // A fresh reader of the directory, as after kill -9 right after the reply.
                guard case .state(let s) = UserStateStore(stateDirectory: dir, policy: Policy()).load("alice") else {
                    Issue.record("state unreadable")
                    return
                }
                #expect(s.consecutiveFailedMatches == count)
            }
        }
    }

    // MARK: passwords

    @Test func theFifthWrongPasswordStartsAOneMinuteBackoffAndTheNextIsNotEvenChecked() throws {
        try withTemporaryDirectory { dir in
            let passwords = StubPasswords(correctPassword: "correct horse")
            let daemon = try makeDaemon(stateDirectory: dir, passwords: passwords)
            try readyUser(daemon)

            var answers: [Daemon.PasswordOutcome] = []
            for i in 1...5 { answers.append(daemon.verifyPassword(request(), "wrong-\(i)")) }
            #expect(Array(answers.prefix(4)) == [wrongPassword, wrongPassword, wrongPassword, wrongPassword])
            #expect(answers.last == .refused(Refusal(outcome: .authenticationFailed, reason: "wrongPassword",
                                                      text: .wrongPasswordBackoff(seconds: 60), seconds: 60)))
            #expect(passwords.calls == 5)

            // Even the right password is refused unchecked while the back-off runs: no oracle.
            guard case .refused(let refusal) = daemon.verifyPassword(request(), "correct horse") else {
                Issue.record("a password was accepted during the back-off")
                return
            }
            #expect(passwords.calls == 5)
            #expect(refusal.outcome == .passwordBackoff)
            #expect(refusal.reason == "backoff")
            let seconds = try #require(refusal.seconds)
            #expect((59...60).contains(seconds))
            #expect(refusal.text == .backoff(seconds: seconds))
        }
    }

    @Test func theBackoffSurvivesARestart() throws {
        try withTemporaryDirectory { dir in
            let passwords = StubPasswords()
            let before = try makeDaemon(stateDirectory: dir, passwords: passwords)
            try readyUser(before)
            for i in 1...5 { _ = before.verifyPassword(request(), "wrong-\(i)") }

            let after = try makeDaemon(stateDirectory: dir, passwords: passwords)
            guard case .refused(let refusal) = after.verifyPassword(request(), passwords.correctPassword) else {
                Issue.record("a restart ended the back-off")
                return
            }
            #expect(refusal.outcome == .passwordBackoff)
            #expect(passwords.calls == 5)
        }
    }

    @Test func theRightPasswordClearsLockoutAndTheWrongPasswordCount() throws {
        try withTemporaryDirectory { dir in
            let passwords = StubPasswords()
            let daemon = try makeDaemon(stateDirectory: dir, passwords: passwords)
            try readyUser(daemon)
            for _ in 1...5 { _ = try daemon.recordFailedMatch(request()) }
            for i in 1...3 { _ = daemon.verifyPassword(request(), "wrong-\(i)") }
            #expect(preflight(daemon) == lockoutRefusal)

            let events = Collector<String>()
            _ = daemon.events.subscribe(user: nil) { events.append($0) }
            #expect(daemon.verifyPassword(request(), passwords.correctPassword) == .correct)

            #expect(preflight(daemon) == nil)
            #expect(passwords.calls == 4)
            guard case .state(let s) = try makeDaemon(stateDirectory: dir).states.load("alice") else {
                Issue.record("state unreadable")
                return
            }
            #expect(s.consecutiveFailedMatches == 0)
            #expect(!s.biometryLockedOut)
            #expect(s.consecutiveWrongPasswords == 0)
            #expect(events.all.count == 1)
            #expect(events.all.first?.contains(#""event":"unlock""#) == true)
        }
    }

    @Test func typedPasswordsNeverReachEventsOrTheAuditLog() throws {
        try withTemporaryDirectory { dir in
            let audit = Collector<String>()
            let passwords = StubPasswords(correctPassword: "Tr0ub4dor&3")
            let daemon = try makeDaemon(stateDirectory: dir, passwords: passwords,
                                        audit: Logger(label: "audit", factory: { _ in CollectingLogHandler(lines: audit) }))
            try readyUser(daemon)
            for _ in 1...5 { _ = try daemon.recordFailedMatch(request()) }
            let events = Collector<String>()
            _ = daemon.events.subscribe(user: nil) { events.append($0) }

            _ = daemon.verifyPassword(request(), "hunter2-typo")
            _ = daemon.verifyPassword(request(), "Tr0ub4dor&3")

            #expect(events.all.count == 2)
            #expect(audit.all.count >= 2)
            for line in events.all + audit.all {
                #expect(!line.contains("hunter2-typo"), "\(line)")
                #expect(!line.contains("Tr0ub4dor&3"), "\(line)")
            }
            #expect(events.all.first?.contains(#""wrongPasswords":1"#) == true)
        }
    }

    // MARK: corrupt state

    /// Alice ready on boot-1, then her state.json replaced by garbage while the daemon was down.
    func corruptAlicesState(_ dir: String) throws {
        try readyUser(try makeDaemon(stateDirectory: dir))
        try plantFile("\(dir)/users/alice/state.json", [0x00, 0xFF, 0x7B])
    }

    @Test func anUnreadableStateLocksThatUsersBiometricsOnly() throws {
        try withTemporaryDirectory { dir in
            let setup = try makeDaemon(stateDirectory: dir)
            try readyUser(setup, user: "bob")
            try corruptAlicesState(dir)

            let daemon = try makeDaemon(stateDirectory: dir)
            #expect(preflight(daemon, "alice") == stateUnreadableRefusal)
            #expect(preflight(daemon, "bob") == nil)
        }
    }

    @Test func aPasswordSuccessClearsAnUnreadableStateAndKeepsTheFileAside() throws {
        try withTemporaryDirectory { dir in
            try corruptAlicesState(dir)
            let passwords = StubPasswords()
            let daemon = try makeDaemon(stateDirectory: dir, passwords: passwords)
            #expect(preflight(daemon) == stateUnreadableRefusal)

            #expect(daemon.verifyPassword(request(), passwords.correctPassword) == .correct)

            #expect(preflight(daemon) == nil)
            #expect(preflight(try makeDaemon(stateDirectory: dir)) == nil)
            let aside = directoryEntries("\(dir)/users/alice").filter { $0.hasPrefix("state.json.corrupt-") }
            #expect(aside.count == 1)
            #expect(aside.first.flatMap { contents("\(dir)/users/alice/\($0)") } == [0x00, 0xFF, 0x7B])
        }
    }

    @Test func anAdminActionNeverTurnsAnUnreadableStateIntoACleanOne() throws {
        try withTemporaryDirectory { dir in
            try corruptAlicesState(dir)
            let daemon = try makeDaemon(stateDirectory: dir)
            try daemon.adminChange(request(), action: "enable") { var s = $0; s.enabled = true; return s }
            #expect(preflight(daemon) == lockoutRefusal)
        }
    }

    @Test func aWrongPasswordOnAnUnreadableStateKeepsBiometricsLockedOut() throws {
        try withTemporaryDirectory { dir in
            try corruptAlicesState(dir)
            let daemon = try makeDaemon(stateDirectory: dir)
            #expect(daemon.verifyPassword(request(), "wrong") == wrongPassword)
            #expect(preflight(daemon)?.outcome == .biometryLockout)
        }
    }
}
