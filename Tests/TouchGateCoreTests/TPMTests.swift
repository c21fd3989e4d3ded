// The TPM sealing shim against real software TPMs (Debian's swtpm): a sealed key opens on its own
// TPM only, PCR binding holds, a damaged blob or a silent TPM fails with a sentence, never a hang.
import Foundation
import Glibc
import Testing
import TouchGateCore

@Suite("TPM: sealing with swtpm", .serialized)
struct TPMTests {
    @Test("a sealed secret comes back byte for byte, and the blob does not hold it")
    func roundTrip() throws {
        let swtpm = try Swtpm()
        let tpm = TPM(tcti: swtpm.tcti, pcrs: [])
        try tpm.probe()
        let secret = randomBytes(32)
        let blob = try tpm.seal(secret)
        #expect(!blob.isEmpty)
        #expect(!contains(blob, secret))
        #expect(try tpm.unseal(blob) == secret)
    }

    @Test("another TPM (a copied disk on another machine) cannot unseal the blob")
    func anotherTPMRefuses() throws {
        let first = try Swtpm()
        let second = try Swtpm()
        let blob = try TPM(tcti: first.tcti, pcrs: []).seal(randomBytes(32))
        let error = #expect(throws: TPMError.self) { try TPM(tcti: second.tcti, pcrs: []).unseal(blob) }
        #expect(error?.description.contains("the TPM refused to unseal") == true, "\(String(describing: error))")
        #expect(error?.refusal == .key)  // for good: asking again changes nothing
    }

    @Test("a TPM whose owner hierarchy has a password refuses for good, until it is cleared")
    func ownerPassword() throws {
        let swtpm = try Swtpm()
        let tpm = TPM(tcti: swtpm.tcti, pcrs: [])
        let secret = randomBytes(32)
        let blob = try tpm.seal(secret)
        try swtpm.setOwnerPassword("owner-secret")
        try tpm.probe()  // it answers
        let sealing = #expect(throws: TPMError.self) { try tpm.seal(secret) }
        #expect(sealing?.refusal == .ownerPassword, "\(String(describing: sealing))")
        #expect(sealing?.description.hasPrefix("the TPM refused to make its storage key: ") == true)
        let unsealing = #expect(throws: TPMError.self) { try tpm.unseal(blob) }
        #expect(unsealing?.refusal == .ownerPassword, "\(String(describing: unsealing))")
        try swtpm.setOwnerPassword(nil, current: "owner-secret")
        #expect(try tpm.unseal(blob) == secret)
        #expect(try swtpm.loadedHandles() == [])
    }

    @Test("the TPM's answers read as refusals for good only for what they refuse, in the TPM's own layer")
    func responseCodes() {
        let cases: [(UInt32, TPM.Command, TPMRefusal?)] = [
            (0x1df, .load, .key),  // integrity check failed, parameter 1: another seed, or altered
            (0x99f, .load, .key),  // the same about session 1
            (0x155, .load, .key),  // the sensitive area did not unmarshal after decryption
            (0x1e5, .load, .key),  // public and sensitive parts not bound
            (0x99d, .unseal, .key),  // a policy check failed, session 1: the bound PCRs changed
            (0x98e, .unseal, .key),  // authorization HMAC failed
            (0x9a2, .createPrimary, .ownerPassword),  // authorization failure without DA implications
            (0x98e, .createPrimary, .ownerPassword),  // the HMAC form of it
            (0x1df, .createPrimary, nil),  // not about the owner's authorization
            (0x99d, .load, nil),  // a policy failure is Unseal's answer, not Load's
            (0x128, .unseal, nil),  // the PCRs changed during the policy session: try again
            (0x922, .load, nil),  // retry (a warning)
            (0x902, .createPrimary, nil),  // out of memory for objects
            (0x921, .unseal, nil),  // DA lockout: it ends
            (0x91f, .load, nil),  // a warning, whatever its number
            (0x11f, .load, nil),  // a format-zero code, not integrity's
            (0x51f, .load, nil),  // a vendor's code
            (0x01f, .load, nil),  // a TPM 1.2 code
            (0x7_01df, .load, nil),  // ESAPI's layer, with the same low bits
            (0xa_000a, .load, nil),  // the TCTI's I/O error
            (0xb_01df, .load, nil),  // a resource manager's own
            (0, .load, nil),
        ]
        for (rc, command, refusal) in cases {
            #expect(TPM.refusal(ofResponse: rc, to: command) == refusal, "0x\(String(rc, radix: 16)) to \(command)")
        }
    }

    @Test("a secret bound to PCR 16 opens until PCR 16 is extended; an unbound one still opens")
    func pcrBinding() throws {
        let swtpm = try Swtpm()
        let bound = TPM(tcti: swtpm.tcti, pcrs: [16])
        let unbound = TPM(tcti: swtpm.tcti, pcrs: [])
        let secret = randomBytes(32)
        let boundBlob = try bound.seal(secret)
        let unboundBlob = try unbound.seal(secret)
        #expect(try bound.unseal(boundBlob) == secret)

        try swtpm.extend(pcr: 16)
        let error = #expect(throws: TPMError.self) { try bound.unseal(boundBlob) }
        #expect(error?.description.contains("the TPM refused to unseal") == true, "\(String(describing: error))")
        #expect(error?.refusal == .key)
        #expect(try unbound.unseal(unboundBlob) == secret)
        // The PCRs a blob needs travel in the blob, not in the caller's configuration.
        #expect(throws: TPMError.self) { try unbound.unseal(boundBlob) }
    }

    @Test("the secret never crosses the socket in clear, sealed or unsealed, bound to PCRs or not")
    func encryptedOnTheWire() throws {
        let swtpm = try Swtpm()
        let relay = try Relay(to: swtpm)
        defer { relay.stop() }
        for pcrs in [[], [16]] {
            let tpm = TPM(tcti: relay.tcti, pcrs: pcrs)
            let secret = randomBytes(32)
            let blob = try tpm.seal(secret)
            #expect(try tpm.unseal(blob) == secret)
            let wire = relay.recorded
            // The relay saw the conversation: the sealed object's public part went by.
            let sawPublicPart = contains(wire, Array(blob[6..<38]))
            #expect(sawPublicPart)
            let inClear = stride(from: 0, through: secret.count - 8, by: 4).filter {
                contains(wire, Array(secret[$0..<($0 + 8)]))
            }
            #expect(inClear.isEmpty, "secret bytes from offsets \(inClear) crossed in clear (PCRs \(pcrs))")
        }
    }

    @Test("secrets of 1 to 128 bytes seal; an empty or longer one is refused with a sentence")
    func secretSizes() throws {
        let swtpm = try Swtpm()
        let tpm = TPM(tcti: swtpm.tcti, pcrs: [])
        for size in [1, 128] {
            let secret = randomBytes(size)
            #expect(try tpm.unseal(tpm.seal(secret)) == secret)
        }
        for size in [0, 129] {
            let error = #expect(throws: TPMError.self) { try tpm.seal(randomBytes(size)) }
            #expect(error?.description == "a sealed secret holds 1 to 128 bytes")
        }
    }

    @Test("calls from several threads at once each get their own secret back")
    func concurrentCalls() throws {
        let swtpm = try Swtpm()
        let tpm = TPM(tcti: swtpm.tcti, pcrs: [])
        let secrets = (0..<6).map { _ in randomBytes(32) }
        let results = Results(count: secrets.count)
        DispatchQueue.concurrentPerform(iterations: secrets.count) { i in
            results.set(i, Result { () throws(TPMError) in try tpm.unseal(tpm.seal(secrets[i])) })
        }
        for (i, secret) in secrets.enumerated() {
            #expect(try results.get(i)?.get() == secret)
        }
        #expect(try swtpm.loadedHandles() == [])
    }

    @Test("every call flushes what it loaded, whether it succeeded or failed")
    func nothingLeftLoaded() throws {
        let swtpm = try Swtpm()
        let unbound = TPM(tcti: swtpm.tcti, pcrs: [])
        let bound = TPM(tcti: swtpm.tcti, pcrs: [7, 16])
        let secret = randomBytes(32)
        // More rounds than the TPM has slots for transient objects (3 on swtpm): a leak would fail.
        for _ in 0..<5 {
            try unbound.probe()
            let blob = try unbound.seal(secret)
            #expect(try unbound.unseal(blob) == secret)
            let boundBlob = try bound.seal(secret)
            #expect(try bound.unseal(boundBlob) == secret)
            var damaged = blob
            damaged[damaged.count - 1] ^= 0x01
            #expect(throws: TPMError.self) { try unbound.unseal(damaged) }
        }
        try swtpm.extend(pcr: 16)
        let blob = try bound.seal(secret)
        try swtpm.extend(pcr: 16)
        #expect(throws: TPMError.self) { try bound.unseal(blob) }
        #expect(try swtpm.loadedHandles() == [])
    }

    @Test("no TPM at the address: a sentence within seconds, no hang")
    func nothingListens() throws {
        let port = try freePortPair()
        let tcti = "swtpm:host=127.0.0.1,port=\(port)"
        let clock = ContinuousClock()
        let started = clock.now
        let error = #expect(throws: TPMError.self) { try TPM(tcti: tcti, pcrs: []).probe() }
        #expect(clock.now - started < .seconds(5))
        #expect(error?.description.hasPrefix("no TPM answers at \(tcti)") == true, "\(String(describing: error))")
        #expect(error?.absent == true)  // nothing to connect to: no TPM, as `seal = auto` reads it
        #expect(error?.refusal == nil)
        #expect(#expect(throws: TPMError.self) { try TPM(tcti: tcti, pcrs: []).seal(randomBytes(32)) } != nil)
    }

    @Test("the kernel's TCTI naming a device node that does not exist: no TPM, said at once")
    func noDeviceNode() throws {
        let tcti = "device:/nonexistent/tpmrm0"
        for call in [
            { try TPM(tcti: tcti, pcrs: []).probe() }, { _ = try TPM(tcti: tcti, pcrs: []).seal(randomBytes(32)) },
        ] {
            let error = #expect(throws: TPMError.self) { try call() }
            #expect(
                error?.description == "no TPM answers at \(tcti): /nonexistent/tpmrm0 does not exist",
                "\(String(describing: error))")
        }
        // A probe says there is no TPM, which `seal = auto` reads as sealing off.
        #expect(#expect(throws: TPMError.self) { try TPM(tcti: tcti, pcrs: []).probe() }?.absent == true)
    }

    @Test("a device node that is there but cannot be opened: a failing TPM, never \"no TPM\"")
    func deviceNodeThatWillNotOpen() throws {
        let tcti = "device:/"  // there, and no TPM's device can be opened from a directory
        let error = #expect(throws: TPMError.self) { try TPM(tcti: tcti, pcrs: []).probe() }
        #expect(error?.description.hasPrefix("no TPM answers at \(tcti)") == true, "\(String(describing: error))")
        #expect(error?.absent == false)  // `seal = auto` asks again later; prints are not written in the clear
    }

    @Test("a TPM that takes the connection and never answers: a sentence at the deadline, no hang")
    func silentTPM() throws {
        // Listening sockets nobody accepts on: the kernel completes the TCTI's connections, and
        // its handshake then waits for an answer that never comes.
        let port = try freePortPair()
        let listeners = try [port, port + 1].map { try listenLoopback(port: $0) }
        let tcti = "swtpm:host=127.0.0.1,port=\(port)"
        let clock = ContinuousClock()
        let started = clock.now
        let error = #expect(throws: TPMError.self) { try TPM(tcti: tcti, pcrs: []).probe() }
        let took = clock.now - started
        #expect(took >= .seconds(9) && took < .seconds(15), "took \(took)")
        #expect(error?.description.hasPrefix("no TPM answers at \(tcti)") == true, "\(String(describing: error))")
        #expect(error?.absent == false)  // there, and silent: asked again later, never "no TPM"
        #expect(error?.refusal == nil)  // nor refused for good

        // Its worker is still stuck there: the next call is answered at once, no thread queued.
        let again = clock.now
        let next = #expect(throws: TPMError.self) { try TPM(tcti: tcti, pcrs: []).probe() }
        #expect(clock.now - again < .seconds(1))
        #expect(next?.description == "no TPM answers at \(tcti): its last call has not ended")
        #expect(!TPM.settled(within: 0))
        for fd in listeners { close(fd) }  // the connection drops: the worker ends
        #expect(TPM.settled(within: 5000))
    }

    @Test("a blob with one byte flipped does not open, wherever the byte is")
    func tamperedBlob() throws {
        let swtpm = try Swtpm()
        let tpm = TPM(tcti: swtpm.tcti, pcrs: [])
        let secret = randomBytes(32)
        let blob = try tpm.seal(secret)
        // The version, the PCR mask, the public part, the private part's integrity and its end.
        for position in [0, 1, 20, blob.count / 2, blob.count - 40, blob.count - 1] {
            var damaged = blob
            damaged[position] ^= 0x01
            let error = #expect(throws: TPMError.self, "byte \(position)") { try tpm.unseal(damaged) }
            #expect(error.map { !$0.description.isEmpty } == true)
        }
        #expect(#expect(throws: TPMError.self) { try tpm.unseal(Array(blob.dropLast())) } != nil)
        #expect(#expect(throws: TPMError.self) { try tpm.unseal([]) } != nil)
        #expect(#expect(throws: TPMError.self) { try tpm.unseal(blob + blob) } != nil)
        #expect(try tpm.unseal(blob) == secret)
    }
}

/// What each of several threads got, collected under a lock.
final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [Result<[UInt8], TPMError>?]

    init(count: Int) { results = Array(repeating: nil, count: count) }

    func set(_ i: Int, _ result: Result<[UInt8], TPMError>) { lock.withLock { results[i] = result } }
    func get(_ i: Int) -> Result<[UInt8], TPMError>? { lock.withLock { results[i] } }
}
