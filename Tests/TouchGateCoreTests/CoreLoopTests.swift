// The core loop's idle work (`CoreLoop.whenIdle`) waits for the jobs due, even those queued after it.
import Testing
@testable import TouchGateCore
import TouchGateTestSupport

@Suite("CoreLoop")
@CoreActor struct CoreLoopTests {
    @Test func idleWorkRunsAfterTheJobsDueEvenThoseQueuedAfterIt() async {
        let order = Collector<String>()
        let done = OneShot<Void>()
        CoreLoop.shared.whenIdle {
            order.append("idle")
            done.set(())
        }
        CoreLoop.shared.post { order.append("job 1") }
        CoreLoop.shared.post { order.append("job 2") }
        #expect(await within { await done.wait() } != nil)
        #expect(order.all == ["job 1", "job 2", "idle"])
    }
}
