// Files the daemon trusts, reached only from held directory descriptors: never through a symlink,
// only when owned by the daemon's user and writable by nobody else, written atomically.
import CTouchGateLoop
import Glibc

public enum StorageError: Error, Equatable, Sendable, CustomStringConvertible {
    case io(String, Int32)
    case unsafe(String)
    /// A print that must be sealed cannot be: the TPM does not give the data key now.
    case sealing(String)
    public var description: String {
        switch self {
        case .io(let what, let e): return "\(what): \(String(cString: strerror(e)))"
        case .unsafe(let what), .sealing(let what): return what
        }
    }
}

/// An open directory. Every path below it is one name at a time (`openat`, `O_NOFOLLOW`), so a
/// component replaced by a symlink is refused instead of followed.
public final class Directory: Sendable {
    public let fd: Int32
    /// For messages only; never used to reach a file.
    public let path: String

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// The root of a store: created 0700 if missing; refused unless it is a real directory owned by
    /// the daemon's user that nobody else can write to (a mode looser than 0700 is tightened).
    public static func openRoot(_ path: String, create: Bool = true) throws(StorageError) -> Directory {
        if create && mkdir(path, 0o700) != 0 && errno != EEXIST { throw .io("mkdir \(path)", errno) }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw directoryOpenError(AT_FDCWD, path, path, errno) }
        let dir = Directory(fd: fd, path: path)
        try dir.checkTrusted(tighten: true)
        return dir
    }

    /// Takes this directory for this process alone (an exclusive `flock`, released when the
    /// process ends): false when another process holds it.
    public func takeExclusively() throws(StorageError) -> Bool {
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw .io("flock \(path)", errno)
        }
        return true
    }

    /// A subdirectory; created 0700 when `create` and missing; nil when missing otherwise. A new one
    /// is on disk before it is returned (this directory is synced), so what is written into it
    /// does not vanish with it in a crash.
    public func subdirectory(_ name: String, create: Bool = false) throws(StorageError) -> Directory? {
        try Self.checkName(name)
        let full = "\(path)/\(name)"
        if create {
            if mkdirat(fd, name, 0o700) == 0 {
                try sync()
            } else if errno != EEXIST {
                throw .io("mkdir \(full)", errno)
            }
        }
        let sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if sub < 0 {
            if errno == ENOENT && !create { return nil }
            throw Self.directoryOpenError(fd, name, full, errno)
        }
        let dir = Directory(fd: sub, path: full)
        try dir.checkTrusted(tighten: create)
        return dir
    }

    /// A regular file's bytes (at most `limit`), or nil when there is none. A symlink, another kind
    /// of file, another owner, or group/other write permission is refused.
    public func read(_ name: String, limit: Int = 1 << 20) throws(StorageError) -> [UInt8]? {
        try Self.checkName(name)
        let full = "\(path)/\(name)"
        let file = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        if file < 0 {
            if errno == ENOENT { return nil }
            throw Self.openError(full, errno)
        }
        defer { close(file) }
        var st = stat()
        guard fstat(file, &st) == 0 else { throw .io("stat \(full)", errno) }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw .unsafe("\(full) is not a regular file") }
        try Self.checkOwnership(st, full)
        guard Int(st.st_size) <= limit else { throw .unsafe("\(full) is larger than \(limit) bytes") }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(file, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .io("read \(full)", errno)
            }
            if n == 0 { return out }
            out.append(contentsOf: chunk[0..<n])
            if out.count > limit { throw .unsafe("\(full) is larger than \(limit) bytes") }
        }
    }

    /// Writes a 0600 file atomically: a fresh temporary file, fsync, rename over `name`, fsync of
    /// the directory. A crash leaves the old file or the new one, and at most a temporary file that
    /// `removeStaleTemporaries` deletes at the next start.
    public func writeAtomically(_ name: String, _ bytes: [UInt8]) throws(StorageError) {
        let tmp = try writeTemporary(name, bytes)
        guard renameat(fd, tmp, fd, name) == 0 else {
            let e = errno; unlinkat(fd, tmp, 0); throw .io("rename \(path)/\(name)", e)
        }
        try sync()
    }

    /// Writes `name` as `writeAtomically` does, and keeps what was there (a file or not) under
    /// `aside`: the new file and the old entry change places in one step (`RENAME_EXCHANGE`), so
    /// no moment, crash or failure leaves no entry named `name`. The old one then takes the name
    /// `aside`; if that fails, or a crash comes first, it stays under the temporary name and is
    /// removed at the next start. Where the file system cannot exchange, the old entry is renamed
    /// `aside` just before the new file, already written, takes its place.
    public func replace(_ name: String, _ bytes: [UInt8], keepingOldAs aside: String) throws(StorageError) {
        try Self.checkName(aside)
        let tmp = try writeTemporary(name, bytes)
        if tg_exchange_names(fd, tmp, name) == 0 {
            renameat(fd, tmp, fd, aside)
        } else {
            let e = errno
            let cannotExchange = e == EINVAL || e == EOPNOTSUPP || e == ENOSYS
            if e != ENOENT && !(cannotExchange && renameat(fd, name, fd, aside) == 0) {
                unlinkat(fd, tmp, 0); throw .io("exchange \(path)/\(name)", e)
            }
            guard renameat(fd, tmp, fd, name) == 0 else {
                let e = errno; unlinkat(fd, tmp, 0); throw .io("rename \(path)/\(name)", e)
            }
        }
        try sync()
    }

    /// A fresh 0600 temporary file beside `name` holding `bytes`, synced; returns its name.
    private func writeTemporary(_ name: String, _ bytes: [UInt8]) throws(StorageError) -> String {
        try Self.checkName(name)
        let full = "\(path)/\(name)"
        let random = UInt64.random(in: 1...UInt64.max)
        let tmp = ".\(name)\(Self.temporaryMarker)\(String(random, radix: 16))"
        let file = openat(fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard file >= 0 else { throw .io("create \(path)/\(tmp)", errno) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(file, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let e = n < 0 ? errno : EIO
                close(file); unlinkat(fd, tmp, 0)
                throw .io("write \(full)", e)
            }
            offset += n
        }
        guard fsync(file) == 0 else { let e = errno; close(file); unlinkat(fd, tmp, 0); throw .io("fsync \(full)", e) }
        close(file)
        return tmp
    }

    public func sync() throws(StorageError) {
        guard fsync(fd) == 0 else { throw .io("fsync \(path)", errno) }
    }

    /// Removes a file; true when there was one. It is gone on disk before that (the directory is
    /// synced): a crash does not bring it back.
    @discardableResult
    public func remove(_ name: String) throws(StorageError) -> Bool {
        try Self.checkName(name)
        if unlinkat(fd, name, 0) == 0 {
            try sync()
            return true
        }
        if errno == ENOENT { return false }
        throw .io("unlink \(path)/\(name)", errno)
    }

    /// Removes an empty subdirectory; false when it is missing or not empty.
    @discardableResult
    public func removeEmptySubdirectory(_ name: String) -> Bool {
        (try? Self.checkName(name)) != nil && unlinkat(fd, name, AT_REMOVEDIR) == 0
    }

    /// Whether an entry of that name exists, of any kind (a symlink is not followed). An entry
    /// that cannot be looked up counts as present, so a check built on this fails closed.
    public func contains(_ name: String) -> Bool {
        guard (try? Self.checkName(name)) != nil else { return true }
        var st = stat()
        return fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT
    }

    /// The names in the directory, "." and ".." excepted.
    public func entries() -> [String] { (try? listedEntries()) ?? [] }

    /// The names in it; throws when they cannot be listed (where nothing would be taken for none).
    /// A listing reads through a descriptor of its own: a `dup` of `fd` would share its offset
    /// with every other listing of this directory, and two threads would each see part of it.
    public func listedEntries() throws(StorageError) -> [String] {
        let own = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard own >= 0, let d = fdopendir(own) else {
            let e = errno
            if own >= 0 { close(own) }
            throw .io("list \(path)", e)
        }
        defer { closedir(d) }
        var names: [String] = []
        while true {
            errno = 0
            guard let e = readdir(d) else {
                if errno != 0 { throw .io("list \(path)", errno) }
                return names
            }
            let name = withUnsafeBytes(of: e.pointee.d_name) {
                String(cString: $0.bindMemory(to: CChar.self).baseAddress!)
            }
            if name != "." && name != ".." { names.append(name) }
        }
    }

    /// Deletes what interrupted atomic writes left behind (this layout's and the older
    /// `NAME.tmp.PID` one); returns how many.
    @discardableResult
    public func removeStaleTemporaries() -> Int {
        entries().filter(Self.isTemporary).reduce(0) { n, name in
            n + (unlinkat(fd, name, 0) == 0 ? 1 : 0)
        }
    }

    static let temporaryMarker = ".tmp-"

    static func isTemporary(_ name: String) -> Bool {
        if name.hasPrefix("."), name.utf8.count > 1, containsMarker(name) { return true }
        // The older layout wrote "NAME.tmp.PID".
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 3, parts[parts.count - 2] == "tmp", let pid = parts.last else { return false }
        return !pid.isEmpty && pid.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    private static func containsMarker(_ name: String) -> Bool {
        let bytes = Array(name.utf8), marker = Array(temporaryMarker.utf8)
        guard bytes.count >= marker.count else { return false }
        return (0...(bytes.count - marker.count)).contains { bytes[$0..<($0 + marker.count)].elementsEqual(marker) }
    }

    // MARK: checks

    /// One path component: no '/', no NUL, not "." or "..", not empty.
    static func checkName(_ name: String) throws(StorageError) {
        guard !name.isEmpty, name != ".", name != "..", !name.utf8.contains(0x2F), !name.utf8.contains(0) else {
            throw .unsafe("refused file name '\(name)'")
        }
    }

    private func checkTrusted(tighten: Bool) throws(StorageError) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .io("stat \(path)", errno) }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { throw .unsafe("\(path) is not a directory") }
        if tighten && st.st_uid == geteuid() && st.st_mode & 0o077 != 0 {
            guard fchmod(fd, 0o700) == 0 else { throw .io("chmod \(path)", errno) }
            st.st_mode &= ~mode_t(0o077)
        }
        try Self.checkOwnership(st, path)
    }

    private static func checkOwnership(_ st: stat, _ path: String) throws(StorageError) {
        guard st.st_uid == geteuid() else {
            throw .unsafe("\(path) is owned by uid \(st.st_uid), not by the daemon's user")
        }
        guard st.st_mode & 0o022 == 0 else { throw .unsafe("\(path) is writable by group or others") }
    }

    /// O_DIRECTORY | O_NOFOLLOW reports a symlink as ENOTDIR: the log and status name it for what it is.
    private static func directoryOpenError(_ at: Int32, _ name: String, _ path: String, _ e: Int32) -> StorageError {
        var st = stat()
        if e == ENOTDIR, fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0, (st.st_mode & S_IFMT) == S_IFLNK {
            return .unsafe("\(path) is a symbolic link")
        }
        return openError(path, e)
    }

    private static func openError(_ path: String, _ e: Int32) -> StorageError {
        switch e {
        case ELOOP: return .unsafe("\(path) is a symbolic link")
        case ENOTDIR: return .unsafe("\(path) is not a directory")
        // A socket, or a device without its driver: a file of another kind, which a read of a
        // state or a print refuses (not a failure of the disk, which is worth trying again).
        case ENXIO, ENODEV: return .unsafe("\(path) is not a regular file")
        // Another owner's file or directory, which the daemon (without CAP_DAC_OVERRIDE) may not
        // open: as one it may open and finds another's, not trusted.
        case EACCES, EPERM: return .unsafe("\(path) cannot be opened by the daemon: \(String(cString: strerror(e)))")
        default: return .io("open \(path)", e)
        }
    }
}
