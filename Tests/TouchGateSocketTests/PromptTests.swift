// A prompt over the socket: keepalives while it runs, CANCEL and PASSWORD mid-request, a client that leaves.
import Testing
@testable import TouchGateCore
@testable import TouchGateSocket
import TouchGateTestSupport
import TouchGateWire

@Suite("Socket: prompts")
@CoreActor struct PromptTests {
    @Test func keepalivesFlowWhileThePromptWaitsAndNoIdleDeadlineEndsIt() async throws {
        // An idle deadline the request is sure to beat on a loaded machine (the sweep runs every 500 ms).
        try await withSocketBed(limits: limits(idle: 2_000)) { socket in
            try await socket.readyAlice()
            socket.bed.reader.script(.hold)
            let client = try await socket.connect()
            try client.send(evaluateFrame(11))
            let prompt = try #require(await client.progress(.prompt))
            #expect(prompt.requestID == 11)
            #expect(prompt.string(.message) == Text.placeFinger(swipe: false).render(.english))
            // Far longer than the idle deadline: the client keeps hearing that the daemon is alive.
            for _ in 1...12 {
                let keepalive = try await client.receive().get()
                #expect(keepalive.kind == .progress && keepalive.requestID == 11)
                #expect(keepalive.int(.progress) == ProgressKind.keepalive.rawValue)
            }
            try client.send(Frame(.cancel, requestID: 11))
            let result = try #require(await client.untilResult()?.result)
            #expect(result.requestID == 11)
            #expect(result.code == .appCancel && result.string(.reason) == "cancelled")
            #expect(await loopUntil(.max, limit: .seconds(10)) { socket.bed.reader.cancellations == 1 })
        }
    }

    @Test func aPasswordTypedMidPromptIsCheckedByTheDaemon() async throws {
        try await withSocketBed { socket in
            try await socket.readyAlice()
            socket.bed.reader.script(.hold)
            let client = try await socket.connect(as: 1000)
            try client.send(evaluateFrame(3, policy: .biometricsOrPassword))
            let prompt = try #require(await client.progress(.prompt))
            #expect(prompt.int(.flags) == WireLimits.flagAcceptsPassword)
            try client.send(Frame(.password, requestID: 3, [Field(.password, socket.bed.passwords.correctPassword)]))
            let result = try #require(await client.untilResult()?.result)
            #expect(result.code == .success && result.string(.reason) == "password")
            #expect(result.int(.flags) == WireLimits.flagByPassword)
            #expect(result.string(.message) == Text.passwordAccepted.render(.english))
            #expect(socket.bed.passwords.calls == 1)
            #expect(await loopUntil(.max, limit: .seconds(10)) { socket.bed.reader.cancellations == 1 })
        }
    }

    /// The front-end takes a PASSWORD only at a prompt the core marked: here the client said it
    /// reads no keys, so the prompt is unmarked and a PASSWORD is out of place.
    @Test func aPasswordAtAPromptThatTakesNoneIsABadRequest() async throws {
        try await withSocketBed { socket in
            try await socket.readyAlice()
            socket.bed.reader.script(.hold)
            let client = try await socket.connect(as: 1000)
            try client.send(evaluateFrame(6, policy: .biometricsOrPassword, flags: WireLimits.flagNoTerminal))
            let prompt = try #require(await client.progress(.prompt))
            #expect(prompt.int(.flags) == nil)
            try client.send(Frame(.password, requestID: 6, [Field(.password, socket.bed.passwords.correctPassword)]))
            let result = try #require(await client.untilResult()?.result)
            #expect(result.code == .badRequest)
            #expect(socket.bed.passwords.calls == 0)
        }
    }

    /// docs/spec.md §6: a PASSWORD may come only once a PROGRESS of the request carried
    /// ACCEPTS_PASSWORD. One that comes while the prompt is still being prepared (its templates
    /// read, held here by busy storage threads) is out of place, though the prompt will take one.
    @Test func aPasswordBeforeThePromptOfferedToTakeOneIsABadRequest() async throws {
        try await withSocketBed { socket in
            try await socket.readyAlice()
            socket.bed.reader.script(.hold)
            let hold = try #require(await PoolHold(socket.core.storagePool, threads: 2))
            let client = try await socket.connect(as: 1000)
            try client.send(evaluateFrame(8, policy: .biometricsOrPassword))
            _ = await loopUntil { socket.core.storagePool.waiting > 0 }  // the prompt is being prepared
            #expect(socket.core.storagePool.waiting > 0)
            try client.send(Frame(.password, requestID: 8, [Field(.password, socket.bed.passwords.correctPassword)]))
            // Keepalives flow meanwhile: a result is awaited within an overall deadline.
            var answered: Frame?
            let deadline = monotonicMilliseconds() + Int64(defaultDeadlineMilliseconds)
            while answered == nil, monotonicMilliseconds() < deadline,
                case .success(let frame) = await client.receive(within: defaultDeadlineMilliseconds)
            {
                if frame.kind == .result { answered = frame }
            }
            await hold.release()
            let result = try #require(answered)
            #expect(result.code == .badRequest)
            #expect(socket.bed.passwords.calls == 0)
        }
    }

    @Test func aRefusedFingerprintAsksForThePasswordNext() async throws {
        try await withSocketBed { socket in
            try await socket.readyAlice()
            socket.bed.reader.script(.noMatch, .noMatch, .noMatch)
            let client = try await socket.connect()
            let result = try #require(try await client.request(evaluateFrame(4, policy: .biometricsOrPassword)))
            #expect(result.code == .authenticationFailed && result.string(.reason) == "maxTries")
            #expect(result.int(.flags) == WireLimits.flagAskPassword)
            let verify = Frame(.verifyPassword, requestID: 5, [Field(.user, "alice"), Field(.password, "wrong")])
            let wrong = try #require(try await client.request(verify))
            #expect(wrong.code == .authenticationFailed && wrong.string(.reason) == "wrongPassword")
            #expect(wrong.int(.flags) == WireLimits.flagByPassword)
        }
    }

    @Test func aClientThatClosesMidPromptFreesTheReaderAtOnce() async throws {
        try await withSocketBed { socket in
            try await socket.readyAlice()
            socket.bed.reader.script(.hold, .match)
            let first = try await socket.connect()
            try first.send(evaluateFrame(1))
            #expect(await first.progress(.prompt) != nil)
            let second = try await socket.connect(as: 1000)
            try second.send(evaluateFrame(1))
            let queued = try #require(await second.progress(.queued))
            #expect(queued.string(.message) == Text.queued(ahead: 1).render(.english))

            first.connection.close()
            #expect(await second.progress(.prompt) != nil)
            #expect(try #require(await second.untilResult()?.result).code == .success)
            #expect(await loopUntil(.max, limit: .seconds(10)) { socket.bed.reader.cancellations == 1 })
            #expect(socket.core.runningPrompts == 0)
        }
    }

    @Test func aFrameForAnotherRequestMidPromptEndsTheConnectionAndThePrompt() async throws {
        try await withSocketBed { socket in
            try await socket.readyAlice()
            socket.bed.reader.script(.hold)
            let client = try await socket.connect()
            try client.send(evaluateFrame(8))
            #expect(await client.progress(.prompt) != nil)
            try client.send(canEvaluateFrame(9))
            let refusal = try #require(await client.untilResult()?.result)
            #expect(refusal.code == .badRequest && refusal.requestID == 8)
            #expect(await client.closedByDaemon())
            // The prompt went with its connection.
            let other = try await socket.connect()
            socket.bed.reader.script(.match)
            #expect(try await other.request(evaluateFrame(1))?.code == .success)
        }
    }
}
