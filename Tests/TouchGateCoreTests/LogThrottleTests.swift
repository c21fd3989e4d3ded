// The limit on log lines clients can cause: per user, per window, and saying what it left out.
import Synchronization
import Testing
@testable import TouchGateCore

@Suite("Core: log lines clients cause")
@CoreActor struct LogThrottleTests {
    @Test func eachUserGetsABurstPerWindowAndTheNextWindowSaysHowManyWereLeftOut() {
        let clock = Mutex<Int64>(0)
        let throttle = LogThrottle(burst: 3, windowMilliseconds: 10_000, now: { clock.withLock { $0 } })
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
}
