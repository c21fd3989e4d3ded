// ReaderArbiter: one prompt per reader, the rest wait in arrival order and can leave at once (SPEC §9).
import Testing
@testable import TouchGateDaemon

@Suite("ReaderArbiter")
struct ReaderArbiterTests {
    /// Joins the queue with a wake that records the waiter's name.
    func join(_ arbiter: ReaderArbiter, _ name: String, _ woken: Collector<String>) -> UInt64 {
        arbiter.enqueue { woken.append(name) }
    }

    @Test func theFirstTicketIsGrantedAtOnceWithoutAWake() {
        let arbiter = ReaderArbiter(), woken = Collector<String>()
        let a = join(arbiter, "a", woken)
        #expect(arbiter.isGranted(a))
        #expect(arbiter.ahead(a) == 0)
        #expect(woken.all == [])
    }

    @Test func laterTicketsQueueInArrivalOrderAndKnowHowManyAreAhead() {
        let arbiter = ReaderArbiter(), woken = Collector<String>()
        let a = join(arbiter, "a", woken)
        let b = join(arbiter, "b", woken)
        let c = join(arbiter, "c", woken)
        let d = join(arbiter, "d", woken)
        #expect([a, b, c, d].map(arbiter.isGranted) == [true, false, false, false])
        #expect([a, b, c, d].map(arbiter.ahead) == [0, 1, 2, 3])
        #expect(Set([a, b, c, d]).count == 4)
    }

    @Test func leavingTheReaderGrantsItToTheNextInLineAndWakesIt() {
        let arbiter = ReaderArbiter(), woken = Collector<String>()
        let a = join(arbiter, "a", woken)
        let b = join(arbiter, "b", woken)
        let c = join(arbiter, "c", woken)

        arbiter.leave(a)
        #expect(woken.all == ["b"])
        #expect(arbiter.isGranted(b))
        #expect(!arbiter.isGranted(a))
        #expect([b, c].map(arbiter.ahead) == [0, 1])

        arbiter.leave(b)
        #expect(woken.all == ["b", "c"])
        #expect(arbiter.isGranted(c))
        #expect(arbiter.ahead(c) == 0)
    }

    @Test func leavingFromTheMiddleOfTheQueueGrantsNothing() {
        let arbiter = ReaderArbiter(), woken = Collector<String>()
        let a = join(arbiter, "a", woken)
        let b = join(arbiter, "b", woken)
        let c = join(arbiter, "c", woken)

        arbiter.leave(b)
        #expect(woken.all == [])
        #expect(arbiter.isGranted(a))
        #expect(!arbiter.isGranted(b))
        #expect(!arbiter.isGranted(c))
        #expect(arbiter.ahead(c) == 1)
    }

    @Test func aWaiterThatLeftIsNeverGranted() {
        let arbiter = ReaderArbiter(), woken = Collector<String>()
        let a = join(arbiter, "a", woken)
        let b = join(arbiter, "b", woken)
        let c = join(arbiter, "c", woken)

        arbiter.leave(b)
        arbiter.leave(a)
        #expect(woken.all == ["c"])
        #expect(arbiter.isGranted(c))
        arbiter.leave(c)
        #expect(woken.all == ["c"])
        #expect(![a, b, c].contains(where: arbiter.isGranted))
    }

    @Test func theReaderIsFreeAgainOnceEveryoneLeft() {
        let arbiter = ReaderArbiter(), woken = Collector<String>()
        let a = join(arbiter, "a", woken)
        arbiter.leave(a)
        let b = join(arbiter, "b", woken)
        #expect(arbiter.isGranted(b))
        #expect(woken.all == [])
    }

    @Test func leavingTwiceDoesNotReleaseSomeoneElsesGrant() {
        let arbiter = ReaderArbiter(), woken = Collector<String>()
        let a = join(arbiter, "a", woken)
        let b = join(arbiter, "b", woken)
        let c = join(arbiter, "c", woken)
        arbiter.leave(a)
        arbiter.leave(a)
        #expect(arbiter.isGranted(b))
        #expect(woken.all == ["b"])
        #expect(arbiter.ahead(c) == 1)
    }
}
