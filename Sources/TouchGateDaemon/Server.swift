// The listening socket: bind or socket activation, accept loop, one thread per client, READY=1.
import Foundation
import Glibc
import Logging
import Synchronization
import TouchGateWire

public final class Server: Sendable {
    let daemon: Daemon
    let listenFD: Int32
    let socketPath: String?
    /// Connections per non-root uid, so one user cannot exhaust the daemon's threads.
    private let perUID = Mutex<[UInt32: Int]>([:])
    static let maxConnectionsPerUser = 16

    /// Binds `path` (replacing a stale socket, never another kind of file), or adopts the socket
    /// systemd passed (LISTEN_FDS) when there is one.
    public init(daemon: Daemon, socketPath path: String) throws(StorageError) {
        self.daemon = daemon
        if let fd = Self.activationSocket() {
            listenFD = fd
            socketPath = nil
            return
        }
        guard var addr = makeUnixAddress(path) else { throw .unsafe("socket path too long: \(path)") }
        var st = stat()
        if lstat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFSOCK else { throw .unsafe("\(path) exists and is not a socket") }
            _ = unlink(path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .io("socket", errno) }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else { let e = errno; close(fd); throw .io("bind \(path)", e) }
        // Anyone may connect; what they may do is decided per request from SO_PEERCRED.
        guard chmod(path, 0o666) == 0 else { let e = errno; close(fd); throw .io("chmod \(path)", e) }
        guard listen(fd, 64) == 0 else { let e = errno; close(fd); throw .io("listen", e) }
        listenFD = fd
        socketPath = path
    }

    private static func activationSocket() -> Int32? {
        let env = ProcessInfo.processInfo.environment
        guard let pid = env["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
              let n = env["LISTEN_FDS"].flatMap(Int.init), n >= 1 else { return nil }
        _ = fcntl(3, F_SETFD, FD_CLOEXEC)
        return 3
    }

    public func removeSocket() {
        if let socketPath { _ = unlink(socketPath) }
    }

    /// Tells systemd we are ready (Type=notify), when it asked.
    public func notifyReady() {
        guard var path = ProcessInfo.processInfo.environment["NOTIFY_SOCKET"], !path.isEmpty else { return }
        if path.hasPrefix("@") { path = "\0" + path.dropFirst() }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
        let len = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let msg = "READY=1"
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                msg.withCString { sendto(fd, $0, strlen($0), Int32(MSG_NOSIGNAL), sa, len) }
            }
        }
    }

    /// Accepts forever; each client gets its own thread.
    public func run() -> Never {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                if errno != EINTR && errno != ECONNABORTED { daemon.log.error("accept: \(String(cString: strerror(errno)))") }
                continue
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            guard let peer = PeerCredentials.of(socket: fd) else { close(fd); continue }
            guard admit(peer.uid) else {
                daemon.log.notice("too many connections from uid \(peer.uid)")
                close(fd)
                continue
            }
            let session = Session(daemon: daemon, connection: Connection(fd: fd), peer: peer)
            let thread = Thread { [self] in
                session.run()
                release(peer.uid)
            }
            thread.stackSize = 512 * 1024
            thread.start()
        }
    }

    private func admit(_ uid: UInt32) -> Bool {
        guard uid != 0 else { return true }
        return perUID.withLock { m in
            let n = m[uid, default: 0]
            guard n < Self.maxConnectionsPerUser else { return false }
            m[uid] = n + 1
            return true
        }
    }

    private func release(_ uid: UInt32) {
        guard uid != 0 else { return }
        perUID.withLock { m in
            m[uid] = max(0, m[uid, default: 1] - 1)
            if m[uid] == 0 { m[uid] = nil }
        }
    }
}
