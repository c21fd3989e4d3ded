// TemplateStore: 0600 templates in 0700 per-user directories, libfprint order, digests, cache.
import Glibc
import Testing
@testable import TouchGateDaemon
import TouchGateWire

@Suite("TemplateStore")
struct TemplateStoreTests {
    @Test func createsPrivateStateAndUsersDirectories() throws {
        try withTemporaryDirectory { dir in
            let state = "\(dir)/state"
            _ = try TemplateStore(stateDirectory: state)
            #expect(permissions(state) == 0o700)
            #expect(permissions("\(state)/users") == 0o700)
        }
    }

    @Test func savesATemplateAsAnOwnerOnlyFileInADirectoryNamedAfterTheUser() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            try store.save([1, 2, 3], user: "alice", finger: .rightIndex)

            let file = "\(dir)/users/alice/right-index-finger.print"
            #expect(permissions("\(dir)/users/alice") == 0o700)
            #expect(permissions(file) == 0o600)
            #expect(contents(file) == [1, 2, 3])
            #expect(try store.template(of: "alice", finger: .rightIndex) == [1, 2, 3])
            #expect(try store.template(of: "alice", finger: .leftIndex) == nil)
        }
    }

    @Test func listsFingersInLibfprintOrderWhateverTheOrderOfEnrolment() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            for finger in [Finger.rightLittle, .leftIndex, .rightThumb, .leftThumb] {
                try store.save([UInt8(finger.fpFinger)], user: "alice", finger: finger)
            }
            #expect(store.fingers(of: "alice") == [.leftThumb, .leftIndex, .rightThumb, .rightLittle])
        }
    }

    @Test func givesEachPrintTheSHA256OfItsTemplate() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            try store.save([1, 2, 3], user: "alice", finger: .leftThumb)
            #expect(store.prints(of: "alice") == [EnrolledPrint(
                finger: .leftThumb, digest: "039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81")])
        }
    }

    @Test func keepsEachUsersPrintsApart() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            try store.save([1], user: "alice", finger: .rightIndex)
            try store.save([2], user: "bob", finger: .leftThumb)
            #expect(store.fingers(of: "alice") == [.rightIndex])
            #expect(store.fingers(of: "bob") == [.leftThumb])
            #expect(store.fingers(of: "carol") == [])
        }
    }

    @Test func deletingOneFingerReturnsOnlyThatFingerAndKeepsTheOthers() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            try store.save([1], user: "alice", finger: .rightIndex)
            try store.save([2], user: "alice", finger: .leftIndex)

            #expect(try store.delete(user: "alice", fingers: [.rightIndex]) == [.rightIndex])
            #expect(store.fingers(of: "alice") == [.leftIndex])
            #expect(directoryEntries("\(dir)/users/alice") == ["left-index-finger.print"])
        }
    }

    @Test func deletingAFingerThatIsNotEnrolledRemovesNothing() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            try store.save([1], user: "alice", finger: .rightIndex)
            #expect(try store.delete(user: "alice", fingers: [.leftThumb]) == [])
            #expect(store.fingers(of: "alice") == [.rightIndex])
            #expect(try store.delete(user: "nobody-enrolled", fingers: Finger.allCases) == [])
        }
    }

    @Test func deletingAllReturnsEveryEnrolledFingerInLibfprintOrder() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            try store.save([1], user: "alice", finger: .rightRing)
            try store.save([2], user: "alice", finger: .leftMiddle)
            try store.save([3], user: "alice", finger: .rightThumb)

            #expect(try store.delete(user: "alice", fingers: Finger.allCases) == [.leftMiddle, .rightThumb, .rightRing])
            #expect(store.fingers(of: "alice") == [])
            #expect(directoryEntries("\(dir)/users/alice") == [])
        }
    }

    @Test func replacingATemplateChangesItsDigest() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            try store.save([1, 2, 3], user: "alice", finger: .rightIndex)
            let before = store.prints(of: "alice")
            try store.save([4, 5, 6], user: "alice", finger: .rightIndex)
            let after = store.prints(of: "alice")

            #expect(before.map(\.digest) == [sha256Hex([1, 2, 3])])
            #expect(after.map(\.digest) == [sha256Hex([4, 5, 6])])
            #expect(after.map(\.finger) == [.rightIndex])
        }
    }

    @Test func aTemplateThatCannotBeReadStillCountsAsEnrolled() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            try store.save([1], user: "alice", finger: .rightIndex)
            // A symlink is refused by the O_NOFOLLOW read: the file is there but unreadable.
            try plantFile("\(dir)/elsewhere", "bytes behind a link")
            try plantSymlink(at: "\(dir)/users/alice/left-thumb.print", to: "\(dir)/elsewhere")
            let fresh = try TemplateStore(stateDirectory: dir)

            #expect(fresh.prints(of: "alice") == [
                EnrolledPrint(finger: .leftThumb, digest: "unreadable"),
                EnrolledPrint(finger: .rightIndex, digest: sha256Hex([1])),
            ])
        }
    }

    @Test func anOversizedTemplateStillCountsAsEnrolled() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            try store.save([UInt8](repeating: 0xAB, count: (1 << 20) + 1), user: "alice", finger: .rightIndex)
            #expect(store.prints(of: "alice") == [EnrolledPrint(finger: .rightIndex, digest: "unreadable")])
        }
    }

    @Test func garbageTemplateBytesAreAnEnrolledPrintWithTheirOwnDigest() throws {
        try withTemporaryDirectory { dir in
            _ = try TemplateStore(stateDirectory: dir)
            try plantDirectory("\(dir)/users/alice", mode: 0o700)
            try plantFile("\(dir)/users/alice/right-thumb.print", [0xDE, 0xAD])
            try plantFile("\(dir)/users/alice/notes.txt", "not a print")
            try plantFile("\(dir)/users/alice/sixth-finger.print", "no such finger")
            let store = try TemplateStore(stateDirectory: dir)
            #expect(store.prints(of: "alice") == [EnrolledPrint(finger: .rightThumb, digest: sha256Hex([0xDE, 0xAD]))])
        }
    }

    @Test func theCachedAnswerFollowsSavesAndDeletes() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            #expect(store.fingers(of: "alice") == [])   // cached as "none"
            try store.save([1], user: "alice", finger: .rightIndex)
            #expect(store.fingers(of: "alice") == [.rightIndex])
            try store.save([2], user: "alice", finger: .leftThumb)
            #expect(store.fingers(of: "alice") == [.leftThumb, .rightIndex])
            try store.delete(user: "alice", fingers: [.leftThumb])
            #expect(store.fingers(of: "alice") == [.rightIndex])
        }
    }

    @Test func theCacheAnswersWithoutTouchingTheDisk() throws {
        try withTemporaryDirectory { dir in
            let store = try TemplateStore(stateDirectory: dir)
            try store.save([1], user: "alice", finger: .rightIndex)
            #expect(store.fingers(of: "alice") == [.rightIndex])
            // The daemon is the only writer; preflight answers from memory.
            try plantFile("\(dir)/users/alice/left-thumb.print", [2])
            #expect(store.fingers(of: "alice") == [.rightIndex])
            #expect(try TemplateStore(stateDirectory: dir).fingers(of: "alice") == [.leftThumb, .rightIndex])
        }
    }
}
