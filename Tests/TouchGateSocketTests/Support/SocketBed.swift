// A real Listener on a real Unix socket, over a core with the stub reader; and the frames clients send.
import Glibc
@testable import TouchGateCore
import TouchGatePolicy
@testable import TouchGateSocket
import TouchGateTestSupport
import TouchGateWire

@CoreActor final class SocketBed {
    let bed: TestBed
    let core: Core
    let listener: Listener
    let path: String
    private let fd: Int32

    init(
        _ bed: TestBed, limits: ConnectionLimits, sessions: LoginSessions,
        afterClients: @escaping @CoreActor () -> Void = {}
    ) throws {
        self.bed = bed
        // Clients of other uids must reach the socket through the test's directory.
        try changeMode(bed.root, 0o755)
        core = try bed.makeCore()
        path = "\(bed.root)/touchgated.sock"
        fd = try ListeningSocket.bind(path)
        listener = Listener(
            core: core, fd: fd, limits: limits, log: quietLogger, sessions: sessions, afterClients: afterClients)
    }

    func stop() {
        listener.stopAccepting()
        close(fd)
    }

    func connect(as uid: UInt32? = nil) async throws -> TestClient {
        try await TestClient.connect(path, as: uid)
    }

    /// Alice enrolled, opted in and with her password typed this boot.
    func readyAlice() async throws { try await bed.readyAlice(core) }
}

/// Runs `body` with a listener on a fresh socket; `limits` small where a test needs them.
@CoreActor func withSocketBed<T>(
    limits: ConnectionLimits = ConnectionLimits(), reader: StubReader = StubReader(),
    sessions: LoginSessions = LoginSessions(), afterClients: @escaping @CoreActor () -> Void = {},
    _ body: (SocketBed) async throws -> T
) async throws -> T {
    try await withTestBed(reader: reader) { bed in
        let socket = try SocketBed(bed, limits: limits, sessions: sessions, afterClients: afterClients)
        defer { socket.stop() }
        return try await body(socket)
    }
}

func limits(
    perUser: Int = 16, total: Int = 256, rootReserve: Int = 64, idle: Int = 60_000, slowSender: Int = 60_000,
    output: Int = 256 * 1024
) -> ConnectionLimits {
    var l = ConnectionLimits()
    l.perUser = perUser; l.total = total; l.rootReserve = rootReserve
    l.idleMilliseconds = idle; l.slowSenderMilliseconds = slowSender; l.outputLimit = output
    return l
}

// MARK: requests as clients send them

func evaluateFrame(
    _ id: UInt32, user: String = "alice", policy: EvaluationPolicy = .biometrics, flags: Int32? = nil
) -> Frame {
    var fields = [Field(.user, user), Field(.policy, policy.rawValue), Field(.service, "sudo")]
    if let flags { fields.append(Field(.flags, flags)) }
    return Frame(.evaluate, requestID: id, fields)
}

func canEvaluateFrame(_ id: UInt32, user: String = "alice", locale: String? = nil, rhost: String? = nil) -> Frame {
    var fields = [Field(.user, user), Field(.policy, EvaluationPolicy.biometrics.rawValue)]
    if let locale { fields.append(Field(.locale, locale)) }
    if let rhost { fields.append(Field(.rhost, rhost)) }
    return Frame(.canEvaluate, requestID: id, fields)
}

func devicesFrame(_ id: UInt32) -> Frame { Frame(.devices, requestID: id) }
