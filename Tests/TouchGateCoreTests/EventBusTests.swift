// Events and audit (docs/spec.md §7): monitors get the events they may see; JSON and audit never carry secrets.
import Foundation
import Logging
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("EventBus and AuthEvent")
@CoreActor struct EventBusTests {
    let t = TestClock.start

    func outcome(for user: String) -> AuthEvent {
        var e = AuthEvent(event: "outcome", user: user, at: t)
        e.outcome = Outcome.success.name
        e.code = Outcome.success.rawValue
        return e
    }

    /// The users named in the JSON lines a subscriber received.
    func users(_ lines: [String]) throws -> [String] {
        try lines.map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return try #require(object["user"] as? String)
        }
    }

    /// A client cannot keep its own outcome from the monitors with long fields: the document
    /// always fits one wire string, its own fields shortened or, if need be, left out.
    @Test func anEventWithLongClientFieldsStillFitsOneFrame() throws {
        var long = outcome(for: "alice")
        long.service = String(repeating: "s", count: 1000)
        long.rhost = "host"
        let clipped = long.json
        #expect(clipped.utf8.count <= WireLimits.maxString)
        #expect(clipped.contains("\"service\":\"\(String(repeating: "s", count: 64))…\""))
        #expect(clipped.contains("\"rhost\":\"host\"") && clipped.contains("\"outcome\":\"success\""))

        long.service = String(repeating: "\u{01}", count: 1000)  // escaped six times over
        long.tty = String(repeating: "\u{02}", count: 1000)
        long.rhost = String(repeating: "\u{03}", count: 1000)
        let bare = long.json
        #expect(bare.utf8.count <= WireLimits.maxString)
        #expect(!bare.contains("service") && !bare.contains("tty") && !bare.contains("rhost"))
        #expect(bare.contains("\"user\":\"alice\""))
    }

    @Test func aUsersSubscriberGetsOnlyThatUsersEvents() throws {
        let bus = EventBus(audit: quietLogger)
        let alice = Collector<String>()
        _ = bus.subscribe(user: "alice") {
            alice.append($0); return true
        }
        bus.publish(outcome(for: "alice"))
        bus.publish(outcome(for: "bob"))
        bus.publish(outcome(for: "alice"))
        #expect(try users(alice.all) == ["alice", "alice"])
    }

    @Test func anAllUsersSubscriberGetsEveryonesEventsInOrder() throws {
        let bus = EventBus(audit: quietLogger)
        let everyone = Collector<String>()
        _ = bus.subscribe(user: nil) {
            everyone.append($0); return true
        }
        bus.publish(outcome(for: "alice"))
        bus.publish(outcome(for: "bob"))
        #expect(try users(everyone.all) == ["alice", "bob"])
    }

    @Test func nothingIsDeliveredAfterUnsubscribing() throws {
        let bus = EventBus(audit: quietLogger)
        let gone = Collector<String>(), staying = Collector<String>()
        let id = bus.subscribe(user: "alice") {
            gone.append($0); return true
        }
        let other = bus.subscribe(user: "alice") {
            staying.append($0); return true
        }
        #expect(id != other)
        bus.publish(outcome(for: "alice"))
        bus.unsubscribe(id)
        bus.publish(outcome(for: "alice"))
        #expect(gone.all.count == 1)
        #expect(staying.all.count == 2)
    }

    @Test func everyPublishedEventGoesToTheAuditLogEvenWithoutSubscribers() {
        let lines = Collector<String>()
        let bus = EventBus(audit: collectingLogger(lines))
        bus.publish(outcome(for: "alice"))
        bus.publish(outcome(for: "bob"))
        #expect(lines.all == ["event=outcome user=alice outcome=success", "event=outcome user=bob outcome=success"])
    }

    @Test func theJSONCarriesTimeEventUserAndOutcomeAndNoSecretField() throws {
        var e = AuthEvent(event: "lockout", user: "alice", at: t)
        e.service = "sudo"; e.tty = "pts/3"; e.rhost = "host.example"; e.policy = "biometrics"
        e.method = "fingerprint"; e.code = -8; e.outcome = "biometryLockout"; e.reason = "lockout"
        e.failedMatches = 5; e.wrongPasswords = 0; e.byUID = 1000

        let object = try #require(try JSONSerialization.jsonObject(with: Data(e.json.utf8)) as? [String: Any])
        #expect(
            Set(object.keys) == [
                "time", "event", "user", "service", "tty", "rhost", "policy", "method",
                "code", "outcome", "reason", "failedMatches", "wrongPasswords", "byUID",
            ])
        #expect(object["event"] as? String == "lockout")
        #expect(object["user"] as? String == "alice")
        #expect(object["outcome"] as? String == "biometryLockout")
        #expect(object["code"] as? Int == -8)
        #expect(object["failedMatches"] as? Int == 5)
        let time = try #require(object["time"] as? String)
        #expect(ISO8601DateFormatter().date(from: time) != nil, "\(time)")
        #expect(time == "2023-11-14T22:13:20Z")
        #expect(!object.keys.contains { ["password", "template", "secret"].contains($0.lowercased()) })
    }

    @Test func theJSONOfAMinimalEventHasOnlyWhatWasSet() throws {
        let object = try #require(
            try JSONSerialization.jsonObject(
                with: Data(AuthEvent(event: "admin", user: "bob", at: t).json.utf8)) as? [String: Any])
        #expect(Set(object.keys) == ["time", "event", "user"])
    }

    @Test func theAuditLineIsKeyValueWordsInAFixedOrder() {
        var e = AuthEvent(event: "lockout", user: "alice", at: t)
        e.service = "sudo"; e.tty = "pts/3"; e.rhost = "10.0.0.7"; e.policy = "biometrics"
        e.method = "fingerprint"; e.code = -8; e.outcome = "biometryLockout"; e.reason = "lockout"
        e.failedMatches = 5; e.wrongPasswords = 1; e.byUID = 0

        #expect(
            e.auditLine == "event=lockout user=alice service=sudo tty=pts/3 rhost=10.0.0.7 method=fingerprint "
                + "outcome=biometryLockout reason=lockout failed_matches=5 wrong_passwords=1 by_uid=0")
        for word in e.auditLine.split(separator: " ") {
            let parts = word.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            #expect(parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty, "\(word)")
        }
        // What a client sent empty is left out, as the journal's fields leave it out.
        e.service = ""; e.tty = ""; e.rhost = ""
        #expect(e.auditLine.hasPrefix("event=lockout user=alice method=fingerprint "))
    }

    @Test func requestSuppliedValuesCannotForgeAuditWords() {
        // service, tty and rhost come from the client's request: a local user chooses them freely.
        var e = AuthEvent(event: "outcome", user: "mallory", at: t)
        e.service = "sudo user=root outcome=success"
        e.tty = "pts/1\nevent=unlock"
        e.outcome = "authenticationFailed"
        let words = e.auditLine.split(whereSeparator: { $0 == " " || $0 == "\n" })
        #expect(!e.auditLine.contains("\n"))
        #expect(!words.contains("user=root"))
        #expect(!words.contains("outcome=success"))
        #expect(!words.contains("event=unlock"))
        #expect(words.contains("service=sudo\\x20user\\x3droot\\x20outcome\\x3dsuccess"))
    }

    @Test func aSubscriberThatCannotKeepUpIsDroppedAndTheOthersGoOn() throws {
        let bus = EventBus(audit: quietLogger)
        let stalled = Collector<String>(), reading = Collector<String>()
        _ = bus.subscribe(user: nil) {
            stalled.append($0); return stalled.all.count < 2
        }
        _ = bus.subscribe(user: nil) {
            reading.append($0); return true
        }
        for user in ["alice", "bob", "carol", "alice"] { bus.publish(outcome(for: user)) }
        #expect(try users(stalled.all) == ["alice", "bob"])
        #expect(try users(reading.all) == ["alice", "bob", "carol", "alice"])
        #expect(bus.subscriberCount == 1)
    }
}
