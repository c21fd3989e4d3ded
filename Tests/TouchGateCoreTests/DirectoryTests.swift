// Directory: atomic 0600 writes, private 0700 directories, reads that never follow a symlink (docs/spec.md §6, §9).
import Glibc
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import Synchronization
import TouchGateThreads

@Suite("Directory")
struct DirectoryTests {
    @Test func writeAtomicallyCreatesAnOwnerOnlyFileWithTheBytes() async throws {
        try await withTemporaryDirectory { dir in
            try Directory.openRoot(dir).writeAtomically("secret", [1, 2, 3, 0, 255])
            #expect(fileType("\(dir)/secret") == S_IFREG)
            #expect(permissions("\(dir)/secret") == 0o600)
            #expect(contents("\(dir)/secret") == [1, 2, 3, 0, 255])
        }
    }

    @Test func writeAtomicallyReplacesTheContentsAndLeavesNoTemporaryFile() async throws {
        try await withTemporaryDirectory { dir in
            try plantFile("\(dir)/state.json", "old contents that are longer than the new ones", mode: 0o644)
            try Directory.openRoot(dir).writeAtomically("state.json", Array("new".utf8))
            #expect(contents("\(dir)/state.json") == Array("new".utf8))
            // A rename puts a new 0600 inode in place: the old file's looser mode does not survive.
            #expect(permissions("\(dir)/state.json") == 0o600)
            #expect(directoryEntries(dir) == ["state.json"])
        }
    }

    /// How a corrupt state is kept aside: the new file and the old entry change places, whatever
    /// the old one is (a file, a directory, a symlink, which is moved, never followed).
    @Test func replaceKeepsTheOldEntryUnderTheAsideName() async throws {
        try await withTemporaryDirectory { dir in
            try plantFile("\(dir)/state.json", "corrupt")
            let d = try Directory.openRoot(dir)
            try d.replace("state.json", Array("new".utf8), keepingOldAs: "state.json.corrupt-1")
            #expect(contents("\(dir)/state.json.corrupt-1") == Array("corrupt".utf8))
            #expect(contents("\(dir)/state.json") == Array("new".utf8))
            #expect(permissions("\(dir)/state.json") == 0o600)

            #expect(mkdir("\(dir)/tree", 0o700) == 0)
            try d.replace("tree", Array("file".utf8), keepingOldAs: "tree-2")
            #expect(fileType("\(dir)/tree-2") == S_IFDIR)
            #expect(contents("\(dir)/tree") == Array("file".utf8))

            #expect(symlink("/etc/passwd", "\(dir)/link") == 0)
            try d.replace("link", Array("file".utf8), keepingOldAs: "link-2")
            #expect(fileType("\(dir)/link-2") == S_IFLNK)
            #expect(contents("\(dir)/link") == Array("file".utf8))

            try d.replace("missing", Array("first".utf8), keepingOldAs: "missing-2")
            #expect(contents("\(dir)/missing") == Array("first".utf8))
            #expect(
                directoryEntries(dir) == [
                    "link", "link-2", "missing", "state.json", "state.json.corrupt-1", "tree", "tree-2",
                ])
        }
    }

    /// Two storage threads list one held directory at once (the print store's root): each sees
    /// every entry once.
    @Test func listingsOfOneDirectoryFromTwoThreadsAtOnceAreEachWhole() async throws {
        try await withTemporaryDirectory { dir in
            let names = (0..<40).map { "user\($0)" }.sorted()
            for name in names { #expect(mkdir("\(dir)/\(name)", 0o700) == 0) }
            let d = try Directory.openRoot(dir)
            let wrong = Mutex(0)
            let done = Semaphore()
            for i in 0..<2 {
                let started = startThread(name: "tg-list-\(i)") {
                    let n = (0..<2000).reduce(0) { n, _ in n + ((try? d.listedEntries().sorted()) == names ? 0 : 1) }
                    wrong.withLock { $0 += n }
                    done.signal()
                }
                #expect(started)
            }
            #expect(done.wait(milliseconds: 60_000) && done.wait(milliseconds: 60_000))
            #expect(wrong.withLock { $0 } == 0)
        }
    }

    @Test func writeAtomicallyNeverWritesThroughASymlinkPlantedAtItsTemporaryPath() async throws {
        try await withTemporaryDirectory { dir in
            let victim = "\(dir)/victim"
            try plantFile(victim, "do not touch", mode: 0o644)
            // The older layout's temporary name, and this layout's with a guessed suffix.
            try plantSymlink(at: "\(dir)/state.json.tmp.\(getpid())", to: victim)
            try plantSymlink(at: "\(dir)/.state.json.tmp-1", to: victim)

            try Directory.openRoot(dir).writeAtomically("state.json", Array("written".utf8))

            #expect(contents(victim) == Array("do not touch".utf8))
            #expect(fileType("\(dir)/state.json") == S_IFREG)
            #expect(contents("\(dir)/state.json") == Array("written".utf8))
            #expect(
                directoryEntries(dir) == [".state.json.tmp-1", "state.json", "state.json.tmp.\(getpid())", "victim"])
        }
    }

    @Test func writeAtomicallyReplacesASymlinkAtTheFinalPathInsteadOfWritingItsTarget() async throws {
        try await withTemporaryDirectory { dir in
            let victim = "\(dir)/victim"
            try plantFile(victim, "do not touch")
            try plantSymlink(at: "\(dir)/secret", to: victim)

            try Directory.openRoot(dir).writeAtomically("secret", Array("fresh".utf8))

            #expect(contents(victim) == Array("do not touch".utf8))
            #expect(fileType("\(dir)/secret") == S_IFREG)
            #expect(contents("\(dir)/secret") == Array("fresh".utf8))
        }
    }

    @Test func writeAtomicallyReportsAMissingDirectory() async throws {
        try await withTemporaryDirectory { dir in
            let held = try #require(try Directory.openRoot(dir).subdirectory("gone", create: true))
            #expect(rmdir("\(dir)/gone") == 0)
            #expect {
                try held.writeAtomically("file", [1])
            } throws: { error in
                guard case StorageError.io(let what, ENOENT) = error else { return false }
                return what.hasPrefix("create \(dir)/gone/.file.tmp-")
            }
        }
    }

    @Test func readReturnsTheBytesOfARegularFile() async throws {
        try await withTemporaryDirectory { dir in
            try plantFile("\(dir)/f", [9, 8, 7])
            #expect(try Directory.openRoot(dir).read("f") == [9, 8, 7])
        }
    }

    @Test func readReturnsNilForAMissingFile() async throws {
        try await withTemporaryDirectory { dir in
            let absent = try Directory.openRoot(dir).read("absent")
            #expect(absent == nil)
        }
    }

    @Test func readRefusesASymlinkInsteadOfReturningItsTarget() async throws {
        try await withTemporaryDirectory { dir in
            try plantFile("\(dir)/target", "the target's contents")
            try plantSymlink(at: "\(dir)/link", to: "\(dir)/target")
            #expect(throws: StorageError.unsafe("\(dir)/link is a symbolic link")) {
                try Directory.openRoot(dir).read("link")
            }
        }
    }

    @Test func readRefusesAFileLargerThanItsLimit() async throws {
        try await withTemporaryDirectory { dir in
            try plantFile("\(dir)/big", [UInt8](repeating: 7, count: 11))
            let root = try Directory.openRoot(dir)
            #expect(try root.read("big", limit: 11) == [UInt8](repeating: 7, count: 11))
            #expect(throws: StorageError.unsafe("\(dir)/big is larger than 10 bytes")) {
                try root.read("big", limit: 10)
            }
        }
    }

    @Test func aSubdirectoryIsCreatedOwnerOnly() async throws {
        try await withTemporaryDirectory { dir in
            _ = try Directory.openRoot(dir).subdirectory("users", create: true)
            #expect(fileType("\(dir)/users") == S_IFDIR)
            #expect(permissions("\(dir)/users") == 0o700)
        }
    }

    @Test func aWorldReadableSubdirectoryOfOursIsTightened() async throws {
        try await withTemporaryDirectory { dir in
            try plantDirectory("\(dir)/users", mode: 0o755)
            try plantFile("\(dir)/users/kept", "x")
            _ = try Directory.openRoot(dir).subdirectory("users", create: true)
            #expect(permissions("\(dir)/users") == 0o700)
            #expect(directoryEntries("\(dir)/users") == ["kept"])
        }
    }

    @Test func aRegularFileIsNotTakenForADirectory() async throws {
        try await withTemporaryDirectory { dir in
            try plantFile("\(dir)/users", "not a directory", mode: 0o644)
            #expect(throws: StorageError.unsafe("\(dir)/users is not a directory")) {
                try Directory.openRoot(dir).subdirectory("users", create: true)
            }
            #expect(permissions("\(dir)/users") == 0o644)
        }
    }

    @Test func aSymlinkIsRefusedEvenToADirectory() async throws {
        try await withTemporaryDirectory { dir in
            try plantDirectory("\(dir)/elsewhere", mode: 0o755)
            try plantSymlink(at: "\(dir)/users", to: "\(dir)/elsewhere")
            #expect(throws: StorageError.unsafe("\(dir)/users is a symbolic link")) {
                try Directory.openRoot(dir).subdirectory("users", create: true)
            }
            #expect(throws: StorageError.unsafe("\(dir)/users is a symbolic link")) {
                try Directory.openRoot("\(dir)/users")
            }
            // The link's target is left exactly as it was.
            #expect(permissions("\(dir)/elsewhere") == 0o755)
        }
    }

    @Test(arguments: ["", ".", "..", "a/b", "../users", "a\0b"])
    func namesThatAreNotOnePathComponentAreRefused(_ name: String) async throws {
        try await withTemporaryDirectory { dir in
            let root = try Directory.openRoot(dir)
            #expect(throws: StorageError.self) { try root.read(name) }
            #expect(throws: StorageError.self) { try root.writeAtomically(name, [1]) }
            #expect(throws: StorageError.self) { try root.subdirectory(name, create: true) }
            #expect(directoryEntries(dir) == [])
        }
    }
}

@Suite("Account names and lookups")
struct AccountNameTests {
    @Test(arguments: ["alice", "a.b-c_d", "user$", "Bob42", "svc@host", "_apt", "a", String(repeating: "x", count: 64)])
    func acceptsNamesThatAreSafeAsADirectoryName(_ name: String) {
        #expect(isValidAccountName(name))
    }

    @Test(arguments: [
        "", ".", "..", "a/b", "/", "-x", "--help", String(repeating: "x", count: 65),
        "a\0b", "\0", "a b", " alice", "alice\n", "al\tice", "ali:ce", "élise", "a\\b",
    ])
    func rejectsNamesThatCouldEscapeOrConfuseTheStateDirectory(_ name: String) {
        #expect(!isValidAccountName(name))
    }

    @Test func looksUpRootBothWays() {
        #expect(SystemAccounts().uid(name: "root") == 0)
        #expect(SystemAccounts().name(uid: 0) == "root")
        #expect(SystemAccounts().uid(name: "no-such-user-touchgate") == nil)
    }
}
