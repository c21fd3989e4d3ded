// The TPM sealing shim against real software TPMs (Debian's swtpm): a sealed key opens on its own
// TPM only, PCR binding holds, a damaged blob or a silent TPM fails with a sentence, never a hang.
import Foundation
import Glibc
import Testing
import TouchGateCore

@Suite("TPM: sealing with swtpm", .serialized)
struct TPMTests {
    @Test("a sealed secret comes back byte for byte, and the blob does not hold it")
    func roundTrip() throws {
        let swtpm = try Swtpm()
        let tpm = TPM(tcti: swtpm.tcti, pcrs: [])
        try tpm.probe()
        let secret = randomBytes(32)
        let blob = try tpm.seal(secret)
        #expect(!blob.isEmpty)
        #expect(!contains(blob, secret))
        #expect(try tpm.unseal(blob) == secret)
    }

    @Test("another TPM (a copied disk on another machine) cannot unseal the blob")
    func anotherTPMRefuses() throws {
        let first = try Swtpm()
        let second = try Swtpm()
        let blob = try TPM(tcti: first.tcti, pcrs: []).seal(randomBytes(32))
        let error = #expect(throws: TPMError.self) { try TPM(tcti: second.tcti, pcrs: []).unseal(blob) }
        #expect(error?.description.contains("the TPM refused to unseal") == true, "\(String(describing: error))")
    }

    @Test("a secret bound to PCR 16 opens until PCR 16 is extended; an unbound one still opens")
    func pcrBinding() throws {
        let swtpm = try Swtpm()
        let bound = TPM(tcti: swtpm.tcti, pcrs: [16])
        let unbound = TPM(tcti: swtpm.tcti, pcrs: [])
        let secret = randomBytes(32)
        let boundBlob = try bound.seal(secret)
        let unboundBlob = try unbound.seal(secret)
        #expect(try bound.unseal(boundBlob) == secret)

        try swtpm.extend(pcr: 16)
        let error = #expect(throws: TPMError.self) { try bound.unseal(boundBlob) }
        #expect(error?.description.contains("the TPM refused to unseal") == true, "\(String(describing: error))")
        #expect(try unbound.unseal(unboundBlob) == secret)
        // The PCRs a blob needs travel in the blob, not in the caller's configuration.
        #expect(throws: TPMError.self) { try unbound.unseal(boundBlob) }
    }

    @Test("secrets of 1 to 128 bytes seal; an empty or longer one is refused with a sentence")
    func secretSizes() throws {
        let swtpm = try Swtpm()
        let tpm = TPM(tcti: swtpm.tcti, pcrs: [])
        for size in [1, 128] {
            let secret = randomBytes(size)
            #expect(try tpm.unseal(tpm.seal(secret)) == secret)
        }
        for size in [0, 129] {
            let error = #expect(throws: TPMError.self) { try tpm.seal(randomBytes(size)) }
            #expect(error?.description == "a sealed secret holds 1 to 128 bytes")
        }
    }

    @Test("calls from several threads at once each get their own secret back")
    func concurrentCalls() throws {
        let swtpm = try Swtpm()
        let tpm = TPM(tcti: swtpm.tcti, pcrs: [])
        let secrets = (0..<4).map { _ in randomBytes(32) }
        let results = Results(count: secrets.count)
        DispatchQueue.concurrentPerform(iterations: secrets.count) { i in
            results.set(i, Result { () throws(TPMError) in try tpm.unseal(tpm.seal(secrets[i])) })
        }
        for (i, secret) in secrets.enumerated() {
            #expect(try results.get(i)?.get() == secret)
        }
        #expect(try swtpm.loadedHandles() == [])
    }

    @Test("every call flushes what it loaded, whether it succeeded or failed")
    func nothingLeftLoaded() throws {
        let swtpm = try Swtpm()
        let unbound = TPM(tcti: swtpm.tcti, pcrs: [])
        let bound = TPM(tcti: swtpm.tcti, pcrs: [7, 16])
        let secret = randomBytes(32)
        // More rounds than the TPM has slots for transient objects (3 on swtpm): a leak would fail.
        for _ in 0..<5 {
            try unbound.probe()
            let blob = try unbound.seal(secret)
            #expect(try unbound.unseal(blob) == secret)
            let boundBlob = try bound.seal(secret)
            #expect(try bound.unseal(boundBlob) == secret)
            var damaged = blob
            damaged[damaged.count - 1] ^= 0x01
            #expect(throws: TPMError.self) { try unbound.unseal(damaged) }
        }
        try swtpm.extend(pcr: 16)
        let blob = try bound.seal(secret)
        try swtpm.extend(pcr: 16)
        #expect(throws: TPMError.self) { try bound.unseal(blob) }
        #expect(try swtpm.loadedHandles() == [])
    }

    @Test("no TPM at the address: a sentence within seconds, no hang")
    func nothingListens() throws {
        let port = try freePortPair()
        let tcti = "swtpm:host=127.0.0.1,port=\(port)"
        let clock = ContinuousClock()
        let started = clock.now
        let error = #expect(throws: TPMError.self) { try TPM(tcti: tcti, pcrs: []).probe() }
        #expect(clock.now - started < .seconds(5))
        #expect(error?.description.hasPrefix("no TPM answers at \(tcti)") == true, "\(String(describing: error))")
        #expect(#expect(throws: TPMError.self) { try TPM(tcti: tcti, pcrs: []).seal(randomBytes(32)) } != nil)
    }

    @Test("a TPM that takes the connection and never answers: a sentence at the deadline, no hang")
    func silentTPM() throws {
        // Listening sockets nobody accepts on: the kernel completes the TCTI's connections, and
        // its handshake then waits for an answer that never comes.
        let port = try freePortPair()
        let listeners = try [port, port + 1].map { try listenLoopback(port: $0) }
        defer { for fd in listeners { close(fd) } }
        let tcti = "swtpm:host=127.0.0.1,port=\(port)"
        let clock = ContinuousClock()
        let started = clock.now
        let error = #expect(throws: TPMError.self) { try TPM(tcti: tcti, pcrs: []).probe() }
        let took = clock.now - started
        #expect(took >= .seconds(9) && took < .seconds(15), "took \(took)")
        #expect(error?.description.hasPrefix("no TPM answers at \(tcti)") == true, "\(String(describing: error))")
    }

    @Test("a blob with one byte flipped does not open, wherever the byte is")
    func tamperedBlob() throws {
        let swtpm = try Swtpm()
        let tpm = TPM(tcti: swtpm.tcti, pcrs: [])
        let secret = randomBytes(32)
        let blob = try tpm.seal(secret)
        // The version, the PCR mask, the public part, the private part's integrity and its end.
        for position in [0, 1, 20, blob.count / 2, blob.count - 40, blob.count - 1] {
            var damaged = blob
            damaged[position] ^= 0x01
            let error = #expect(throws: TPMError.self, "byte \(position)") { try tpm.unseal(damaged) }
            #expect(error.map { !$0.description.isEmpty } == true)
        }
        #expect(#expect(throws: TPMError.self) { try tpm.unseal(Array(blob.dropLast())) } != nil)
        #expect(#expect(throws: TPMError.self) { try tpm.unseal([]) } != nil)
        #expect(#expect(throws: TPMError.self) { try tpm.unseal(blob + blob) } != nil)
        #expect(try tpm.unseal(blob) == secret)
    }
}

// MARK: - A software TPM of the test's own

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

    /// The transient objects and sessions loaded in the TPM, as tpm2_getcap lists them (one
    /// handle a line): what a call left behind.
    func loadedHandles() throws -> [String] {
        try ["handles-transient", "handles-loaded-session"].flatMap { capability in
            try tool("tpm2_getcap", capability).split(separator: "\n").map(String.init)
        }
    }

    /// Runs one of tpm2-tools against this TPM and returns what it printed (a few lines).
    private func tool(_ name: String, _ arguments: String...) throws -> String {
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

/// What each of several threads got, collected under a lock.
final class Results: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [Result<[UInt8], TPMError>?]

    init(count: Int) { results = Array(repeating: nil, count: count) }

    func set(_ i: Int, _ result: Result<[UInt8], TPMError>) { lock.withLock { results[i] = result } }
    func get(_ i: Int) -> Result<[UInt8], TPMError>? { lock.withLock { results[i] } }
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

private func listenLoopback(port: UInt16) throws -> Int32 {
    let (fd, _) = try bindLoopback(port: port)
    guard listen(fd, 8) == 0 else {
        close(fd)
        throw SetupError("listen on port \(port): errno \(errno)")
    }
    return fd
}

private func canConnect(port: UInt16) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = loopback(port: port)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
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

private func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
}

private func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard needle.count <= haystack.count else { return false }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
}
