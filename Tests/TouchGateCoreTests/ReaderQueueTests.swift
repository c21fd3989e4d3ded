// ReaderQueue: one prompt per reader, the rest wait in arrival order and can leave at once (docs/spec.md §9).
import Testing
@testable import TouchGateCore
import TouchGateTestSupport

@Suite("ReaderQueue")
@CoreActor struct ReaderQueueTests {
    /// Joins the queue as a prompt does: one that must wait records its name when it is let in.
    func join(_ queue: ReaderQueue, _ name: String, _ woken: Collector<String>) -> ReaderQueue.Ticket {
        let ticket = queue.enqueue()
        if !ticket.granted.isSet { ticket.granted.onSet { woken.append(name) } }
        return ticket
    }

    /// The reader is this ticket's now.
    func isGranted(_ queue: ReaderQueue, _ ticket: ReaderQueue.Ticket) -> Bool {
        ticket.granted.isSet && queue.ahead(ticket) == 0
    }

    @Test func theFirstTicketIsGrantedAtOnceWithoutAWake() {
        let queue = ReaderQueue(), woken = Collector<String>()
        let a = join(queue, "a", woken)
        #expect(isGranted(queue, a))
        #expect(queue.ahead(a) == 0)
        #expect(woken.all == [])
    }

    @Test func laterTicketsQueueInArrivalOrderAndKnowHowManyAreAhead() {
        let queue = ReaderQueue(), woken = Collector<String>()
        let tickets = ["a", "b", "c", "d"].map { join(queue, $0, woken) }
        #expect(tickets.map { isGranted(queue, $0) } == [true, false, false, false])
        #expect(tickets.map(queue.ahead) == [0, 1, 2, 3])
        #expect(Set(tickets.map(ObjectIdentifier.init)).count == 4)
    }

    @Test func leavingTheReaderGrantsItToTheNextInLineAndWakesIt() {
        let queue = ReaderQueue(), woken = Collector<String>()
        let a = join(queue, "a", woken)
        let b = join(queue, "b", woken)
        let c = join(queue, "c", woken)

        queue.leave(a)
        #expect(woken.all == ["b"])
        #expect(isGranted(queue, b))
        #expect(!isGranted(queue, a))
        #expect([b, c].map(queue.ahead) == [0, 1])

        queue.leave(b)
        #expect(woken.all == ["b", "c"])
        #expect(isGranted(queue, c))
        #expect(queue.ahead(c) == 0)
    }

    @Test func leavingFromTheMiddleOfTheQueueGrantsNothing() {
        let queue = ReaderQueue(), woken = Collector<String>()
        let a = join(queue, "a", woken)
        let b = join(queue, "b", woken)
        let c = join(queue, "c", woken)

        queue.leave(b)
        #expect(woken.all == [])
        #expect(isGranted(queue, a))
        #expect(!isGranted(queue, b))
        #expect(!isGranted(queue, c))
        #expect(queue.ahead(c) == 1)
    }

    @Test func aWaiterThatLeftIsNeverGranted() {
        let queue = ReaderQueue(), woken = Collector<String>()
        let a = join(queue, "a", woken)
        let b = join(queue, "b", woken)
        let c = join(queue, "c", woken)

        queue.leave(b)
        queue.leave(a)
        #expect(woken.all == ["c"])
        #expect(isGranted(queue, c))
        queue.leave(c)
        #expect(woken.all == ["c"])
        #expect(![a, b, c].contains { isGranted(queue, $0) })
        #expect(!b.granted.isSet)
    }

    @Test func theReaderIsFreeAgainOnceEveryoneLeft() {
        let queue = ReaderQueue(), woken = Collector<String>()
        let a = join(queue, "a", woken)
        queue.leave(a)
        #expect(!queue.isBusy)
        let b = join(queue, "b", woken)
        #expect(isGranted(queue, b))
        #expect(woken.all == [])
    }

    @Test func leavingTwiceDoesNotReleaseSomeoneElsesGrant() {
        let queue = ReaderQueue(), woken = Collector<String>()
        let a = join(queue, "a", woken)
        let b = join(queue, "b", woken)
        let c = join(queue, "c", woken)
        queue.leave(a)
        queue.leave(a)
        #expect(isGranted(queue, b))
        #expect(woken.all == ["b"])
        #expect(queue.ahead(c) == 1)
    }

    /// An operation its prompt gave up on holds the reader next, ahead of those waiting, until it
    /// ends, or at most until its cap: a driver that never ends it does not keep the reader for good.
    @Test func anOperationLeftRunningHoldsTheReaderNextUntilItEndsOrItsCap() async {
        let queue = ReaderQueue(), woken = Collector<String>()
        let a = join(queue, "a", woken)
        let b = join(queue, "b", woken)
        var end: (() -> Void)?
        queue.holdUntilEnded({ end = $0 }, capMilliseconds: 60_000)
        queue.leave(a)
        #expect(!b.granted.isSet && queue.ahead(b) == 1)  // the operation left running is ahead
        end?()
        #expect(isGranted(queue, b) && woken.all == ["b"])

        queue.holdUntilEnded({ _ in }, capMilliseconds: 50)  // never ends
        let c = join(queue, "c", woken)
        queue.leave(b)
        #expect(!c.granted.isSet)
        #expect(await loopUntil(.max, limit: .seconds(10)) { c.granted.isSet })
        #expect(isGranted(queue, c))
    }
}
