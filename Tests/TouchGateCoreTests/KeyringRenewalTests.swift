// A changed password that cannot be sealed: the old one is set aside, never left to be released.
import Testing
import TouchGateConfig
@testable import TouchGateCore
import TouchGateTestSupport

/// A core as the daemon starts it with `seal = auto`: `tpm` nil is a machine without one.
@CoreActor func keyringCore(_ bed: TestBed, tpm: MachineSealer?, withoutTPM: Bool) throws -> Core {
    var setup = try bed.setup()
    setup.sealing = PrintSealing(
        mode: .auto, sealer: tpm ?? MachineSealer(machine: 7, present: false), state: setup.stateDirectory,
        retryAfterMilliseconds: 0)
    setup.keyringWithoutTPM = withoutTPM
    return try Core(setup)
}

@Suite("Keyring renewal")
@CoreActor struct KeyringRenewalTests {
    /// KEYRING_RENEW (the password was just changed) while the TPM cannot seal: the old password
    /// is set aside, so once the TPM is back it is void (the person is told), not ready.
    @Test func aChangedPasswordThatCannotBeSealedSetsTheOldOneAside() async throws {
        try await withTestBed { bed in
            let first = try keyringCore(bed, tpm: MachineSealer(machine: 7), withoutTPM: false)
            try await bed.enroll(first, "alice")
            let snapshot = try #require(await first.currentSnapshot("alice"))
            try first.keyring.seal("alice", password: "old-secret", snapshot: snapshot)
            await first.shutdown()

            let failing = MachineSealer(machine: 7)
            failing.answering.withLock { $0 = false }
            let away = try keyringCore(bed, tpm: failing, withoutTPM: false)
            #expect(await away.keyringRenew(user: "alice", password: "new-secret", caller: .root) == .success())
            #expect(bed.logged.all.contains { $0.hasPrefix("keyring password set aside after a password change") })
            await away.shutdown()

            let back = try keyringCore(bed, tpm: MachineSealer(machine: 7), withoutTPM: false)
            #expect(await back.keyringState("alice").state == "void")
            #expect(back.keyring.open("alice", snapshot: snapshot) == .void)
            // The next password renews it.
            #expect(await back.keyringRenew(user: "alice", password: "new-secret", caller: .root) == .success())
            #expect(back.keyring.open("alice", snapshot: snapshot) == .password(SecretText("new-secret")))
            await back.shutdown()
        }
    }
}
