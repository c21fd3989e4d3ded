// A TPM 2.0 that seals a short secret (the data key) to this machine, through tg_tpm.h's shim.
// The calls block while the TPM works (tens to hundreds of milliseconds, at most 10 s when it stops
// answering): run them off the loop.
import CTouchGateLibs
import Glibc

/// What a TPM refused for good: its answer is the same at every asking while nothing changes on
/// the machine (tg_tpm.h), unlike a TPM that does not answer or answers "not now".
public enum TPMRefusal: UInt8, Sendable, Equatable {
    /// It does not load or unseal the blob: another TPM made it (a disk from another machine, or
    /// this TPM cleared since), it was altered, or the PCRs it is bound to changed.
    case key = 1
    /// It does not make the storage key under its owner hierarchy, which has a password.
    case ownerPassword = 2
}

/// Why the TPM did not do what was asked, as one English sentence (never the secret).
public struct TPMError: Error, CustomStringConvertible, Sendable {
    public var description: String
    /// No TPM to ask (the device node is missing, tpm2-tss is not installed, nothing to connect
    /// to), as opposed to one that is there and failed.
    public var absent: Bool
    /// The TPM answered with a refusal for good (nil: it may do it when asked again).
    public var refusal: TPMRefusal?

    public init(_ description: String, absent: Bool = false, refusal: TPMRefusal? = nil) {
        self.description = description
        self.absent = absent
        self.refusal = refusal
    }
}

public struct TPM: Sendable {
    /// tpm2-tss's TCTI configuration ("device:/dev/tpmrm0", "swtpm:host=127.0.0.1,port=2321");
    /// empty for tpm2-tss's own search.
    public let tcti: String
    /// The SHA-256 PCRs a sealed secret is bound to (none: it opens whatever booted).
    public let pcrs: [Int]
    private let mask: UInt32

    /// `pcrs` must lie in 0…23 (the configuration is validated before).
    public init(tcti: String, pcrs: [Int]) {
        precondition(pcrs.allSatisfy { (0...23).contains($0) }, "PCRs are numbered 0 to 23")
        self.tcti = tcti
        self.pcrs = pcrs
        mask = pcrs.reduce(0) { $0 | 1 << UInt32($1) }
    }

    /// True once no call is left stuck in a conversation the TPM never answered, within `ms`.
    public static func settled(within ms: Int) -> Bool { tg_tpm_settled(Int32(ms)) }

    /// Returns when a TPM answers through `tcti`.
    public func probe() throws(TPMError) {
        try call { error, cap in tg_tpm_probe(tcti, error, cap) }
    }

    /// The blob that only this TPM (with the same PCR values, when bound) opens again.
    public func seal(_ secret: [UInt8]) throws(TPMError) -> [UInt8] {
        var blob = [UInt8](repeating: 0, count: Int(TG_TPM_BLOB_MAX))
        var length = 0
        try call { error, cap in
            secret.withUnsafeBufferPointer { s in
                blob.withUnsafeMutableBufferPointer { b in
                    tg_tpm_seal(tcti, mask, s.baseAddress, s.count, b.baseAddress, b.count, &length, error, cap)
                }
            }
        }
        return Array(blob[..<length])
    }

    /// The secret `seal` was given. The caller wipes it after use.
    public func unseal(_ blob: [UInt8]) throws(TPMError) -> [UInt8] {
        var secret = [UInt8](repeating: 0, count: Int(TG_TPM_SECRET_MAX))
        defer { wipe(&secret) }
        var length = 0
        try call { error, cap in
            blob.withUnsafeBufferPointer { b in
                secret.withUnsafeMutableBufferPointer { s in
                    tg_tpm_unseal(tcti, b.baseAddress, b.count, s.baseAddress, s.count, &length, error, cap)
                }
            }
        }
        return Array(secret[..<length])
    }

    /// The commands whose answers `refusal(ofResponse:to:)` reads.
    public enum Command: Sendable { case createPrimary, load, unseal }

    /// How the shim reads the response code `rc` (a TSS2_RC, as tpm2-tss returns it) to `command`:
    /// a refusal for good, or nil (a warning, another error, another layer's code).
    public static func refusal(ofResponse rc: UInt32, to command: Command) -> TPMRefusal? {
        let code: Int32
        switch command {
        case .createPrimary: code = TG_TPM_CREATE_PRIMARY
        case .load: code = TG_TPM_LOAD
        case .unseal: code = TG_TPM_UNSEAL
        }
        return refusal(status: tg_tpm_refusal(rc, code))
    }

    private static func refusal(status: Int32) -> TPMRefusal? {
        switch status {
        case TG_TPM_KEY_REFUSED: return .key
        case TG_TPM_OWNER_REFUSED: return .ownerPassword
        default: return nil
        }
    }

    /// Runs one shim call with room for its sentence; throws the sentence when it fails.
    private func call(_ body: (UnsafeMutablePointer<CChar>, Int) -> Int32) throws(TPMError) {
        var error = [CChar](repeating: 0, count: 512)
        let status = error.withUnsafeMutableBufferPointer { body($0.baseAddress!, $0.count) }
        guard status != 0 else { return }
        let bytes = error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        throw TPMError(
            String(decoding: bytes, as: UTF8.self), absent: status == TG_TPM_ABSENT,
            refusal: Self.refusal(status: status))
    }
}
