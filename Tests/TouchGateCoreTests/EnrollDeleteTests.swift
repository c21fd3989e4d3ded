// enroll and delete: stages relayed, prints stored in fprintd's layout, opt-in, events, the password they need.
import Glibc
import Testing
@testable import TouchGateCore
import TouchGateReader
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: enroll and delete")
@CoreActor struct EnrollDeleteTests {
    func enroll(
        _ core: Core, _ finger: Finger = .rightIndex, user: String = "alice", password: String? = nil,
        caller: Caller = .root, client: CollectingClient = CollectingClient(),
        input: PromptInput = PromptInput()
    ) async -> Reply? {
        await within {
            await core.enroll(
                user: user, finger: finger, password: password, origin: Origin(service: "touchgate"),
                caller: caller, client: client, input: input)
        }
    }

    @Test func everyStageIsRelayedAndThePrintIsStoredInFprintdsLayout() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            let client = CollectingClient()
            #expect(await enroll(core, client: client) == .success(.enrolled(.rightIndex)))

            #expect(
                client.shown == [
                    ProgressEvent(.prompt, .enrollPrompt(finger: .rightIndex, stages: 3)),
                    ProgressEvent(.enrollStage, .enrollStage(1, 3), stage: 1, stages: 3),
                    ProgressEvent(.enrollStage, .enrollStage(2, 3), stage: 2, stages: 3),
                    ProgressEvent(.enrollStage, .enrollStage(3, 3), stage: 3, stages: 3),
                ])
            #expect(bed.reader.enrollments.map(\.user) == ["alice"])
            #expect(bed.reader.enrollments.map(\.finger) == [7])
            let path = bed.printPath("alice", .rightIndex)
            #expect(permissions(path) == 0o600)
            let stored = try #require(contents(path).flatMap(StubPrint.init))
            #expect(stored.finger == 7 && stored.user == "alice" && stored.deviceID == "stub-0")
            #expect(await core.list(user: "alice", caller: .root).fingers == [.rightIndex])
        }
    }

    @Test func enrollingOptsInAndIsAnEnrollmentChange() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            #expect(await core.disable(user: "alice", origin: Origin(), caller: .alice) == .success())
            #expect(await core.preflight()?.reason == .notEnabled)
            let events = await core.collectEvents()

            #expect(await enroll(core, .leftThumb) == .success(.enrolled(.leftThumb)))

            #expect(await core.state()?.enabled == true)
            #expect(TouchGateCoreTests.events(events.all, "enrollmentChanged").count == 1)
            #expect(events.all.contains { $0.contains(#""reason":"enrolled:left-thumb""#) })
            // Root enrolled for her: alice's password is asked once before her fingers work again.
            #expect(
                await core.preflight()
                    == Refusal(
                        .passwordRequired, reason: .enrollmentChanged,
                        text: .passwordRequired(.enrollmentChanged)))
        }
    }

    @Test func aUserEnrollingThemselfNeedsTheirPasswordAndHasJustGivenIt() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            #expect(
                await enroll(core, caller: .alice)
                    == Refusal(.notPermitted, reason: .passwordNeeded, text: .passwordNeeded))
            #expect(await enroll(core, password: "hunter2", caller: .alice) == wrongPasswordRefusal)
            #expect(bed.reader.enrollments.isEmpty)
            #expect(!exists(bed.printPath("alice", .rightIndex)))

            #expect(
                await enroll(core, password: bed.passwords.correctPassword, caller: .alice)
                    == .success(.enrolled(.rightIndex)))
            // The password proved now covers the new print: the fingerprint works at once.
            #expect(
                await core.canEvaluate(user: "alice", policy: .biometrics, rhost: nil, caller: .alice) == .success())
        }
    }

    @Test func anotherUserCannotEnrollEvenWithAPassword() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            #expect(
                await enroll(core, password: bed.passwords.correctPassword, caller: .bob)
                    == Refusal(.notPermitted, reason: nil, text: .notPermitted))
            #expect(bed.reader.enrollments.isEmpty)
            #expect(bed.passwords.calls == 0)
        }
    }

    @Test func aFailedEnrollmentSaysWhyAndStoresNothing() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            bed.reader.scriptEnrollment(.fail(.removed))
            #expect(await enroll(core) == Refusal(.biometryNotAvailable, reason: .removed, text: .readerRemoved))
            #expect(directoryEntries(bed.storePath) == [])
            #expect(!exists(bed.statePath("alice")))
        }
    }

    /// alice's enrollment of `finger` by root, cancelled once its prompt shows; its answer.
    func cancelledEnrollment(_ core: Core, _ finger: Finger) async -> Reply? {
        let client = CollectingClient(), input = PromptInput()
        let running = Running {
            await core.enroll(
                user: "alice", finger: finger, password: nil, origin: Origin(), caller: .root, client: client,
                input: input)
        }
        #expect(await client.waitFor(.prompt))
        input.deliver(.cancel)
        return await running.value()
    }

    static let cancelled = Refusal(.appCancel, reason: .cancelled, text: .cancelled)

    /// The prints deleted from the stub chip so far.
    func chipDeleted(_ bed: TestBed) -> [StubPrint] {
        bed.reader.chipDeletions.flatMap { $0 }.compactMap { StubPrint($0) }
    }

    @Test func aCancelledEnrollmentStoresNothing() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            bed.reader.scriptEnrollment(.hold)
            #expect(await cancelledEnrollment(core, .rightIndex) == Self.cancelled)
            #expect(await loopUntil(.max, limit: .seconds(10)) { bed.reader.cancellations == 1 })
            #expect(directoryEntries(bed.storePath) == [])
        }
    }

    /// A chip that completed the enrollment as the cancel came holds the print: it goes from there.
    @Test func anEnrollmentCompletedAsItWasCancelledLeavesNoPrintOnTheChip() async throws {
        try await withChipReader { bed, core in
            bed.reader.scriptEnrollment(.completeOnCancel)
            #expect(await cancelledEnrollment(core, .leftThumb) == Self.cancelled)
            #expect(chipDeleted(bed).map(\.finger) == [Finger.leftThumb.fpFinger], "\(chipDeleted(bed))")
            #expect(!exists(bed.printPath("alice", .leftThumb)))
        }
    }

    /// The chip stored the print, and its file cannot be written: the chip's copy goes too.
    @Test func aPrintThatCannotBeStoredGoesFromTheChip() async throws {
        try await withChipReader { bed, core in
            let bobs = "\(bed.storePath)/bob"
            #expect(close(open(bobs, O_CREAT | O_WRONLY, 0o600)) == 0)  // a file where bob's directory goes
            let reply = await within {
                await core.enroll(
                    user: "bob", finger: .leftThumb, password: nil, origin: Origin(), caller: .root,
                    client: CollectingClient(), input: PromptInput())
            }
            #expect(reply == Core.storageFailure)
            #expect(chipDeleted(bed).map(\.user) == ["bob"], "\(chipDeleted(bed))")
        }
    }

    /// The driver ends the cancelled enrollment only after the grace, and completes it: its print
    /// goes from the chip once it ends.
    @Test func anEnrollmentCompletedLateAfterItsCancelLeavesNoPrintOnTheChip() async throws {
        try await withChipReader { bed, core in
            bed.reader.scriptEnrollment(.completeOnRelease)
            #expect(await cancelledEnrollment(core, .leftThumb) == Self.cancelled)
            #expect(bed.reader.chipDeletions.isEmpty)
            bed.reader.releaseScan()
            #expect(await loopUntil(.max, limit: .seconds(10)) { !bed.reader.chipDeletions.isEmpty })
            #expect(chipDeleted(bed).map(\.finger) == [Finger.leftThumb.fpFinger], "\(chipDeleted(bed))")
            #expect(!exists(bed.printPath("alice", .leftThumb)))
        }
    }

    @Test func enrollingWithoutAReaderIsRefused() async throws {
        try await withTestBed(reader: StubReader(info: nil)) { bed in
            let core = try bed.makeCore()
            #expect(await enroll(core) == Refusal(.biometryNotAvailable, reason: .noReader, text: .noReader))
            #expect(bed.reader.enrollments.isEmpty)
        }
    }

    // MARK: delete

    func delete(_ core: Core, _ fingers: [Finger], all: Bool = false, password: String? = nil, caller: Caller = .root)
        async -> Reply?
    {
        await within {
            await core.delete(
                user: "alice", fingers: fingers, all: all, password: password, origin: Origin(), caller: caller)
        }
    }

    @Test func deletingAFingerRemovesItsFileAndIsAnEnrollmentChange() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            try await bed.enroll(core, finger: .leftThumb)
            let events = await core.collectEvents()

            var expected = Reply.success(.deleted(1))
            expected.fingers = [.leftThumb]
            #expect(await delete(core, [.leftThumb]) == expected)
            #expect(!exists(bed.printPath("alice", .leftThumb)))
            #expect(exists(bed.printPath("alice", .rightIndex)))
            #expect(bed.reader.chipDeletions.isEmpty)  // a reader without storage is not asked
            #expect(events.all.count == 1)
            #expect(events.all.first?.contains(#""reason":"deleted:left-thumb""#) == true)
            #expect(await core.list(user: "alice", caller: .alice).fingers == [.rightIndex])
        }
    }

    @Test func aDeletedPrintGoesFromTheReadersOwnStorageAndARefusalThereIsToldAfterTheFilesWent() async throws {
        try await withChipReader { bed, core in
            try await bed.enroll(core, finger: .leftThumb)
            var expected = Reply.success(.deleted(1))
            expected.fingers = [.leftThumb]
            #expect(await delete(core, [.leftThumb]) == expected)
            #expect(bed.reader.chipDeletions.count == 1)

            bed.reader.scriptChipDeletion(ChipDeletion(deleted: 0, failure: "The device is busy"))
            expected = Reply.success(.lines([.deleted(1), .keptOnReader]), reason: .notDeletedFromReader)
            expected.fingers = [.rightIndex]
            #expect(await delete(core, [.rightIndex]) == expected)
            #expect(bed.reader.chipDeletions.count == 2)
            #expect(!exists(bed.printPath("alice", .rightIndex)))
            #expect(await core.list(user: "alice", caller: .alice).fingers == [])
        }
    }

    @Test func aPrintWhoseFileCannotBeReadIsDeletedAndTheReadersCopyThatStaysIsTold() async throws {
        try await withChipReader { bed, core in
            // A file others may write is not read (docs/SECURITY.md), so the chip's copy cannot be named.
            #expect(chmod(bed.printPath("alice", .rightIndex), 0o666) == 0)
            var expected = Reply.success(.lines([.deleted(1), .keptOnReader]), reason: .notDeletedFromReader)
            expected.fingers = [.rightIndex]
            #expect(await delete(core, [.rightIndex]) == expected)
            #expect(bed.reader.chipDeletions.isEmpty)
            #expect(!exists(bed.printPath("alice", .rightIndex)))
        }
    }

    /// A file that cannot be removed: the other fingers go and are recorded; the deletion is refused
    /// (PrintsNotDeleted over D-Bus), and the chip keeps its copies, the enrolled finger's among them.
    @Test func aFileThatCannotBeRemovedLeavesTheOthersDeletedAndRecordedAndTheChipAlone() async throws {
        try await withChipReader { bed, core in
            try await bed.enroll(core, finger: .leftThumb)
            let events = await core.collectEvents()
            // Where right-index's file is, a directory with something in it: unlink fails.
            let blocked = bed.printPath("alice", .rightIndex)
            #expect(unlink(blocked) == 0 && mkdir(blocked, 0o700) == 0 && mkdir("\(blocked)/x", 0o700) == 0)

            #expect(await delete(core, [], all: true) == Core.storageFailure)
            #expect(!exists(bed.printPath("alice", .leftThumb)))
            #expect(events.all.count == 1)
            #expect(events.all.first?.contains(#""reason":"deleted:left-thumb""#) == true)
            #expect(bed.reader.chipDeletions.isEmpty)
        }
    }

    @Test func deletingAFingerThatIsNotEnrolledIsNotFoundAndChangesNothing() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            let events = await core.collectEvents()
            #expect(
                await delete(core, [.leftThumb])
                    == Refusal(.notFound, reason: nil, text: .fingerNotEnrolled(.leftThumb)))
            #expect(events.all.isEmpty)
            #expect(await core.preflight() == nil)
        }
    }

    @Test func deletingAllRemovesEveryFingerAndTheUsersDirectory() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            try await bed.enroll(core, finger: .leftThumb)
            #expect(await delete(core, [], all: true)?.fingers == [.leftThumb, .rightIndex])
            #expect(directoryEntries(bed.storePath) == [])
            #expect(await core.preflight() == Refusal(.biometryNotEnrolled, reason: .noPrints, text: .notEnrolled))
        }
    }

    @Test func aUserDeletingTheirOwnPrintNeedsTheirPassword() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            #expect(
                await delete(core, [.rightIndex], caller: .alice)
                    == Refusal(.notPermitted, reason: .passwordNeeded, text: .passwordNeeded))
            #expect(exists(bed.printPath("alice", .rightIndex)))
            #expect(
                await delete(core, [.rightIndex], password: bed.passwords.correctPassword, caller: .alice)?.fingers == [
                    .rightIndex
                ])
            #expect(!exists(bed.printPath("alice", .rightIndex)))
        }
    }

    @Test func aUserWhoDeletedAPrintWithTheirPasswordIsNotAskedForItAgainButAfterRootItIs() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            try await bed.enroll(core, finger: .leftThumb)
            try await bed.enroll(core, finger: .rightThumb)
            _ = await core.verifyPassword(context(), bed.passwords.correctPassword)
            #expect(await core.preflight() == nil)

            #expect(
                await delete(core, [.leftThumb], password: bed.passwords.correctPassword, caller: .alice)?.fingers == [
                    .leftThumb
                ])
            #expect(await core.preflight() == nil)

            #expect(await delete(core, [.rightThumb])?.fingers == [.rightThumb])
            #expect(await core.preflight()?.reason == .enrollmentChanged)
        }
    }

    @Test func aLockMadeWhileTheUsersOwnEnrollmentWaitedForTheReaderStandsAfterIt() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.hold)
            let (holding, prompt, input) = core.startEvaluate()  // alice's prompt holds the reader
            #expect(await prompt.waitFor(.prompt))

            // alice enrolls another finger with her password: checked now, then queued.
            bed.reader.scriptEnrollment(.complete)
            let client = CollectingClient()
            let enrolling = Running {
                await core.enroll(
                    user: "alice", finger: .leftThumb, password: bed.passwords.correctPassword,
                    origin: Origin(service: "touchgate"), caller: .alice, client: client, input: PromptInput())
            }
            #expect(await client.waitFor(.queued))
            #expect(await core.lock(user: "alice", origin: Origin(), caller: .root).isSuccess)

            input.deliver(.cancel)
            _ = await holding.value()
            #expect(await enrolling.value() == .success(.enrolled(.leftThumb)))
            // Her password came before the lock: the lock stands, the new print counts as seen.
            #expect(await core.preflight()?.reason == .adminLock)
            #expect(await core.verifyPassword(context(), bed.passwords.correctPassword) == .correct)
            #expect(await core.preflight() == nil)
        }
    }

    /// An enrollment stores its print before it lets the reader go: the enrollment behind it
    /// judges a store that has the print (its duplicate check, a chip's reclaim or clearing).
    @Test func theNextEnrollmentWaitsUntilThePrintBeforeItIsStored() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.scriptEnrollment(.complete, .complete)
            let hold = try #require(await PoolHold(core.storagePool, threads: 2))
            let first = CollectingClient(), second = CollectingClient()
            @CoreActor func enrolling(_ user: String, _ client: CollectingClient) -> Running<Reply> {
                Running {
                    await core.enroll(
                        user: user, finger: .leftThumb, password: nil, origin: Origin(service: "touchgate"),
                        caller: .root, client: client, input: PromptInput())
                }
            }
            let alices = enrolling("alice", first)
            _ = await loopUntil { core.storagePool.waiting > 0 }  // her print waits for a storage thread
            #expect(core.storagePool.waiting == 1 && first.kinds().contains(.prompt))
            let bobs = enrolling("bob", second)
            #expect(await second.waitFor(.queued))
            #expect(!second.kinds().contains(.prompt))
            await hold.release()
            #expect(await alices.value() == .success(.enrolled(.leftThumb)))
            #expect(await bobs.value() == .success(.enrolled(.leftThumb)))
        }
    }
}
