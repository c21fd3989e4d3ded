// The daemon's thin layer over libc: peer credentials, accounts, wake pipes, private directories, atomic files.
import Glibc
import SystemPackage

/// The socket peer as the kernel reports it (SO_PEERCRED): the only source of authorization.
public struct PeerCredentials: Sendable, Equatable {
    public var pid: Int32
    public var uid: UInt32
    public var gid: UInt32
    public var isRoot: Bool { uid == 0 }

    /// Mirrors `struct ucred`, which Glibc's Swift module does not export without _GNU_SOURCE.
    private struct UCred { var pid: Int32 = 0; var uid: UInt32 = 0; var gid: UInt32 = 0 }

    public static func of(socket fd: Int32) -> PeerCredentials? {
        var cred = UCred()
        var len = socklen_t(MemoryLayout<UCred>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0,
              len == socklen_t(MemoryLayout<UCred>.size) else { return nil }
        return PeerCredentials(pid: cred.pid, uid: cred.uid, gid: cred.gid)
    }
}

public enum Accounts {
    /// The account name for a uid, or nil.
    public static func name(uid: UInt32) -> String? {
        var pwd = passwd(), result: UnsafeMutablePointer<passwd>?
        var buf = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &pwd, &buf, buf.count, &result) == 0, result != nil else { return nil }
        return String(cString: pwd.pw_name)
    }

    public static func uid(name: String) -> UInt32? {
        var pwd = passwd(), result: UnsafeMutablePointer<passwd>?
        var buf = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(name, &pwd, &buf, buf.count, &result) == 0, result != nil else { return nil }
        return pwd.pw_uid
    }

    /// Account names safe to use as a directory name: no '/', no dot-only names, bounded length.
    public static func isValidName(_ name: String) -> Bool {
        guard (1...64).contains(name.utf8.count), name != ".", name != "..", !name.hasPrefix("-") else { return false }
        return name.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == 0x5F || b == 0x2D || b == 0x2E || b == 0x40 || b == 0x24
        }
    }
}

/// A self-pipe that wakes a thread blocked in poll(2).
final class WakePipe: @unchecked Sendable {
    let readFD: Int32
    let writeFD: Int32

    init() {
        var fds: [Int32] = [-1, -1]
        precondition(pipe(&fds) == 0, "pipe: \(errno)")
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    deinit { close(readFD); close(writeFD) }

    func wake() {
        var b: UInt8 = 1
        _ = write(writeFD, &b, 1)  // a full pipe already means "wake"
    }

    func drain() {
        var buf = [UInt8](repeating: 0, count: 64)
        while read(readFD, &buf, buf.count) > 0 {}
    }
}

public enum StorageError: Error, Equatable, Sendable, CustomStringConvertible {
    case io(String, Int32)
    case unsafe(String)
    public var description: String {
        switch self {
        case .io(let what, let e): return "\(what): \(String(cString: strerror(e)))"
        case .unsafe(let what): return what
        }
    }
}

/// The errno inside a swift-system error (EIO for anything else).
private func errnoValue(_ error: any Error) -> Int32 { (error as? Errno)?.rawValue ?? EIO }

enum Files {
    /// Creates `path` as a 0700 directory owned by us, or checks an existing one is exactly that.
    static func ensurePrivateDirectory(_ path: String) throws(StorageError) {
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw .io("mkdir \(path)", errno) }
        var st = stat()
        guard lstat(path, &st) == 0 else { throw .io("stat \(path)", errno) }
        guard (st.st_mode & S_IFMT) == S_IFDIR else { throw .unsafe("\(path) is not a directory") }
        guard st.st_uid == geteuid() else { throw .unsafe("\(path) is not owned by the daemon's user") }
        if st.st_mode & 0o7777 != 0o700, chmod(path, 0o700) != 0 { throw .io("chmod \(path)", errno) }
    }

    /// Writes a 0600 file atomically: temp file, fsync, rename, fsync of the directory.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(StorageError) {
        let dir = directory(of: path)
        let tmp = "\(path).tmp.\(getpid())"
        _ = unlink(tmp)
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(FilePath(tmp), .writeOnly,
                                         options: [.create, .exclusiveCreate, .noFollow, .closeOnExec],
                                         permissions: [.ownerReadWrite])
        } catch { throw .io("create \(tmp)", errnoValue(error)) }
        do {
            _ = try fd.writeAll(bytes)
        } catch {
            try? fd.close(); _ = unlink(tmp)
            throw .io("write \(tmp)", errnoValue(error))
        }
        let synced = fsync(fd.rawValue) == 0
        let syncErrno = errno
        try? fd.close()
        guard synced else { _ = unlink(tmp); throw .io("fsync \(tmp)", syncErrno) }
        guard rename(tmp, path) == 0 else { let e = errno; _ = unlink(tmp); throw .io("rename \(path)", e) }
        try syncDirectory(dir)
    }

    static func syncDirectory(_ dir: String) throws(StorageError) {
        let dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { throw .io("open \(dir)", errno) }
        defer { close(dfd) }
        guard fsync(dfd) == 0 else { throw .io("fsync \(dir)", errno) }
    }

    /// Reads a regular file (never through a symlink) of at most `limit` bytes; nil if absent.
    static func read(_ path: String, limit: Int = 1 << 20) throws(StorageError) -> [UInt8]? {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(FilePath(path), .readOnly, options: [.noFollow, .closeOnExec])
        } catch {
            if errnoValue(error) == ENOENT { return nil }
            throw .io("open \(path)", errnoValue(error))
        }
        defer { try? fd.close() }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let n: Int
            do { n = try chunk.withUnsafeMutableBytes { try fd.read(into: $0) } } catch { throw .io("read \(path)", errnoValue(error)) }
            if n == 0 { return out }
            out.append(contentsOf: chunk[0..<n])
            if out.count > limit { throw .unsafe("\(path) is larger than \(limit) bytes") }
        }
    }

    static func remove(_ path: String) throws(StorageError) {
        if unlink(path) != 0 && errno != ENOENT { throw .io("unlink \(path)", errno) }
    }

    static func list(_ dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
