// Prints sealed at rest: the file format, the data key's life by mode, conversion, export, and what
// a sealed print that does not open costs (that finger, never the domain state). The TPM itself is
// tested against swtpm in TPMTests; here a stand-in sealer bound to a "machine" value.
import Glibc
import Logging
import Synchronization
import Testing
import TouchGateConfig
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

/// Seals by XOR with a per-machine byte and a tag; a blob of another machine does not open.
/// `refusal`: what the TPM says of what it does not do (nil: a failure that may pass); with
/// `.ownerPassword` it seals and unseals nothing.
final class MachineSealer: KeySealer {
    let machine: UInt8
    let present: Bool
    let refusal: TPMRefusal?
    let answering = Mutex(true)
    let calls = Mutex(0)
    init(machine: UInt8, present: Bool = true, refusal: TPMRefusal? = nil) {
        self.machine = machine; self.present = present; self.refusal = refusal
    }

    func probe() throws(SealingError) {
        if !present { throw SealingError("nothing answers", absent: true) }
        guard answering.withLock({ $0 }) else { throw SealingError("the TPM does not answer") }
    }
    func seal(_ secret: [UInt8]) throws(SealingError) -> [UInt8] {
        calls.withLock { $0 += 1 }
        guard answering.withLock({ $0 }) else { throw SealingError("the TPM does not answer") }
        if refusal == .ownerPassword { throw SealingError("the TPM refused to make its storage key", refusal: refusal) }
        return [machine] + secret.map { $0 ^ machine }
    }
    func unseal(_ blob: [UInt8]) throws(SealingError) -> [UInt8] {
        calls.withLock { $0 += 1 }
        guard answering.withLock({ $0 }) else { throw SealingError("the TPM does not answer") }
        if refusal == .ownerPassword { throw SealingError("the TPM refused to make its storage key", refusal: refusal) }
        guard blob.first == machine else { throw SealingError("the TPM refused to unseal", refusal: refusal) }
        return blob.dropFirst().map { $0 ^ machine }
    }
}

@Suite("Sealed prints")
struct PrintSealingTests {
    let reader = StubReader()
    let device = DeviceKey(driver: "stub", deviceID: "stub-0")

    func files(
        _ dir: String, _ mode: SealMode = .tpm, _ sealer: (any KeySealer)?, retryAfter: Int64 = 0,
        openOnly: Bool = false
    ) throws -> PrintFiles {
        let state = try Directory.openRoot("\(dir)/state")
        return PrintFiles(
            root: try Directory.openRoot("\(dir)/prints"), reader: reader,
            sealing: PrintSealing(
                mode: mode, sealer: sealer, state: state, retryAfterMilliseconds: retryAfter, openOnly: openOnly))
    }

    /// alice's right index finger saved, sealed by a TPM that answers; that TPM.
    @discardableResult
    func aliceSealed(in dir: String) throws -> MachineSealer {
        let sealer = MachineSealer(machine: 7)
        try files(dir, .tpm, sealer).save(
            reader.print(user: "alice", finger: 7), user: "alice", device: device, finger: .rightIndex)
        return sealer
    }

    func plain(_ dir: String) throws -> PrintFiles {
        PrintFiles(root: try Directory.openRoot("\(dir)/prints"), reader: reader)
    }

    func path(_ dir: String, _ finger: Finger = .rightIndex, user: String = "alice") -> String {
        "\(dir)/prints/\(user)/stub/stub-0/\(PrintFiles.fileName(finger))"
    }

    @Test func aSealedPrintOnDiskHoldsNoneOfItsBytesAndOpensBackWithTheSameDigest() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir, .tpm, MachineSealer(machine: 7))
            let bytes = reader.print(user: "alice", finger: Finger.rightIndex.fpFinger, payload: "ridges-and-loops")
            try store.save(bytes, user: "alice", device: device, finger: .rightIndex)

            let disk = try #require(contents(path(dir)))
            #expect(SealedPrint.isSealed(disk))
            #expect(!containsRun(disk, Array("ridges-and-loops".utf8)))
            #expect(permissions("\(dir)/state/sealed-key") == 0o600)
            #expect(try store.template("alice", device: device, finger: .rightIndex) == bytes)
            let listed = store.list("alice", device: device).prints
            #expect(listed == [EnrolledPrint(finger: .rightIndex, digest: PrintFiles.digest(bytes))])
        }
    }

    @Test func anotherMachinesTPMOpensNoPrintButTheFingerStaysEnrolledWithItsDigest() async throws {
        try await withTemporaryDirectory { dir in
            let bytes = reader.print(user: "alice", finger: Finger.rightIndex.fpFinger)
            try files(dir, .tpm, MachineSealer(machine: 7)).save(
                bytes, user: "alice", device: device, finger: .rightIndex)

            // The same disk, another TPM: the key does not unseal.
            let elsewhere = try files(dir, .tpm, MachineSealer(machine: 9))
            let listed = try #require(elsewhere.list("alice", device: device).prints.first)
            #expect(listed.damaged)
            #expect(listed.digest == PrintFiles.digest(bytes))
            #expect(listed.problem?.contains("the TPM refused to unseal") == true)
            #expect(throws: StorageError.self) { try elsewhere.template("alice", device: device, finger: .rightIndex) }
            #expect(elsewhere.gallery(device: device).isEmpty)
            // Nor is anything written in the clear while the key cannot be had.
            #expect(throws: StorageError.self) {
                try elsewhere.save(bytes, user: "alice", device: device, finger: .leftIndex)
            }
            #expect(!exists(path(dir, .leftIndex)))
        }
    }

    @Test func aKeyTheTPMRefusesForGoodIsSaidWithTheWayOutAskedAgainAndNeverReplaced() async throws {
        try await withTemporaryDirectory { dir in
            try aliceSealed(in: dir)
            let key = try #require(contents("\(dir)/state/sealed-key"))
            // Another machine's TPM, or this one cleared: it refuses the key for good.
            let other = MachineSealer(machine: 9, refusal: .key)
            let store = try files(dir, .auto, other)
            #expect(store.list("alice", device: device).prints.first?.closed == true)
            let state = store.sealing?.keyState()
            guard case .refused(.key, let why)? = state else { Issue.record("\(String(describing: state))"); return }
            #expect(
                why == "the TPM no longer opens the key the prints are sealed with (the TPM was cleared, the disk "
                    + "comes from another machine, or the PCRs it is bound to changed): remove \(dir)/state/sealed-key, "
                    + "restart touchgated and enroll again; the TPM said: the TPM refused to unseal")
            #expect(store.sealing?.refusal == .key)
            // Asked again (bound PCRs may come back), but no key is made in its place and no print
            // is written.
            let before = other.calls.withLock { $0 }
            #expect(throws: StorageError.self) {
                try store.save(
                    reader.print(user: "alice", finger: 1), user: "alice", device: device, finger: .leftThumb)
            }
            #expect(other.calls.withLock { $0 } == before + 1)
            #expect(contents("\(dir)/state/sealed-key") == key)
            #expect(!exists(path(dir, .leftThumb)))
            // Back on the TPM that sealed it, the refusal is over.
            let home = try files(dir, .auto, MachineSealer(machine: 7))
            #expect(home.list("alice", device: device).prints.first?.closed == false)
            #expect(home.sealing?.refusal == nil)
        }
    }

    @Test func aTPMWithAnOwnerPasswordIsSaidSoAndMakesNoKey() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir, .auto, MachineSealer(machine: 7, refusal: .ownerPassword))
            #expect(throws: StorageError.self) {
                try store.save(
                    reader.print(user: "alice", finger: 1), user: "alice", device: device, finger: .leftThumb)
            }
            let state = store.sealing?.keyState()
            guard case .refused(.ownerPassword, let why)? = state else {
                Issue.record("\(String(describing: state))")
                return
            }
            #expect(
                why == "sealing cannot use a TPM whose owner hierarchy has a password: clear the owner password, or "
                    + "set seal = no in touchgate.conf; the TPM said: the TPM refused to make its storage key")
            #expect(!exists("\(dir)/state/sealed-key") && !exists(path(dir, .leftThumb)))
        }
    }

    @Test func aSealedFileMovedToAnotherFingerOrUserDoesNotOpen() async throws {
        try await withTemporaryDirectory { dir in
            let sealer = MachineSealer(machine: 7)
            let store = try files(dir, .tpm, sealer)
            try store.save(reader.print(user: "alice", finger: 7), user: "alice", device: device, finger: .rightIndex)
            try plantFile(path(dir, .leftIndex), try #require(contents(path(dir))))
            let moved = try #require(store.list("alice", device: device).prints.first { $0.finger == .leftIndex })
            #expect(moved.damaged)
            #expect(moved.problem?.contains("does not open with this machine's data key") == true)
            // The key is had, so no later try opens it: a damaged print to enroll again, not a
            // TPM away (the person is told which finger, not to wait for the TPM).
            #expect(!moved.closed && moved.needsEnrolling)

            // The same finger's file under another user: bound to alice, it opens for nobody else.
            try plantDirectory("\(dir)/prints/bob")
            try plantDirectory("\(dir)/prints/bob/stub")
            try plantDirectory("\(dir)/prints/bob/stub/stub-0")
            try plantFile(path(dir, user: "bob"), try #require(contents(path(dir))))
            let taken = try #require(store.list("bob", device: device).prints.first { $0.finger == .rightIndex })
            #expect(taken.damaged && taken.problem?.contains("does not open with this machine's data key") == true)
        }
    }

    @Test func autoWithoutATPMKeepsPrintsInTheClearAndMakesNoKey() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir, .auto, MachineSealer(machine: 7, present: false))
            let bytes = reader.print(user: "alice", finger: 7)
            try store.save(bytes, user: "alice", device: device, finger: .rightIndex)
            #expect(contents(path(dir)) == bytes)
            #expect(!exists("\(dir)/state/sealed-key"))
            #expect(store.sealing?.keyState() == .off("no TPM is present (nothing answers)"))
        }
    }

    @Test func autoWithATPMThatFailsWritesNothingInTheClearAndAsksItAgain() async throws {
        try await withTemporaryDirectory { dir in
            let sealer = MachineSealer(machine: 7)
            sealer.answering.withLock { $0 = false }  // there, but not answering (a probe in time fails)
            let store = try files(dir, .auto, sealer)
            let bytes = reader.print(user: "alice", finger: 7)
            #expect(throws: StorageError.self) {
                try store.save(bytes, user: "alice", device: device, finger: .rightIndex)
            }
            #expect(!exists(path(dir)))
            guard case .unavailable = store.sealing?.keyState() else { Issue.record("not unavailable"); return }
            // Once it answers, the key is made and the print is sealed.
            sealer.answering.withLock { $0 = true }
            try store.save(bytes, user: "alice", device: device, finger: .rightIndex)
            #expect(SealedPrint.isSealed(try #require(contents(path(dir)))))
        }
    }

    @Test func tpmRequiredWithoutTpm2TssFailsClosed() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir, .tpm, nil)
            #expect(throws: StorageError.self) {
                try store.save(
                    reader.print(user: "alice", finger: 7), user: "alice", device: device, finger: .rightIndex)
            }
            guard case .unavailable = store.sealing?.keyState() else { Issue.record("not unavailable"); return }
        }
    }

    @Test func aTPMThatStopsAnsweringIsAskedAgainAndTheKeyIsKeptOnceHad() async throws {
        try await withTemporaryDirectory { dir in
            let sealer = try aliceSealed(in: dir)

            sealer.answering.withLock { $0 = false }
            let restarted = try files(dir, .tpm, sealer)
            #expect(restarted.list("alice", device: device).prints.first?.damaged == true)
            sealer.answering.withLock { $0 = true }
            #expect(restarted.list("alice", device: device).prints.first?.damaged == false)
            let before = sealer.calls.withLock { $0 }
            sealer.answering.withLock { $0 = false }
            #expect(restarted.list("alice", device: device).prints.first?.damaged == false)
            #expect(sealer.calls.withLock { $0 } == before)
        }
    }

    @Test func aFailedTPMIsNotAskedAgainBeforeTheRetryIntervalEnds() async throws {
        try await withTemporaryDirectory { dir in
            let sealer = try aliceSealed(in: dir)
            sealer.answering.withLock { $0 = false }
            let store = try files(dir, .tpm, sealer, retryAfter: 60_000)
            let before = sealer.calls.withLock { $0 }
            for _ in 0..<5 { #expect(store.list("alice", device: device).prints.first?.closed == true) }
            #expect(sealer.calls.withLock { $0 } == before + 1)
        }
    }

    @Test func existingPrintsAreSealedAtStartWithoutChangingTheirDigests() async throws {
        try await withTemporaryDirectory { dir in
            let bytes = reader.print(user: "alice", finger: 7)
            try plain(dir).save(bytes, user: "alice", device: device, finger: .rightIndex)
            let before = try plain(dir).list("alice", device: device)

            let store = try files(dir, .auto, MachineSealer(machine: 7))
            var logged: [String] = []
            #expect(store.sealExisting { logged.append($0) } == 1)
            #expect(logged.isEmpty)
            #expect(SealedPrint.isSealed(try #require(contents(path(dir)))))
            #expect(store.list("alice", device: device) == before)
            #expect(store.sealExisting { _ in } == 0)
        }
    }

    @Test func theExportWritesEverySealedPrintBackAsItWas() async throws {
        try await withTemporaryDirectory { dir in
            let bytes = reader.print(user: "alice", finger: 7)
            let store = try files(dir, .tpm, MachineSealer(machine: 7))
            try store.save(bytes, user: "alice", device: device, finger: .rightIndex)
            #expect(try store.exportClear { _ in } == 1)
            #expect(contents(path(dir)) == bytes)

            // With another machine's TPM nothing opens: the export says so and leaves the file.
            try store.save(bytes, user: "alice", device: device, finger: .rightIndex)
            let sealed = contents(path(dir))
            let elsewhere = try files(dir, .tpm, MachineSealer(machine: 9))
            #expect(throws: StorageError.self) { try elsewhere.exportClear { _ in } }
            #expect(contents(path(dir)) == sealed)
        }
    }

    @Test func theExportOpensWhatWasSealedEvenWithSealingTurnedOffAndMakesNoKey() async throws {
        try await withTemporaryDirectory { dir in
            try aliceSealed(in: dir)
            let export = try files(dir, .no, MachineSealer(machine: 7), openOnly: true)
            #expect(try export.exportClear { _ in } == 1)
            #expect(contents(path(dir)) == reader.print(user: "alice", finger: 7))

            // Nothing was ever sealed in another directory: the export makes no key there.
            let other = "\(dir)/other"
            #expect(mkdir(other, 0o700) == 0)
            let bytes = reader.print(user: "alice", finger: 7)
            try plain(other).save(bytes, user: "alice", device: device, finger: .rightIndex)
            let sealer = MachineSealer(machine: 7)
            #expect(try files(other, .tpm, sealer, openOnly: true).exportClear { _ in } == 0)
            #expect(!exists("\(other)/state/sealed-key") && sealer.calls.withLock { $0 } == 0)
        }
    }

    @Test func aDirectoryTheExportCannotOpenIsCountedAsLeftSealed() async throws {
        try await withTemporaryDirectory { dir in
            try aliceSealed(in: dir)
            let userDir = "\(dir)/prints/alice"
            #expect(chmod(userDir, 0o777) == 0)  // writable by others: not trusted
            var logged: [String] = []
            let export = try files(dir, .tpm, MachineSealer(machine: 7), openOnly: true)
            #expect(throws: StorageError.self) { try export.exportClear { logged.append($0) } }
            #expect(logged.count == 1 && logged.first?.hasPrefix("\(userDir): left as it is") == true)
        }
    }

    /// The TPM did not answer when the daemon started: the prints it found in the clear are
    /// sealed by a later pass once the TPM answers, not left so for the daemon's life.
    @CoreActor @Test func printsFoundInTheClearAreSealedOnceTheTPMAnswers() async throws {
        try await withTestBed { bed in
            try bed.plantPrint("alice", .rightIndex, bed.reader.print(user: "alice", finger: 7))
            let sealer = MachineSealer(machine: 7)
            sealer.answering.withLock { $0 = false }
            let failed = OneShot<Void>(), sealed = OneShot<Void>()
            var setup = try bed.setup()
            setup.log = Logger(label: "test") { _ in
                LineHandler { line in
                    if line.hasSuffix("asked again later") { CoreLoop.shared.post { failed.set(()) } }
                    if line == "prints are sealed to the TPM (1 sealed now)" { CoreLoop.shared.post { sealed.set(()) } }
                }
            }
            setup.sealing = PrintSealing(
                mode: .auto, sealer: sealer, state: setup.stateDirectory, retryAfterMilliseconds: 0)
            let core = try Core(setup)
            core.beginSealing()
            #expect(await value(of: failed) != nil)
            #expect(!SealedPrint.isSealed(try #require(contents(bed.printPath("alice", .rightIndex)))))

            sealer.answering.withLock { $0 = true }
            #expect(await value(of: sealed) != nil)
            #expect(SealedPrint.isSealed(try #require(contents(bed.printPath("alice", .rightIndex)))))
            await core.shutdown()
        }
    }

    @Test func sealingOffLeavesSealedPrintsClosedAndSaysWhy() async throws {
        try await withTemporaryDirectory { dir in
            try aliceSealed(in: dir)
            let off = try files(dir, .no, MachineSealer(machine: 7))
            let listed = try #require(off.list("alice", device: device).prints.first)
            #expect(listed.damaged)
            #expect(listed.problem == "it is sealed, and sealing is off (seal = no)")
        }
    }
}

private func containsRun(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
}

/// Hands every logged line to `line`, from whichever thread logs it.
private struct LineHandler: LogHandler {
    let line: @Sendable (String) -> Void
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    init(_ line: @escaping @Sendable (String) -> Void) { self.line = line }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { line(event.message.description) }
}
