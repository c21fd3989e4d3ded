// Enrolled templates on disk: <state>/users/<user>/<finger>.print, 0600 files in 0700 directories.
import Crypto
import Foundation
import Synchronization
import TouchGateWire

/// One enrolled print as the policy sees it: which finger, and a digest that changes when it is replaced.
public struct EnrolledPrint: Sendable, Equatable {
    public var finger: Finger
    public var digest: String
}

public final class TemplateStore: Sendable {
    public let root: String
    /// Prints per user, so canEvaluate never touches the disk; the daemon is the only writer.
    private let cache = Mutex<[String: [EnrolledPrint]]>([:])

    public init(stateDirectory: String) throws(StorageError) {
        root = stateDirectory
        try Files.ensurePrivateDirectory(stateDirectory)
        try Files.ensurePrivateDirectory("\(stateDirectory)/users")
    }

    func userDirectory(_ user: String) -> String { "\(root)/users/\(user)" }
    func path(_ user: String, _ finger: Finger) -> String { "\(userDirectory(user))/\(finger.rawValue).print" }

    /// The user's enrolled prints in libfprint finger order. An unreadable template still counts
    /// as enrolled (its digest says so), so a damaged file never looks like "no prints".
    public func prints(of user: String) -> [EnrolledPrint] {
        precondition(Accounts.isValidName(user))
        if let cached = cache.withLock({ $0[user] }) { return cached }
        let found = Files.list(userDirectory(user)).compactMap { name -> EnrolledPrint? in
            guard name.hasSuffix(".print"), let finger = Finger(rawValue: String(name.dropLast(6))) else { return nil }
            let bytes = (try? Files.read(path(user, finger))) ?? nil
            let digest = bytes.map { SHA256.hash(data: $0).map { String(format: "%02x", $0) }.joined() } ?? "unreadable"
            return EnrolledPrint(finger: finger, digest: digest)
        }.sorted { $0.finger < $1.finger }
        cache.withLock { $0[user] = found }
        return found
    }

    public func fingers(of user: String) -> [Finger] { prints(of: user).map(\.finger) }

    public func template(of user: String, finger: Finger) throws(StorageError) -> [UInt8]? {
        precondition(Accounts.isValidName(user))
        return try Files.read(path(user, finger))
    }

    public func save(_ bytes: [UInt8], user: String, finger: Finger) throws(StorageError) {
        precondition(Accounts.isValidName(user))
        defer { cache.withLock { $0[user] = nil } }
        try Files.ensurePrivateDirectory(userDirectory(user))
        try Files.writeAtomically(bytes, to: path(user, finger))
    }

    /// Deletes the given fingers; returns those that were enrolled.
    @discardableResult
    public func delete(user: String, fingers: [Finger]) throws(StorageError) -> [Finger] {
        let present = Set(self.fingers(of: user))
        defer { cache.withLock { $0[user] = nil } }
        for f in fingers where present.contains(f) { try Files.remove(path(user, f)) }
        if !present.isEmpty { try Files.syncDirectory(userDirectory(user)) }
        return fingers.filter { present.contains($0) }
    }
}

extension DomainStateKey {
    /// Hex HMAC, or nil when there are no prints.
    func domainState(service: String, prints: [EnrolledPrint]) -> String? {
        guard !prints.isEmpty else { return nil }
        let digests = prints.map { "\($0.finger.rawValue):\($0.digest)" }.sorted().joined(separator: "\n")
        var message = Array("touchgate-domain-state-v1\0\(service)\0".utf8)
        message.append(contentsOf: Array(digests.utf8))
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key))
        return mac.map { String(format: "%02x", $0) }.joined()
    }
}
