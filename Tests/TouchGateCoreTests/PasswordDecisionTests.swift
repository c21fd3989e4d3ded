// The one decision about passwords in an evaluation: made by the core from what the client says,
// and carried in its answers (a prompt that takes a typed password, a password step to follow, a
// judgement of a password) so that front-ends and the PAM module only follow it.
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: what a password may do")
@CoreActor struct PasswordDecisionTests {
    struct Case: Sendable, CustomStringConvertible {
        var policy: EvaluationPolicy
        var noInput: Bool
        var noTerminal: Bool
        var description: String { "\(policy.name) noInput=\(noInput) noTerminal=\(noTerminal)" }
    }

    nonisolated static let cases: [Case] = EvaluationPolicy.allCases.flatMap { policy in
        [false, true].flatMap { noInput in
            [false, true].map { Case(policy: policy, noInput: noInput, noTerminal: $0) }
        }
    }

    @Test(arguments: cases)
    func onlyBiometricsOrPasswordTakesAPasswordAndOnlyFromAClientThatCanGiveOne(_ c: Case) {
        let r = EvaluateRequest(user: "alice", policy: c.policy, noInput: c.noInput, noTerminal: c.noTerminal)
        let bop = c.policy == .biometricsOrPassword
        // Typed at the prompt: keys must be read there. Asked after a refusal: any input will do.
        #expect(r.acceptsTypedPassword == (bop && !c.noInput && !c.noTerminal))
        #expect(r.offersPasswordStep == (bop && !c.noInput))
    }

    @Test(arguments: cases)
    func thePromptSaysWhetherItTakesATypedPassword(_ c: Case) async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.hold)
            let (running, client, input) = core.startEvaluate(
                policy: c.policy, noInput: c.noInput, noTerminal: c.noTerminal)
            #expect(await client.waitFor(.prompt))
            let expected = c.policy == .biometricsOrPassword && !c.noInput && !c.noTerminal
            let prompt = try #require(client.shown.first { $0.kind == .prompt })
            #expect(prompt.acceptsPassword == expected)
            // What the front-end consults before it passes a PASSWORD frame on.
            #expect(input.acceptsPassword == expected)
            input.deliver(.cancel)
            #expect(await running.value()?.outcome == .appCancel)
        }
    }

    @Test func withoutATerminalThePasswordStepStillFollowsARefusal() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.noMatch, .noMatch, .noMatch)
            let (running, client, _) = core.startEvaluate(policy: .biometricsOrPassword, noTerminal: true)
            let reply = try #require(await running.value())
            #expect(reply.reason == .maxTries && reply.askPassword && !reply.byPassword)
            #expect(client.shown.allSatisfy { !$0.acceptsPassword })
        }
    }

    @Test func aPasswordJudgementIsMarkedAndAMatchIsNot() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.match)
            let matched = try #require(await core.startEvaluate(policy: .biometricsOrPassword).0.value())
            #expect(matched.isSuccess && !matched.byPassword)

            let wrong = await core.verifyPasswordRequest(
                user: "alice", password: "hunter2", origin: Origin(), caller: .alice)
            #expect(wrong.outcome == .authenticationFailed && wrong.byPassword)
            let right = await core.verifyPasswordRequest(
                user: "alice", password: bed.passwords.correctPassword, origin: Origin(), caller: .alice)
            #expect(right.isSuccess && right.byPassword && right.reason == .password)
        }
    }
}
