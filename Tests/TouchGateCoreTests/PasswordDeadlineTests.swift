// A password check that PAM does not answer within its deadline: the person is answered, PAM is not
// asked the same user's password beside it, and a check no thread took is never run.
import Synchronization
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateThreads
import TouchGateWire

/// A PAM stack that hangs until the test opens it; it records whose passwords reached it.
private final class HangingPasswords: PasswordVerifying, Sendable {
    let gate = TouchGateThreads.Semaphore()
    let open = Mutex(false)
    let checked = Collector<String>()
    /// The n-th is set once n checks have reached PAM.
    let reached: [OneShot<Void>]

    init(reached: [OneShot<Void>]) { self.reached = reached }

    func check(user: String, password: String) -> PasswordCheck {
        checked.append(user)
        let n = checked.all.count
        if n <= reached.count { CoreLoop.shared.post { [reached] in reached[n - 1].set(()) } }
        if !open.withLock({ $0 }) { gate.wait() }
        return .wrong
    }

    /// Lets every check that waits, and every later one, through.
    func release(_ waiting: Int) {
        open.withLock { $0 = true }
        for _ in 0..<waiting { gate.signal() }
    }
}

@Suite("Core: a password check past its deadline")
@CoreActor struct PasswordDeadlineTests {
    static let unavailable = PasswordOutcome.refused(
        Refusal(.internalError, reason: .passwordService, text: .internalError))

    @Test func aCheckGivenUpOnIsNeitherRunBesideNorRunLate() async throws {
        try await withTestBed { bed in
            let pam = HangingPasswords(reached: [OneShot(), OneShot()])
            var setup = try bed.setup()
            setup.passwords = pam
            setup.passwordCheckDeadlineMilliseconds = 3000  // time for a thread to take it on a loaded machine
            let core = try Core(setup)
            let events = Collector<String>()
            _ = core.events.subscribe(user: "alice") {
                events.append($0); return true
            }

            // alice's check hangs in PAM on one of the pool's two threads and is given up on.
            let alices = Task { await core.verifyPassword(context("alice"), "guess") }
            #expect(await value(of: pam.reached[0]) != nil)
            #expect(await alices.value == Self.unavailable)
            // Told as every refusal is: an event (and its audit line), naming the password service.
            #expect(events.all.count == 1)
            #expect(events.all.first?.contains(#""reason":"passwordService""#) == true)
            // It is still in PAM: her next one is not run beside it on the free thread.
            #expect(await core.verifyPassword(context("alice"), "guess") == Self.unavailable)
            #expect(pam.checked.all == ["alice"])

            // bob's hangs on the other thread; carol's then waits in the queue and is given up on.
            let bobs = Task { await core.verifyPassword(context("bob"), "guess") }
            #expect(await value(of: pam.reached[1]) != nil)
            #expect(await core.verifyPassword(context("carol"), "guess") == Self.unavailable)
            #expect(await bobs.value == Self.unavailable)

            pam.release(2)
            #expect(await loopUntil { core.passwordChecksOverdue.isEmpty })
            // carol's check was withdrawn: PAM never saw it.
            #expect(Set(pam.checked.all) == ["alice", "bob"])
            // The late answers were not counted: nobody was told them.
            #expect(try bed.stateOnDisk("alice")?.consecutiveWrongPasswords ?? 0 == 0)

            // Once PAM answered, alice's checks run again.
            #expect(await core.verifyPassword(context("alice"), "guess") != Self.unavailable)
            #expect(pam.checked.all.last == "alice")
        }
    }
}
