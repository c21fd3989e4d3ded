// The sealed login passwords: bound to the user and the set of prints, closed without the key,
// never written in the clear, and the root-only key file only when allowed.
import Crypto
import Glibc
import Testing
@testable import TouchGateCore
import TouchGateTestSupport

@Suite("Keyring passwords")
struct KeyringStoreTests {
    func files(_ dir: String, sealer: (any KeySealer)? = MachineSealer(machine: 7), withoutTPM: Bool = false) throws
        -> KeyringFiles
    {
        let state = try Directory.openRoot("\(dir)/state")
        let users = try #require(try state.subdirectory("users", create: true))
        let sealing = sealer.map { PrintSealing(mode: .tpm, sealer: $0, state: state) }
        return KeyringFiles(users: users, key: KeyringKey(sealing: sealing, withoutTPM: withoutTPM, state: state))
    }

    @Test func itOpensForTheSamePrintsOnlyAndHoldsNoClearText() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            #expect(store.open("alice", snapshot: "prints-1") == .off)
            try store.seal("alice", password: "correct horse", snapshot: "prints-1")
            #expect(permissions("\(dir)/state/users/alice/keyring") == 0o600)
            let disk = try #require(contents("\(dir)/state/users/alice/keyring"))
            #expect(!String(decoding: disk, as: UTF8.self).contains("correct horse"))
            #expect(store.open("alice", snapshot: "prints-1") == .password(SecretText("correct horse")))
            #expect(store.open("alice", snapshot: "prints-2") == .void)
            #expect(store.open("alice", snapshot: nil) == .void)
            #expect("\(SecretText("correct horse"))" == "(secret)")
        }
    }

    /// What status asks: whether it opens, answered without taking the password out.
    @Test func aCheckSaysWhetherItOpensWithoutThePassword() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            #expect(store.open("alice", snapshot: "prints-1", verifyOnly: true) == .off)
            try store.seal("alice", password: "correct horse", snapshot: "prints-1")
            #expect(store.open("alice", snapshot: "prints-1", verifyOnly: true) == .opens)
            #expect(store.open("alice", snapshot: "prints-2", verifyOnly: true) == .void)
            #expect(store.open("alice", snapshot: nil, verifyOnly: true) == .void)
            guard
                case .unavailable = try files(dir, sealer: MachineSealer(machine: 9)).open(
                    "alice", snapshot: "prints-1", verifyOnly: true)
            else { Issue.record("a check opened it with another machine's key"); return }
        }
    }

    /// A password known to be old is not kept: its file becomes a mark that is void for any
    /// prints, set up still (so the next password renews it), and needs no key to be read so.
    @Test func aPasswordSetAsideIsVoidAndStillSetUp() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            #expect(try store.setAside("alice") == .untouched)
            #expect(!exists("\(dir)/state/users/alice/keyring"))
            try store.seal("alice", password: "old secret", snapshot: "s")
            #expect(try store.setAside("alice") == .setAside)
            let disk = try #require(contents("\(dir)/state/users/alice/keyring"))
            #expect(disk == KeyringFiles.setAsideMark)
            #expect(permissions("\(dir)/state/users/alice/keyring") == 0o600)
            #expect(store.open("alice", snapshot: "s") == .void)
            #expect(try files(dir, sealer: nil).open("alice", snapshot: "s") == .void)
            #expect(try store.isSetUp("alice"))
            try store.seal("alice", password: "new secret", snapshot: "s")
            #expect(store.open("alice", snapshot: "s") == .password(SecretText("new secret")))
        }
    }

    @Test func anotherUsersFileDoesNotOpenAsTheirs() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            try store.seal("alice", password: "alice's", snapshot: "s")
            try plantDirectory("\(dir)/state/users/bob")
            try plantFile("\(dir)/state/users/bob/keyring", try #require(contents("\(dir)/state/users/alice/keyring")))
            #expect(store.open("bob", snapshot: "s") == .void)
        }
    }

    /// The data key made again (its sealed file removed, as to bind other PCRs): the password
    /// sealed under the old one is said to be so, not taken for a change of fingers.
    @Test func aFileSealedUnderAnotherKeyIsToldApartFromChangedFingers() async throws {
        try await withTemporaryDirectory { dir in
            try files(dir).seal("alice", password: "pw", snapshot: "s")
            #expect(unlink("\(dir)/state/sealed-key") == 0)
            let remade = try files(dir)
            #expect(remade.open("alice", snapshot: "s") == .unavailable(KeyringFiles.sealedUnderAnotherKey))
            #expect(
                remade.open("alice", snapshot: "s", verifyOnly: true)
                    == .unavailable(KeyringFiles.sealedUnderAnotherKey))
            try remade.seal("alice", password: "pw", snapshot: "s")
            #expect(remade.open("alice", snapshot: "other prints") == .void)
            #expect(remade.open("alice", snapshot: "s") == .password(SecretText("pw")))
        }
    }

    /// A file written before the key's identity was recorded (version 1) still opens, and is void
    /// for other prints.
    @Test func aFileOfTheFirstVersionStillOpens() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            let key = try store.key.key().get()
            let box = try AES.GCM.seal(
                Array("old pw".utf8), using: key, authenticating: KeyringFiles.bound("carol", "s"))
            try plantDirectory("\(dir)/state/users/carol")
            try plantFile("\(dir)/state/users/carol/keyring", KeyringFiles.magic + Array(try #require(box.combined)))
            #expect(store.open("carol", snapshot: "s") == .password(SecretText("old pw")))
            #expect(store.open("carol", snapshot: "s2") == .void)
            #expect(try files(dir, sealer: nil, withoutTPM: true).open("carol", snapshot: "s") == .void)
        }
    }

    @Test func withoutTheMachinesKeyItStaysClosedAndNothingIsSealed() async throws {
        try await withTemporaryDirectory { dir in
            try files(dir).seal("alice", password: "pw", snapshot: "s")
            guard case .unavailable = try files(dir, sealer: MachineSealer(machine: 9)).open("alice", snapshot: "s")
            else { Issue.record("opened with another machine's key"); return }
            let noTPM = #expect(throws: KeyringSealFailure.self) {
                try files(dir, sealer: nil).seal("bob", password: "pw", snapshot: "s")
            }
            guard case .noKey? = noTPM else { Issue.record("no TPM: \(String(describing: noTPM))"); return }
            #expect(!exists("\(dir)/state/users/bob/keyring"))
        }
    }

    @Test func aTPMThatFailsNowIsNotReportedAsNoTPM() async throws {
        try await withTemporaryDirectory { dir in
            let tpm = MachineSealer(machine: 7)
            tpm.answering.withLock { $0 = false }
            let failed = #expect(throws: KeyringSealFailure.self) {
                try files(dir, sealer: tpm).seal("alice", password: "pw", snapshot: "s")
            }
            guard case .keyFailed? = failed else { Issue.record("TPM failing: \(String(describing: failed))"); return }
            #expect(!exists("\(dir)/state/users/alice/keyring"))
            // With keyring_without_tpm too: the file is not the key while the TPM fails, so doctor
            // is not told it is.
            let fallback = try files(dir, sealer: tpm, withoutTPM: true)
            #expect(throws: KeyringSealFailure.self) { try fallback.seal("alice", password: "pw", snapshot: "s") }
            #expect(!fallback.key.usesKeyFile())
        }
    }

    @Test func aFileThatMayNotBeTrustedIsUnavailableNotOff() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir)
            try store.seal("alice", password: "pw", snapshot: "s")
            let path = "\(dir)/state/users/alice/keyring"
            #expect(chmod(path, 0o646) == 0)  // writable by anyone
            guard case .unavailable(let why) = store.open("alice", snapshot: "s") else {
                Issue.record("a world-writable file was not refused"); return
            }
            #expect(why.contains(path))
            #expect(throws: StorageError.self) { try store.isSetUp("alice") }

            try store.seal("bob", password: "pw", snapshot: "s")
            try plantFile("\(dir)/elsewhere", try #require(contents("\(dir)/state/users/bob/keyring")))
            #expect(unlink("\(dir)/state/users/bob/keyring") == 0)
            try plantSymlink(at: "\(dir)/state/users/bob/keyring", to: "\(dir)/elsewhere")
            guard case .unavailable = store.open("bob", snapshot: "s") else {
                Issue.record("a symlink was followed or taken for no file"); return
            }
            #expect(try store.isSetUp("carol") == false)
        }
    }

    @Test func keyringWithoutTPMUsesARootOnlyKeyFile() async throws {
        try await withTemporaryDirectory { dir in
            let store = try files(dir, sealer: nil, withoutTPM: true)
            try store.seal("alice", password: "pw", snapshot: "s")
            #expect(permissions("\(dir)/state/keyring-key") == 0o600)
            #expect(store.key.usesKeyFile())
            #expect(
                try files(dir, sealer: nil, withoutTPM: true).open("alice", snapshot: "s")
                    == .password(SecretText("pw")))
            #expect(try store.remove("alice"))
            #expect(store.open("alice", snapshot: "s") == .off)
        }
    }
}
