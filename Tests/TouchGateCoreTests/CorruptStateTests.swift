// A state file that cannot be read: that user's biometrics stay refused until a password, nobody
// else's (docs/spec.md §9).
import FoundationEssentials
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: unreadable state")
@CoreActor struct CorruptStateTests {
    /// Alice ready on boot-1, then her state.json replaced by garbage while the daemon was down.
    func corruptAlicesState(_ bed: TestBed) async throws {
        let before = try bed.makeCore()
        try await bed.readyUser(before)
        await before.states.flush()
        try plantFile(bed.statePath("alice"), [0x00, 0xFF, 0x7B])
    }

    @Test func anUnreadableStateLocksThatUsersBiometricsOnly() async throws {
        try await withTestBed { bed in
            let setup = try bed.makeCore()
            try await bed.readyUser(setup, "bob")
            await setup.states.flush()
            try await corruptAlicesState(bed)

            let core = try bed.makeCore()
            #expect(await core.preflight("alice") == stateUnreadableRefusal)
            #expect(await core.preflight("bob") == nil)
        }
    }

    @Test func aPasswordSuccessClearsAnUnreadableStateAndKeepsTheFileAside() async throws {
        try await withTestBed { bed in
            try await corruptAlicesState(bed)
            let core = try bed.makeCore()
            #expect(await core.preflight() == stateUnreadableRefusal)

            let events = await core.collectEvents()
            #expect(await core.verifyPassword(context(), bed.passwords.correctPassword) == .correct)

            #expect(await core.preflight() == nil)
            #expect(events.all.first?.contains(#""event":"unlock""#) == true, "\(events.all)")
            await core.states.flush()
            #expect(await (try bed.makeCore()).preflight() == nil)
            let aside = directoryEntries("\(bed.statePath)/users/alice").filter { $0.hasPrefix("state.json.corrupt-") }
            #expect(aside == ["state.json.corrupt-\(bed.clock.now())"])
            #expect(aside.first.flatMap { contents("\(bed.statePath)/users/alice/\($0)") } == [0x00, 0xFF, 0x7B])
        }
    }

    /// A state that reads as one but holds values no change can make (a tampered or damaged
    /// file) cannot be trusted either: refused as an unreadable file is, not as a lockout that no
    /// failed match made, and still only a password success lifts it.
    @Test func aStateNoChangeCanMakeIsRefusedAsUnreadableUntilAPasswordSuccess() async throws {
        try await withTestBed { bed in
            let before = try bed.makeCore()
            try await bed.readyUser(before)
            await before.states.flush()
            var tampered = try #require(try bed.stateOnDisk("alice"))
            tampered.backoffStep = 2  // a back-off step with no back-off
            try plantFile(bed.statePath("alice"), Array(try JSONEncoder().encode(tampered)))

            let core = try bed.makeCore()
            #expect(await core.preflight() == stateUnreadableRefusal)
            let status = try #require(try await statusDocument(core, "alice"))
            #expect(!status.stateReadable && status.stateProblem != nil && status.lockedOut == nil)
            #expect(status.canEvaluate.reason == "stateUnreadable")

            #expect(await core.verifyPassword(context(), bed.passwords.correctPassword) == .correct)
            #expect(await core.preflight() == nil)
        }
    }

    @Test func anAdminActionNeverTurnsAnUnreadableStateIntoACleanOne() async throws {
        try await withTestBed { bed in
            try await corruptAlicesState(bed)
            let core = try bed.makeCore()
            try await core.adminChange(context(), action: "enable") { core.policyEngine.enable($0) }
            #expect(await core.preflight() == lockoutRefusal)
        }
    }

    @Test func aWrongPasswordOnAnUnreadableStateKeepsBiometricsLockedOutAndBacksOffAtOnce() async throws {
        try await withTestBed { bed in
            try await corruptAlicesState(bed)
            let core = try bed.makeCore()
            // The lost state may have held a back-off: the count goes on from the threshold, not zero.
            var wrong = wrongPasswordRefusal
            wrong.text = .wrongPasswordBackoff(seconds: 60)
            wrong.seconds = 60
            #expect(await core.verifyPassword(context(), "wrong") == .refused(wrong))
            #expect(await core.preflight()?.outcome == .biometryLockout)
            #expect(
                await core.verifyPassword(context(), bed.passwords.correctPassword)
                    == .refused(Refusal(.passwordBackoff, reason: .backoff, text: .backoff(seconds: 60), seconds: 60)))
            #expect(bed.passwords.calls == 1)
        }
    }

    /// What a user or root makes of an unreadable state without a password (a disable, a lock)
    /// keeps what it stood for: biometrics locked out, and the first wrong password backing off.
    @Test(arguments: [false, true])
    func aDisableOrALockOnAnUnreadableStateKeepsItsBackoffThreshold(byRoot: Bool) async throws {
        try await withTestBed { bed in
            try await corruptAlicesState(bed)
            let core = try bed.makeCore()
            let changed =
                byRoot
                ? await core.lock(user: "alice", origin: Origin(), caller: .root)
                : await core.disable(user: "alice", origin: Origin(), caller: .alice)
            #expect(changed.isSuccess)
            var wrong = wrongPasswordRefusal
            wrong.text = .wrongPasswordBackoff(seconds: 60)
            wrong.seconds = 60
            #expect(await core.verifyPassword(context(), "wrong") == .refused(wrong))
        }
    }

    @Test func aPasswordIsNotCheckedWhileTheStateThatMayHoldABackoffCannotBeRead() async throws {
        try await withTestBed { bed in
            let before = try bed.makeCore()
            try await bed.readyUser(before)
            for i in 1...5 { _ = await before.verifyPassword(context(), "wrong-\(i)") }
            await before.states.flush()
            #expect(bed.passwords.calls == 5)

            // A fresh daemon whose storage threads are busy and whose queue is full: alice's state,
            // which holds her back-off, cannot be read yet.
            let core = try bed.makeCore()
            let release = try #require(await fill(core.storagePool, queueLimit: 1024))
            #expect(
                await core.verifyPassword(context(), bed.passwords.correctPassword) == .refused(Core.storageFailure))
            #expect(bed.passwords.calls == 5)

            await release()
            #expect(
                await core.verifyPassword(context(), bed.passwords.correctPassword)
                    == .refused(Refusal(.passwordBackoff, reason: .backoff, text: .backoff(seconds: 60), seconds: 60)))
            #expect(bed.passwords.calls == 5)
        }
    }

    @Test func aStateThatCannotBeReadYetIsAnInternalRefusalNotALockout() async throws {
        try await withTestBed { bed in
            let before = try bed.makeCore()
            try await bed.readyUser(before)
            await before.states.flush()

            // A fresh daemon whose storage queue is full: the state is not untrustworthy, only not
            // read yet (docs/spec.md §9), and nothing is cached, so the next prompt reads it.
            let core = try bed.makeCore()
            let release = try #require(await fill(core.storagePool, queueLimit: 1024))
            #expect(await core.preflight("alice") == Core.storageFailure)

            await release()
            #expect(await core.preflight("alice") == nil)
        }
    }
}
