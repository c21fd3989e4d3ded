// Software TPMs for the TPM tests: Debian's swtpm on a free port pair of 127.0.0.1, tpm2-tools to
// act on it behind the shim's back, and a relay that records what crosses the socket.
import Foundation
import Glibc

/// `swtpm socket` on a free port pair of 127.0.0.1 with its state in a fresh directory, stopped
/// when released. A missing swtpm throws: the test fails rather than skips.
final class Swtpm {
    let port: UInt16
    let stateDirectory: String
    private let process = Process()
    private let errors = Pipe()

    var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }

    init(deadline: Duration = .seconds(10)) throws {
        var template = Array("/tmp/touchgate-swtpm.XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SetupError("mkdtemp failed: errno \(errno)") }
        stateDirectory = String(cString: made)
        port = try freePortPair()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/swtpm")
        process.arguments = [
            "socket", "--tpm2", "--tpmstate", "dir=\(stateDirectory)",
            "--server", "type=tcp,port=\(port)", "--ctrl", "type=tcp,port=\(port + 1)",
            "--flags", "not-need-init,startup-clear",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        try waitUntilListening(deadline: deadline)
    }

    deinit {
        // SIGKILL: it cannot be ignored, so the wait below ends; the state is thrown away anyway.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        removeDirectory(stateDirectory)
    }

    /// Extends `pcr` (SHA-256) with a fixed digest through tpm2-tools, as a boot step would.
    func extend(pcr: Int) throws {
        _ = try tool("tpm2_pcrextend", "\(pcr):sha256=" + String(repeating: "ab", count: 32))
    }

    /// Sets the owner hierarchy's password through tpm2-tools, as an administrator would; nil
    /// clears the one set before (`current`).
    func setOwnerPassword(_ password: String?, current: String? = nil) throws {
        let old = current.map { ["-p", $0] } ?? []
        _ = try tool("tpm2_changeauth", ["-c", "owner"] + old + (password.map { [$0] } ?? []))
    }

    /// The transient objects and sessions loaded in the TPM, as tpm2_getcap lists them (one
    /// handle a line): what a call left behind.
    func loadedHandles() throws -> [String] {
        try ["handles-transient", "handles-loaded-session"].flatMap { capability in
            try tool("tpm2_getcap", capability).split(separator: "\n").map(String.init)
        }
    }

    /// Runs one of tpm2-tools against this TPM and returns what it printed (a few lines).
    private func tool(_ name: String, _ arguments: String...) throws -> String { try tool(name, arguments) }

    private func tool(_ name: String, _ arguments: [String]) throws -> String {
        let tool = Process()
        let output = Pipe()
        tool.executableURL = URL(fileURLWithPath: "/usr/bin/\(name)")
        tool.arguments = arguments
        tool.environment = ["TPM2TOOLS_TCTI": tcti, "PATH": "/usr/bin:/bin"]
        tool.standardOutput = output
        let exited = DispatchSemaphore(value: 0)
        tool.terminationHandler = { _ in exited.signal() }
        try tool.run()
        guard exited.wait(timeout: .now() + 10) == .success else {
            kill(tool.processIdentifier, SIGKILL)
            throw SetupError("\(name) did not finish within 10 s")
        }
        guard tool.terminationStatus == 0 else { throw SetupError("\(name) exited \(tool.terminationStatus)") }
        return String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// Connects until swtpm accepts; between tries it waits on swtpm's stderr, which ends (and
    /// wakes the wait) when swtpm dies, so a failed start is reported at once with its words.
    private func waitUntilListening(deadline: Duration) throws {
        let clock = ContinuousClock()
        let end = clock.now + deadline
        let errorFD = errors.fileHandleForReading.fileDescriptor
        while clock.now < end {
            if canConnect(port: port) { return }
            var fd = pollfd(fd: errorFD, events: Int16(POLLIN), revents: 0)
            if poll(&fd, 1, 20) > 0 {
                let text = String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self)
                throw SetupError("swtpm did not start: \(text)")
            }
        }
        throw SetupError("swtpm did not listen on port \(port) within \(deadline)")
    }
}

/// A relay in front of a swtpm on a port pair of its own, recording the bytes that cross its data
/// port both ways: what someone listening on the bus between the shim and the TPM would see.
final class Relay: @unchecked Sendable {
    let port: UInt16
    var tcti: String { "swtpm:host=127.0.0.1,port=\(port)" }
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    private var stopped = false

    init(to swtpm: Swtpm) throws {
        port = try freePortPair()
        let listeners = try [port, port + 1].map { try listenLoopback(port: $0) }
        for (listener, upstream) in zip(listeners, [swtpm.port, swtpm.port + 1]) {
            let recording = upstream == swtpm.port
            Thread.detachNewThread { self.serve(listener, to: upstream, recording: recording) }
        }
    }

    /// Everything relayed on the data port so far, commands and answers.
    var recorded: [UInt8] { lock.withLock { bytes } }

    /// Ends the relay's threads (each notices within its poll interval) and their sockets.
    func stop() { lock.withLock { stopped = true } }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func serve(_ listener: Int32, to upstream: UInt16, recording: Bool) {
        defer { close(listener) }
        while !isStopped {
            var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            guard let server = connectLoopback(port: upstream) else {
                close(client)
                continue
            }
            Thread.detachNewThread { self.pump(client, server, recording: recording) }
        }
    }

    private func pump(_ client: Int32, _ server: Int32, recording: Bool) {
        defer {
            close(client)
            close(server)
        }
        var buffer = [UInt8](repeating: 0, count: 8192)
        while !isStopped {
            var fds = [
                pollfd(fd: client, events: Int16(POLLIN), revents: 0),
                pollfd(fd: server, events: Int16(POLLIN), revents: 0),
            ]
            guard poll(&fds, 2, 100) >= 0 else { return }
            for (from, to) in [(client, server), (server, client)] where fds[from == client ? 0 : 1].revents != 0 {
                let count = read(from, &buffer, buffer.count)
                guard count > 0 else { return }
                if recording { lock.withLock { bytes += buffer[..<count] } }
                guard buffer.withUnsafeBytes({ write(to, $0.baseAddress, count) }) == count else { return }
            }
        }
    }
}

struct SetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A port P of 127.0.0.1 where P and P+1 are both free at the time of asking.
func freePortPair() throws -> UInt16 {
    for _ in 0..<50 {
        let (fd, port) = try bindLoopback(port: 0)
        defer { close(fd) }
        guard port < UInt16.max, let (next, _) = try? bindLoopback(port: port + 1) else { continue }
        close(next)
        return port
    }
    throw SetupError("no free pair of ports on 127.0.0.1")
}

private func bindLoopback(port: UInt16) throws -> (Int32, UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw SetupError("socket: errno \(errno)") }
    var address = loopback(port: port)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
        }
    }
    guard bound else {
        close(fd)
        throw SetupError("bind to port \(port): errno \(errno)")
    }
    return (fd, UInt16(bigEndian: address.sin_port))
}

func listenLoopback(port: UInt16) throws -> Int32 {
    let (fd, _) = try bindLoopback(port: port)
    guard listen(fd, 8) == 0 else {
        close(fd)
        throw SetupError("listen on port \(port): errno \(errno)")
    }
    return fd
}

private func canConnect(port: UInt16) -> Bool {
    guard let fd = connectLoopback(port: port) else { return false }
    close(fd)
    return true
}

/// A socket connected to `port` of 127.0.0.1, or nil when nothing accepts there.
private func connectLoopback(port: UInt16) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    var address = loopback(port: port)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
    guard connected else {
        close(fd)
        return nil
    }
    return fd
}

private func loopback(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

private func removeDirectory(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
}

func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
}
