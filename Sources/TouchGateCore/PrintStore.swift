// Enrolled prints in fprintd's layout (<store>/<user>/<driver>/<device id>/<finger as one hex digit>,
// libfprint's serialized prints), so fprintd's users keep their fingers and can go back.
import Crypto
import TouchGateReader
import TouchGateWire

/// What a deletion removed, and why it stopped short of the rest if it did.
public struct PrintDeletion: Sendable, Equatable {
    public var removed: [Finger]
    public var failure: StorageError?
}

/// Which reader a print belongs to: libfprint's driver name and device id.
public struct DeviceKey: Sendable, Equatable, Hashable {
    public var driver: String
    public var deviceID: String
    public init(driver: String, deviceID: String) { self.driver = driver; self.deviceID = deviceID }
}

/// One enrolled print as the policy sees it: which finger, a digest that changes when it is
/// replaced, and whether libfprint can use it (a damaged file still counts as enrolled).
public struct EnrolledPrint: Sendable, Equatable {
    public var finger: Finger
    public var digest: String
    public var damaged: Bool
    /// Why a damaged print cannot be used (for the log).
    public var problem: String?
    /// Sealed and not opened now (PrintSealing.swift): unusable, but not to be enrolled again.
    public var closed: Bool
    public init(finger: Finger, digest: String, damaged: Bool = false, problem: String? = nil, closed: Bool = false) {
        self.finger = finger; self.digest = digest; self.damaged = damaged; self.problem = problem
        self.closed = closed
    }

    /// Damaged in a way that enrolling it again mends (not merely sealed shut).
    public var needsEnrolling: Bool { damaged && !closed }

    /// Whether a prompt can match against it now: the one rule by which the core offers prints to
    /// the reader and judges a match again (neither a damaged print nor one sealed shut can be).
    public var matchable: Bool { !damaged }

    /// `finger:digest`: what the enrollment snapshot and the domain state are made of.
    public var identity: String { "\(finger.rawValue):\(digest)" }
}

/// A user's prints, or why they cannot be trusted (a symlink, another owner): fail closed.
public enum PrintList: Sendable, Equatable {
    case prints([EnrolledPrint])
    case unsafe(String)

    public var prints: [EnrolledPrint] { if case .prints(let p) = self { return p } else { return [] } }
}

/// One enrolled print with its owner, for identification across users.
public struct GalleryPrint: Sendable, Equatable {
    public var user: String
    public var finger: Finger
    public var template: [UInt8]
}

/// The files. Blocking: the core calls these on its storage pool.
public struct PrintFiles: Sendable {
    public let root: Directory
    /// Reads what a serialized print says of itself (libfprint, never a device).
    public let reader: any FingerprintReaders
    /// When set, prints are written sealed once the machine's data key is had, and sealed ones are
    /// opened with it (PrintStore+Sealing.swift); nil reads and writes prints in the clear.
    public let sealing: PrintSealing?

    /// Taken by every change of a print file (PrintWrites).
    let writes = PrintWrites()

    public init(root: Directory, reader: any FingerprintReaders, sealing: PrintSealing? = nil) {
        self.root = root
        self.reader = reader
        self.sealing = sealing
    }

    /// fprintd names a print file by libfprint's finger number in hex: 1 (left thumb) … a (right little).
    public static func fileName(_ finger: Finger) -> String { String(finger.fpFinger, radix: 16) }

    static func finger(fileName: String) -> Finger? {
        guard fileName.utf8.count == 1, let n = Int(fileName, radix: 16) else { return nil }
        return Finger(fpFinger: n)
    }

    /// The user's prints for `device`, in libfprint finger order.
    public func list(_ user: String, device: DeviceKey) -> PrintList {
        do {
            guard let dir = try deviceDirectory(user, device, create: false) else { return .prints([]) }
            var found: [EnrolledPrint] = []
            // Without libfprint (it could not be loaded) nothing can be judged: none is damaged.
            let judged = reader.describesPrints
            for name in dir.entries() {
                guard let finger = Self.finger(fileName: name) else { continue }
                let stored: StoredPrint
                do {
                    guard let read = try load(dir, name, user: user, device: device, finger: finger) else { continue }
                    stored = read
                } catch {
                    // A file that cannot be read or trusted costs that finger only: it still counts
                    // as enrolled (the set changed) but is never used to match.
                    found.append(
                        EnrolledPrint(finger: finger, digest: "unreadable", damaged: true, problem: error.description))
                    continue
                }
                switch stored {
                case .closed(let digest, let why):
                    // Sealed and not opened now (no TPM, say): enrolled as before, the same digest,
                    // so the domain state holds, but unusable until it opens.
                    found.append(
                        EnrolledPrint(finger: finger, digest: digest, damaged: true, problem: why, closed: true))
                case .unopenable(let digest, let why):
                    // The key is had and the file does not open with it: damaged, to enroll again.
                    found.append(EnrolledPrint(finger: finger, digest: digest, damaged: true, problem: why))
                case .plain(let bytes):
                    let problem =
                        judged ? Self.problem(reader.describe(bytes), user: user, device: device, finger: finger) : nil
                    found.append(
                        EnrolledPrint(
                            finger: finger, digest: Self.digest(bytes), damaged: problem != nil, problem: problem))
                }
            }
            return .prints(found.sorted { $0.finger < $1.finger })
        } catch {
            return .unsafe(error.description)
        }
    }

    /// Why a print cannot be used for `user`'s `finger` on `device` (nil when it can): one that
    /// libfprint cannot read, or one made for another user, reader or finger.
    static func problem(_ d: PrintDescription?, user: String, device: DeviceKey, finger: Finger) -> String? {
        guard let d else { return "libfprint cannot read it" }
        if d.username != user { return "it is a print of \(d.username.map { "'\($0)'" } ?? "no user"), not of \(user)" }
        if d.driver != device.driver || d.deviceID != device.deviceID {
            return "it was made on another reader (\(d.driver) \(d.deviceID))"
        }
        if d.finger != finger.fpFinger { return "it is a print of another finger (\(d.finger))" }
        // A match-on-chip reader that lost it (cleared by another system, say) cannot match it.
        if d.onDevice == false { return "the reader no longer holds it" }
        return nil
    }

    public func template(_ user: String, device: DeviceKey, finger: Finger) throws(StorageError) -> [UInt8]? {
        guard let dir = try deviceDirectory(user, device, create: false) else { return nil }
        switch try load(dir, Self.fileName(finger), user: user, device: device, finger: finger) {
        case nil: return nil
        case .plain(let bytes): return bytes
        case .closed(_, let why), .unopenable(_, let why):
            throw .unsafe("\(dir.path)/\(Self.fileName(finger)): \(why)")
        }
    }

    public func save(_ bytes: [UInt8], user: String, device: DeviceKey, finger: Finger) throws(StorageError) {
        let written = try stored(bytes, user: user, device: device, finger: finger)  // may ask the TPM: unlocked
        try writes.run { () throws(StorageError) in
            guard let dir = try deviceDirectory(user, device, create: true) else {
                throw .unsafe("no directory for \(user)")
            }
            try dir.writeAtomically(Self.fileName(finger), written)
        }
    }

    /// Deletes the given fingers on `device`, or on every reader's directory when nil: those that
    /// were enrolled and are gone, and the first failure if a file could not be removed. One that
    /// cannot be removed does not keep the others (as fprintd goes on past it). Empty directories
    /// go too, as fprintd removes them.
    public func delete(_ user: String, device: DeviceKey?, fingers: [Finger]) throws(StorageError) -> PrintDeletion {
        try writes.run { () throws(StorageError) in try deleteFiles(user, device: device, fingers: fingers) }
    }

    private func deleteFiles(_ user: String, device: DeviceKey?, fingers: [Finger]) throws(StorageError)
        -> PrintDeletion
    {
        var removed = Set<Finger>()
        var failure: StorageError?
        for key in try devices(user) where device == nil || key == device {
            do throws(StorageError) {
                guard let userDir = try root.subdirectory(user), let driverDir = try userDir.subdirectory(key.driver),
                    let dir = try driverDir.subdirectory(key.deviceID)
                else { continue }
                for f in fingers {  // each removal is on disk once it returns
                    do throws(StorageError) {
                        if try dir.remove(Self.fileName(f)) { removed.insert(f) }
                    } catch { failure = failure ?? error }
                }
                if driverDir.removeEmptySubdirectory(key.deviceID) { userDir.removeEmptySubdirectory(key.driver) }
            } catch { failure = failure ?? error }
        }
        root.removeEmptySubdirectory(user)
        return PrintDeletion(removed: fingers.filter(removed.contains), failure: failure)
    }

    /// Every usable print on `device`, of every user: what an enrollment's first scan is identified
    /// against. A user whose files cannot be read or trusted adds nothing (never fails the others).
    public func gallery(device: DeviceKey) -> [GalleryPrint] {
        var out: [GalleryPrint] = []
        for user in root.entries() {
            guard let dir = try? deviceDirectory(user, device, create: false) else { continue }
            for name in dir.entries() {
                guard let finger = Self.finger(fileName: name),
                    case .plain(let bytes) = try? load(dir, name, user: user, device: device, finger: finger),
                    Self.problem(reader.describe(bytes), user: user, device: device, finger: finger) == nil
                else { continue }
                out.append(GalleryPrint(user: user, finger: finger, template: bytes))
            }
        }
        return out
    }

    /// Every print of every user on `device`, as libfprint serialized it; nil when any of them
    /// cannot be read (sealed and the TPM away, damaged), nor a user's directory (untrusted, or not
    /// listed): then nobody can say which prints a reader's own storage holds for no one.
    public func everyTemplate(device: DeviceKey) -> [[UInt8]]? {
        var out: [[UInt8]] = []
        guard let users = try? root.listedEntries() else { return nil }
        for user in users {
            let found: Directory?
            do { found = try deviceDirectory(user, device, create: false) } catch { return nil }
            guard let dir = found, let names = try? dir.listedEntries() else {
                if found == nil { continue }  // no prints of this user on this reader
                return nil
            }
            for name in names {
                guard let finger = Self.finger(fileName: name) else { continue }
                guard case .plain(let bytes) = try? load(dir, name, user: user, device: device, finger: finger),
                    reader.describe(bytes) != nil
                else { return nil }
                out.append(bytes)
            }
        }
        return out
    }

    /// `finger:digest` of each of the user's prints on every reader, damaged ones too (what the
    /// enrollment snapshot is made of); nil when one reader's prints cannot be listed.
    public func snapshotEntries(_ user: String, known: [DeviceKey: PrintList] = [:]) -> [String]? {
        guard let keys = try? devices(user) else { return nil }
        var entries: [String] = []
        for key in keys {
            // A reader's list already read is not read, nor its prints opened, again.
            let listed = known[key] ?? list(user, device: key)
            guard case .prints(let found) = listed else { return nil }
            entries += found.map(\.identity)
        }
        return entries
    }

    /// The readers (driver, device id) the user has a directory for.
    public func devices(_ user: String) throws(StorageError) -> [DeviceKey] {
        guard let userDir = try root.subdirectory(user) else { return [] }
        var keys: [DeviceKey] = []
        for driver in userDir.entries() {
            guard let driverDir = try userDir.subdirectory(driver) else { continue }
            for id in driverDir.entries() { keys.append(DeviceKey(driver: driver, deviceID: id)) }
        }
        return keys
    }

    /// Every reader's prints of the user (for status and list when no reader is present).
    public func listAllDevices(_ user: String) -> PrintList {
        do {
            var all: [Finger: EnrolledPrint] = [:]
            for key in try devices(user) {
                switch list(user, device: key) {
                case .unsafe(let why): return .unsafe(why)
                case .prints(let found): for p in found where all[p.finger] == nil { all[p.finger] = p }
                }
            }
            return .prints(all.values.sorted { $0.finger < $1.finger })
        } catch {
            return .unsafe(error.description)
        }
    }

    /// `<store>/<user>/<driver>/<device id>`, each level opened without following links.
    func deviceDirectory(_ user: String, _ device: DeviceKey, create: Bool) throws(StorageError) -> Directory? {
        guard let userDir = try root.subdirectory(user, create: create),
            let driverDir = try userDir.subdirectory(device.driver, create: create)
        else { return nil }
        return try driverDir.subdirectory(device.deviceID, create: create)
    }

    /// Lowercase hex SHA-256: changes whenever a print is replaced.
    static func digest(_ bytes: [UInt8]) -> String {
        hex(Array(SHA256.hash(data: bytes)))
    }
}

/// Lowercase hex of bytes.
func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count * 2)
    for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0xF)]) }
    return String(decoding: out, as: UTF8.self)
}
