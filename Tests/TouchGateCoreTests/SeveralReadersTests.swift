// Several readers at once: a request runs on the reader it names (driver, name or DRIVER/DEVICE-ID)
// or on the default one, the first served; prints, lists and deletions are per reader.
import Testing
@testable import TouchGateCore
import TouchGateReader
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: several readers")
@CoreActor struct SeveralReadersTests {
    static let secondInfo = ReaderInfo(
        name: "Second stub reader", driver: "stub2", deviceID: "b-1", enrollStages: 2, supportsIdentify: false,
        isSwipe: true)

    /// The test bed's reader first (the default), a second one after it.
    func machine(_ bed: TestBed) throws -> (Core, StubReader) {
        let second = StubReader(info: Self.secondInfo)
        return (try bed.makeCore(reader: StubReaderSet(bed.reader, second)), second)
    }

    func save(_ core: Core, _ reader: StubReader, _ user: String = "alice", _ finger: Finger = .rightIndex)
        async throws
    {
        let info = try #require(reader.info)
        try await core.prints.save(
            reader.print(user: user, finger: finger.fpFinger), user: user, device: info.deviceKey, finger: finger)
    }

    func enroll(_ core: Core, _ finger: Finger, reader: String?) async -> Reply? {
        await within {
            await core.enroll(
                user: "alice", finger: finger, password: nil, origin: Origin(service: "touchgate"), caller: .root,
                client: CollectingClient(), input: PromptInput(), reader: reader)
        }
    }

    @Test func aReaderIsNamedByItsDriverItsNameOrItsDriverAndDeviceID() {
        let info = Self.secondInfo
        #expect(info.matches("stub2") && info.matches("Second stub reader") && info.matches("stub2/b-1"))
        #expect(!info.matches("stub") && !info.matches("stub2/b-2") && !info.matches("b-1") && !info.matches(""))
        #expect(info.selector == "stub2/b-1")
    }

    @Test func anEvaluationRunsOnTheReaderItNamesAndOnTheFirstWhenItNamesNone() async throws {
        try await withTestBed { bed in
            let (core, second) = try machine(bed)
            try await save(core, second)
            try await bed.readyUser(core)  // a print on the default reader too, and the password typed
            second.script(.match)
            var request = core.evaluateRequest()
            request.reader = "stub2"
            let named = await within {
                await core.evaluate(request, caller: .root, client: CollectingClient(), input: PromptInput())
            }
            #expect(named == .success(.recognised))
            #expect(second.verifications.count == 1 && bed.reader.verifications.isEmpty)

            bed.reader.script(.match)
            let (running, client, _) = core.startEvaluate()
            #expect(await running.value() == .success(.recognised))
            #expect(bed.reader.verifications.count == 1 && second.verifications.count == 1)
            // The swipe reader asks for a swipe; the default one for a press.
            #expect(client.texts(.prompt) == [.placeFinger(swipe: false)])
        }
    }

    @Test func aNameNoReaderAnswersToIsRefusedAsNoReaderAndNothingScans() async throws {
        try await withTestBed { bed in
            let (core, second) = try machine(bed)
            try await bed.readyUser(core)
            let refused = await core.canEvaluate(
                user: "alice", policy: .biometrics, rhost: nil, reader: "goodix", caller: .root)
            #expect(refused.reason == .noReader)
            var request = core.evaluateRequest()
            request.reader = "goodix"
            let reply = await within {
                await core.evaluate(request, caller: .root, client: CollectingClient(), input: PromptInput())
            }
            #expect(reply?.reason == .noReader)
            #expect(bed.reader.verifications.isEmpty && second.verifications.isEmpty)
        }
    }

    @Test func aReaderWithoutTheUsersPrintsRefusesAsNotEnrolledWhileTheOtherHasThem() async throws {
        try await withTestBed { bed in
            let (core, _) = try machine(bed)
            try await bed.readyUser(core)
            #expect(await core.canEvaluate(user: "alice", policy: .biometrics, rhost: nil, caller: .root).isSuccess)
            let onSecond = await core.canEvaluate(
                user: "alice", policy: .biometrics, rhost: nil, reader: "stub2", caller: .root)
            #expect(onSecond.outcome == .biometryNotEnrolled)
        }
    }

    @Test func anEnrollmentOnTheNamedReaderIsStoredAndListedForThatReaderOnly() async throws {
        try await withTestBed { bed in
            let (core, second) = try machine(bed)
            #expect(await enroll(core, .leftThumb, reader: "stub2/b-1") == .success(.enrolled(.leftThumb)))
            #expect(second.enrollments.map(\.finger) == [1] && bed.reader.enrollments.isEmpty)
            let stored = try #require(contents("\(bed.storePath)/alice/stub2/b-1/1").flatMap(StubPrint.init))
            #expect(stored.driver == "stub2" && stored.deviceID == "b-1")
            #expect(await core.list(user: "alice", caller: .root, reader: "stub2").fingers == [.leftThumb])
            #expect(await core.list(user: "alice", caller: .root).fingers == [])
            #expect(await enroll(core, .rightIndex, reader: "nope")?.reason == .noReader)
            // A name no reader answers to lists nothing: it is refused, not read as every reader.
            #expect(await core.list(user: "alice", caller: .root, reader: "nope").reason == .noReader)
            let status = try #require(try await statusDocument(core, "alice", reader: "nope"))
            #expect(status.fingers.isEmpty)
        }
    }

    @Test func aDeletionNamingAReaderLeavesTheOtherReadersPrintsAndOneNamingNoneDeletesEverywhere() async throws {
        try await withTestBed { bed in
            let (core, second) = try machine(bed)
            try await save(core, bed.reader)
            try await save(core, second)
            let named = await core.delete(
                user: "alice", fingers: [.rightIndex], all: false, password: nil, origin: Origin(), caller: .root,
                reader: "stub2")
            #expect(named.isSuccess)
            #expect(await core.list(user: "alice", caller: .root, reader: "stub2").fingers == [])
            #expect(await core.list(user: "alice", caller: .root).fingers == [.rightIndex])

            try await save(core, second)
            let everywhere = await core.delete(
                user: "alice", fingers: [], all: true, password: nil, origin: Origin(), caller: .root)
            #expect(everywhere.isSuccess && everywhere.fingers == [.rightIndex])
            #expect(await core.list(user: "alice", caller: .root).fingers == [])
            #expect(await core.list(user: "alice", caller: .root, reader: "stub2").fingers == [])
        }
    }

    /// The domain state covers the user's prints on every reader (docs/spec.md §4): prints on
    /// another reader alone give a value, one added there changes it, and which reader is the
    /// default changes nothing.
    @Test func theDomainStateCoversThePrintsOnEveryReader() async throws {
        try await withTestBed { bed in
            let (core, second) = try machine(bed)
            func domainState() async -> String? {
                await core.domainState(user: "alice", service: "sudo", caller: .root).domainState
            }
            try await save(core, second)
            let onSecond = try #require(await domainState())
            try await save(core, bed.reader)
            let onBoth = try #require(await domainState())
            #expect(onBoth != onSecond)
            try await save(core, second, "alice", .leftThumb)
            let added = try #require(await domainState())
            #expect(added != onBoth)
            // The default reader gone, the second is the default: the same prints, the same value.
            bed.reader.close {}
            #expect(await domainState() == added)
        }
    }

    @Test func twoReadersOfOneDriverAreListedWithTheirDeviceIDsAndNamedByThem() async throws {
        try await withTestBed { bed in
            var info = try #require(bed.reader.info)
            info.deviceID = "stub-1"
            let twin = StubReader(info: info)
            let core = try bed.makeCore(reader: StubReaderSet(bed.reader, twin))
            #expect(await core.devices().devices == ["Stub reader (stub/stub-0)", "Stub reader (stub/stub-1)"])
            #expect(await enroll(core, .leftThumb, reader: "stub/stub-1") == .success(.enrolled(.leftThumb)))
            #expect(twin.enrollments.count == 1 && bed.reader.enrollments.isEmpty)
        }
    }

    @Test func devicesListsEveryReaderServedTheDefaultFirst() async throws {
        try await withTestBed { bed in
            let (core, second) = try machine(bed)
            #expect(await core.devices().devices == ["Stub reader (stub)", "Second stub reader (stub2)"])
            bed.reader.close {}
            // The first one gone, the second is the default.
            #expect(await core.devices().devices == ["Second stub reader (stub2)"])
            second.script(.match)
            try await save(core, second)
            try await core.adminChange(context(), action: "enroll") { core.policyEngine.enable($0) }
            try await core.recordPasswordSuccess(context())
            let (running, _, _) = core.startEvaluate()
            #expect(await running.value() == .success(.recognised))
        }
    }
}
