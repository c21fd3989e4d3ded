// Account lookups (NSS, reentrant calls only) and the wall clock, both injected into the core.
import Glibc
import TouchGatePolicy

/// Who the accounts are. The real one asks NSS (which may be a slow directory), so the core calls
/// it on a worker pool; tests pass a table.
public protocol AccountDirectory: Sendable {
    func name(uid: UInt32) -> String?
    func uid(name: String) -> UInt32?
}

public struct SystemAccounts: AccountDirectory {
    public init() {}

    public func name(uid: UInt32) -> String? {
        lookup({ getpwuid_r(uid, $0, $1, $2, $3) }, { String(cString: $0.pw_name) })
    }

    public func uid(name: String) -> UInt32? {
        lookup({ getpwnam_r(name, $0, $1, $2, $3) }, { $0.pw_uid })
    }

    /// getpw*_r with a buffer that grows on ERANGE (large directory entries), up to 1 MiB; the
    /// wanted value is taken out while the buffer the entry points into still exists.
    private func lookup<T>(
        _ call: (
            UnsafeMutablePointer<passwd>, UnsafeMutablePointer<CChar>, Int,
            UnsafeMutablePointer<UnsafeMutablePointer<passwd>?>
        ) -> Int32,
        _ extract: (passwd) -> T
    ) -> T? {
        var size = 4096
        while size <= 1 << 20 {
            let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
            defer { buffer.deallocate() }
            var pwd = passwd()
            var result: UnsafeMutablePointer<passwd>?
            let rc = call(&pwd, buffer, size, &result)
            if rc == ERANGE { size *= 2; continue }
            guard rc == 0, result != nil else { return nil }
            return extract(pwd)
        }
        return nil
    }
}

/// Account names safe to use as a directory name: no '/', no dot-only names, bounded length.
public func isValidAccountName(_ name: String) -> Bool {
    guard (1...64).contains(name.utf8.count), name != ".", name != "..", !name.hasPrefix("-") else { return false }
    return name.utf8.allSatisfy { b in
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
            || b == 0x5F || b == 0x2D || b == 0x2E || b == 0x40 || b == 0x24
    }
}

/// Wall-clock seconds: the policy's windows are about real time (Apple's 48 h, 156 h).
public protocol WallClock: Sendable {
    func now() -> Instant
}

public struct SystemClock: WallClock {
    public init() {}
    public func now() -> Instant { Instant(time(nil)) }
}
