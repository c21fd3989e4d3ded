// A blocking Unix-socket connection that sends and receives frames, every wait bounded by a deadline.
import CTouchGateWire
#if canImport(Glibc)
import Glibc
#endif

public enum ConnectionError: Error, Equatable, Sendable, CustomStringConvertible {
    case socketPathTooLong
    case cannotConnect(path: String, errno: Int32)
    case timedOut
    case closed
    case io(errno: Int32)
    case wire(WireError)

    public var description: String {
        switch self {
        case .socketPathTooLong: return "socket path too long"
        case .cannotConnect(let path, let e): return "cannot connect to \(path): \(String(cString: strerror(e)))"
        case .timedOut: return "the daemon did not answer in time"
        case .closed: return "the daemon closed the connection"
        case .io(let e): return "socket error: \(String(cString: strerror(e)))"
        case .wire(let w): return "bad message from the daemon: \(w)"
        }
    }
}

/// Milliseconds on CLOCK_MONOTONIC.
public func monotonicMilliseconds() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
}

/// Fills a sockaddr_un; nil when the path does not fit.
public func makeUnixAddress(_ path: String) -> sockaddr_un? {
    var addr = sockaddr_un()
    addr.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    let capacity = MemoryLayout.size(ofValue: addr.sun_path)
    guard !bytes.isEmpty, bytes.count < capacity else { return nil }
    withUnsafeMutableBytes(of: &addr.sun_path) { raw in
        for (i, b) in bytes.enumerated() { raw[i] = b }
        raw[bytes.count] = 0
    }
    return addr
}

/// One connected stream socket. Not thread-safe except `send`, which a lock serialises.
public final class Connection: @unchecked Sendable {
    public let fd: Int32
    private var reader = FrameReader()
    private var sendLock = pthread_mutex_t()
    private var closed = false

    /// Takes ownership of a connected socket.
    public init(fd: Int32) {
        self.fd = fd
        pthread_mutex_init(&sendLock, nil)
    }

    deinit {
        close()
        pthread_mutex_destroy(&sendLock)
    }

    public func close() {
        pthread_mutex_lock(&sendLock)
        if !closed { closed = true; _ = Glibc.close(fd) }
        pthread_mutex_unlock(&sendLock)
    }

    /// Connects to a Unix socket; the connect itself is bounded by `deadlineMilliseconds`.
    public static func connect(path: String, deadlineMilliseconds: Int = Int(TG_CONNECT_DEADLINE_MS))
        throws(ConnectionError) -> Connection
    {
        guard var addr = makeUnixAddress(path) else { throw .socketPathTooLong }
        let fd = socket(
            AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .io(errno: errno) }
        let deadline = monotonicMilliseconds() + Int64(deadlineMilliseconds)
        var rc: Int32 = 0, e: Int32 = 0
        while true {
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            e = errno
            // A Unix socket's listen backlog is full and nothing was started (as the C module
            // does: a few short retries, never past the deadline).
            guard rc != 0, e == EAGAIN else { break }
            let left = deadline - monotonicMilliseconds()
            guard left > 0 else {
                _ = Glibc.close(fd)
                throw .timedOut
            }
            _ = poll(nil, 0, Int32(min(left, 10)))
        }
        if rc != 0 {
            if e == EINPROGRESS || e == EINTR {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let n = poll(&p, 1, Int32(deadlineMilliseconds))
                var soError: Int32 = 0
                var len = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len)
                if n <= 0 || soError != 0 {
                    _ = Glibc.close(fd)
                    if n == 0 { throw .timedOut }
                    throw .cannotConnect(path: path, errno: soError != 0 ? soError : errno)
                }
            } else {
                _ = Glibc.close(fd)
                throw .cannotConnect(path: path, errno: e)
            }
        }
        return Connection(fd: fd)
    }

    /// Sends one frame whole; a peer that stops reading makes it fail after `deadlineMilliseconds`.
    /// The encoded copy is wiped once sent: a frame may carry a password.
    public func send(_ frame: Frame, deadlineMilliseconds: Int = 2000) throws(ConnectionError) {
        var bytes: [UInt8]
        do { bytes = try frame.encoded() } catch { throw .wire(error) }
        defer { bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } } }
        pthread_mutex_lock(&sendLock)
        defer { pthread_mutex_unlock(&sendLock) }
        guard !closed else { throw .closed }
        let deadline = monotonicMilliseconds() + Int64(deadlineMilliseconds)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.send(
                    fd, raw.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if n > 0 { offset += n; continue }
            let e = errno
            if n < 0 && e == EINTR { continue }
            guard n < 0, e == EAGAIN || e == EWOULDBLOCK else {
                throw e == EPIPE || e == ECONNRESET ? .closed : .io(errno: e)
            }
            let left = deadline - monotonicMilliseconds()
            guard left > 0 else { throw .timedOut }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, Int32(left))
        }
    }

    /// Receives the next frame, waiting at most `deadlineMilliseconds` (nil = until one arrives).
    public func receive(deadlineMilliseconds: Int?) throws(ConnectionError) -> Frame {
        let deadline = deadlineMilliseconds.map { monotonicMilliseconds() + Int64($0) }
        while true {
            do {
                if let frame = try reader.next() { return frame }
            } catch {
                throw .wire(error)
            }
            var timeout: Int32 = -1
            if let deadline {
                let left = deadline - monotonicMilliseconds()
                guard left > 0 else { throw .timedOut }
                timeout = Int32(left)
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let n = poll(&p, 1, timeout)
            if n < 0 { if errno == EINTR { continue }; throw .io(errno: errno) }
            if n == 0 { throw .timedOut }
            try readAvailable()
        }
    }

    /// The next frame already read from the socket, if a whole one is buffered; never blocks.
    public func nextBuffered() throws(ConnectionError) -> Frame? {
        do { return try reader.next() } catch { throw .wire(error) }
    }

    /// Reads what the socket has now into the frame buffer; throws `.closed` at end of stream.
    public func readAvailable() throws(ConnectionError) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n = chunk.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n == 0 { throw .closed }
        if n < 0 {
            let e = errno
            if e == EAGAIN || e == EWOULDBLOCK || e == EINTR { return }
            throw e == ECONNRESET ? .closed : .io(errno: e)
        }
        reader.append(chunk[0..<n])
    }
}
