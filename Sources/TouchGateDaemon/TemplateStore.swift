// Enrolled templates on disk: <state>/users/<user>/<finger>.print, 0600 files in 0700 directories.
import Synchronization
import TouchGateWire

public final class TemplateStore: Sendable {
    public let root: String
    /// Finger lists per user, so canEvaluate never touches the disk; the daemon is the only writer.
    private let cache = Mutex<[String: [Finger]]>([:])

    public init(stateDirectory: String) throws(StorageError) {
        root = stateDirectory
        try Files.ensurePrivateDirectory(stateDirectory)
        try Files.ensurePrivateDirectory("\(stateDirectory)/users")
    }

    func userDirectory(_ user: String) -> String { "\(root)/users/\(user)" }
    func path(_ user: String, _ finger: Finger) -> String { "\(userDirectory(user))/\(finger.rawValue).print" }

    /// The user's enrolled fingers in libfprint order.
    public func fingers(of user: String) -> [Finger] {
        precondition(Accounts.isValidName(user))
        if let cached = cache.withLock({ $0[user] }) { return cached }
        let found = Files.list(userDirectory(user)).compactMap { name -> Finger? in
            guard name.hasSuffix(".print") else { return nil }
            return Finger(rawValue: String(name.dropLast(6)))
        }.sorted()
        cache.withLock { $0[user] = found }
        return found
    }

    public func template(of user: String, finger: Finger) throws(StorageError) -> [UInt8]? {
        precondition(Accounts.isValidName(user))
        return try Files.read(path(user, finger))
    }

    public func save(_ bytes: [UInt8], user: String, finger: Finger) throws(StorageError) {
        precondition(Accounts.isValidName(user))
        try Files.ensurePrivateDirectory(userDirectory(user))
        try Files.writeAtomically(bytes, to: path(user, finger))
        cache.withLock { $0[user] = nil }
    }

    /// Deletes the given fingers; returns those that were enrolled.
    @discardableResult
    public func delete(user: String, fingers: [Finger]) throws(StorageError) -> [Finger] {
        let present = Set(self.fingers(of: user))
        defer { cache.withLock { $0[user] = nil } }
        for f in fingers where present.contains(f) { try Files.remove(path(user, f)) }
        try Files.syncDirectory(userDirectory(user))
        return fingers.filter { present.contains($0) }
    }
}
