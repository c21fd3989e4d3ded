// The listening socket: a live one is never taken over, only the file bound is removed at exit,
// and a socket passed by systemd must be one the daemon can serve on.
import Glibc
import Testing
@testable import TouchGateSocket
import TouchGateTestSupport
import TouchGateWire

@Suite("Socket: the listening socket")
struct ActivationTests {
    @Test func aSocketADaemonListensOnIsNotTakenOverAndAStaleOneIs() async throws {
        try await withTemporaryDirectory { dir in
            let path = "\(dir)/touchgated.sock"
            let first = try ListeningSocket.bind(path)
            #expect(throws: SocketSetupError.self) { _ = try ListeningSocket.bind(path) }
            close(first)  // its file stays behind, stale
            let second = try ListeningSocket.bind(path)
            defer { close(second) }
            #expect(ListeningSocket.isListeningUnixStream(second))
        }
    }

    @Test func aMissingDirectoryIsMadeForClientsToReachTheSocket() async throws {
        try await withTemporaryDirectory { dir in
            let old = umask(0o077)
            defer { umask(old) }
            let fd = try ListeningSocket.bind("\(dir)/touchgate/touchgated.sock")
            defer { close(fd) }
            var st = stat()
            #expect(stat("\(dir)/touchgate", &st) == 0 && st.st_mode & 0o7777 == 0o755)
            #expect(ListeningSocket.identity(of: "\(dir)/touchgate/touchgated.sock") != nil)
            // Only the last directory: a path under one that is missing is refused.
            #expect(throws: SocketSetupError.self) { _ = try ListeningSocket.bind("\(dir)/a/b/touchgated.sock") }
        }
    }

    @Test func atExitOnlyTheSocketFileThisDaemonBoundIsRemoved() async throws {
        try await withTemporaryDirectory { dir in
            let path = "\(dir)/touchgated.sock"
            let old = try ListeningSocket.bind(path)
            defer { close(old) }
            let mine = ListeningSocket.identity(of: path)
            #expect(rename(path, "\(path).moved") == 0)  // its file gone from the path (and kept,
            let newer = try ListeningSocket.bind(path)  // so no inode is reused): another daemon's since
            defer { close(newer) }
            ListeningSocket.remove(path, ifStill: mine)
            #expect(ListeningSocket.identity(of: path) != nil)
            ListeningSocket.remove(path, ifStill: ListeningSocket.identity(of: path))
            #expect(ListeningSocket.identity(of: path) == nil)
        }
    }

    /// READY=1 reaches systemd's socket; a socket that is not there is said, not passed over.
    @Test func readinessIsSentOrWhyNotIsSaid() async throws {
        try await withTemporaryDirectory { dir in
            let path = "\(dir)/notify.sock"
            var addr = try #require(makeUnixAddress(path))
            let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(fd) }
            let bound = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            #expect(bound == 0)
            let saved = getenv("NOTIFY_SOCKET").map { String(cString: $0) }
            defer { if let saved { setenv("NOTIFY_SOCKET", saved, 1) } else { unsetenv("NOTIFY_SOCKET") } }

            setenv("NOTIFY_SOCKET", path, 1)
            #expect(ListeningSocket.notifyReady() == nil)
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            #expect(n > 0 && String(decoding: buffer[..<n], as: UTF8.self) == "READY=1")

            setenv("NOTIFY_SOCKET", "\(dir)/missing.sock", 1)
            #expect(ListeningSocket.notifyReady() == "No such file or directory")
        }
    }

    @Test func onlyAListeningUnixStreamSocketIsServedOn() throws {
        let datagram = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(datagram) }
        #expect(!ListeningSocket.isListeningUnixStream(datagram))
        let unbound = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(unbound) }
        #expect(!ListeningSocket.isListeningUnixStream(unbound))
        let inet = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(inet) }
        #expect(listen(inet, 1) == 0)
        #expect(!ListeningSocket.isListeningUnixStream(inet))
    }
}
