// The keyring key file kept without a TPM (keyring_without_tpm) once it is no longer the key: the
// passwords it opens sealed again under the TPM's data key, or removed when nothing seals them,
// and the file removed last, only when every one was dealt with.
import Glibc
import Testing
import TouchGateConfig
@testable import TouchGateCore
import TouchGateTestSupport

@Suite("Keyring key file")
@CoreActor struct KeyringKeyFileTests {
    /// With keyring_without_tpm and no TPM: alice's password kept under the key file, and bob's,
    /// void since (he enrolled another finger).
    func keptUnderTheKeyFile(_ bed: TestBed) async throws {
        let first = try keyringCore(bed, tpm: nil, withoutTPM: true)
        try await bed.enroll(first, "alice")
        try await bed.enroll(first, "bob")
        for user in ["alice", "bob"] {
            let snapshot = try #require(await first.currentSnapshot(user))
            try first.keyring.seal(user, password: "\(user)-secret", snapshot: snapshot)
        }
        try await bed.enroll(first, "bob", finger: .leftThumb)
        #expect(first.keyring.key.usesKeyFile())
        await first.retireKeyringKeyFile()  // it is the key: kept
        #expect(exists(keyFile(bed)))
        #expect(await first.keyringState("alice").state == "ready")
        #expect(await first.keyringState("bob").state == "void")
        await first.shutdown()
    }

    /// A start with the TPM's data key ready retires the key file, and alice's password still opens.
    func retiredWithAlicesPassword(_ bed: TestBed) async throws {
        let fixed = try keyringCore(bed, tpm: MachineSealer(machine: 7), withoutTPM: false)
        await fixed.retireKeyringKeyFile()
        #expect(!exists(keyFile(bed)))
        let snapshot = await fixed.currentSnapshot("alice")
        #expect(fixed.keyring.open("alice", snapshot: snapshot) == .password(SecretText("alice-secret")))
        await fixed.shutdown()
    }

    func keyFile(_ bed: TestBed) -> String { "\(bed.statePath)/keyring-key" }
    func keyringFile(_ bed: TestBed, _ user: String) -> String { "\(bed.statePath)/users/\(user)/keyring" }

    @Test func aTPMThatComesSealsThePasswordsAgainAndTheKeyFileGoes() async throws {
        try await withTestBed { bed in
            try await keptUnderTheKeyFile(bed)
            let before = try #require(contents(keyringFile(bed, "alice")))
            let later = try keyringCore(bed, tpm: MachineSealer(machine: 7), withoutTPM: true)
            await later.retireKeyringKeyFile()
            #expect(!exists(keyFile(bed)))
            #expect(contents(keyringFile(bed, "alice")) != before)
            let snapshot = await later.currentSnapshot("alice")
            #expect(later.keyring.open("alice", snapshot: snapshot) == .password(SecretText("alice-secret")))
            // bob's opened under neither key: void, as before, and nothing of it left under the file.
            #expect(contents(keyringFile(bed, "bob")) == KeyringFiles.setAsideMark)
            #expect(await later.keyringState("bob").state == "void")
            #expect(
                bed.logged.all.contains { $0.hasPrefix("removed \(keyFile(bed)): it is no longer the keyring key") })
            #expect(bed.logged.all.contains("keyring password sealed again under the TPM's data key"))
            await later.shutdown()
        }
    }

    @Test func turnedOffWithoutATPMThePasswordsItOpensAreRemovedWithIt() async throws {
        try await withTestBed { bed in
            try await keptUnderTheKeyFile(bed)
            let later = try keyringCore(bed, tpm: nil, withoutTPM: false)
            #expect(!later.keyring.key.usesKeyFile())
            await later.retireKeyringKeyFile()
            #expect(!exists(keyFile(bed)))
            #expect(!exists(keyringFile(bed, "alice")))
            #expect(await later.keyringState("alice").state == "off")
            #expect(bed.logged.all.contains("keyring password removed: nothing here seals it"))
            await later.shutdown()
        }
    }

    /// Prints that cannot be read now say nothing of whether a password still opens: the file
    /// and the key file stay as they are, and a later start retires them.
    @Test func printsThatCannotBeReadKeepTheKeyFileAndThePassword() async throws {
        try await withTestBed { bed in
            try await keptUnderTheKeyFile(bed)
            let before = try #require(contents(keyringFile(bed, "alice")))
            let prints = "\(bed.storePath)/alice"
            #expect(chmod(prints, 0o777) == 0)  // may not be trusted
            let later = try keyringCore(bed, tpm: MachineSealer(machine: 7), withoutTPM: false)
            await later.retireKeyringKeyFile()
            #expect(exists(keyFile(bed)))
            #expect(contents(keyringFile(bed, "alice")) == before)
            await later.shutdown()

            #expect(chmod(prints, 0o700) == 0)
            try await retiredWithAlicesPassword(bed)
        }
    }

    /// A TPM that fails now, or a file that cannot be dealt with: the key file stays (doctor
    /// warns) and no password it opens is lost; a later start retires it.
    @Test func aFailureKeepsTheKeyFileAndEveryPasswordItOpens() async throws {
        try await withTestBed { bed in
            try await keptUnderTheKeyFile(bed)
            let failing = MachineSealer(machine: 7)
            failing.answering.withLock { $0 = false }
            let away = try keyringCore(bed, tpm: failing, withoutTPM: false)
            await away.retireKeyringKeyFile()
            #expect(exists(keyFile(bed)))
            await away.shutdown()

            #expect(chmod(keyringFile(bed, "alice"), 0o646) == 0)  // may not be trusted
            let untrusted = try keyringCore(bed, tpm: MachineSealer(machine: 7), withoutTPM: false)
            await untrusted.retireKeyringKeyFile()
            #expect(exists(keyFile(bed)))
            #expect(bed.logged.all.contains { $0.hasPrefix("\(keyFile(bed)) is kept: some keyring passwords") })
            await untrusted.shutdown()

            #expect(chmod(keyringFile(bed, "alice"), 0o600) == 0)
            try await retiredWithAlicesPassword(bed)
        }
    }
}
