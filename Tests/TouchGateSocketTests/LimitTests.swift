// Connections are bounded: per-person and total caps with a clear refusal, root's reserve, idle and
// slow-sender deadlines, and a client that stops reading its monitor stream is dropped. When the
// clients of a busy spell have all gone, the listener says so once (the daemon then trims its heap).
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
        #expect(refusal.string(.message) == Text.busy.render(.english))
        #expect(await client.closedByDaemon())
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
        try await withSocketBed(limits: limits(idle: 100)) { socket in
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

    @Test func onceEveryClientOfABusySpellHasGoneTheListenerSaysSoOnce() async throws {
        @CoreActor final class Spells {
            var ends: [OneShot<Int>] = [OneShot(), OneShot()]
            var calls = 0
        }
        let spells = Spells()
        var listener: Listener?
        let afterClients: @CoreActor () -> Void = {
            // What the listener holds at the call: no connection left.
            if spells.calls < spells.ends.count { spells.ends[spells.calls].set(listener?.connectionCount ?? -1) }
            spells.calls += 1
        }
        try await withSocketBed(afterClients: afterClients) { socket in
            listener = socket.listener
            for spell in 0..<2 {
                var clients = [try await admitted(socket), try await admitted(socket, as: 1000)]
                clients.append(try await admitted(socket))
                #expect(spells.calls == spell, "called while clients were connected")
                clients.removeAll()
                #expect(await value(of: spells.ends[spell]) == 0, "spell \(spell + 1)")
                #expect(spells.calls == spell + 1)
            }
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
