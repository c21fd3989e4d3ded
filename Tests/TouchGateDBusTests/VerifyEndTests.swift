// A D-Bus verify's end in the core (docs/spec.md §6): a match the core recorded is told as a match,
// though the client's stop came while the core was still judging it.
import Testing
@testable import TouchGateCore
@testable import TouchGateDBus
import TouchGateReader
import TouchGateTestSupport
import TouchGateWire

@Suite("D-Bus: a verify's end")
@CoreActor struct VerifyEndTests {
    private func request() -> EvaluateRequest {
        EvaluateRequest(
            user: "alice", policy: .biometrics, origin: Origin(service: FprintNames.bus), maxTries: 1, untimed: true,
            noInput: true)
    }

    /// A verify begun in the core, once its prompt listens; its input to deliver the stop to.
    private func started(_ core: Core) async throws -> (Running<VerifyEnd>, PromptInput) {
        let client = CollectingClient(), input = PromptInput(), begun = OneShot<Void>()
        let request = request()
        let running = Running {
            await FprintStatus.verify(core, request, caller: .root, client: client, begun: begun, input: input)
        }
        try #require(await client.waitFor(.prompt))
        begun.set(())
        return (running, input)
    }

    /// The match is judged again after the scan, and that judgement reads the prints (nothing is
    /// cached: a chip's listing changed) on storage threads held here; VerifyStop's cancel comes
    /// meanwhile. The core records the success all the same, and the verify tells it.
    @Test func aMatchTheCoreRecordedWinsOverAStopThatCameWhileItWasJudged() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyAlice(core)
            bed.reader.script(.matchOnRelease)
            let (running, input) = try await started(core)
            bed.reader.chipListingChanged()  // every cached list of prints dropped
            let hold = try #require(await PoolHold(core.storagePool, threads: 2))
            bed.reader.releaseScan()
            _ = await loopUntil { core.storagePool.waiting > 0 }  // the judgement's read of the prints
            #expect(core.storagePool.waiting > 0)
            input.deliver(.cancel)
            await hold.release()
            #expect(await running.value() == .finished(status: "verify-match", stopped: false))
            #expect(
                bed.audit.all.contains {
                    $0.hasPrefix("event=outcome user=alice ") && $0.contains("method=fingerprint")
                        && $0.contains("outcome=success")
                })
        }
    }

    /// A stop before any match ends the verify as fprintd's does: no match, told after it stops listening.
    @Test func aStopBeforeAnyMatchEndsItWithNoMatch() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyAlice(core)
            bed.reader.script(.hold)
            let (running, input) = try await started(core)
            input.deliver(.cancel)
            #expect(await running.value() == .finished(status: "verify-no-match", stopped: true))
        }
    }
}
