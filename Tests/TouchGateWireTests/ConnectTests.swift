// Connecting to the daemon's socket: a full listen backlog is waited out within the deadline, not
// taken for a connection.
import Glibc
import Testing
import TouchGateWire

@Suite("Wire: connecting")
struct ConnectTests {
    /// A listening Unix socket that never accepts, with the smallest backlog.
    func unansweredSocket(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        listen(fd, 0)
        return fd
    }

    @Test func aFullBacklogIsWaitedOutUntilTheDeadlineNotTakenForAConnection() throws {
        let path = "/tmp/tg-connect-\(getpid()).sock"
        unlink(path)
        let listener = unansweredSocket(path)
        defer {
            close(listener)
            unlink(path)
        }
        var held: [Connection] = []
        var full = false
        for _ in 0..<64 {  // until the backlog refuses (a few connections)
            do throws(ConnectionError) {
                held.append(try Connection.connect(path: path, deadlineMilliseconds: 50))
            } catch {
                #expect(error == .timedOut)
                full = true
                break
            }
        }
        #expect(full, "the backlog never filled")
        _ = held
    }
}
