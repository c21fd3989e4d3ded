// The TPM (TPM.swift) as the sealer of the prints' data key.

public struct TPMSealer: KeySealer {
    let tpm: TPM

    public init(tcti: String, pcrs: [Int]) { tpm = TPM(tcti: tcti, pcrs: pcrs) }

    public func probe() throws(SealingError) {
        do { try tpm.probe() } catch { throw SealingError(error.description, absent: error.absent) }
    }

    public func seal(_ secret: [UInt8]) throws(SealingError) -> [UInt8] {
        do { return try tpm.seal(secret) } catch { throw SealingError(error.description, refusal: error.refusal) }
    }

    public func unseal(_ blob: [UInt8]) throws(SealingError) -> [UInt8] {
        do { return try tpm.unseal(blob) } catch { throw SealingError(error.description, refusal: error.refusal) }
    }
}
