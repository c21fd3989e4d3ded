// Prints encrypted at rest (docs/SECURITY.md, "Sealed prints"): AES-256-GCM under a data key that
// only this machine's TPM can unseal, so a copy of the disk yields no print.
import Crypto
import Synchronization
import TouchGateConfig
import TouchGateWire
#if canImport(Glibc)
import Glibc
#endif

/// What seals the data key to the machine: the TPM (TPM.swift), or a stand-in in unit tests.
public protocol KeySealer: Sendable {
    /// Returns when the sealer answers at all (`seal = auto` uses it only then); else says why
    /// not, `absent` when there is none (then `auto` keeps prints in the clear).
    func probe() throws(SealingError)
    func seal(_ secret: [UInt8]) throws(SealingError) -> [UInt8]
    func unseal(_ blob: [UInt8]) throws(SealingError) -> [UInt8]
}

/// Why sealing or opening failed, as one sentence (never key or print bytes).
public struct SealingError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    /// A probe found no sealer at all (no TPM), not one that failed.
    public var absent: Bool
    /// The sealer refused for good (TPM.swift): asking again changes nothing until the machine does.
    public var refusal: TPMRefusal?
    public init(_ description: String, absent: Bool = false, refusal: TPMRefusal? = nil) {
        self.description = description
        self.absent = absent
        self.refusal = refusal
    }
}

/// The data key's state, as the print files and `touchgate doctor` see it.
public enum DataKeyState: Sendable, Equatable {
    /// Prints are written in the clear: sealing is off, or `auto` found no TPM.
    case off(String)
    /// Prints are written sealed and sealed ones open.
    case ready
    /// Sealing is required but the key cannot be had: sealed prints stay closed and no print is
    /// written (fail closed); passwords are not affected.
    case unavailable(String)
    /// The same, because the TPM refused for good (the sentence says why and the way out): it is
    /// still asked again, but no key is ever made in place of the one sealed.
    case refused(TPMRefusal, String)
}

/// The machine's data key, unsealed once on first use (never at start: a slow or absent TPM must
/// not delay the daemon's readiness) and kept in memory for the daemon's life.
public final class PrintSealing: Sendable {
    /// `<state>/sealed-key`: the data key as the TPM sealed it.
    public static let blobName = "sealed-key"
    /// `<state>/prints-exported`: left by `touchgated --export-prints`. While it is there a daemon
    /// that would seal does not start, so none started by a client after the export (a D-Bus
    /// activation during the package's removal) seals the prints again (touchgated(8), FILES).
    public static let exportedName = "prints-exported"
    /// `<state>/prints-left-sealed`: the print store's path, left by `touchgated --export-prints`
    /// when some prints there stayed sealed, so that a purge (when the configuration naming the
    /// store is gone) keeps the key that opens them (touchgated(8), FILES).
    public static let leftSealedName = "prints-left-sealed"

    let mode: SealMode
    let sealer: (any KeySealer)?
    let state: Directory
    /// Only opens the key sealed before, whatever the mode, and never makes one (the export).
    let openOnly: Bool
    private let cached = Mutex<Cached?>(nil)
    /// The refusal of the last answer (its raw value; 0: none), read without waiting for a TPM
    /// conversation under way.
    private let lastRefusal = Atomic<UInt8>(0)

    private enum Resolved {
        case key(SymmetricKey)
        case off(String)
    }

    private enum Cached {
        case resolved(Resolved)
        /// The TPM failed; not asked again before `until` (monotonic milliseconds).
        case failed(SealingError, until: Int64)
    }

    /// How long a failure is answered from memory: a TPM that hangs costs one conversation's
    /// deadline (10 s) per interval, not one per request, so state reads and password checks
    /// queued behind it on the storage threads are not held up again and again.
    let retryAfterMilliseconds: Int64

    public init(
        mode: SealMode, sealer: (any KeySealer)?, state: Directory, retryAfterMilliseconds: Int64 = 30_000,
        openOnly: Bool = false
    ) {
        self.mode = mode; self.sealer = sealer; self.state = state
        self.retryAfterMilliseconds = retryAfterMilliseconds
        self.openOnly = openOnly
    }

    /// The key for reading and writing prints now. Once had it is kept; `off` is remembered too
    /// (a TPM does not appear while the daemon runs); a failure is remembered for
    /// `retryAfterMilliseconds`, then the TPM is asked again.
    func key() -> Result<SymmetricKey?, SealingError> {
        cached.withLock { cached -> Result<SymmetricKey?, SealingError> in
            switch cached {
            case .resolved(.key(let k)): return .success(k)
            case .resolved(.off): return .success(nil)
            case .failed(let e, let until) where monotonicMilliseconds() < until: return .failure(e)
            case .failed, nil: break
            }
            let resolved = resolve()
            var refusal: TPMRefusal?
            if case .failure(let e) = resolved { refusal = e.refusal }
            lastRefusal.store(refusal?.rawValue ?? 0, ordering: .relaxed)
            switch resolved {
            case .success(let r):
                cached = .resolved(r)
                if case .key(let k) = r { return .success(k) }
                return .success(nil)
            case .failure(let e):
                cached = .failed(e, until: monotonicMilliseconds() + retryAfterMilliseconds)
                return .failure(e)
            }
        }
    }

    /// What the TPM refused for good at the last asking (nil: nothing, or not asked yet). It never
    /// waits, so the core's loop may ask while a TPM conversation is under way.
    public var refusal: TPMRefusal? { TPMRefusal(rawValue: lastRefusal.load(ordering: .relaxed)) }

    /// `<state>/sealed-key`, as the way out of a refused key names it.
    public var keyPath: String { "\(state.path)/\(Self.blobName)" }

    /// For status and doctor: what `key()` gives, in words.
    public func keyState() -> DataKeyState {
        switch key() {
        case .success(.some): return .ready
        case .success(.none):
            return cached.withLock {
                if case .resolved(.off(let why)) = $0 { return .off(why) } else { return .off("") }
            }
        case .failure(let e):
            guard let refusal = e.refusal else { return .unavailable(e.description) }
            return .refused(refusal, e.description)
        }
    }

    /// The sentence for a refusal for good: what it is and the way out (status and doctor show it).
    private func refused(_ refusal: TPMRefusal, said: SealingError) -> SealingError {
        switch refusal {
        case .key:
            return SealingError(
                "the TPM no longer opens the key the prints are sealed with (the TPM was cleared, the disk comes from "
                    + "another machine, or the PCRs it is bound to changed): remove \(keyPath), restart touchgated "
                    + "and enroll again; the TPM said: \(said)", refusal: refusal)
        case .ownerPassword:
            return SealingError(
                "sealing cannot use a TPM whose owner hierarchy has a password: clear the owner password, or set "
                    + "seal = no in touchgate.conf; the TPM said: \(said)", refusal: refusal)
        }
    }

    private func resolve() -> Result<Resolved, SealingError> {
        // The export opens what was sealed even after `seal = no` was set: sealing off is what
        // comes after it, and the prints it writes back are what fprintd reads.
        if mode == .no && !openOnly { return .success(.off("sealing is off (seal = no)")) }
        let blob: [UInt8]?
        do { blob = try state.read(Self.blobName, limit: 64 * 1024) } catch {
            return .failure(SealingError("\(state.path)/\(Self.blobName): \(error)"))
        }
        if openOnly && blob == nil { return .success(.off("no data key was ever sealed here")) }
        guard let sealer else {
            // `tpm`, or a key sealed before: without tpm2-tss nothing sealed can open.
            if mode == .auto && blob == nil { return .success(.off("no TPM is present (tpm2-tss is not installed)")) }
            return .failure(SealingError("tpm2-tss is not installed, so the TPM cannot be used"))
        }
        if let blob {
            // A key exists: the prints may be sealed under it, so it is needed whatever the mode.
            do {
                var secret = try sealer.unseal(blob)
                defer { wipe(&secret) }
                guard secret.count == 32 else {
                    return .failure(SealingError("the sealed data key has the wrong size"))
                }
                return .success(.key(SymmetricKey(data: secret)))
            } catch {
                // Never a new key in its place, even refused for good: the prints sealed under it
                // may open again (the PCRs back as they were), and the way out is the administrator's.
                if let refusal = error.refusal { return .failure(refused(refusal, said: error)) }
                return .failure(SealingError("the TPM cannot unseal the data key: \(error)"))
            }
        }
        if mode == .auto {
            // Only a TPM that is not there turns sealing off; one that is there and failed (no
            // answer in time, an error) is asked again later, and nothing is written meanwhile.
            do { try sealer.probe() } catch {
                guard error.absent else { return .failure(SealingError("the TPM cannot be used now: \(error)")) }
                return .success(.off("no TPM is present (\(error))"))
            }
        }
        var secret = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        defer { wipe(&secret) }
        do {
            let sealed = try sealer.seal(secret)
            try state.writeAtomically(Self.blobName, sealed)
        } catch let e as SealingError {
            if let refusal = e.refusal { return .failure(refused(refusal, said: e)) }
            return .failure(SealingError("the TPM cannot seal a data key: \(e)"))
        } catch {
            return .failure(SealingError("\(state.path)/\(Self.blobName): \(error)"))
        }
        return .success(.key(SymmetricKey(data: secret)))
    }
}

/// The sealed file format: "TGSP", a version byte, the SHA-256 of the print in the clear (so the
/// domain state does not change when a print is sealed, and holds while the TPM is away), then
/// AES-GCM's nonce, ciphertext and tag. The print's place (user, reader, finger) and the digest
/// are authenticated with it, so a sealed file moved to another user or finger does not open.
enum SealedPrint {
    static let magic: [UInt8] = Array("TGSP".utf8) + [1]
    static let headerSize = 5 + 32

    static func isSealed(_ bytes: [UInt8]) -> Bool { bytes.count > headerSize && bytes.starts(with: magic) }

    /// The digest recorded in a sealed file's header.
    static func digest(_ bytes: [UInt8]) -> [UInt8] { Array(bytes[5..<headerSize]) }

    static func seal(_ plain: [UInt8], place: String, key: SymmetricKey) throws(SealingError) -> [UInt8] {
        let digest = Array(SHA256.hash(data: plain))
        let header = magic + digest
        do {
            let box = try AES.GCM.seal(plain, using: key, authenticating: header + Array(place.utf8))
            guard let combined = box.combined else { throw SealingError("AES-GCM gave no sealed box") }
            return header + Array(combined)
        } catch let e as SealingError {
            throw e
        } catch {
            throw SealingError("cannot encrypt the print: \(error)")
        }
    }

    static func open(_ sealed: [UInt8], place: String, key: SymmetricKey) throws(SealingError) -> [UInt8] {
        let header = Array(sealed[..<headerSize])
        do {
            let box = try AES.GCM.SealedBox(combined: sealed[headerSize...])
            let plain = Array(try AES.GCM.open(box, using: key, authenticating: header + Array(place.utf8)))
            guard Array(SHA256.hash(data: plain)) == digest(sealed) else {
                throw SealingError("its digest does not match")
            }
            return plain
        } catch let e as SealingError {
            throw e
        } catch {
            throw SealingError("it does not open with this machine's data key (made elsewhere, or altered)")
        }
    }
}

/// Zeroes a copy of a secret (explicit_bzero: the compiler may not drop it as a dead store).
func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { b in
        if let base = b.baseAddress { explicit_bzero(base, b.count) }
    }
}
