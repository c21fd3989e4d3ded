// A client of the real socket, as pam_touchgate.so or the CLI would be: blocking calls with deadlines, run
// on threads of their own so neither the core loop nor the test's executor ever blocks.
import Glibc
import TouchGateTestSupport
import TouchGateThreads
import TouchGateWire

/// Runs `body` on a fresh thread and returns its result.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        guard startThread(name: "test-client", { continuation.resume(returning: body()) }) else {
            fatalError("cannot start a test client thread")
        }
    }
}

/// Sets the calling thread's effective uid. glibc's setresuid changes every thread of the process
/// (the daemon's loop included); the system call itself changes only the caller, which is what a
/// client of another user needs (SO_PEERCRED records the connecting thread's credentials).
private func setThreadEffectiveUID(_ uid: UInt32) -> Bool {
    #if arch(x86_64)
    let setresuid = 117
    #elseif arch(arm64)
    let setresuid = 147
    #endif
    typealias Syscall = @convention(c) (Int, Int, Int, Int) -> Int
    guard let symbol = dlsym(nil, "syscall") else { return false }
    let call = unsafeBitCast(symbol, to: Syscall.self)
    return call(setresuid, -1, Int(uid), -1) == 0
}

final class TestClient: Sendable {
    let connection: Connection

    private init(_ connection: Connection) { self.connection = connection }

    deinit { connection.close() }

    /// Connects to `path` as root, or as `uid` (the connecting thread alone takes that uid).
    static func connect(_ path: String, as uid: UInt32? = nil) async throws -> TestClient {
        let connected: Result<Connection, ConnectionError> = await onOwnThread {
            if let uid {
                guard setThreadEffectiveUID(uid) else { return .failure(.io(errno: errno)) }
            }
            defer { if uid != nil { _ = setThreadEffectiveUID(0) } }
            do throws(ConnectionError) { return .success(try Connection.connect(path: path)) } catch {
                return .failure(error)
            }
        }
        return TestClient(try connected.get())
    }

    func send(_ frame: Frame) throws { try connection.send(frame) }

    /// Hangs up, as a client that goes away.
    func close() { connection.close() }

    /// Writes bytes as they are (a malformed or partial frame).
    func sendRaw(_ bytes: [UInt8]) {
        let sent = bytes.withUnsafeBytes { Glibc.send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        precondition(sent == bytes.count, "short write of a test frame")
    }

    /// The next frame, or why there is none (closed, or nothing within the deadline).
    func receive(within milliseconds: Int = defaultDeadlineMilliseconds) async -> Result<Frame, ConnectionError> {
        let connection = self.connection
        return await onOwnThread {
            do throws(ConnectionError) {
                return .success(try connection.receive(deadlineMilliseconds: milliseconds))
            } catch { return .failure(error) }
        }
    }

    /// Frames up to and including the next RESULT; nil when the connection ends or the deadline passes first.
    func untilResult(within milliseconds: Int = defaultDeadlineMilliseconds) async -> (
        progress: [Frame], result: Frame
    )? {
        var progress: [Frame] = []
        while true {
            guard case .success(let frame) = await receive(within: milliseconds) else { return nil }
            if frame.kind == .result { return (progress, frame) }
            progress.append(frame)
        }
    }

    /// The next PROGRESS of `kind` (others before it are skipped); nil when none comes in time.
    func progress(_ kind: ProgressKind, within milliseconds: Int = defaultDeadlineMilliseconds) async -> Frame? {
        while true {
            guard case .success(let frame) = await receive(within: milliseconds) else { return nil }
            if frame.kind == .progress && frame.int(.progress) == kind.rawValue { return frame }
        }
    }

    /// Reads until the daemon closes the connection: true when it did within the deadline.
    func closedByDaemon(within milliseconds: Int = defaultDeadlineMilliseconds) async -> Bool {
        while true {
            switch await receive(within: milliseconds) {
            case .success: continue
            case .failure(.closed): return true
            case .failure: return false
            }
        }
    }

    /// Exactly `count` bytes as the socket delivers them, before any frame was read through `receive`.
    func receiveRaw(_ count: Int, within milliseconds: Int = defaultDeadlineMilliseconds) async -> [UInt8]? {
        let fd = connection.fd
        return await onOwnThread {
            var out: [UInt8] = []
            let deadline = monotonicMilliseconds() + Int64(milliseconds)
            while out.count < count {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let left = deadline - monotonicMilliseconds()
                guard left > 0, poll(&p, 1, Int32(left)) > 0 else { return nil }
                var chunk = [UInt8](repeating: 0, count: count - out.count)
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { return nil }
                out += chunk[0..<n]
            }
            return out
        }
    }

    /// One request and its RESULT (progress skipped).
    func request(_ frame: Frame) async throws -> Frame? {
        try send(frame)
        return await untilResult()?.result
    }
}

extension Frame {
    var code: Outcome? { int(.code).flatMap(Outcome.init(rawValue:)) }
}
