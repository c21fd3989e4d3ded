// Frames in and out as the wire header says; bad frames refused and closed; rights from SO_PEERCRED.
import Testing
@testable import TouchGateCore
@testable import TouchGateSocket
import TouchGateTestSupport
import TouchGateThreads
import TouchGateWire

@Suite("Socket: frames")
@CoreActor struct FramingTests {
    @Test func aRequestFramedAsTheHeaderSaysIsAnsweredUnderItsOwnID() async throws {
        try await withSocketBed { socket in
            try await socket.readyAlice()
            let client = try await socket.connect()
            // touchgate_wire.h: length (4, big-endian, what follows), version, kind, flags (2), request id (4),
            // then fields: tag (2), length (2), value; ints are 4 bytes big-endian.
            let body: [UInt8] =
                [
                    0x01, 0x01, 0x00, 0x00, 0xCA, 0xFE, 0x00, 0x2A,
                    0x00, 0x01, 0x00, 0x05,
                ] + Array("alice".utf8) + [0x00, 0x02, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01]
            client.sendRaw([0x00, 0x00, 0x00, UInt8(body.count)] + body)

            let length = try #require(await client.receiveRaw(4))
            let size = length.reduce(0) { $0 << 8 | Int($1) }
            let reply = try #require(await client.receiveRaw(size))
            #expect(Array(reply.prefix(8)) == [0x01, 0x40, 0x00, 0x00, 0xCA, 0xFE, 0x00, 0x2A])
            // The first field is the code: tag 11, four bytes, 0 (success).
            #expect(Array(reply[8..<16]) == [0x00, 0x0B, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00])
            let frame = try Frame.decode(length + reply)
            #expect(frame == Frame(.result, requestID: 0xCAFE_002A, [Field(.code, 0)]))
        }
    }

    @Test func theReplyIsInTheLanguageTheRequestAsksFor() async throws {
        try await withSocketBed { socket in
            let client = try await socket.connect()
            let zh = try #require(try await client.request(canEvaluateFrame(1, user: "bob", locale: "zh_CN.UTF-8")))
            let en = try #require(try await client.request(canEvaluateFrame(2, user: "bob", locale: "en_GB.UTF-8")))
            #expect(zh.code == .biometryNotEnrolled && zh.string(.reason) == "noPrints")
            #expect(zh.string(.message) == Text.notEnrolled.render(.chinese))
            #expect(en.string(.message) == Text.notEnrolled.render(.english))
        }
    }

    @Test(arguments: [
        ("a bad version", [0x00, 0x00, 0x00, 0x08, 0x09, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01] as [UInt8]),
        ("an unknown kind", [0x00, 0x00, 0x00, 0x08, 0x01, 0x3F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01]),
        ("a length past the limit", [0x00, 0x01, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01]),
        (
            "a field running past the frame",
            [
                0x00, 0x00, 0x00, 0x0C, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
                0x00, 0x01, 0x00, 0x09,
            ]
        ),
        ("a result sent to the daemon", [0x00, 0x00, 0x00, 0x08, 0x01, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01]),
        ("a password with no request", [0x00, 0x00, 0x00, 0x08, 0x01, 0x0F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01]),
    ])
    func aMalformedFrameIsAnsweredWithBadRequestThenClosedAndTheNextClientIsServed(_ what: String, _ bytes: [UInt8])
        async throws
    {
        try await withSocketBed { socket in
            let client = try await socket.connect()
            client.sendRaw(bytes)
            let refusal = try #require(await client.untilResult()?.result, "\(what)")
            #expect(refusal.code == .badRequest, "\(what)")
            #expect(refusal.requestID == WireLimits.unsolicitedRequestID, "\(what)")
            #expect(refusal.string(.message) == Text.badRequest.render(.english))
            #expect(await client.closedByDaemon(), "\(what)")

            let next = try await socket.connect()
            #expect(try await next.request(devicesFrame(7))?.code == .success)
        }
    }

    @Test func aRequestMissingWhatItNeedsIsABadRequestUnderItsID() async throws {
        try await withSocketBed { socket in
            let client = try await socket.connect()
            let reply = try #require(try await client.request(Frame(.status, requestID: 9)))
            #expect(reply.code == .badRequest)
            #expect(reply.requestID == 9)
            #expect(await client.closedByDaemon())
        }
    }

    @Test func aCancelWithNothingRunningIsAnInvalidContextAndTheConnectionGoesOn() async throws {
        try await withSocketBed { socket in
            let client = try await socket.connect()
            let reply = try #require(try await client.request(Frame(.cancel, requestID: 5)))
            #expect(reply.code == .invalidContext)
            #expect(reply.requestID == 5)
            #expect(try await client.request(devicesFrame(6))?.strings(.device) == ["Stub reader (stub)"])
        }
    }

    /// The refusal names what was sent; a name too long to be echoed whole is cut, not the reply.
    @Test func aReplyNamingALongInvalidUserStillAnswers() async throws {
        try await withSocketBed { socket in
            let client = try await socket.connect()
            let name = String(repeating: "a", count: 1020) + "/"
            let reply = try #require(try await client.request(canEvaluateFrame(4, user: name)))
            #expect(reply.code == .userUnknown && reply.requestID == 4)
            let message = try #require(reply.string(.message))
            #expect(message.utf8.count <= WireLimits.maxString && message.hasSuffix("…"))
        }
    }

    /// A monitor's client that left while its account was looked up leaves no subscription.
    @Test func aMonitorWhoseClientLeftBeforeItWasAcknowledgedIsNotKept() async throws {
        try await withSocketBed { socket in
            let gate = TouchGateThreads.Semaphore()
            var holders: [Running<Void?>] = []
            for _ in 0..<2 {  // the account look-ups' two threads, held
                let started = OneShot<Void>()
                holders.append(
                    Running {
                        try? await socket.core.accountPool.run {
                            CoreLoop.shared.post { started.set(()) }; gate.wait()
                        }
                    })
                #expect(await value(of: started) != nil)
            }
            let alice = try await socket.connect(as: 1000)
            try alice.send(Frame(.monitor, requestID: 1))
            _ = await loopUntil { socket.core.accountPool.waiting > 0 }
            #expect(socket.core.accountPool.waiting == 1)
            alice.close()
            _ = await loopUntil { socket.listener.connectionCount == 0 }
            #expect(socket.listener.connectionCount == 0)
            // One thread let go: it answers the look-up, then the probe queued behind it, so the
            // monitor's request has gone on before the probe's answer reaches this test.
            let probe = Running { try? await socket.core.accountPool.run { 0 } }
            _ = await loopUntil { socket.core.accountPool.waiting >= 2 }
            gate.signal()
            #expect(await probe.value() == .some(0))
            #expect(socket.core.events.subscriberCount == 0)
            gate.signal()
            for holder in holders { _ = await holder.value() }
        }
    }

    @Test func requestsFollowOneAnotherOnOneConnection() async throws {
        try await withSocketBed { socket in
            try await socket.readyAlice()
            let client = try await socket.connect()
            for id in UInt32(1)...5 {
                let reply = try #require(try await client.request(canEvaluateFrame(id)))
                #expect(reply.requestID == id && reply.code == .success)
            }
        }
    }

    @Test func whatACallerMayDoComesFromTheSocketsPeerCredentials() async throws {
        try await withSocketBed { socket in
            try await socket.readyAlice()
            let alice = try await socket.connect(as: 1000), bob = try await socket.connect(as: 1001)
            let root = try await socket.connect()
            #expect(try await alice.request(canEvaluateFrame(1))?.code == .success)
            #expect(try await root.request(canEvaluateFrame(1))?.code == .success)
            #expect(try await bob.request(canEvaluateFrame(1))?.code == .notPermitted)
            let lock = Frame(.lock, requestID: 2, [Field(.user, "alice")])
            #expect(try await alice.request(lock)?.code == .notPermitted)
            #expect(try await root.request(lock)?.code == .success)
            // What a request claims about who sent it counts for nothing.
            let claims = Frame(.passwordSuccess, requestID: 3, [Field(.user, "alice"), Field(.service, "sudo")])
            #expect(try await alice.request(claims)?.code == .notPermitted)
        }
    }
}
