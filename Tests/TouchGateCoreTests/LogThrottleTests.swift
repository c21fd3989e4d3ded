// The limit on log lines clients can cause: per user, per window, and saying what it left out.
import Synchronization
import Testing
@testable import TouchGateCore
import TouchGateTestSupport

@Suite("Core: log lines clients cause")
@CoreActor struct LogThrottleTests {
    @Test func eachUserGetsABurstPerWindowAndTheNextWindowSaysHowManyWereLeftOut() {
        let clock = Mutex<Int64>(0)
        let throttle = LogThrottle<UInt32>(
            burst: 3, windowMilliseconds: 10_000, now: { clock.withLock { $0 } }, source: { "uid \($0)" })
        #expect(throttle.admit(1000) == "")
        #expect(throttle.admit(1000) == "")
        #expect(throttle.admit(1000) == " (more like it from uid 1000 are left out for 10 s)")
        for _ in 0..<100 { #expect(throttle.admit(1000) == nil) }
        // Another user is not held back by the first one.
        #expect(throttle.admit(1001) == "")
        clock.withLock { $0 = 9_999 }
        #expect(throttle.admit(1000) == nil)
        clock.withLock { $0 = 10_000 }
        #expect(throttle.admit(1000) == " (101 more like it were left out)")
        #expect(throttle.admit(1000) == "")
    }

    /// A refusal that judged nothing is the client's to repeat at will: its outcome lines stop at
    /// the limit, with one line that says so, while a judged outcome is always recorded.
    @Test func refusalsAClientCausesAtWillReachTheJournalOnlyToTheLimit() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            for _ in 0..<20 {
                let (refused, _, _) = core.startEvaluate("bob", caller: .bob)  // bob has no prints
                #expect(await refused.value()?.outcome == .biometryNotEnrolled)
            }
            #expect(bed.audit.all.filter { $0.hasPrefix("event=outcome user=bob ") }.count == 5)
            #expect(
                bed.logged.all.contains(
                    "outcome records of refusals (more like it from uid 1001 for bob are left out for 10 s)"))

            bed.reader.script(.match)
            let (matched, _, _) = core.startEvaluate()
            #expect(await matched.value()?.isSuccess == true)
            #expect(
                bed.audit.all.contains { $0.hasPrefix("event=outcome user=alice ") && $0.contains("outcome=success") })
        }
    }

    /// The failed match that locks the user out judged a finger: its outcome line is written
    /// however many refusals came before it.
    @Test func theFailedMatchThatLocksOutIsRecordedPastTheLimit() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            for _ in 1...4 { _ = try await core.recordFailedMatch(context()) }
            for _ in 0..<6 {
                bed.reader.script(.hold)
                let (cancelled, client, input) = core.startEvaluate()
                #expect(await client.waitFor(.prompt))
                input.deliver(.cancel)
                #expect(await cancelled.value()?.isSuccess == false)
            }
            bed.reader.script(.noMatch)
            let (locked, _, _) = core.startEvaluate()
            #expect(await locked.value()?.outcome == .biometryLockout)
            #expect(
                bed.audit.all.contains {
                    $0.hasPrefix("event=outcome user=alice ") && $0.contains("method=fingerprint")
                        && $0.contains("outcome=biometryLockout")
                })
        }
    }
}
