// The listening socket: bound by the daemon, or passed by systemd (LISTEN_FDS); and READY=1.
import Glibc
import TouchGateCore
import TouchGateWire

public enum SocketSetupError: Error, CustomStringConvertible {
    case unsafe(String)
    case io(String, Int32)
    public var description: String {
        switch self {
        case .unsafe(let what): return what
        case .io(let what, let e): return "\(what): \(String(cString: strerror(e)))"
        }
    }
}

public enum ListeningSocket {
    /// Listen backlog: a burst of clients (every PAM stack at a login storm) waits in the kernel
    /// instead of being refused; the daemon accepts them in batches.
    public static let backlog: Int32 = 1024

    /// The socket systemd passed (LISTEN_PID is us, LISTEN_FDS ≥ 1: fd 3), or nil. One that is
    /// not a listening Unix stream socket, or more than one socket (a unit changed by hand), is
    /// refused: serving nothing, or one path of several, while saying READY would be worse than
    /// not starting (the clients of the others would wait unanswered).
    public static func fromActivation() throws(SocketSetupError) -> Int32? {
        guard let pid = environment("LISTEN_PID").flatMap(Int32.init), pid == getpid(),
            let n = environment("LISTEN_FDS").flatMap(Int.init), n >= 1
        else { return nil }
        let fd: Int32 = 3
        // Children (none today) must not think the socket is theirs.
        unsetenv("LISTEN_PID"); unsetenv("LISTEN_FDS"); unsetenv("LISTEN_FDNAMES")
        guard n == 1 else {
            throw .unsafe(
                "systemd passed \(n) sockets; touchgated serves one (its socket unit must have one ListenStream=)")
        }
        guard isListeningUnixStream(fd) else {
            throw .unsafe("the socket systemd passed (fd 3) is not a listening Unix stream socket")
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    static func isListeningUnixStream(_ fd: Int32) -> Bool {
        var type: Int32 = 0, accepting: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0, type == Int32(SOCK_STREAM.rawValue) else {
            return false
        }
        len = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) == 0, accepting != 0 else { return false }
        var address = sockaddr_storage()
        var size = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &size) }
        }
        return named == 0 && Int32(address.ss_family) == AF_UNIX
    }

    /// Binds `path` (replacing a stale socket, never another kind of file, nor one a daemon still
    /// listens on), mode 0666: anyone may connect; what they may do is decided per request from
    /// SO_PEERCRED. A missing directory is made, 0755 (without systemd's socket unit nothing
    /// else makes /run/touchgate); only the last one: its parent must exist.
    public static func bind(_ path: String) throws(SocketSetupError) -> Int32 {
        guard var addr = makeUnixAddress(path) else { throw .unsafe("socket path too long: \(path)") }
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            let directory = String(path[..<slash])
            if mkdir(directory, 0o755) == 0 {
                // The umask (0077 in the unit) must not keep clients out of the directory.
                guard chmod(directory, 0o755) == 0 else { throw .io("chmod \(directory)", errno) }
            } else if errno != EEXIST {
                throw .io("mkdir \(directory)", errno)
            }
        }
        var st = stat()
        if lstat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFSOCK else { throw .unsafe("\(path) exists and is not a socket") }
            if someoneListens(&addr) { throw .unsafe("another daemon is listening on \(path)") }
            _ = unlink(path)
        }
        let fd = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .io("socket", errno) }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else { let e = errno; close(fd); throw .io("bind \(path)", e) }
        guard chmod(path, 0o666) == 0 else { let e = errno; close(fd); throw .io("chmod \(path)", e) }
        guard listen(fd, backlog) == 0 else { let e = errno; close(fd); throw .io("listen", e) }
        return fd
    }

    /// Whether a connection to `addr` is taken (or waits in a full backlog): a live socket.
    private static func someoneListens(_ addr: inout sockaddr_un) -> Bool {
        let probe = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return rc == 0 || errno == EAGAIN || errno == EINPROGRESS
    }

    /// The file `path` names now, to tell at exit whether it is still ours: device and inode, and
    /// its change time, since a file made after ours was removed may get our inode number again.
    public static func identity(of path: String) -> [UInt64]? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return [
            UInt64(st.st_dev), UInt64(st.st_ino), UInt64(bitPattern: Int64(st.st_ctim.tv_sec)),
            UInt64(bitPattern: Int64(st.st_ctim.tv_nsec)),
        ]
    }

    /// Removes the socket file at `path` if it is still the one bound (`identity`), never one
    /// another daemon bound there since.
    public static func remove(_ path: String, ifStill identity: [UInt64]?) {
        guard let identity, Self.identity(of: path) == identity else { return }
        _ = unlink(path)
    }

    /// Tells systemd we are ready (Type=notify), when it asked. Nil when told (or not asked),
    /// else why not: systemd would otherwise time the start out with no word from the daemon.
    public static func notifyReady() -> String? {
        guard var path = environment("NOTIFY_SOCKET") else { return nil }
        if path.hasPrefix("@") { path = "\0" + path.dropFirst() }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return "socket: \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return "NOTIFY_SOCKET is too long" }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
        let len = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let message = "READY=1"
        let sent = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                message.withCString { sendto(fd, $0, strlen($0), Int32(MSG_NOSIGNAL), sa, len) }
            }
        }
        return sent < 0 ? "\(String(cString: strerror(errno)))" : nil
    }

    static func environment(_ name: String) -> String? {
        guard let p = getenv(name), p.pointee != 0 else { return nil }
        return String(cString: p)
    }
}
