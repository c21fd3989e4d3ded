// Prints in fprintd's layout: 0600 files in 0700 directories, libfprint order, digests, damage, the cache.
import Glibc
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateThreads
import TouchGateWire

@Suite("PrintFiles and PrintCache")
struct PrintStoreTests {
    let reader = StubReader()
    let device = DeviceKey(driver: "stub", deviceID: "stub-0")

    func files(_ dir: String) throws -> PrintFiles {
        PrintFiles(root: try Directory.openRoot("\(dir)/prints"), reader: reader)
    }

    func save(_ files: PrintFiles, _ finger: Finger, _ payload: String = "ridges", user: String = "alice") throws
        -> [UInt8]
    {
        let bytes = reader.print(user: user, finger: finger.fpFinger, payload: payload)
        try files.save(bytes, user: user, device: device, finger: finger)
        return bytes
    }

    func fingers(_ files: PrintFiles, _ user: String = "alice") -> [Finger] {
        files.list(user, device: device).prints.map(\.finger)
    }

    @Test @CoreActor func createsPrivateStateUsersAndPrintDirectories() async throws {
        try await withTestBed { bed in
            _ = try bed.makeCore()
            #expect(permissions(bed.statePath) == 0o700)
            #expect(permissions("\(bed.statePath)/users") == 0o700)
            #expect(permissions(bed.storePath) == 0o700)
        }
    }

    @Test func savesATemplateAsAnOwnerOnlyFileInFprintdsLayout() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            let bytes = try save(store, .rightIndex)

            // <store>/<user>/<driver>/<device id>/<libfprint's finger number in hex>
            for level in ["alice", "alice/stub", "alice/stub/stub-0"] {
                #expect(permissions("\(dir)/prints/\(level)") == 0o700, "\(level)")
            }
            #expect(permissions("\(dir)/prints/alice/stub/stub-0/7") == 0o600)
            #expect(contents("\(dir)/prints/alice/stub/stub-0/7") == bytes)
            #expect(try store.template("alice", device: device, finger: .rightIndex) == bytes)
            #expect(try store.template("alice", device: device, finger: .leftIndex) == nil)
        }
    }

    @Test func namesEachFileAfterLibfprintsFingerNumberInHex() {
        #expect(Finger.allCases.map(PrintFiles.fileName) == ["1", "2", "3", "4", "5", "6", "7", "8", "9", "a"])
    }

    @Test func listsFingersInLibfprintOrderWhateverTheOrderOfEnrolment() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            for finger in [Finger.rightLittle, .leftIndex, .rightThumb, .leftThumb] { _ = try save(store, finger) }
            #expect(fingers(store) == [.leftThumb, .leftIndex, .rightThumb, .rightLittle])
        }
    }

    @Test func givesEachPrintTheSHA256OfItsTemplate() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            let bytes = try save(store, .leftThumb)
            #expect(
                store.list("alice", device: device)
                    == .prints([EnrolledPrint(finger: .leftThumb, digest: sha256Hex(bytes))]))
        }
    }

    @Test func keepsEachUsersPrintsApart() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            _ = try save(store, .rightIndex, user: "alice")
            _ = try save(store, .leftThumb, user: "bob")
            #expect(fingers(store, "alice") == [.rightIndex])
            #expect(fingers(store, "bob") == [.leftThumb])
            #expect(fingers(store, "carol") == [])
        }
    }

    @Test func deletingOneFingerReturnsOnlyThatFingerAndKeepsTheOthers() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            _ = try save(store, .rightIndex)
            _ = try save(store, .leftIndex)

            #expect(try store.delete("alice", device: device, fingers: [.rightIndex]).removed == [.rightIndex])
            #expect(fingers(store) == [.leftIndex])
            #expect(directoryEntries("\(dir)/prints/alice/stub/stub-0") == ["2"])
        }
    }

    /// As fprintd goes on past a print it cannot delete: the others go, and the failure is told.
    @Test func aFileThatCannotBeRemovedKeepsNoOtherFingerFromGoing() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            _ = try save(store, .rightIndex)
            // Where left-index's file would be, a directory with something in it: unlink fails.
            let blocked = "\(dir)/prints/alice/stub/stub-0/2"
            #expect(mkdir(blocked, 0o700) == 0 && mkdir("\(blocked)/x", 0o700) == 0)

            let deletion = try store.delete("alice", device: nil, fingers: Finger.allCases)
            #expect(deletion.removed == [.rightIndex])
            #expect(deletion.failure != nil)
            #expect(directoryEntries("\(dir)/prints/alice/stub/stub-0") == ["2"])
        }
    }

    @Test func deletingAFingerThatIsNotEnrolledRemovesNothing() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            _ = try save(store, .rightIndex)
            #expect(try store.delete("alice", device: device, fingers: [.leftThumb]).removed == [])
            #expect(fingers(store) == [.rightIndex])
            #expect(try store.delete("nobody-enrolled", device: nil, fingers: Finger.allCases).removed == [])
        }
    }

    @Test func deletingAllReturnsEveryEnrolledFingerInLibfprintOrderAndRemovesTheEmptyDirectories() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            for finger in [Finger.rightRing, .leftMiddle, .rightThumb] { _ = try save(store, finger) }

            #expect(
                try store.delete("alice", device: nil, fingers: Finger.allCases).removed == [
                    .leftMiddle, .rightThumb, .rightRing,
                ])
            #expect(fingers(store) == [])
            // As fprintd leaves it: no empty directories behind.
            #expect(directoryEntries("\(dir)/prints") == [])
        }
    }

    @Test func replacingATemplateChangesItsDigest() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            let first = try save(store, .rightIndex, "first")
            let before = store.list("alice", device: device).prints
            let second = try save(store, .rightIndex, "second")
            let after = store.list("alice", device: device).prints

            #expect(before.map(\.digest) == [sha256Hex(first)])
            #expect(after.map(\.digest) == [sha256Hex(second)])
            #expect(after.map(\.finger) == [.rightIndex])
        }
    }

    @Test func aTemplateThatCannotBeReadStillCountsAsEnrolled() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            let good = try save(store, .rightIndex)
            // Bytes libfprint cannot deserialize: enrolled (it changes the set), but damaged.
            try plantFile("\(dir)/prints/alice/stub/stub-0/1", [0xDE, 0xAD])

            #expect(
                store.list("alice", device: device)
                    == .prints([
                        EnrolledPrint(
                            finger: .leftThumb, digest: sha256Hex([0xDE, 0xAD]), damaged: true,
                            problem: "libfprint cannot read it"),
                        EnrolledPrint(finger: .rightIndex, digest: sha256Hex(good)),
                    ]))
        }
    }

    @Test func aPrintOfAnotherFingerUserOrReaderIsDamaged() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            let path = "\(dir)/prints/alice/stub/stub-0"
            _ = try save(store, .rightIndex)
            // Each says, inside, that it belongs elsewhere than where it lies.
            try plantFile(
                "\(path)/1", StubPrint(driver: "stub", deviceID: "stub-0", finger: 2, user: "alice", payload: "x").bytes
            )
            try plantFile(
                "\(path)/2", StubPrint(driver: "stub", deviceID: "stub-0", finger: 2, user: "bob", payload: "x").bytes)
            try plantFile(
                "\(path)/3", StubPrint(driver: "stub", deviceID: "stub-9", finger: 3, user: "alice", payload: "x").bytes
            )
            try plantFile(
                "\(path)/4",
                StubPrint(driver: "other", deviceID: "stub-0", finger: 4, user: "alice", payload: "x").bytes)

            let prints = store.list("alice", device: device).prints
            #expect(prints.map(\.finger) == [.leftThumb, .leftIndex, .leftMiddle, .leftRing, .rightIndex])
            #expect(prints.map(\.damaged) == [true, true, true, true, false])
        }
    }

    /// Never followed: the finger is damaged (not used, to be enrolled again); the others still work.
    @Test func aTemplateBehindASymlinkIsDamagedNotFollowed() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            let good = try save(store, .rightIndex)
            try plantFile("\(dir)/elsewhere", reader.print(user: "alice", finger: 1))
            try plantSymlink(at: "\(dir)/prints/alice/stub/stub-0/1", to: "\(dir)/elsewhere")

            #expect(
                store.list("alice", device: device)
                    == .prints([
                        EnrolledPrint(
                            finger: .leftThumb, digest: "unreadable", damaged: true,
                            problem: "\(dir)/prints/alice/stub/stub-0/1 is a symbolic link"),
                        EnrolledPrint(finger: .rightIndex, digest: sha256Hex(good)),
                    ]))
        }
    }

    @Test func anOversizedTemplateIsDamagedNotRead() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            try store.save(
                [UInt8](repeating: 0xAB, count: (1 << 20) + 1), user: "alice", device: device, finger: .rightIndex)
            #expect(
                store.list("alice", device: device)
                    == .prints([
                        EnrolledPrint(
                            finger: .rightIndex, digest: "unreadable", damaged: true,
                            problem: "\(dir)/prints/alice/stub/stub-0/7 is larger than \(1 << 20) bytes")
                    ]))
        }
    }

    @Test func filesThatAreNotFingersAreIgnored() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            let bytes = try save(store, .rightThumb)
            for name in ["notes.txt", "0", "b", "10", "right-thumb.print"] {
                try plantFile("\(dir)/prints/alice/stub/stub-0/\(name)", "not a print")
            }
            #expect(
                store.list("alice", device: device)
                    == .prints([EnrolledPrint(finger: .rightThumb, digest: sha256Hex(bytes))]))
        }
    }

    @Test func withoutAReaderThePrintsOfEveryReaderAreListed() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            _ = try save(store, .rightIndex)
            let other = DeviceKey(driver: "elan", deviceID: "0")
            try store.save([1], user: "alice", device: other, finger: .leftThumb)

            #expect(Set(try store.devices("alice")) == [device, other])
            #expect(store.listAllDevices("alice").prints.map(\.finger) == [.leftThumb, .rightIndex])
            #expect(
                try store.delete("alice", device: nil, fingers: Finger.allCases).removed == [.leftThumb, .rightIndex])
            #expect(!exists("\(dir)/prints/alice"))
        }
    }

    // MARK: the cache

    @Test @CoreActor func theCachedAnswerFollowsSavesAndDeletes() async throws {
        try await withTemporaryDirectory { dir in
            let cache = PrintCache(files: try files(dir), pool: WorkerPool(name: "test", threads: 1, queueLimit: 16))
            func cached() async -> [Finger] { await cache.list("alice", device: device).prints.map(\.finger) }
            #expect(await cached() == [])  // cached as "none"
            try await cache.save(
                reader.print(user: "alice", finger: 7), user: "alice", device: device, finger: .rightIndex)
            #expect(await cached() == [.rightIndex])
            try await cache.save(
                reader.print(user: "alice", finger: 1), user: "alice", device: device, finger: .leftThumb)
            #expect(await cached() == [.leftThumb, .rightIndex])
            #expect(try await cache.delete("alice", device: device, fingers: [.leftThumb]).removed == [.leftThumb])
            #expect(await cached() == [.rightIndex])
        }
    }

    /// A list read from disk while the prints changed (a deletion finished meanwhile) is answered
    /// but not kept: the next request reads again.
    @Test @CoreActor func aListReadWhileThePrintsChangedIsNotKept() async throws {
        try await withTemporaryDirectory { dir in
            let pool = WorkerPool(name: "test", threads: 1, queueLimit: 16)
            let cache = PrintCache(files: try files(dir), pool: pool)
            try await cache.save(
                reader.print(user: "alice", finger: 7), user: "alice", device: device, finger: .rightIndex)
            // The pool's one thread held; the read, then a marker queued behind it.
            let gate = TouchGateThreads.Semaphore(), readDone = TouchGateThreads.Semaphore()
            let started = OneShot<Void>()
            let holder = Running {
                try? await pool.run {
                    CoreLoop.shared.post { started.set(()) }; gate.wait()
                }
            }
            #expect(await value(of: started) != nil)
            let reading = Running { await cache.list("alice", device: self.device).prints.map(\.finger) }
            _ = await loopUntil { pool.waiting >= 1 }
            let marker = Running { try? await pool.run { readDone.signal() } }
            _ = await loopUntil { pool.waiting >= 2 }
            try #require(pool.waiting == 2)
            gate.signal()
            readDone.wait()  // the list was read from disk; its answer waits for this loop turn
            _ = unlink("\(dir)/prints/alice/stub/stub-0/7")
            cache.invalidate("alice")  // as the daemon's own deletion ends
            #expect(await reading.value() == [.rightIndex])
            _ = await holder.value()
            _ = await marker.value()
            #expect(await cache.list("alice", device: device).prints.map(\.finger) == [])
        }
    }

    /// The daemon is the only writer, so canEvaluate answers from memory; but whether a print can
    /// be used depends on what its chip holds, so once a chip's listing changed every list is read
    /// (and judged) again.
    @Test @CoreActor func theCacheAnswersWithoutTouchingTheDiskUntilAChipsListingChanged() async throws {
        try await withTemporaryDirectory { dir in
            let cache = PrintCache(files: try files(dir), pool: WorkerPool(name: "test", threads: 1, queueLimit: 16))
            try await cache.save(
                reader.print(user: "alice", finger: 7), user: "alice", device: device, finger: .rightIndex)
            #expect(await cache.list("alice", device: device).prints.map(\.finger) == [.rightIndex])
            try plantFile("\(dir)/prints/alice/stub/stub-0/1", reader.print(user: "alice", finger: 1))
            #expect(await cache.list("alice", device: device).prints.map(\.finger) == [.rightIndex])
            #expect(fingers(try files(dir)) == [.leftThumb, .rightIndex])
            reader.chipListingChanged()
            #expect(await cache.list("alice", device: device).prints.map(\.finger) == [.leftThumb, .rightIndex])
        }
    }

    @Test @CoreActor func theSnapshotTakesTheReaderServedFromItsListAndReadsOnlyTheOthers() async throws {
        try await withTemporaryDirectory { dir in
            let files = try files(dir)
            let cache = PrintCache(files: files, pool: WorkerPool(name: "test", threads: 1, queueLimit: 16))
            let other = DeviceKey(driver: "stub", deviceID: "stub-1")
            _ = try save(files, .rightIndex)
            try files.save(reader.print(user: "alice", finger: 1), user: "alice", device: other, finger: .leftThumb)
            #expect(await cache.list("alice", device: device).prints.map(\.finger) == [.rightIndex])
            // Planted on the reader served after its list was read: the snapshot does not read that
            // reader again (a sealed print would be opened twice), but reads the other one.
            try plantFile("\(dir)/prints/alice/stub/stub-0/2", reader.print(user: "alice", finger: 2))
            let entries = try #require(await cache.snapshotEntries("alice"))
            #expect(entries.count == 2)
            #expect(entries.contains { $0.hasPrefix("\(Finger.leftThumb.rawValue):") })
            #expect(entries.contains { $0.hasPrefix("\(Finger.rightIndex.rawValue):") })
        }
    }

    /// What a full match-on-chip reader may delete is judged against every user's prints: a user
    /// whose directory is not trusted makes that "not known", never "holds none".
    @Test func everyTemplateIsUnknownWhenOneUsersDirectoryIsNotTrusted() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            let alices = try save(store, .rightIndex)
            let bobs = try save(store, .leftThumb, user: "bob")
            #expect(Set(try #require(store.everyTemplate(device: device))) == [alices, bobs])
            #expect(chmod("\(dir)/prints/bob/stub/stub-0", 0o770) == 0)  // writable by its group
            #expect(store.everyTemplate(device: device) == nil)
        }
    }

    /// A user whose name looks like a temporary file's (a valid account name) is a user like any
    /// other: their prints are judged against, kept from a chip's cleanup, and found by the
    /// duplicate check.
    @Test func aUserNamedLikeATemporaryFileCountsInEveryTemplateAndTheGallery() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            let alices = try save(store, .rightIndex)
            let theirs = try save(store, .leftThumb, user: "a.tmp.1")
            let dotted = try save(store, .leftIndex, user: ".x.tmp-y")
            #expect(Set(try #require(store.everyTemplate(device: device))) == [alices, theirs, dotted])
            #expect(Set(store.gallery(device: device).map(\.user)) == ["alice", "a.tmp.1", ".x.tmp-y"])
        }
    }
}
