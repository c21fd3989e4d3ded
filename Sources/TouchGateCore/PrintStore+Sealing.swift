// The print files sealed and opened (PrintSealing.swift): reading either form, writing the sealed
// one when the data key is had, converting a store at start, and writing it back in the clear.
import Synchronization
import TouchGateWire

/// A print file as read: in the clear (stored so, or opened); sealed and not opened now (the key
/// cannot be had); or sealed and not opening with the key in hand (altered, moved, or sealed under
/// another key), which no later attempt changes.
enum StoredPrint: Equatable {
    case plain([UInt8])
    case closed(digest: String, why: String)
    case unopenable(digest: String, why: String)
}

extension PrintFiles {
    /// What a sealed print is bound to: its place in the store, so it opens nowhere else.
    static func place(_ user: String, _ device: DeviceKey, _ finger: Finger) -> String {
        "touchgate-print-v1\0\(user)\0\(device.driver)\0\(device.deviceID)\0\(fileName(finger))"
    }

    /// Reads one print file, opening it when it is sealed.
    func load(_ dir: Directory, _ name: String, user: String, device: DeviceKey, finger: Finger) throws(StorageError)
        -> StoredPrint?
    {
        guard let raw = try dir.read(name) else { return nil }
        guard SealedPrint.isSealed(raw) else { return .plain(raw) }
        let digest = hex(SealedPrint.digest(raw))
        guard let sealing else { return .closed(digest: digest, why: "it is sealed, and sealing is not set up here") }
        switch sealing.key() {
        case .failure(let e): return .closed(digest: digest, why: "it is sealed, and \(e)")
        case .success(nil):
            return .closed(digest: digest, why: "it is sealed, and \(sealing.keyState().reason)")
        case .success(let key?):
            do {
                return .plain(try SealedPrint.open(raw, place: Self.place(user, device, finger), key: key))
            } catch {
                return .unopenable(digest: digest, why: "it is sealed, and \(error)")
            }
        }
    }

    /// The bytes to write for a print: sealed when the data key is had, in the clear when sealing
    /// is off; never in the clear when sealing is required and the key cannot be had.
    func stored(_ plain: [UInt8], user: String, device: DeviceKey, finger: Finger) throws(StorageError) -> [UInt8] {
        guard let sealing else { return plain }
        switch sealing.key() {
        case .failure(let e): throw .sealing("the print cannot be sealed: \(e)")
        case .success(nil): return plain
        case .success(let key?):
            do { return try SealedPrint.seal(plain, place: Self.place(user, device, finger), key: key) } catch {
                throw .unsafe("the print cannot be sealed: \(error)")
            }
        }
    }

    /// Seals every print still in the clear (run once at start, off the core loop). A print that
    /// cannot be sealed stays as it is, and is logged; returns how many were sealed.
    @discardableResult
    public func sealExisting(log: (String) -> Void) -> Int {
        guard let sealing, case .success(.some) = sealing.key() else { return 0 }
        return eachPrint(log: log) { dir, name, user, device, finger throws(StorageError) in
            // Read and replaced under the lock of saves and deletions: a print deleted or saved
            // meanwhile is neither brought back nor overwritten with the older one.
            try writes.run { () throws(StorageError) in
                guard let raw = try dir.read(name), !SealedPrint.isSealed(raw) else { return false }
                try dir.writeAtomically(name, try stored(raw, user: user, device: device, finger: finger))
                return true
            }
        }
    }

    /// Writes every sealed print back in the clear, in fprintd's own format (`touchgated
    /// --export-prints`, before going back to fprintd). Returns how many; throws when one stayed
    /// sealed (each is logged).
    public func exportClear(log: (String) -> Void) throws(StorageError) -> Int {
        var left = 0
        let note: (String) -> Void = {
            left += 1; log($0)
        }
        let count = eachPrint(log: note) { dir, name, user, device, finger throws(StorageError) in
            guard let raw = try dir.read(name), SealedPrint.isSealed(raw) else { return false }
            switch try load(dir, name, user: user, device: device, finger: finger) {
            case .plain(let plain)?: try dir.writeAtomically(name, plain)
            case .closed(_, let why)?, .unopenable(_, let why)?: throw .unsafe(why)
            case nil: return false
            }
            return true
        }
        if left > 0 { throw .unsafe("\(left) print\(left == 1 ? "" : "s") stayed sealed") }
        return count
    }

    /// Calls `body` on every print file of every user; returns how many it rewrote (it returned
    /// true), and logs each it could not, and each directory it could not open.
    private func eachPrint(
        log: (String) -> Void,
        _ body: (Directory, String, String, DeviceKey, Finger) throws(StorageError) -> Bool
    ) -> Int {
        var count = 0
        for user in root.entries() where isValidAccountName(user) {
            let keys: [DeviceKey]
            do { keys = try devices(user) } catch {
                log("\(root.path)/\(user): left as it is: \(error)")
                continue
            }
            for device in keys {
                let found: Directory?
                do { found = try deviceDirectory(user, device, create: false) } catch {
                    log("\(root.path)/\(user)/\(device.driver)/\(device.deviceID): left as it is: \(error)")
                    continue
                }
                guard let dir = found else { continue }
                for name in dir.entries() {
                    guard let finger = Self.finger(fileName: name) else { continue }
                    do {
                        if try body(dir, name, user, device, finger) { count += 1 }
                    } catch {
                        log("\(dir.path)/\(name): left as it is: \(error)")
                    }
                }
            }
        }
        return count
    }
}

extension DataKeyState {
    /// The state in a few words, for logs and doctor.
    public var reason: String {
        switch self {
        case .off(let why): return why
        case .ready: return "the data key is unsealed"
        case .unavailable(let why), .refused(_, let why): return why
        }
    }
}

/// Serializes the changes of print files made side by side on the storage threads: a save, a
/// deletion, and the sealing pass's rewrite of one file (read, seal, replace).
final class PrintWrites: Sendable {
    private let lock = Mutex(())

    func run<T>(_ body: () throws(StorageError) -> T) throws(StorageError) -> T {
        try lock.withLock { _ throws(StorageError) -> T in try body() }
    }
}
