// What a prompt leaves in the audit records: every finger judged is there, whatever ended the prompt.
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: the outcome records of a prompt")
@CoreActor struct OutcomeRecordTests {
    func fingerprintFailures(_ bed: TestBed) -> [String] {
        bed.audit.all.filter {
            $0.hasPrefix("event=outcome user=alice ") && $0.contains("method=fingerprint")
                && $0.contains("outcome=authenticationFailed")
        }
    }

    /// Two failed matches, then a cancel: the cancel's record judged nothing, so the failures are
    /// recorded on their own first, with their count.
    @Test func failedMatchesBeforeACancelAreRecorded() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.noMatch, .noMatch, .hold)
            let (cancelled, client, input) = core.startEvaluate()
            #expect(await client.waitFor(.noMatch, count: 2))
            input.deliver(.cancel)
            #expect(await cancelled.value()?.isSuccess == false)
            #expect(fingerprintFailures(bed).count == 1)
            #expect(fingerprintFailures(bed).first?.contains("failed_matches=2") == true)
        }
    }

    /// A failed match, then a match: the success resets the count, so the failure is recorded
    /// before it; a prompt without failures adds nothing.
    @Test func aFailedMatchBeforeAMatchIsRecordedAndAMatchAloneIsOneRecord() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.noMatch, .match(0))
            let (matched, _, _) = core.startEvaluate()
            #expect(await matched.value()?.isSuccess == true)
            #expect(fingerprintFailures(bed).count == 1)

            bed.reader.script(.match(0))
            let (again, _, _) = core.startEvaluate()
            #expect(await again.value()?.isSuccess == true)
            #expect(fingerprintFailures(bed).count == 1)
            #expect(bed.audit.all.filter { $0.contains("method=fingerprint outcome=success") }.count == 2)
        }
    }
}
