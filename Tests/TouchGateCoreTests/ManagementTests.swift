// The management requests: list, devices, enable/disable, lock/reset, domain state, status, monitor.
import FoundationEssentials
import Testing
@testable import TouchGateCore
import TouchGatePolicy
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: management requests")
@CoreActor struct ManagementTests {
    @Test func listAndDevicesSayWhatIsThere() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            try await bed.enroll(core, finger: .leftThumb)
            #expect(await core.list(user: "alice", caller: .alice).fingers == [.leftThumb, .rightIndex])
            #expect(await core.list(user: "bob", caller: .root).fingers == [])
            #expect(await core.devices().devices == ["Stub reader (stub)"])
            #expect(await (try bed.makeCore(reader: StubReader(info: nil))).devices().devices == [])
        }
    }

    /// A password the daemon checks for a request of the user's own is an authentication: its
    /// outcome is recorded whether it was right or wrong.
    @Test func thePasswordAUsersEnableIsCheckedWithIsRecordedRightOrWrong() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let outcomes = {
                bed.audit.all.filter { $0.hasPrefix("event=outcome user=alice ") && $0.contains("method=password") }
            }
            #expect(await core.enable(user: "alice", password: "wrong", origin: Origin(), caller: .alice) != .success())
            #expect(outcomes().count == 1 && outcomes()[0].contains("outcome=authenticationFailed"))
            let right = bed.passwords.correctPassword
            #expect(await core.enable(user: "alice", password: right, origin: Origin(), caller: .alice) == .success())
            #expect(outcomes().count == 2 && outcomes()[1].contains("outcome=success"))
        }
    }

    @Test func disableTurnsTheFingerprintOffWithoutDeletingAndEnableBringsItBack() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            #expect(await core.disable(user: "alice", origin: Origin(), caller: .alice) == .success())
            #expect(await core.preflight() == Refusal(.biometryNotEnrolled, reason: .notEnabled, text: .notEnabled))
            #expect(exists(bed.printPath("alice", .rightIndex)))
            #expect(await core.enable(user: "alice", password: nil, origin: Origin(), caller: .root) == .success())
            #expect(await core.preflight() == nil)
        }
    }

    @Test func lockRequiresThePasswordAndResetUndoesWhatRootAndTheCountersImposed() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let events = await core.collectEvents()
            #expect(await core.lock(user: "alice", origin: Origin(), caller: .root) == .success())
            #expect(
                await core.preflight()
                    == Refusal(.passwordRequired, reason: .adminLock, text: .passwordRequired(.adminLock)))
            // On disk before it is confirmed.
            #expect(try bed.stateOnDisk("alice")?.adminLocked == true)

            for _ in 1...5 { _ = try await core.recordFailedMatch(context()) }
            #expect(await core.reset(user: "alice", origin: Origin(), caller: .root) == .success())
            #expect(await core.preflight() == nil)
            let s = try #require(try bed.stateOnDisk("alice"))
            #expect(!s.adminLocked && !s.biometryLockedOut && s.consecutiveFailedMatches == 0)
            #expect(TouchGateCoreTests.events(events.all, "admin").count == 2)
        }
    }

    @Test func theDomainStateFollowsThePrintsAndIsAbsentWithoutThem() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            #expect(await core.domainState(user: "alice", service: "sudo", caller: .alice) == .success())
            try await bed.readyUser(core)
            let sudo = try #require(await core.domainState(user: "alice", service: "sudo", caller: .alice).domainState)
            let login = await core.domainState(user: "alice", service: "login", caller: .alice).domainState
            #expect(sudo.count == 64)
            #expect(login != nil && login != sudo)
            try await bed.enroll(core, finger: .leftThumb)
            #expect(await core.domainState(user: "alice", service: "sudo", caller: .alice).domainState != sudo)
            // Without a reader, biometrics are not available: no value (docs/spec.md §4).
            let readerless = try bed.makeCore(reader: StubReader(info: nil))
            #expect(await readerless.domainState(user: "alice", service: "sudo", caller: .root).domainState == nil)
        }
    }

    @Test func statusReportsTheCountersAndWhatCanEvaluateWouldSay() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            for _ in 1...2 { _ = try await core.recordFailedMatch(context()) }
            _ = await core.verifyPassword(context(), "wrong")
            let status = try #require(try await statusDocument(core, "alice"))
            #expect(status.user == "alice")
            #expect(status.fingers == ["right-index-finger"])
            #expect(status.damagedFingers == [])
            #expect(status.stateReadable)
            #expect(status.enabled == true)
            #expect(status.failedMatches == 2)
            #expect(status.wrongPasswords == 1)
            #expect(status.lockedOut == false)
            #expect(status.passwordRequired == [])
            #expect(status.backoffSecondsLeft == 0)
            #expect(status.lastPasswordSuccess == bed.clock.now())
            #expect(status.canEvaluate == .init(code: 0, name: "success", reason: ""))
        }
    }

    /// Three failed matches, then the daemon restarted with `lockout_threshold = 3`: the user is
    /// locked, status says so, and the password that lifts it is an unlock.
    @Test func aLockoutByAThresholdLoweredSinceIsToldAndItsLiftingIsAnUnlock() async throws {
        try await withTestBed { bed in
            let before = try bed.makeCore()
            try await bed.readyUser(before)
            for _ in 1...3 { _ = try await before.recordFailedMatch(context()) }
            await before.states.flush()

            let core = try bed.makeCore(policy: PolicyConfig(lockoutThreshold: 3))
            let status = try #require(try await statusDocument(core, "alice"))
            #expect(status.lockedOut == true)
            #expect(status.canEvaluate.name == "biometryLockout")
            let events = await core.collectEvents()
            #expect(await core.verifyPassword(context(), bed.passwords.correctPassword) == .correct)
            #expect(events.all.first?.contains(#""event":"unlock""#) == true, "\(events.all)")
        }
    }

    // MARK: monitor

    /// A lock the disk refuses holds all the same (the reply says the disk failed), and is
    /// recorded as every admin action is.
    @Test func anAdminActionTheDiskRefusesHoldsAndIsRecorded() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let events = await core.collectEvents()
            // The password success is written after its reply: once it is, nothing remakes the directory.
            await core.states.flush()
            let dir = "\(bed.statePath)/users/alice"
            removeTree(dir)
            try plantFile(dir, "in the way")  // no write lands
            #expect(await core.lock(user: "alice", origin: Origin(), caller: .root) == Core.storageFailure)
            #expect(
                await core.preflight()
                    == Refusal(.passwordRequired, reason: .adminLock, text: .passwordRequired(.adminLock)))
            #expect(TouchGateCoreTests.events(events.all, "admin").count == 1)
        }
    }

    @Test func aUserMonitorsOnlyTheirOwnEventsAndRootEveryones() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            let mine = Collector<String>(), everyone = Collector<String>(), bobs = Collector<String>()
            let (own, ownID) = await core.monitor(user: nil, caller: .alice) {
                mine.append($0); return true
            }
            let (all, _) = await core.monitor(user: nil, caller: .root) {
                everyone.append($0); return true
            }
            let (one, _) = await core.monitor(user: "bob", caller: .root) {
                bobs.append($0); return true
            }
            #expect(own == .success() && all == .success() && one == .success())

            _ = await core.lock(user: "alice", origin: Origin(), caller: .root)
            _ = await core.lock(user: "bob", origin: Origin(), caller: .root)
            #expect(mine.all.count == 1 && mine.all[0].contains(#""user":"alice""#))
            #expect(bobs.all.count == 1 && bobs.all[0].contains(#""user":"bob""#))
            #expect(everyone.all.count == 2)

            core.stopMonitoring(try #require(ownID))
            _ = await core.lock(user: "alice", origin: Origin(), caller: .root)
            #expect(mine.all.count == 1)
            #expect(everyone.all.count == 3)
        }
    }

    @Test func aUserCannotMonitorAnotherUser() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            let (reply, id) = await core.monitor(user: "bob", caller: .alice) { _ in true }
            #expect(reply == Refusal(.notPermitted, reason: nil, text: .notPermitted))
            #expect(id == nil)
            let (stranger, none) = await core.monitor(user: nil, caller: .stranger) { _ in true }
            #expect(stranger.outcome == .notPermitted && none == nil)
            #expect(core.events.subscriberCount == 0)
        }
    }

    @Test func anUnknownAccountIsUnknownToRootsMonitorAndNotPermittedToAnyoneElse() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            let (unknown, id) = await core.monitor(user: "mallory", caller: .root) { _ in true }
            #expect(unknown == Refusal(.userUnknown, reason: nil, text: .userUnknown("mallory")))
            #expect(id == nil)
            // Whether it exists is not told to someone who may not ask about it.
            let (refused, none) = await core.monitor(user: "mallory", caller: .alice) { _ in true }
            #expect(refused == Refusal(.notPermitted, reason: nil, text: .notPermitted) && none == nil)
            #expect(core.events.subscriberCount == 0)
        }
    }
}

/// `touchgate status --json`, decoded with the field names the CLI prints.
struct Status: Decodable {
    struct CanEvaluate: Decodable, Equatable { var code: Int32; var name: String; var reason: String }
    var user: String
    var fingers: [String]
    var damagedFingers: [String]
    var printsProblem: String?
    var stateReadable: Bool
    var stateProblem: String?
    var enabled: Bool?
    var failedMatches: Int?
    var lockedOut: Bool?
    var adminLocked: Bool?
    var wrongPasswords: Int?
    var passwordRequired: [String]?
    var backoffSecondsLeft: Int64?
    var lastPasswordSuccess: Int64?
    var lastFingerprintSuccess: Int64?
    var canEvaluate: CanEvaluate
}

@CoreActor func statusDocument(_ core: Core, _ user: String, caller: Caller = .root, reader: String? = nil)
    async throws -> Status?
{
    let reply = await core.status(user: user, caller: caller, reader: reader)
    guard reply.isSuccess, let json = reply.json else { return nil }
    return try decodeJSON(Status.self, Array(json.utf8))
}
