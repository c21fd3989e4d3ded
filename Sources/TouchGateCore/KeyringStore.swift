// The login passwords users let touchgate keep for their keyring (docs/spec.md §12): one sealed
// file per user, bound to the user and to their set of prints, so any enrollment change voids it.
import Crypto
import FoundationEssentials
import Glibc
import Synchronization

/// A secret on its way to one reply; never printed (its description hides it).
public struct SecretText: Sendable, Equatable, CustomStringConvertible {
    public let value: String
    public init(_ value: String) { self.value = value }
    public var description: String { "(secret)" }
}

/// What a sealed keyring password gives now.
enum KeyringOpening: Equatable {
    /// The user never set it up (or took it back).
    case off
    case password(SecretText)
    /// It opens (a check for status: the password was not taken out).
    case opens
    /// Set up, but it opens for no prints now: a finger was added, removed or replaced since, or
    /// its password was set aside (a changed password that could not be sealed). The next password
    /// the daemon sees renews it.
    case void
    /// The key that opens it cannot be had now (the TPM, say), its file may not be trusted, or it
    /// was sealed under another key than this one.
    case unavailable(String)
}

/// Why a keyring password was not sealed.
enum KeyringSealFailure: Error, Equatable, CustomStringConvertible {
    /// Nothing here seals it: no TPM (or `seal = no`) and no `keyring_without_tpm`.
    case noKey(String)
    /// The key is there but could not be had now (the TPM failed or did not answer, a damaged key file).
    case keyFailed(String)
    /// The TPM refuses the key for good (cleared, another machine's, the bound PCRs changed, an
    /// owner password): asking again later does not help (docs/spec.md §9).
    case keyRefused(String)
    /// The sealed file could not be written.
    case storage(String)

    var description: String {
        switch self {
        case .noKey(let why), .keyFailed(let why), .keyRefused(let why), .storage(let why): return why
        }
    }
}

/// The key the keyring passwords are sealed under: the machine's data key (the TPM), or — only
/// with `keyring_without_tpm = yes` — a random key kept in a root-only file of the state directory.
public final class KeyringKey: Sendable {
    static let fileName = "keyring-key"
    let sealing: PrintSealing?
    let withoutTPM: Bool
    let state: Directory
    private let fileKey = Mutex<SymmetricKey?>(nil)

    public init(sealing: PrintSealing?, withoutTPM: Bool, state: Directory) {
        self.sealing = sealing; self.withoutTPM = withoutTPM; self.state = state
    }

    /// Blocking (the TPM, the disk): on the storage pool.
    func key() -> Result<SymmetricKey, SealingError> {
        switch sealing?.key() {
        case .success(let k?)?: return .success(k)
        case .failure(let e)?: return .failure(e)
        case .success(nil)?, nil: break
        }
        guard withoutTPM else {
            return .failure(SealingError("no TPM seals it here (seal is off or there is no TPM)", absent: true))
        }
        return fileKey.withLock { cached -> Result<SymmetricKey, SealingError> in
            if let cached { return .success(cached) }
            do {
                var bytes = try state.read(Self.fileName, limit: 64) ?? []
                defer { wipe(&bytes) }
                if bytes.isEmpty {
                    bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
                    try state.writeAtomically(Self.fileName, bytes)
                }
                guard bytes.count == 32 else {
                    return .failure(SealingError("\(state.path)/\(Self.fileName) is damaged"))
                }
                let key = SymmetricKey(data: bytes)
                cached = key
                return .success(key)
            } catch {
                return .failure(SealingError("\(state.path)/\(Self.fileName): \(error)"))
            }
        }
    }

    /// What becomes of `keyring-key` now (Core's `retireKeyringKeyFile`).
    enum Retirement: Sendable {
        /// There is none, or it is the key in use (`keyring_without_tpm`, and no TPM).
        case notDue
        /// It is no longer the key, but the TPM cannot be used now (or the file cannot be read):
        /// it stays until a later start can seal its passwords again.
        case later(String)
        /// It goes: the passwords it opens are sealed again under `to` (the TPM's data key), or
        /// removed when nothing here seals them. `from` is nil when the file is damaged (nothing
        /// opens under it).
        case retire(from: SymmetricKey?, to: SymmetricKey?)
    }

    /// Whether `keyring-key` is to be retired: it exists, and either `keyring_without_tpm` is off
    /// or the TPM's data key is ready (then `key()` never uses the file). Blocking, as `key()`.
    func retirement() -> Retirement {
        guard state.contains(Self.fileName) else { return .notDue }
        var to: SymmetricKey?
        switch sealing?.key() {
        case .success(let k?)?: to = k
        case .failure(let e)?: return .later("the TPM cannot be used now: \(e)")
        case .success(nil)?, nil:
            if withoutTPM { return .notDue }
        }
        do {
            var bytes = try state.read(Self.fileName, limit: 64) ?? []
            defer { wipe(&bytes) }
            return .retire(from: bytes.count == 32 ? SymmetricKey(data: bytes) : nil, to: to)
        } catch {
            return .later("\(state.path)/\(Self.fileName): \(error)")
        }
    }

    /// Removes `keyring-key`: the last step of its retirement, once no password sealed under it is
    /// left.
    func removeFile() throws(StorageError) {
        fileKey.withLock { $0 = nil }
        try state.remove(Self.fileName)
    }

    /// Whether `keyring-key` is on disk, in use or not (doctor warns while it is).
    func fileExists() -> Bool { state.contains(Self.fileName) }

    /// Whether keyring passwords are kept under the root-only key file (doctor warns about it).
    /// Blocking, as `key()`.
    /// A TPM that failed now (`unavailable`) does not count: `key()` then refuses rather than
    /// falling back to the file.
    func usesKeyFile() -> Bool {
        guard withoutTPM else { return false }
        guard let sealing else { return true }
        if case .off = sealing.keyState() { return true }
        return false
    }
}

/// `<state>/users/<user>/keyring`: "TGSK", a version byte (2), the key's identity (8 bytes), then
/// AES-GCM's nonce, ciphertext and tag of the password, authenticated with the user and the
/// enrollment snapshot. Version 1, written before, has no key identity and still opens; its header
/// alone is a password set aside (void). Blocking: the core calls these on its storage pool.
struct KeyringFiles: Sendable {
    static let fileName = "keyring"
    static let magic: [UInt8] = Array("TGSK".utf8) + [1]
    static let magicWithKeyID: [UInt8] = Array("TGSK".utf8) + [2]
    static let keyIDSize = 8
    /// What a file sealed under a key other than this one says (status, the log).
    static let sealedUnderAnotherKey =
        "it was sealed under another key (the TPM's data key was made again, or seal or keyring_without_tpm "
        + "changed since); the next password login seals it again"
    /// The file of a password set aside: set up, opening for no prints (void) until the next
    /// password renews it. The header alone, so a daemon of before reads it as void too.
    static let setAsideMark = magic
    let users: Directory
    let key: KeyringKey

    static func bound(_ user: String, _ snapshot: String) -> [UInt8] {
        Array("touchgate-keyring-v1\0\(user)\0\(snapshot)".utf8)
    }

    /// The sealed file as it is on disk: nil when there is none; throws when it may not be trusted
    /// (a symlink, a foreign owner, writable by others, too large: Directory's checks).
    private func sealedFile(_ user: String) throws(StorageError) -> [UInt8]? {
        guard let dir = try users.subdirectory(user) else { return nil }
        return try dir.read(Self.fileName, limit: 4096)
    }

    /// Whether the user set it up; throws when its file may not be trusted.
    func isSetUp(_ user: String) throws(StorageError) -> Bool { try sealedFile(user) != nil }

    func seal(_ user: String, password: String, snapshot: String) throws(KeyringSealFailure) {
        let k: SymmetricKey
        switch key.key() {
        case .success(let got): k = got
        case .failure(let e):
            if e.absent { throw .noKey(e.description) }
            throw e.refusal != nil ? .keyRefused(e.description) : .keyFailed(e.description)
        }
        var plain = Array(password.utf8)
        defer { wipe(&plain) }
        do {
            guard let dir = try users.subdirectory(user, create: true) else {
                throw StorageError.unsafe("no directory for \(user)")
            }
            try Self.write(plain, in: dir, user, snapshot, under: k)
        } catch {
            throw .storage("cannot seal the keyring password: \(error)")
        }
    }

    /// The password sealed for `user` and `snapshot`. `verifyOnly` (status): only whether it
    /// opens, `.opens`; the password is decrypted into buffers that are wiped, and no String of it
    /// is made.
    func open(_ user: String, snapshot: String?, verifyOnly: Bool = false) -> KeyringOpening {
        let raw: [UInt8]
        do {
            guard let got = try sealedFile(user) else { return .off }
            raw = got
        } catch {
            return .unavailable(error.description)
        }
        if raw == Self.setAsideMark { return .void }
        guard let snapshot else { return .void }  // no prints now: nothing it was bound to
        let k: SymmetricKey
        switch key.key() {
        case .success(let got): k = got
        case .failure(let e): return .unavailable(e.description)
        }
        guard var plain = Self.unseal(raw, user, snapshot, under: k) else {
            // Told apart from the fingers changing only where the file names its key (version 2).
            if let id = Self.keyID(in: raw), id != Self.keyID(of: k) { return .unavailable(Self.sealedUnderAnotherKey) }
            return .void
        }
        defer { wipe(&plain) }
        return verifyOnly ? .opens : .password(SecretText(String(decoding: plain, as: UTF8.self)))
    }

    @discardableResult
    func remove(_ user: String) throws(StorageError) -> Bool {
        guard let dir = try users.subdirectory(user) else { return false }
        return try dir.remove(Self.fileName)
    }

    /// What was done with one user's file (a set-aside, a retirement of `keyring-key`).
    enum Change: Sendable {
        /// Nothing: none, set aside already, sealed under the data key, or (with no data key) one
        /// the key file does not open.
        case untouched
        /// The key file opened it: sealed again under the data key.
        case resealed
        /// Removed (off): the key file opened it and nothing here seals it, or a mark could not be
        /// written.
        case removed
        /// Now the mark of a password set aside (void): the password kept was known to be old, or
        /// it opened under no key (void already) and nothing sealed under the key file is left.
        case setAside
    }

    /// After a password change that could not be sealed: the password kept is known to be the old
    /// one, so it is not kept. The file becomes the mark of a password set aside (void: the next
    /// password renews it); where that cannot be written, it is removed (off). Throws when neither
    /// could be done, or when the file may not be trusted (it is never written over then).
    func setAside(_ user: String) throws(StorageError) -> Change {
        guard let dir = try users.subdirectory(user), try dir.read(Self.fileName, limit: 4096) != nil else {
            return .untouched
        }
        do {
            try dir.writeAtomically(Self.fileName, Self.setAsideMark)
            return .setAside
        } catch {
            try dir.remove(Self.fileName)
            return .removed
        }
    }

    /// The retirement of `keyring-key` for one user: what `from` (the key file) opens is sealed
    /// again under `to` (the data key) or, with none, removed. A file `to` opens is left as it is.
    /// Throws when the file may not be trusted or cannot be written.
    func retire(_ user: String, snapshot: String?, from: SymmetricKey?, to: SymmetricKey?) throws(StorageError)
        -> Change
    {
        guard let dir = try users.subdirectory(user), let raw = try dir.read(Self.fileName, limit: 4096),
            raw != Self.setAsideMark
        else { return .untouched }
        if let snapshot {
            if let to, var opened = Self.unseal(raw, user, snapshot, under: to) {
                wipe(&opened)
                return .untouched
            }
            if let from, var plain = Self.unseal(raw, user, snapshot, under: from) {
                defer { wipe(&plain) }
                guard let to else {
                    try dir.remove(Self.fileName)
                    return .removed
                }
                try Self.write(plain, in: dir, user, snapshot, under: to)
                return .resealed
            }
        }
        guard to != nil else { return .untouched }
        try dir.writeAtomically(Self.fileName, Self.setAsideMark)
        return .setAside
    }

    /// The users with a directory here, each of which may hold a keyring file; throws when they
    /// cannot be listed. Entries of another kind hold none (a symlink is never followed).
    func listedUsers() throws(StorageError) -> [String] {
        try users.listedEntries().filter { name in
            var st = stat()
            return !Directory.isTemporary(name) && fstatat(users.fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0
                && (st.st_mode & S_IFMT) == S_IFDIR
        }
    }

    private static func write(
        _ plain: [UInt8], in dir: Directory, _ user: String, _ snapshot: String, under key: SymmetricKey
    ) throws(StorageError) {
        let combined: Data?
        do {
            combined = try AES.GCM.seal(plain, using: key, authenticating: bound(user, snapshot)).combined
        } catch {
            throw .unsafe("AES-GCM cannot seal: \(error)")
        }
        guard let combined else { throw .unsafe("AES-GCM gave no sealed box") }
        try dir.writeAtomically(fileName, magicWithKeyID + keyID(of: key) + Array(combined))
    }

    /// The identity a file records of the key it was sealed under: the first bytes of an HMAC of
    /// a fixed text, which tells keys apart and says nothing of them.
    static func keyID(of key: SymmetricKey) -> [UInt8] {
        Array(
            HMAC<SHA256>.authenticationCode(for: Array("touchgate-keyring-key-id".utf8), using: key).prefix(keyIDSize))
    }

    /// The key identity a version 2 file records (nil: version 1, or not a sealed file).
    static func keyID(in raw: [UInt8]) -> [UInt8]? {
        guard raw.starts(with: magicWithKeyID), raw.count > magicWithKeyID.count + keyIDSize else { return nil }
        return Array(raw[magicWithKeyID.count..<(magicWithKeyID.count + keyIDSize)])
    }

    /// The password in `raw` under `key`, or nil when it does not open; the caller wipes it. The
    /// buffer AES-GCM decrypted into is wiped here.
    private static func unseal(_ raw: [UInt8], _ user: String, _ snapshot: String, under key: SymmetricKey)
        -> [UInt8]?
    {
        let header: Int
        if keyID(in: raw) != nil {
            header = magicWithKeyID.count + keyIDSize
        } else if raw.starts(with: magic) {
            header = magic.count
        } else {
            return nil
        }
        guard let box = try? AES.GCM.SealedBox(combined: raw[header...]),
            var opened = try? AES.GCM.open(box, using: key, authenticating: bound(user, snapshot))
        else { return nil }
        defer { opened.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
        return Array(opened)
    }
}
