// Connections are bounded: per-person and total caps with a clear refusal, root's reserve, idle and
// slow-sender deadlines, and a client that stops reading its monitor stream is dropped. When clients
// have come and gone and none has a request running, the listener says so once (the daemon then
// gives its heap's free pages back).
import Testing
@testable import TouchGateCore
@testable import TouchGateSocket
import TouchGateTestSupport
import TouchGateWire

@Suite("Socket: limits")
@CoreActor struct LimitTests {
    /// Connects as `uid` and proves the daemon took the connection (it answers a request).
    func admitted(_ socket: SocketBed, as uid: UInt32? = nil) async throws -> TestClient {
        let client = try await socket.connect(as: uid)
        let reply = try #require(try await client.request(devicesFrame(1)))
        #expect(reply.code == .success && reply.requestID == 1, "uid \(uid ?? 0)")
        return client
    }

    /// Connects as `uid` and expects the unsolicited BUSY refusal, then the end of the connection.
    func refused(_ socket: SocketBed, as uid: UInt32? = nil) async throws {
        let client = try await socket.connect(as: uid)
        let refusal = try #require(await client.untilResult()?.result, "uid \(uid ?? 0)")
        #expect(refusal.requestID == WireLimits.unsolicitedRequestID)
        #expect(refusal.code == .busy)
        #expect(refusal.string(.reason) == Reason.busy.rawValue)
        #expect(refusal.string(.message) == Text.busy.render(.english))
        #expect(await client.closedByDaemon())
    }

    /// Shutdown: a request on a connection already open is refused at once, not run past the drain.
    @Test func aRequestAfterTheStopBeganIsRefusedAsShutdown() async throws {
        try await withSocketBed { socket in
            let client = try await admitted(socket)
            socket.core.beginShutdown()
            let reply = try #require(try await client.request(devicesFrame(2)))
            #expect(reply.code == .systemCancel && reply.string(.reason) == Reason.shutdown.rawValue)
        }
    }

    /// Shutdown: a client that connects once the stop began hears at once that the daemon stops,
    /// instead of waiting unanswered in the backlog until the daemon exits.
    @Test func aClientThatConnectsWhileTheDaemonStopsIsToldSoAtOnce() async throws {
        try await withSocketBed { socket in
            socket.core.beginShutdown()
            await socket.listener.drain(deadlineMilliseconds: 100)
            let client = try await socket.connect(as: 1000)
            let refusal = try #require(await client.untilResult()?.result)
            #expect(refusal.requestID == WireLimits.unsolicitedRequestID)
            #expect(refusal.code == .systemCancel && refusal.string(.reason) == Reason.shutdown.rawValue)
            #expect(refusal.string(.message) == Text.shuttingDown.render(.english))
            #expect(await client.closedByDaemon())
        }
    }

    @Test func pastThePerPersonCapTheDaemonRefusesWithAnUnsolicitedBusy() async throws {
        try await withSocketBed(limits: limits(perUser: 2)) { socket in
            let first = try await admitted(socket, as: 1000), second = try await admitted(socket, as: 1000)
            try await refused(socket, as: 1000)
            // Someone else is not held back by alice's connections.
            let bob = try await admitted(socket, as: 1001)
            #expect(socket.listener.connectionCount == 3)
            _ = (first, second, bob)
        }
    }

    @Test func rootKeepsAReserveWhenOthersTookEveryConnection() async throws {
        try await withSocketBed(limits: limits(perUser: 8, total: 2, rootReserve: 2)) { socket in
            var open = [try await admitted(socket, as: 1000), try await admitted(socket, as: 1001)]
            try await refused(socket, as: 1002)
            open.append(try await admitted(socket))
            open.append(try await admitted(socket))
            try await refused(socket)
            #expect(socket.listener.connectionCount == 4)
        }
    }

    @Test func anIdleConnectionIsClosed() async throws {
        // Long enough for the request below to be read before a sweep (every 500 ms) on a loaded machine.
        try await withSocketBed(limits: limits(idle: 2_000)) { socket in
            let idle = try await socket.connect(as: 1000)
            #expect(await idle.closedByDaemon())
            // Closed after a request too, once nothing more comes.
            let done = try await admitted(socket)
            #expect(await done.closedByDaemon())
        }
    }

    @Test func aClientThatSendsHalfARequestAndStopsIsClosed() async throws {
        try await withSocketBed(limits: limits(slowSender: 100)) { socket in
            let slow = try await socket.connect(as: 1000)
            slow.sendRaw([0x00, 0x00, 0x00, 0x14, 0x01, 0x01])
            #expect(await slow.closedByDaemon())
            #expect(socket.listener.connectionCount == 0)
        }
    }

    /// Records each end of a busy spell with the connections still open then.
    @CoreActor final class Spells {
        var listener: Listener?
        private(set) var ends: [Int] = []
        private var waiting: [(count: Int, shot: OneShot<Void>)] = []

        func ended() {
            ends.append(listener?.connectionCount ?? -1)
            for w in waiting where ends.count >= w.count { w.shot.set(()) }
        }

        /// The connections open at the `count`th end, or nil when it did not come in time.
        func end(_ count: Int) async -> Int? {
            if ends.count < count {
                let shot = OneShot<Void>()
                waiting.append((count, shot))
                guard await value(of: shot) != nil else { return nil }
            }
            return ends[count - 1]
        }
    }

    @Test func whenClientsHaveComeAndGoneTheListenerSaysSoOncePerSpellAMonitorNotWithstanding() async throws {
        let spells = Spells()
        try await withSocketBed(afterClients: spells.ended) { socket in
            spells.listener = socket.listener
            try await socket.readyAlice()
            socket.bed.reader.script(.hold)
            var clients = [try await admitted(socket), try await admitted(socket, as: 1000)]
            clients.append(try await admitted(socket))
            // A prompt runs while the three leave: however many turns of its loop the daemon takes
            // to see them go, the spell can end only after the prompt, and then once.
            let prompting = try await socket.connect()
            try prompting.send(evaluateFrame(5))
            _ = try #require(await prompting.progress(.prompt))
            #expect(spells.ends.isEmpty, "called while clients were connected")
            clients.removeAll()
            #expect(await loopUntil(.max, limit: .seconds(10)) { socket.listener.connectionCount == 1 })
            #expect(spells.ends.isEmpty, "called while a prompt was running")
            try prompting.send(Frame(.cancel, requestID: 5))
            #expect(try #require(await prompting.untilResult()?.result).code == .appCancel)
            #expect(await spells.end(1) == 1)  // the prompting client is still connected

            // A monitor's stream stays open for good: clients that come and go beside it end a spell too.
            let monitor = try await socket.connect()
            #expect(try await monitor.request(Frame(.monitor, requestID: 1))?.code == .success)
            clients = [try await admitted(socket, as: 1000)]
            clients.removeAll()
            #expect(await spells.end(2) == 2)
            #expect(spells.ends.count == 2)
        }
    }

    @Test func aSpellDoesNotEndWhileARequestIsRunning() async throws {
        let spells = Spells()
        try await withSocketBed(limits: limits(idle: 2_000), afterClients: spells.ended) { socket in
            spells.listener = socket.listener
            try await socket.readyAlice()
            socket.bed.reader.script(.hold)
            let prompting = try await socket.connect()
            try prompting.send(evaluateFrame(5))
            _ = try #require(await prompting.progress(.prompt))
            // The sweep that closes an idle client sees the prompt still running.
            let idle = try await socket.connect(as: 1000)
            #expect(await idle.closedByDaemon())
            #expect(spells.ends.isEmpty, "called while a prompt was running")
            try prompting.send(Frame(.cancel, requestID: 5))
            #expect(try #require(await prompting.untilResult()?.result).code == .appCancel)
            #expect(await spells.end(1) != nil)  // and then it ends
        }
    }

    @Test func aMonitorThatStopsReadingIsDroppedAndTheDaemonGoesOn() async throws {
        try await withSocketBed(limits: limits(output: 4096)) { socket in
            let stalled = try await socket.connect()
            let subscribed = try #require(try await stalled.request(Frame(.monitor, requestID: 1)))
            #expect(subscribed.code == .success)
            #expect(socket.core.events.subscriberCount == 1)

            // The client reads nothing more; events keep coming until its socket buffers and the
            // daemon's output limit are full.
            var published = 0
            while socket.core.events.subscriberCount > 0 && published < 100_000 {
                var event = AuthEvent(event: "admin", user: "alice", at: socket.bed.clock.now())
                event.reason = "lock"
                socket.core.events.publish(event)
                published += 1
            }
            #expect(socket.core.events.subscriberCount == 0, "\(published) events published")
            #expect(socket.listener.connectionCount == 0)
            _ = try await admitted(socket)
        }
    }
}
