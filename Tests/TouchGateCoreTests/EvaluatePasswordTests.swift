// biometrics-or-password: the password typed at the prompt, its back-off, and when the password is asked next.
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: biometrics or password")
@CoreActor struct EvaluatePasswordTests {
    /// A prompt of policy biometrics-or-password that is listening; the test types at it.
    func listeningPrompt(_ core: Core, _ bed: TestBed, policy: EvaluationPolicy = .biometricsOrPassword) async -> (
        Running<Reply>, PromptInput
    ) {
        bed.reader.script(.hold)
        let (running, client, input) = core.startEvaluate(policy: policy)
        #expect(await client.waitFor(.prompt))
        return (running, input)
    }

    @Test func aPasswordTypedAtThePromptIsCheckedByTheDaemonAndEndsIt() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            for _ in 1...5 { _ = try await core.recordFailedMatch(context()) }
            let (refused, client, _) = core.startEvaluate(policy: .biometricsOrPassword)
            // Locked out, the prompt is refused; after the password a new one listens.
            #expect(await refused.value()?.outcome == .biometryLockout)
            #expect(!client.kinds().contains(.prompt))

            #expect(
                await core.verifyPasswordRequest(
                    user: "alice", password: bed.passwords.correctPassword,
                    origin: Origin(), caller: .alice) == .passwordVerified)
            let (listening, typed) = await listeningPrompt(core, bed)
            typed.deliver(.password(bed.passwords.correctPassword))
            #expect(await listening.value() == .passwordVerified)
            #expect(await loopUntil(.max, limit: .seconds(10)) { bed.reader.cancellations == 1 })
            #expect(bed.passwords.calls == 2)
            #expect(await core.state()?.biometryLockedOut == false)
        }
    }

    /// A driver that does not end a cancelled scan (it waits for a finger whatever happens) does
    /// not hold the password typed at the prompt: it is answered within the cancel's grace.
    @Test func aPasswordTypedWhileTheReaderIgnoresItsCancelIsAnsweredWithoutIt() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.matchOnRelease)
            let (running, client, input) = core.startEvaluate(policy: .biometricsOrPassword)
            #expect(await client.waitFor(.prompt))
            input.deliver(.password(bed.passwords.correctPassword))
            #expect(await running.value() == .passwordVerified)
            bed.reader.releaseScan()  // the finger the driver waited for: its scan ends, unheard
        }
    }

    @Test func aWrongPasswordTypedAtThePromptIsAFailureThatCounts() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let (running, input) = await listeningPrompt(core, bed)
            input.deliver(.password("hunter2"))
            #expect(await running.value() == wrongPasswordRefusal)
            #expect(try bed.stateOnDisk("alice")?.consecutiveWrongPasswords == 1)
        }
    }

    @Test func aPasswordTypedDuringTheBackoffIsNotEvenChecked() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            for i in 1...5 {
                let (running, input) = await listeningPrompt(core, bed)
                input.deliver(.password("wrong-\(i)"))
                _ = await running.value()
            }
            #expect(bed.passwords.calls == 5)
            bed.clock.advance(20)

            let (running, input) = await listeningPrompt(core, bed)
            input.deliver(.password(bed.passwords.correctPassword))
            #expect(
                await running.value()
                    == Refusal(.passwordBackoff, reason: .backoff, text: .backoff(seconds: 40), seconds: 40))
            #expect(bed.passwords.calls == 5)
        }
    }

    @Test func afterTheClockWentBackTheBackoffEndsWithinTheStepItTells() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            for i in 1...5 { _ = await core.verifyPassword(context(), "wrong-\(i)") }
            bed.clock.advance(-86_400)  // a day back: the back-off's end now lies a day ahead
            let told = Refusal(.passwordBackoff, reason: .backoff, text: .backoff(seconds: 60), seconds: 60)
            #expect(await core.verifyPassword(context(), bed.passwords.correctPassword) == .refused(told))
            bed.clock.advance(61)  // the minute it told has passed
            #expect(await core.verifyPassword(context(), bed.passwords.correctPassword) == .correct)
            #expect(bed.passwords.calls == 6)
        }
    }

    @Test func passwordsSentAtOnceAreCheckedOneAfterAnotherSoTheBackoffStopsTheBurst() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            // Nine wrong passwords in flight together (a client on several connections): the
            // back-off starts after the fifth, and the four after it are refused unchecked.
            let running = (0..<9).map { i in
                Running {
                    await core.verifyPasswordRequest(
                        user: "alice", password: "wrong-\(i)", origin: Origin(), caller: .alice)
                }
            }
            var replies: [Reply] = []
            for r in running { replies.append(try #require(await r.value())) }
            #expect(bed.passwords.calls == 5)
            #expect(replies.filter { $0.outcome == .authenticationFailed }.count == 5)
            #expect(replies.filter { $0.outcome == .passwordBackoff }.count == 4)
            #expect(try bed.stateOnDisk("alice")?.consecutiveWrongPasswords == 5)
        }
    }

    @Test func underPolicyBiometricsATypedPasswordOnlyCancels() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let (running, input) = await listeningPrompt(core, bed, policy: .biometrics)
            input.deliver(.password(bed.passwords.correctPassword))
            #expect(await running.value() == Refusal(.appCancel, reason: .cancelled, text: .cancelled))
            #expect(bed.passwords.calls == 0)
        }
    }

    // MARK: ASK_PASSWORD

    enum Situation: String, CaseIterable, Sendable { case lockout, passwordRequired, maxTries, notEnrolled }

    /// Brings alice into `situation` and evaluates; returns the reply.
    func evaluate(
        in situation: Situation, _ bed: TestBed, policy: EvaluationPolicy = .biometricsOrPassword,
        noInput: Bool = false, backoff: Bool = false
    ) async throws -> Reply? {
        let core = try bed.makeCore()
        switch situation {
        case .lockout:
            try await bed.readyUser(core)
            for _ in 1...5 { _ = try await core.recordFailedMatch(context()) }
        case .passwordRequired:
            try await bed.enroll(core)
        case .maxTries:
            try await bed.readyUser(core)
            bed.reader.script(.noMatch, .noMatch, .noMatch)
        case .notEnrolled:
            break
        }
        if backoff {
            for i in 1...5 { _ = await core.verifyPassword(context(), "wrong-\(i)") }
        }
        return await core.startEvaluate(policy: policy, noInput: noInput).0.value()
    }

    @Test(arguments: [Situation.lockout, .passwordRequired, .maxTries])
    func thePasswordIsAskedNextWhenTheFingerprintCannotDo(_ situation: Situation) async throws {
        try await withTestBed { bed in
            let reply = try #require(try await evaluate(in: situation, bed))
            #expect(reply.askPassword, "\(reply)")
        }
    }

    @Test(arguments: Situation.allCases)
    func noPasswordIsAskedUnderPolicyBiometricsOrFromAClientThatTakesNoInput(_ situation: Situation) async throws {
        try await withTestBed { bed in
            let biometrics = try #require(try await evaluate(in: situation, bed, policy: .biometrics))
            #expect(!biometrics.askPassword)
        }
        try await withTestBed { bed in
            let noInput = try #require(try await evaluate(in: situation, bed, noInput: true))
            #expect(!noInput.askPassword)
        }
    }

    @Test func noPasswordIsAskedWhenTheFingerprintIsMerelyNotEnrolled() async throws {
        try await withTestBed { bed in
            let reply = try #require(try await evaluate(in: .notEnrolled, bed))
            #expect(reply.outcome == .biometryNotEnrolled)
            #expect(!reply.askPassword)
        }
    }

    @Test(arguments: [Situation.lockout, .passwordRequired, .maxTries])
    func duringTheBackoffThePersonIsToldAtOnceInsteadOfAskedForThePassword(_ situation: Situation) async throws {
        try await withTestBed { bed in
            let reply = try #require(try await evaluate(in: situation, bed, backoff: true))
            #expect(!reply.askPassword)
            guard case .lines(let lines) = reply.text else {
                Issue.record("\(String(describing: reply.text)) has no back-off line")
                return
            }
            #expect(lines.last == .backoff(seconds: 60))
            #expect(bed.passwords.calls == 5)
        }
    }
}
