// Files: atomic 0600 writes, private 0700 directories, reads that never follow a symlink (SPEC §6, §9).
import Glibc
import Testing
@testable import TouchGateDaemon

@Suite("Files")
struct FilesTests {
    @Test func writeAtomicallyCreatesAnOwnerOnlyFileWithTheBytes() throws {
        try withTemporaryDirectory { dir in
            let path = "\(dir)/secret"
            try Files.writeAtomically([1, 2, 3, 0, 255], to: path)
            #expect(fileType(path) == S_IFREG)
            #expect(permissions(path) == 0o600)
            #expect(contents(path) == [1, 2, 3, 0, 255])
        }
    }

    @Test func writeAtomicallyReplacesTheContentsAndLeavesNoTemporaryFile() throws {
        try withTemporaryDirectory { dir in
            let path = "\(dir)/state.json"
            try plantFile(path, "old contents that are longer than the new ones", mode: 0o644)
            try Files.writeAtomically(Array("new".utf8), to: path)
            #expect(contents(path) == Array("new".utf8))
            // A rename puts a new 0600 inode in place: the old file's looser mode does not survive.
            #expect(permissions(path) == 0o600)
            #expect(directoryEntries(dir) == ["state.json"])
        }
    }

    @Test func writeAtomicallyNeverWritesThroughASymlinkPlantedAtItsTemporaryPath() throws {
        try withTemporaryDirectory { dir in
            let victim = "\(dir)/victim"
            try plantFile(victim, "do not touch", mode: 0o644)
            let path = "\(dir)/state.json"
            try plantSymlink(at: "\(path).tmp.\(getpid())", to: victim)

            try Files.writeAtomically(Array("written".utf8), to: path)

            #expect(contents(victim) == Array("do not touch".utf8))
            #expect(fileType(path) == S_IFREG)
            #expect(contents(path) == Array("written".utf8))
            #expect(directoryEntries(dir) == ["state.json", "victim"])
        }
    }

    @Test func writeAtomicallyReplacesASymlinkAtTheFinalPathInsteadOfWritingItsTarget() throws {
        try withTemporaryDirectory { dir in
            let victim = "\(dir)/victim"
            try plantFile(victim, "do not touch")
            let path = "\(dir)/secret"
            try plantSymlink(at: path, to: victim)

            try Files.writeAtomically(Array("fresh".utf8), to: path)

            #expect(contents(victim) == Array("do not touch".utf8))
            #expect(fileType(path) == S_IFREG)
            #expect(contents(path) == Array("fresh".utf8))
        }
    }

    @Test func writeAtomicallyReportsAMissingDirectory() throws {
        try withTemporaryDirectory { dir in
            let path = "\(dir)/missing/file"
            #expect(throws: StorageError.io("create \(path).tmp.\(getpid())", ENOENT)) {
                try Files.writeAtomically([1], to: path)
            }
        }
    }

    @Test func readReturnsTheBytesOfARegularFile() throws {
        try withTemporaryDirectory { dir in
            try plantFile("\(dir)/f", [9, 8, 7])
            #expect(try Files.read("\(dir)/f") == [9, 8, 7])
        }
    }

    @Test func readReturnsNilForAMissingFile() throws {
        try withTemporaryDirectory { dir in
            let absent = try Files.read("\(dir)/absent")
            #expect(absent == nil)
        }
    }

    @Test func readRefusesASymlinkInsteadOfReturningItsTarget() throws {
        try withTemporaryDirectory { dir in
            try plantFile("\(dir)/target", "the target's contents")
            let link = "\(dir)/link"
            try plantSymlink(at: link, to: "\(dir)/target")
            #expect(throws: StorageError.io("open \(link)", ELOOP)) {
                try Files.read(link)
            }
        }
    }

    @Test func readRefusesAFileLargerThanItsLimit() throws {
        try withTemporaryDirectory { dir in
            let path = "\(dir)/big"
            try plantFile(path, [UInt8](repeating: 7, count: 11))
            #expect(try Files.read(path, limit: 11) == [UInt8](repeating: 7, count: 11))
            #expect(throws: StorageError.unsafe("\(path) is larger than 10 bytes")) {
                try Files.read(path, limit: 10)
            }
        }
    }

    @Test func ensurePrivateDirectoryCreatesAnOwnerOnlyDirectory() throws {
        try withTemporaryDirectory { dir in
            let path = "\(dir)/users"
            try Files.ensurePrivateDirectory(path)
            #expect(fileType(path) == S_IFDIR)
            #expect(permissions(path) == 0o700)
        }
    }

    @Test func ensurePrivateDirectoryTightensAWorldReadableDirectory() throws {
        try withTemporaryDirectory { dir in
            let path = "\(dir)/users"
            try plantDirectory(path, mode: 0o755)
            try plantFile("\(path)/kept", "x")
            try Files.ensurePrivateDirectory(path)
            #expect(permissions(path) == 0o700)
            #expect(directoryEntries(path) == ["kept"])
        }
    }

    @Test func ensurePrivateDirectoryRefusesARegularFile() throws {
        try withTemporaryDirectory { dir in
            let path = "\(dir)/users"
            try plantFile(path, "not a directory", mode: 0o644)
            #expect(throws: StorageError.unsafe("\(path) is not a directory")) {
                try Files.ensurePrivateDirectory(path)
            }
            #expect(permissions(path) == 0o644)
        }
    }

    @Test func ensurePrivateDirectoryRefusesASymlinkEvenToADirectory() throws {
        try withTemporaryDirectory { dir in
            let elsewhere = "\(dir)/elsewhere"
            try plantDirectory(elsewhere, mode: 0o755)
            let path = "\(dir)/users"
            try plantSymlink(at: path, to: elsewhere)
            #expect(throws: StorageError.unsafe("\(path) is not a directory")) {
                try Files.ensurePrivateDirectory(path)
            }
            // The link's target is left exactly as it was.
            #expect(permissions(elsewhere) == 0o755)
        }
    }
}

@Suite("Accounts.isValidName")
struct AccountNameTests {
    @Test(arguments: ["alice", "a.b-c_d", "user$", "Bob42", "svc@host", "_apt", "a", String(repeating: "x", count: 64)])
    func acceptsNamesThatAreSafeAsADirectoryName(_ name: String) {
        #expect(Accounts.isValidName(name))
    }

    @Test(arguments: ["", ".", "..", "a/b", "/", "-x", "--help", String(repeating: "x", count: 65),
                      "a\0b", "\0", "a b", " alice", "alice\n", "al\tice", "ali:ce", "élise", "a\\b"])
    func rejectsNamesThatCouldEscapeOrConfuseTheStateDirectory(_ name: String) {
        #expect(!Accounts.isValidName(name))
    }

    @Test func looksUpRootBothWays() {
        #expect(Accounts.uid(name: "root") == 0)
        #expect(Accounts.name(uid: 0) == "root")
        #expect(Accounts.uid(name: "no-such-user-touchgate") == nil)
    }
}
