// What the core tests do the way the daemon does it: enroll a print, type a password, look at canEvaluate.
import Crypto
import Testing
@testable import TouchGateCore
import TouchGatePolicy
import TouchGateTestSupport
import TouchGateThreads
import TouchGateWire

func context(_ user: String = "alice", byUID: UInt32 = 0) -> EventContext {
    EventContext(user: user, origin: Origin(service: "sudo", tty: "pts/3"), policy: .biometrics, byUID: byUID)
}

/// alice ready (right index finger enrolled, a password this boot) on a reader that keeps its own
/// copy of each print (match on chip).
@CoreActor func withChipReader(_ body: (TestBed, Core) async throws -> Void) async throws {
    var chip = StubReader.defaultInfo
    chip.hasStorage = true
    try await withTestBed(reader: StubReader(info: chip)) { bed in
        let core = try bed.makeCore()
        try await bed.readyUser(core)
        try await body(bed, core)
    }
}

extension TestBed {
    /// What `touchgate enroll` leaves once the reader produced a print: the file, and the user opted in.
    func enroll(_ core: Core, _ user: String = "alice", finger: Finger = .rightIndex, payload: String = "ridges")
        async throws
    {
        let device = DeviceKey(driver: StubReader.defaultInfo.driver, deviceID: StubReader.defaultInfo.deviceID)
        try await core.prints.save(
            reader.print(user: user, finger: finger.fpFinger, payload: payload),
            user: user, device: device, finger: finger)
        try await core.adminChange(context(user), action: "enroll:\(finger.rawValue)") { core.policyEngine.enable($0) }
    }

    /// Enrolled, opted in and with a password typed this boot: nothing refuses the fingerprint.
    func readyUser(_ core: Core, _ user: String = "alice") async throws {
        try await enroll(core, user)
        try await core.recordPasswordSuccess(context(user))
    }

    /// A print file written beside the core (as another tool, or damage, would leave it).
    func plantPrint(_ user: String, _ finger: Finger, _ bytes: [UInt8]) throws {
        let path = printPath(user, finger)
        try plantDirectory(String(path[..<path.lastIndex(of: "/")!]))
        try plantFile(path, bytes)
    }
}

extension Core {
    func preflight(_ user: String = "alice", rhost: String? = nil) async -> Refusal? {
        await preflight(user: user, rhost: rhost, reader: nil)
    }

    /// The user's state as the core holds it (failing the test when it is unreadable).
    func state(_ user: String = "alice") async -> UserState? {
        guard case .state(let s) = await states.load(user) else {
            Issue.record("the state of \(user) is unreadable")
            return nil
        }
        return s
    }

    func evaluateRequest(
        _ user: String = "alice", policy: EvaluationPolicy = .biometrics, noInput: Bool = false,
        noTerminal: Bool = false
    ) -> EvaluateRequest {
        EvaluateRequest(
            user: user, policy: policy, origin: Origin(service: "sudo", tty: "pts/3"), noInput: noInput,
            noTerminal: noTerminal)
    }

    /// An evaluation started as a front-end starts it; the test talks to its prompt meanwhile.
    func startEvaluate(
        _ user: String = "alice", policy: EvaluationPolicy = .biometrics, caller: Caller = .root,
        noInput: Bool = false, noTerminal: Bool = false
    ) -> (Running<Reply>, CollectingClient, PromptInput) {
        let client = CollectingClient(), input = PromptInput()
        let request = evaluateRequest(user, policy: policy, noInput: noInput, noTerminal: noTerminal)
        let running = Running { await self.evaluate(request, caller: caller, client: client, input: input) }
        return (running, client, input)
    }

    /// Subscribes to every event as root's monitor does; returns what arrives.
    func collectEvents(user: String? = nil) async -> Collector<String> {
        let events = Collector<String>()
        _ = await monitor(user: user, caller: .root) {
            events.append($0); return true
        }
        return events
    }
}

let lockoutRefusal = Refusal(.biometryLockout, reason: .lockout, text: .lockout(attempts: 5))
let bootRefusal = Refusal(.passwordRequired, reason: .boot, text: .passwordRequired(.boot))
let stateUnreadableRefusal = Refusal(.biometryLockout, reason: .stateUnreadable, text: .stateUnreadable)
let printsUnsafeRefusal = Refusal(.biometryNotAvailable, reason: .printsUnsafe, text: .printsUnsafe)
/// A wrong password: the daemon's judgement of a password (BY_PASSWORD on the wire).
let wrongPasswordRefusal = {
    var r = Refusal(.authenticationFailed, reason: .wrongPassword, text: .wrongPassword)
    r.byPassword = true
    return r
}()

/// Plain SHA-256 in lowercase hex, from swift-crypto (the reference, not the code under test).
func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map {
        String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
    }.joined()
}

/// The JSON lines whose `"event"` is `kind`.
func events(_ lines: [String], _ kind: String) -> [String] {
    lines.filter { $0.contains(#""event":"\#(kind)""#) }
}

/// Holds every thread of `pool` and fills its queue; the function returned lets them all run
/// and waits until they have. Nil when the pool did not refuse work once full.
@CoreActor func fill(_ pool: WorkerPool, threads: Int = 2, queueLimit: Int) async -> (() async -> Void)? {
    let gate = Semaphore()
    var jobs: [Running<Int?>] = []
    for _ in 0..<threads {
        let started = OneShot<Void>()
        jobs.append(
            Running {
                try? await pool.run {
                    CoreLoop.shared.post { started.set(()) }; gate.wait(); return 1
                }
            })
        guard await value(of: started) != nil else { return nil }
    }
    for _ in 0..<queueLimit { jobs.append(Running { try? await pool.run { 0 } }) }
    _ = await loopUntil { pool.waiting >= queueLimit }  // each task hops onto the loop first
    let refused = await within { () -> Bool in
        do throws(PoolBusy) { _ = try await pool.run { 0 }; return false } catch { return true }
    }
    let release = { [jobs] in
        for _ in 0..<threads { gate.signal() }
        for job in jobs { _ = await job.value() }
    }
    guard refused == true else {
        await release()
        return nil
    }
    return release
}
