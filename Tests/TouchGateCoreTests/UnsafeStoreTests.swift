// Stores trusted only when they should be: no symlink followed, no file of another owner or writable by
// others used; that user fails closed with a reason, everyone else goes on. Real links, chown, chmod.
import Glibc
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateWire

@Suite("Core: unsafe stores")
@CoreActor struct UnsafeStoreTests {
    /// Alice and bob ready on disk, then `tamper` applied while the daemon was down; the core that
    /// starts afterwards.
    func afterTampering(_ bed: TestBed, _ tamper: () throws -> Void) async throws -> Core {
        let before = try bed.makeCore()
        try await bed.readyUser(before, "alice")
        try await bed.readyUser(before, "bob")
        await before.states.flush()
        try tamper()
        return try bed.makeCore()
    }

    func users(_ bed: TestBed) -> String { "\(bed.statePath)/users" }

    @Test func aUsersStateDirectoryReplacedByALinkToAnothersIsNotFollowed() async throws {
        try await withTestBed { bed in
            let core = try await afterTampering(bed) {
                removeTree("\(users(bed))/alice")
                try plantSymlink(at: "\(users(bed))/alice", to: "\(users(bed))/bob")
            }
            #expect(await core.preflight("alice") == stateUnreadableRefusal)
            #expect(await core.preflight("bob") == nil)
            let status = try #require(try await statusDocument(core, "alice"))
            #expect(!status.stateReadable)
            #expect(status.stateProblem == "\(users(bed))/alice is a symbolic link")
        }
    }

    @Test func aUsersPrintDirectoryReplacedByALinkToAnothersIsNotFollowed() async throws {
        try await withTestBed { bed in
            let core = try await afterTampering(bed) {
                removeTree("\(bed.storePath)/alice")
                try plantSymlink(at: "\(bed.storePath)/alice", to: "\(bed.storePath)/bob")
            }
            // Alice must not verify with bob's finger: her prints are refused, the reader untouched.
            bed.reader.script(.match)
            #expect(
                await core.canEvaluate(user: "alice", policy: .biometrics, rhost: nil, caller: .alice)
                    == printsUnsafeRefusal)
            #expect(await core.startEvaluate().0.value() == printsUnsafeRefusal)
            #expect(bed.reader.verifications.isEmpty)
            #expect(
                try await statusDocument(core, "alice")?.printsProblem == "\(bed.storePath)/alice is a symbolic link")
            #expect(await core.preflight("bob") == nil)
        }
    }

    /// What may happen to a file behind the daemon's back.
    enum Tampering: String, CaseIterable, Sendable {
        case ownedByAnotherUser, writableByEveryone, writableByItsGroup

        func apply(_ path: String) throws {
            switch self {
            case .ownedByAnotherUser: try changeOwner(path, uid: 1001)
            case .writableByEveryone: try changeMode(path, 0o666)
            case .writableByItsGroup: try changeMode(path, 0o620)
            }
        }
    }

    @Test(arguments: Tampering.allCases)
    func aStateFileNobodyShouldTrustFailsClosedForThatUserOnly(_ tampering: Tampering) async throws {
        try await withTestBed { bed in
            let core = try await afterTampering(bed) { try tampering.apply(bed.statePath("alice")) }
            #expect(await core.preflight("alice") == stateUnreadableRefusal)
            #expect(await core.preflight("bob") == nil)
            // Read, not trusted: the file is left as it was for the administrator to look at.
            #expect(exists(bed.statePath("alice")))
            #expect(try await statusDocument(core, "alice")?.stateReadable == false)
        }
    }

    @Test(arguments: Tampering.allCases)
    func aPrintNobodyShouldTrustIsNeverUsedAndNamedForEnrollingAgain(_ tampering: Tampering) async throws {
        try await withTestBed { bed in
            let core = try await afterTampering(bed) { try tampering.apply(bed.printPath("alice", .rightIndex)) }
            let refusal = try #require(await core.preflight("alice"))
            #expect(refusal.text?.render(.english).contains(Text.templateDamaged(.rightIndex).render(.english)) == true)
            #expect(await core.preflight("bob") == nil)
        }
    }

    @Test func aUsersDirectoryWritableByOthersIsNotTrusted() async throws {
        try await withTestBed { bed in
            let core = try await afterTampering(bed) {
                try changeMode("\(users(bed))/alice", 0o777)
                try changeMode("\(bed.storePath)/bob/stub", 0o770)
            }
            #expect(await core.preflight("alice") == stateUnreadableRefusal)
            #expect(await core.preflight("bob") == printsUnsafeRefusal)
        }
    }

    @Test func aStoreRootOfAnotherOwnerOrALinkRefusesToStart() async throws {
        try await withTemporaryDirectory { dir in
            try plantDirectory("\(dir)/state", mode: 0o700)
            try changeOwner("\(dir)/state", uid: 1001)
            #expect(throws: StorageError.unsafe("\(dir)/state is owned by uid 1001, not by the daemon's user")) {
                try Directory.openRoot("\(dir)/state")
            }
            try plantDirectory("\(dir)/real", mode: 0o700)
            try plantSymlink(at: "\(dir)/linked", to: "\(dir)/real")
            #expect(throws: StorageError.unsafe("\(dir)/linked is a symbolic link")) {
                try Directory.openRoot("\(dir)/linked")
            }
        }
    }

    @Test func aStoreRootOfOursWithALooseModeIsTightened() async throws {
        try await withTemporaryDirectory { dir in
            try plantDirectory("\(dir)/state", mode: 0o777)
            _ = try Directory.openRoot("\(dir)/state")
            #expect(permissions("\(dir)/state") == 0o700)
        }
    }

    @Test func aSecretOfAnotherOwnerRefusesToStart() async throws {
        try await withTestBed { bed in
            _ = try bed.makeCore()
            try changeOwner("\(bed.statePath)/secret", uid: 1001)
            #expect(
                throws: StorageError.unsafe("\(bed.statePath)/secret is owned by uid 1001, not by the daemon's user")
            ) {
                try bed.makeCore()
            }
        }
    }
}
