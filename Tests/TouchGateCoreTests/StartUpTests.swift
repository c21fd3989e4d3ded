// At start: stale temporary files removed, and prints of the older layout moved to fprintd's without loss.
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("StartUp")
struct StartUpTests {
    let reader = StubReader()

    @Test func staleTemporaryFilesOfInterruptedWritesAreRemovedAndNothingElse() async throws {
        try await withTemporaryDirectory { dir in
            let state = "\(dir)/state", store = "\(dir)/prints", device = "\(dir)/prints/alice/stub/stub-0"
            try plantDirectory("\(state)/users/alice")
            try plantDirectory(device)
            let stale = [
                "\(state)/.secret.tmp-1f2e3d", "\(state)/users/.x.tmp-9", "\(state)/users/alice/.state.json.tmp-abc123",
                "\(state)/users/alice/state.json.tmp.4242", "\(store)/.y.tmp-0", "\(store)/alice/.z.tmp-77",
                "\(device)/.7.tmp-deadbeef",
            ]
            let kept = [
                "\(state)/secret", "\(state)/users/alice/state.json",
                "\(state)/users/alice/state.json.corrupt-1700000000",
                "\(state)/users/alice/notes.tmp", "\(state)/users/alice/state.json.tmp.",
                "\(state)/users/alice/a.tmp.12x",
                "\(device)/7", "\(device)/.hidden",
            ]
            for path in stale + kept { try plantFile(path, "x") }

            let removed = StartUp.removeStaleTemporaries(
                state: try Directory.openRoot(state), printStore: try Directory.openRoot(store))

            #expect(removed == stale.count)
            #expect(stale.filter(exists) == [])
            #expect(kept.filter { !exists($0) } == [])
        }
    }

    @Test @CoreActor func aCrashedWriteLeavesNothingTheNextStartDoesNotRemove() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            await core.states.flush()
            // What kill -9 between the temporary file and the rename leaves.
            try plantFile("\(bed.statePath)/users/alice/.state.json.tmp-5eed", "{\"half\":")
            let removed = StartUp.removeStaleTemporaries(
                state: try Directory.openRoot(bed.statePath),
                printStore: try Directory.openRoot(bed.storePath))
            #expect(removed == 1)
            #expect(directoryEntries("\(bed.statePath)/users/alice") == ["state.json"])
            #expect(await (try bed.makeCore()).preflight() == nil)
        }
    }

    // MARK: the older layout

    func legacy(_ dir: String, _ user: String, _ finger: Finger) -> String {
        "\(dir)/state/users/\(user)/\(finger.rawValue).print"
    }

    func migrate(_ dir: String) throws -> [String] {
        let logged = Collector<String>()
        let files = PrintFiles(root: try Directory.openRoot("\(dir)/prints"), reader: reader)
        StartUp.migrateLegacyPrints(state: try Directory.openRoot("\(dir)/state"), files: files) { logged.append($0) }
        return logged.all
    }

    @Test func printsOfTheOlderLayoutMoveIntoFprintdsLayoutWithTheirBytes() async throws {
        try await withTemporaryDirectory { dir in
            try plantDirectory("\(dir)/state/users/alice")
            try plantDirectory("\(dir)/state/users/bob")
            let aliceIndex = reader.print(user: "alice", finger: 7), aliceThumb = reader.print(user: "alice", finger: 1)
            let bobIndex = reader.print(user: "bob", finger: 7)
            try plantFile(legacy(dir, "alice", .rightIndex), aliceIndex)
            try plantFile(legacy(dir, "alice", .leftThumb), aliceThumb)
            try plantFile(legacy(dir, "bob", .rightIndex), bobIndex)
            try plantFile("\(dir)/state/users/alice/state.json", "{}")

            let log = try migrate(dir)

            #expect(contents("\(dir)/prints/alice/stub/stub-0/7") == aliceIndex)
            #expect(contents("\(dir)/prints/alice/stub/stub-0/1") == aliceThumb)
            #expect(contents("\(dir)/prints/bob/stub/stub-0/7") == bobIndex)
            #expect(permissions("\(dir)/prints/alice/stub/stub-0/7") == 0o600)
            #expect(directoryEntries("\(dir)/state/users/alice") == ["state.json"])
            #expect(directoryEntries("\(dir)/state/users/bob") == [])
            #expect(log.count == 3)
            // Once moved, a second start has nothing to do.
            #expect(try migrate(dir) == [])
        }
    }

    @Test func aPrintLibfprintCannotReadIsLeftInPlace() async throws {
        try await withTemporaryDirectory { dir in
            try plantDirectory("\(dir)/state/users/alice")
            try plantFile(legacy(dir, "alice", .rightIndex), [0xDE, 0xAD])
            try plantFile(legacy(dir, "alice", .leftThumb), reader.print(user: "alice", finger: 1))

            let log = try migrate(dir)

            #expect(contents(legacy(dir, "alice", .rightIndex)) == [0xDE, 0xAD])
            #expect(!exists(legacy(dir, "alice", .leftThumb)))
            #expect(directoryEntries("\(dir)/prints/alice/stub/stub-0") == ["1"])
            #expect(
                log.contains {
                    $0.hasSuffix("right-index-finger.print: libfprint cannot read this print; left in place")
                })
        }
    }

    @Test func aPrintWhosePlaceIsTakenByADifferentOneIsLeftInPlace() async throws {
        try await withTemporaryDirectory { dir in
            try plantDirectory("\(dir)/state/users/alice")
            let old = reader.print(user: "alice", finger: 7, payload: "older"),
                newer = reader.print(user: "alice", finger: 7, payload: "newer")
            try plantFile(legacy(dir, "alice", .rightIndex), old)
            try plantDirectory("\(dir)/prints/alice/stub/stub-0")
            try plantFile("\(dir)/prints/alice/stub/stub-0/7", newer)

            let log = try migrate(dir)

            #expect(contents(legacy(dir, "alice", .rightIndex)) == old)
            #expect(contents("\(dir)/prints/alice/stub/stub-0/7") == newer)
            #expect(
                log.contains { $0.hasSuffix("alice's right-index-finger in the print store differs; left in place") })
        }
    }

    @Test func aPrintAlreadyMovedByAnInterruptedStartIsNotDuplicated() async throws {
        try await withTemporaryDirectory { dir in
            try plantDirectory("\(dir)/state/users/alice")
            let bytes = reader.print(user: "alice", finger: 7)
            try plantFile(legacy(dir, "alice", .rightIndex), bytes)
            try plantDirectory("\(dir)/prints/alice/stub/stub-0")
            try plantFile("\(dir)/prints/alice/stub/stub-0/7", bytes)

            _ = try migrate(dir)

            #expect(!exists(legacy(dir, "alice", .rightIndex)))
            #expect(contents("\(dir)/prints/alice/stub/stub-0/7") == bytes)
        }
    }
}
