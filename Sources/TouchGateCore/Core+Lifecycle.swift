// Stopping (SIGTERM) and, for suspend, pausing: every prompt ends with systemCancel and says why.
import Logging
import TouchGateReader
import TouchGateWire

extension Core {
    /// Ends every running prompt with systemCancel and `refusal`; new prompts end the same way
    /// while `stopping`. Front-ends send the replies as their requests finish.
    public func beginShutdown() {
        stopping = true
        stopBegan = monotonicMilliseconds()
        sealingRetry = nil
        cancelPrompts(Self.shutdownRefusal)
    }

    /// While stopping, what a request that arrives on a connection already open is answered: it
    /// would run past the drain and the state's last flush (a password counted after it, lost).
    public var refusalWhileStopping: Reply? { stopping ? Self.shutdownRefusal : nil }

    func cancelPrompts(_ refusal: Refusal) {
        for prompt in activePrompts.values { prompt.interrupt.set(.systemCancel(refusal)) }
    }

    /// After the replies: every state change on disk, the reader closed — each within
    /// `shutdownStepMilliseconds`, so a stuck disk or driver never keeps the daemon from exiting:
    /// every step of the stop together ends within about 7 s, under the package prerm's 10 s
    /// before SIGKILL. The daemon's service group does the two steps as the core's and the
    /// reader's shutdown; this is both, in that order.
    public func finishShutdown() async {
        await flushForShutdown()
        await ReaderService(readers, log: log).shutdown()
    }

    /// Every state change on disk within `shutdownStepMilliseconds`. A write that is still pending
    /// then is one that only relaxes the policy (`.afterReply`): losing it leaves the stricter state.
    /// A password being verified when the stop began is answered and recorded first (a wrong one
    /// counts, docs/spec.md §9), until `passwordStopMilliseconds` after the stop began: a PAM stack
    /// delays a wrong password (pam_unix, 2 s) past the front-ends' drain.
    func flushForShutdown() async {
        if passwordsBeingVerified > 0 {
            let verified = OneShot<Void>()
            passwordsVerified = verified
            let left = Int(Int64(Self.passwordStopMilliseconds) - (monotonicMilliseconds() - stopBegan))
            let late = LoopTimer(after: left) { verified.set(()) }
            await verified.wait()
            late.cancel()
            if passwordsBeingVerified > 0 {
                log.error("a password check still running at exit: its answer is not recorded")
            }
        }
        if await !Self.finishes({ done in
            CoreLoop.shared.task {
                await self.states.flush(); done()
            }
        }) {
            log.error("state writes still pending at exit (after-reply changes only)")
        }
    }

    static let shutdownStepMilliseconds = 1500
    /// How long after the stop began a password being verified may still be answered and recorded.
    static let passwordStopMilliseconds = 3000

    /// logind's default InhibitDelayMaxSec: it goes to sleep after that whether or not the delay
    /// inhibitor is given back, so waiting longer for the readers before sleep gains nothing.
    static let sleepDelayMilliseconds = 5000

    /// Starts `step`, which hands `done` its result when it has finished; that result if it came
    /// within `within` ms, nil once that time is up. A result after that goes to `late`.
    static func result<T: Sendable>(
        within: Int, _ step: (@escaping @CoreActor (T) -> Void) -> Void, late: (@CoreActor (T) -> Void)? = nil
    ) async -> T? {
        let finished = OneShot<T?>()
        let timer = LoopTimer(after: within) { finished.set(nil) }
        defer { timer.cancel() }
        step { value in
            guard finished.isSet else { return finished.set(value) }
            late?(value)
        }
        return await finished.wait()
    }

    /// Starts `step`, which calls `done` when it has finished; true if that was within
    /// `within` ms, false once that time is up.
    static func finishes(
        within: Int = shutdownStepMilliseconds, _ step: (@escaping @CoreActor () -> Void) -> Void
    ) async -> Bool {
        await result(within: within) { done in step { done(()) } } != nil
    }

    /// Closes every reader within `within` ms; a driver that does not let go is said in the log
    /// (`then`: what happens anyway) and left behind. False when they did not close in time.
    static func closeReaders(
        _ readers: any FingerprintReaders, within: Int = shutdownStepMilliseconds, log: Logger, then: String
    ) async -> Bool {
        if await finishes(within: within, { done in readers.close { CoreLoop.shared.post { done() } } }) {
            return true
        }
        log.error("the readers did not close within \(within) ms; \(then)")
        return false
    }

    /// How many prompts are running (for the front-ends' drain and for tests).
    public var runningPrompts: Int { activePrompts.count }
}

extension Core {
    /// Before sleep (logind's PrepareForSleep): every prompt ends with systemCancel and says why,
    /// then the readers are closed (a prompt begun meanwhile ends so too: runPrompt). Requests
    /// during the sleep find no reader.
    public func suspend() async {
        asleep = true
        cancelPrompts(Self.suspendRefusal)
        // The sleep inhibitor is given back once this returns: no later than logind would sleep anyway.
        if await Self.closeReaders(readers, within: Self.sleepDelayMilliseconds, log: log, then: "sleeping anyway") {
            log.info("readers closed for sleep")
        }
    }

    /// After resume: the readers are opened again. Awaited for at most `sleepDelayMilliseconds`
    /// (the sleep watcher takes its inhibitor again once this returns), and so long requests that
    /// need a reader wait (a lock screen's prompt as the lid opens); a reader opened later is
    /// served from then on, and the log says when.
    public func resume() async {
        asleep = false
        // The stop began while the suspend still closed them: they stay closed until the exit.
        if stopping { return log.info("stopping: the readers stay closed after sleep") }
        let reopening = OneShot<Void>()
        self.reopening = reopening
        defer {
            if self.reopening === reopening { self.reopening = nil }
            reopening.set(())
        }
        let reopened = await Self.result(
            within: Self.sleepDelayMilliseconds,
            { [readers] done in readers.reopen { ok in CoreLoop.shared.post { done(ok) } } },
            late: { [log] ok in
                log.info(ok ? "readers reopened after sleep, late" : "no reader after sleep, found late")
            })
        switch reopened {
        case true?: log.info("readers reopened after sleep")
        case false?: log.info("no reader after sleep")
        case nil: log.error("the readers are not open again \(Self.sleepDelayMilliseconds) ms after resume; going on")
        }
    }

    static let suspendRefusal = Refusal(.systemCancel, reason: .suspend, text: .suspending)
}

/// The core as a service: its state is read on demand, so starting is nothing; stopping writes every
/// pending change (after `beginShutdown` has ended the prompts).
extension Core: DaemonService {
    public nonisolated var serviceName: String { "core" }
    public func start() async -> ServiceStart { .running }
    public func shutdown() async { await flushForShutdown() }
}

/// The readers as a service: they open on their own thread from the moment they are made (the
/// daemon is ready before USB enumeration ends); stopping closes them within
/// `shutdownStepMilliseconds`.
@CoreActor public final class ReaderService: DaemonService {
    let readers: any FingerprintReaders
    let log: Logger
    public nonisolated var serviceName: String { "reader" }
    public init(_ readers: any FingerprintReaders, log: Logger) { self.readers = readers; self.log = log }
    public func start() async -> ServiceStart { .running }
    public func shutdown() async {
        _ = await Core.closeReaders(readers, log: log, then: "exiting anyway")
    }
}
