// The daemon's service lifecycle: started in order, stopped in reverse, each stop awaited; a
// required service that fails stops the start, an optional one is left out.
import Testing
@testable import TouchGateCore
import TouchGateTestSupport

/// A service that writes what happens to it into a shared journal; a slow one's stop ends only on a
/// later turn of the loop, so a group that did not wait for it would go on first.
@CoreActor private final class FakeService: DaemonService {
    let serviceName: String
    let journal: Collector<String>
    let outcome: ServiceStart
    let slowStop: Bool

    init(_ name: String, _ journal: Collector<String>, outcome: ServiceStart = .running, slowStop: Bool = false) {
        serviceName = name
        self.journal = journal
        self.outcome = outcome
        self.slowStop = slowStop
    }

    func start() async -> ServiceStart {
        journal.append("start \(serviceName)")
        return outcome
    }

    func shutdown() async {
        journal.append("stopping \(serviceName)")
        if slowStop {
            let later = OneShot<Void>()
            CoreLoop.shared.post { later.set(()) }
            await later.wait()
        }
        journal.append("stopped \(serviceName)")
    }
}

@Suite("ServiceGroup")
@CoreActor struct ServiceGroupTests {
    @Test func servicesStartInOrderAndStopInReverseEachAwaitedBeforeTheNext() async {
        let journal = Collector<String>()
        let group = ServiceGroup(log: quietLogger)
        group.add(FakeService("reader", journal), required: true)
        group.add(FakeService("core", journal), required: true)
        group.add(FakeService("listener", journal, slowStop: true), required: true)
        group.add(FakeService("bus", journal), required: false)
        #expect(await group.start() == nil)
        #expect(group.runningServices == ["reader", "core", "listener", "bus"])
        await group.shutdown()  // the listener's stop ends on a later turn: the core must wait for it
        #expect(
            journal.all == [
                "start reader", "start core", "start listener", "start bus",
                "stopping bus", "stopped bus",
                "stopping listener", "stopped listener",
                "stopping core", "stopped core",
                "stopping reader", "stopped reader",
            ])
        #expect(group.runningServices.isEmpty)
    }

    @Test func aRequiredServiceThatFailsStopsTheOnesBeforeItAndNothingAfterItStarts() async {
        let journal = Collector<String>()
        let group = ServiceGroup(log: quietLogger)
        group.add(FakeService("reader", journal), required: true)
        group.add(FakeService("core", journal), required: true)
        group.add(FakeService("listener", journal, outcome: .failed("address in use")), required: true)
        group.add(FakeService("bus", journal), required: false)
        #expect(await group.start() == "listener: address in use")
        #expect(
            journal.all == [
                "start reader", "start core", "start listener",
                "stopping core", "stopped core", "stopping reader", "stopped reader",
            ])
        #expect(group.runningServices.isEmpty)
    }

    @Test func anOptionalServiceThatCannotRunIsLeftOutAndNeverStopped() async {
        let journal = Collector<String>()
        let group = ServiceGroup(log: quietLogger)
        group.add(FakeService("core", journal), required: true)
        group.add(FakeService("sleep watcher", journal, outcome: .unavailable("no system bus")), required: false)
        group.add(FakeService("listener", journal), required: true)
        #expect(await group.start() == nil)
        #expect(group.runningServices == ["core", "listener"])
        await group.shutdown()
        #expect(
            journal.all == [
                "start core", "start sleep watcher", "start listener",
                "stopping listener", "stopped listener", "stopping core", "stopped core",
            ])
    }

    @Test func servicesAddedAfterTheFirstStartStartWithTheNextCallAndStopFirst() async {
        let journal = Collector<String>()
        let group = ServiceGroup(log: quietLogger)
        group.add(FakeService("core", journal), required: true)
        #expect(await group.start() == nil)
        group.add(FakeService("bus", journal), required: false)
        #expect(await group.start() == nil)
        await group.shutdown()
        #expect(
            journal.all == ["start core", "start bus", "stopping bus", "stopped bus", "stopping core", "stopped core"])
    }

    @Test func aServiceWhoseStartEndsAfterShutdownBeganIsStoppedAtOnce() async {
        let journal = Collector<String>()
        let group = ServiceGroup(log: quietLogger)
        let gate = OneShot<Void>(), began = OneShot<Void>()
        group.add(FakeService("core", journal), required: true)
        group.add(SlowStart("bus", journal, began: began, gate: gate), required: false)
        let starting = Task { await group.start() }
        await began.wait()
        await group.shutdown()  // stops the core; the bus is still starting
        gate.set(())
        #expect(await starting.value == nil)
        #expect(
            journal.all == ["start core", "start bus", "stopping core", "stopped core", "stopping bus", "stopped bus"])
        #expect(group.runningServices.isEmpty)
    }
}

@CoreActor private final class SlowStart: DaemonService {
    let serviceName: String
    let journal: Collector<String>
    let began: OneShot<Void>
    let gate: OneShot<Void>
    init(_ name: String, _ journal: Collector<String>, began: OneShot<Void>, gate: OneShot<Void>) {
        serviceName = name
        self.journal = journal
        self.began = began
        self.gate = gate
    }

    func start() async -> ServiceStart {
        journal.append("start \(serviceName)")
        began.set(())
        await gate.wait()
        return .running
    }

    func shutdown() async {
        journal.append("stopping \(serviceName)")
        journal.append("stopped \(serviceName)")
    }
}
