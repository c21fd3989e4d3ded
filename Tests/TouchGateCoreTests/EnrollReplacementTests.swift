// Enrolling a finger already enrolled on a match-on-chip reader, and an enrollment whose print
// cannot be stored: what the chip and the store hold after one that ends without a new print.
import Glibc
import Testing
import TouchGateConfig
@testable import TouchGateCore
import TouchGatePolicy
import TouchGateReader
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: replacing a print, and a print not stored")
@CoreActor struct EnrollReplacementTests {
    /// `user`'s enrollment of `finger`, cancelled once its prompt shows; its answer.
    func cancelledEnrollment(
        _ core: Core, _ finger: Finger = .rightIndex, password: String? = nil, caller: Caller = .root
    ) async -> Reply? {
        let client = CollectingClient(), input = PromptInput()
        let running = Running {
            await core.enroll(
                user: "alice", finger: finger, password: password, origin: Origin(), caller: caller, client: client,
                input: input)
        }
        #expect(await client.waitFor(.prompt))
        input.deliver(.cancel)
        return await running.value()
    }

    func enroll(
        _ core: Core, _ finger: Finger = .rightIndex, password: String? = nil, caller: Caller = .root,
        client: CollectingClient = CollectingClient()
    ) async -> Reply? {
        await within {
            await core.enroll(
                user: "alice", finger: finger, password: password, origin: Origin(), caller: caller, client: client,
                input: PromptInput())
        }
    }

    /// The prints deleted from the stub chip so far.
    func chipDeleted(_ bed: TestBed) -> [StubPrint] {
        bed.reader.chipDeletions.flatMap { $0 }.compactMap { StubPrint($0) }
    }

    static let cancelled = Refusal(.appCancel, reason: .cancelled, text: .cancelled)

    /// The chip's copy of the print being replaced goes before the prompt; the enrollment then
    /// ends without a new print, and the old file goes too: the finger is not enrolled, and the
    /// change is an enrollment change as a deletion's is.
    @Test func aReplacementCancelledAtItsPromptLeavesTheFingerNotEnrolled() async throws {
        try await withChipReader { bed, core in
            let events = await core.collectEvents()
            bed.reader.scriptEnrollment(.hold)
            #expect(await cancelledEnrollment(core) == Self.cancelled)
            #expect(chipDeleted(bed).map(\.payload) == ["ridges"], "\(chipDeleted(bed))")  // the old print
            #expect(!exists(bed.printPath("alice", .rightIndex)))
            #expect(await core.list(user: "alice", caller: .root).fingers == [])
            #expect(events.all.contains { $0.contains(#""reason":"deleted:right-index-finger""#) }, "\(events.all)")
            #expect(bed.logged.all.contains { $0.contains("replacing right-index-finger ended without a new print") })
        }
    }

    /// alice replaced her own finger with her password, and the reader failed: she saw the set of
    /// prints it left, so her other fingers work at once; after root, her password is asked first.
    @Test func aReplacementTheReaderEndedIsADeletionRecordedAsOneByWhoMadeIt() async throws {
        try await withChipReader { bed, core in
            try await bed.enroll(core, finger: .leftThumb)
            try await bed.enroll(core, finger: .leftIndex)
            try await core.recordPasswordSuccess(context())
            bed.reader.scriptEnrollment(.fail(.failed("the sensor failed")))
            let password = bed.passwords.correctPassword
            #expect(await enroll(core, password: password, caller: .alice)?.isSuccess == false)
            #expect(await core.list(user: "alice", caller: .root).fingers == [.leftThumb, .leftIndex])
            #expect(
                await core.canEvaluate(user: "alice", policy: .biometrics, rhost: nil, caller: .alice) == .success())

            bed.reader.scriptEnrollment(.hold)
            #expect(await cancelledEnrollment(core, .leftThumb) == Self.cancelled)
            #expect(await core.list(user: "alice", caller: .root).fingers == [.leftIndex])
            #expect(await core.preflight()?.reason == .enrollmentChanged)
        }
    }

    /// A chip that refused to delete the old print still holds it: its file stays with it.
    @Test func aReplacementWhoseOldCopyTheChipKeptLeavesTheOldFile() async throws {
        try await withChipReader { bed, core in
            bed.reader.scriptChipDeletion(ChipDeletion(deleted: 0, failure: "The device is busy"))
            bed.reader.scriptEnrollment(.hold)
            #expect(await cancelledEnrollment(core) == Self.cancelled)
            #expect(exists(bed.printPath("alice", .rightIndex)))
            #expect(await core.list(user: "alice", caller: .root).fingers == [.rightIndex])
        }
    }

    /// The chip answered the deletion of the old copy only past its deadline, and kept it: the
    /// enrollment that ends without a new print leaves the old file, as for a refusal in time.
    @Test func aReplacementWhoseOldCopyTheChipKeptPastTheDeadlineLeavesTheOldFile() async throws {
        try await withChipReader { bed, core in
            bed.reader.scriptChipDeletion(ChipDeletion(deleted: 0, failure: "The device is busy"))
            bed.reader.holdChip()
            bed.reader.scriptEnrollment(.hold)
            let client = CollectingClient(), input = PromptInput()
            let running = Running {
                await core.enroll(
                    user: "alice", finger: .rightIndex, password: nil, origin: Origin(), caller: .root,
                    client: client, input: input)
            }
            // The prompt shows once the deletion's deadline has passed.
            #expect(await client.waitFor(.prompt, within: Core.readerReclaimMilliseconds + 5_000))
            bed.reader.releaseChip()
            input.deliver(.cancel)
            #expect(await running.value() == Self.cancelled)
            #expect(exists(bed.printPath("alice", .rightIndex)))
            #expect(await core.list(user: "alice", caller: .root).fingers == [.rightIndex])
        }
    }

    /// The new print could not be stored, and what is there under its finger's name is not it (a
    /// directory here; the print it was to replace alike): the chip's copy of the new print goes.
    @Test func aPrintThatCannotBeStoredGoesFromTheChipThoughItsFingerHasAFile() async throws {
        try await withChipReader { bed, core in
            let blocked = bed.printPath("alice", .leftThumb)
            #expect(mkdir(blocked, 0o700) == 0 && mkdir("\(blocked)/x", 0o700) == 0)  // the rename fails
            #expect(await enroll(core, .leftThumb) == Core.storageFailure)
            // Its finger is listed, as a file that cannot be read: it is not this print.
            #expect(await core.list(user: "alice", caller: .root).fingers == [.leftThumb, .rightIndex])
            #expect(chipDeleted(bed).map(\.finger) == [Finger.leftThumb.fpFinger], "\(chipDeleted(bed))")
        }
    }

    /// Prints must be sealed and the TPM does not answer: refused at once, before any scan.
    @Test func enrollingWhileThePrintCannotBeSealedIsRefusedBeforeAnyScan() async throws {
        try await withTestBed { bed in
            let sealer = MachineSealer(machine: 7)
            sealer.answering.withLock { $0 = false }
            var setup = try bed.setup()
            setup.sealing = PrintSealing(mode: .tpm, sealer: sealer, state: setup.stateDirectory)
            let core = try Core(setup)
            let client = CollectingClient()
            #expect(await enroll(core, client: client) == Core.sealingRefusal)
            #expect(Core.sealingRefusal == Refusal(.internalError, reason: .printsSealed, text: .enrollNotSealedNow))
            #expect(client.shown.isEmpty)
            #expect(bed.reader.enrollments.isEmpty)
            #expect(directoryEntries(bed.storePath) == [])
            await core.shutdown()
        }
    }

    /// A save the TPM cannot seal is told apart from a store that failed (the enrollment's
    /// backstop answers it as the refusal before the scans).
    @Test func aPrintTheTPMCannotSealIsASealingFailure() async throws {
        try await withTemporaryDirectory { dir in
            let sealer = MachineSealer(machine: 7)
            sealer.answering.withLock { $0 = false }
            let files = PrintFiles(
                root: try Directory.openRoot("\(dir)/prints"), reader: StubReader(),
                sealing: PrintSealing(mode: .tpm, sealer: sealer, state: try Directory.openRoot("\(dir)/state")))
            let device = DeviceKey(driver: "stub", deviceID: "stub-0")
            #expect {
                try files.save(
                    StubReader().print(user: "alice", finger: 7), user: "alice", device: device, finger: .rightIndex)
            } throws: { error in
                guard case .sealing = error as? StorageError else { return false }
                return true
            }
        }
    }
}
