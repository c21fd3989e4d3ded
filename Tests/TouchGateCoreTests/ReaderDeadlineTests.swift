// Closing and reopening the readers have deadlines: a driver that never answers keeps neither the
// daemon from exiting (SIGTERM), nor logind's sleep waiting on the daemon's inhibitor, nor the
// inhibitor from being taken again after a resume.
import Synchronization
import Testing
@testable import TouchGateCore
import TouchGateReader
import TouchGateTestSupport
import TouchGateThreads

/// A machine whose readers never finish closing or opening again (a stuck driver).
private final class StuckReaders: FingerprintReaders, Sendable {
    var served: [any FingerprintReader] { [] }
    func whenOpened(_ completion: @escaping @Sendable () -> Void) { completion() }
    func describe(_ template: [UInt8]) -> PrintDescription? { nil }
    func close(completion: @escaping @Sendable () -> Void) {}
    func reopen(completion: @escaping @Sendable (Bool) -> Void) {}
}

/// A machine whose readers open again only when the test says so.
private final class LateReaders: FingerprintReaders, Sendable {
    let reopened = Mutex<(@Sendable (Bool) -> Void)?>(nil)
    var served: [any FingerprintReader] { [] }
    func whenOpened(_ completion: @escaping @Sendable () -> Void) { completion() }
    func describe(_ template: [UInt8]) -> PrintDescription? { nil }
    func close(completion: @escaping @Sendable () -> Void) { completion() }
    func reopen(completion: @escaping @Sendable (Bool) -> Void) { reopened.withLock { $0 = completion } }
}

/// The test bed's reader, whose closing (for sleep) waits until the test opens `gate`.
private final class SlowToClose: FingerprintReaders, Sendable {
    let inner: StubReader
    let gate = TouchGateThreads.Semaphore()
    let closing = Mutex(false)
    init(_ inner: StubReader) { self.inner = inner }
    var served: [any FingerprintReader] { inner.served }
    func whenOpened(_ completion: @escaping @Sendable () -> Void) { inner.whenOpened(completion) }
    func describe(_ template: [UInt8]) -> PrintDescription? { inner.describe(template) }
    func close(completion: @escaping @Sendable () -> Void) {
        closing.withLock { $0 = true }
        _ = startThread(name: "close") { [self] in
            gate.wait()
            inner.close(completion: completion)
        }
    }
    func reopen(completion: @escaping @Sendable (Bool) -> Void) { inner.reopen(completion: completion) }
}

/// A machine whose readers' first opening never ends (a driver stuck in its open).
private final class NeverOpened: FingerprintReaders, Sendable {
    var served: [any FingerprintReader] { [] }
    func whenOpened(_ completion: @escaping @Sendable () -> Void) {}
    func describe(_ template: [UInt8]) -> PrintDescription? { nil }
    func close(completion: @escaping @Sendable () -> Void) { completion() }
    func reopen(completion: @escaping @Sendable (Bool) -> Void) { completion(true) }
}

/// A machine whose one reader is back after a resume once the test opens `gate` (its reopening
/// runs on a thread of its own, as libfprint's does).
private final class GatedReaders: FingerprintReaders, Sendable {
    let reader = StubReader()
    let open = Mutex(true)
    let gate = TouchGateThreads.Semaphore()
    let reopening = Mutex(false)
    var served: [any FingerprintReader] { open.withLock { $0 } ? [reader] : [] }
    func whenOpened(_ completion: @escaping @Sendable () -> Void) { completion() }
    func describe(_ template: [UInt8]) -> PrintDescription? { nil }
    func close(completion: @escaping @Sendable () -> Void) {
        open.withLock { $0 = false }
        completion()
    }
    func reopen(completion: @escaping @Sendable (Bool) -> Void) {
        reopening.withLock { $0 = true }
        _ = startThread(name: "reopen") { [self] in
            gate.wait()
            open.withLock { $0 = true }
            completion(true)
        }
    }
}

/// A step that waits on the readers, and how long it may.
enum ReaderStep: String, CaseIterable, Sendable {
    case shutdown, sleep, resume

    @CoreActor var deadline: Int { self == .shutdown ? Core.shutdownStepMilliseconds : Core.sleepDelayMilliseconds }

    @CoreActor func run(_ core: Core) async {
        switch self {
        case .shutdown: await core.finishShutdown()
        case .sleep: await core.suspend()
        case .resume: await core.resume()
        }
    }
}

@Suite("Core: closing and reopening the readers have deadlines")
@CoreActor struct ReaderDeadlineTests {
    /// Shutdown within its step; sleep and resume within logind's default delay.
    @Test(arguments: ReaderStep.allCases)
    func goesOnWhenTheReadersDoNotAnswerWithinItsDeadline(_ step: ReaderStep) async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore(reader: StuckReaders())
            let deadline = step.deadline, began = ContinuousClock.now
            #expect(await within(deadline + 5000) { await step.run(core) } != nil)
            #expect(ContinuousClock.now - began >= .milliseconds(deadline))
        }
    }

    /// A request waits for the readers' first opening only within its deadline, then is told there
    /// is no reader; the requests after it are answered at once, and the log says why once.
    @Test func aFirstOpeningThatNeverEndsHoldsRequestsOnlyUntilItsDeadline() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore(reader: NeverOpened())
            let deadline = Core.readerOpeningMilliseconds, began = ContinuousClock.now
            let first = await within(deadline + 5000) { await core.readerInfo(nil) }
            #expect(first != nil && first! == nil)
            #expect(ContinuousClock.now - began >= .milliseconds(deadline))
            let again = ContinuousClock.now
            #expect(await within(1000) { await core.readerInfo(nil) } != nil)
            #expect(ContinuousClock.now - again < .milliseconds(deadline))
            #expect(bed.logged.all.filter { $0.contains("first opening has not ended") }.count == 1)
        }
    }

    /// A reader that opens after the resume stopped waiting is logged when it does: the log never
    /// leaves "not open again" as the last word about readers that are served.
    @Test func aReaderOpenedAfterTheResumeDeadlineIsLoggedWhenItOpens() async throws {
        try await withTestBed { bed in
            let readers = LateReaders()
            let core = try bed.makeCore(reader: readers)
            #expect(await within(Core.sleepDelayMilliseconds + 5000) { await core.resume() } != nil)
            #expect(bed.logged.all.contains { $0.contains("not open again") })
            #expect(!bed.logged.all.contains { $0.contains("reopened") })

            let reopened = try #require(readers.reopened.withLock { $0 })
            reopened(true)
            // The completion posts to the core loop; one more post runs after it.
            let drained = OneShot<Void>()
            CoreLoop.shared.post { drained.set(()) }
            #expect(await value(of: drained) != nil)
            #expect(bed.logged.all.contains { $0 == "readers reopened after sleep, late" })
        }
    }

    /// A request that comes as the lid opens, while the readers open again, waits for them
    /// instead of finding no reader.
    @Test func aRequestDuringTheReopeningAfterAResumeWaitsForTheReader() async throws {
        try await withTestBed { bed in
            let readers = GatedReaders()
            let core = try bed.makeCore(reader: readers)
            await core.suspend()
            #expect(await core.servedReaders().isEmpty)  // asleep: none
            let resumed = Task { await core.resume() }
            #expect(await loopUntil { readers.reopening.withLock { $0 } })
            let answered = OneShot<Int>()
            Task { answered.set(await core.servedReaders().count) }
            // Still reopening: the request is not answered with no reader meanwhile. (Within 1 s:
            // the resume's own 5 s deadline would end the wait, and rightly answer none.)
            #expect(await loopUntil(10_000, limit: .seconds(1)) { answered.isSet } == false)
            readers.gate.signal()
            #expect(await value(of: answered) == 1)
            await resumed.value
        }
    }

    /// A prompt that begins while the readers close for sleep ends at once, saying why, and asks
    /// for no finger on a reader about to close.
    @Test func aPromptBegunWhileTheReadersCloseForSleepEndsAtOnceSayingWhy() async throws {
        try await withTestBed { bed in
            let readers = SlowToClose(bed.reader)
            let core = try bed.makeCore(reader: readers)
            try await bed.readyUser(core)
            let suspended = Task { await core.suspend() }
            #expect(await loopUntil(limit: .seconds(10)) { readers.closing.withLock { $0 } })
            let (late, client, _) = core.startEvaluate()
            #expect(await late.value() == Core.suspendRefusal)
            #expect(!client.kinds().contains(.prompt))
            #expect(bed.reader.verifications.isEmpty)
            readers.gate.signal()
            await suspended.value
        }
    }

    /// A resume that comes after SIGTERM (logind's resume, then the stop, while the suspend was
    /// still closing the readers) leaves them closed: the daemon exits with its readers closed.
    @Test func aResumeAfterTheStopBeganDoesNotOpenTheReadersAgain() async throws {
        try await withTestBed { bed in
            let readers = LateReaders()
            let core = try bed.makeCore(reader: readers)
            core.beginShutdown()
            await core.finishShutdown()
            await core.resume()
            #expect(readers.reopened.withLock { $0 } == nil)
            #expect(bed.logged.all.contains { $0 == "stopping: the readers stay closed after sleep" })
        }
    }

    /// A driver that does not end a cancelled scan keeps the reader's thread: the reader is held
    /// for it, so a prompt that cannot wait is refused at once and one that can waits its turn,
    /// instead of being granted a reader whose thread is still busy.
    @Test func aScanTheDriverDoesNotEndOnCancelHoldsTheReaderUntilItEnds() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore()
            try await bed.readyUser(core)
            bed.reader.script(.matchOnRelease)  // ignores the cancel: ends only when released
            let (stuck, stuckClient, stuckInput) = core.startEvaluate()
            #expect(await stuckClient.waitFor(.prompt))
            stuckInput.deliver(.cancel)
            #expect(await stuck.value() == Refusal(.appCancel, reason: .cancelled, text: .cancelled))

            let (keyless, _, _) = core.startEvaluate(noTerminal: true)
            #expect(await keyless.value() == Refusal(.biometryNotAvailable, reason: .busy, text: .readerBusy))
            bed.reader.script(.match)
            let (waiting, waitingClient, _) = core.startEvaluate()
            #expect(await waitingClient.waitFor(.queued))
            #expect(bed.reader.verifications.count == 1)

            bed.reader.releaseScan()  // the driver ends it at last: the reader is free
            #expect(await waiting.value() == .success(.recognised))
        }
    }

    /// The same for a chip's own operation an enrollment runs (here clearing a chip that cannot
    /// list, before its first enrollment) when the chip answers after the enrollment's deadline:
    /// the enrollment goes on, and the reader stays held after it until the chip has answered.
    @Test func aChipOperationAnsweredLateHoldsTheReaderAfterTheEnrollmentUntilItEnds() async throws {
        var chip = StubReader.defaultInfo
        chip.hasStorage = true
        try await withTestBed(reader: StubReader(info: chip)) { bed in
            let core = try bed.makeCore()
            bed.reader.holdChip()
            bed.reader.scriptEnrollment(.complete)
            let enrolled = await core.enroll(
                user: "alice", finger: .rightIndex, password: nil, origin: Origin(service: "touchgate"),
                caller: .root, client: CollectingClient(), input: PromptInput())
            #expect(enrolled == .success(.enrolled(.rightIndex)))
            #expect(bed.logged.all.contains { $0.hasPrefix("the reader did not clear its storage within") })
            try await core.recordPasswordSuccess(context())

            let (keyless, _, _) = core.startEvaluate(noTerminal: true)
            #expect(await keyless.value() == Refusal(.biometryNotAvailable, reason: .busy, text: .readerBusy))
            bed.reader.script(.match)
            let (waiting, waitingClient, _) = core.startEvaluate()
            #expect(await waitingClient.waitFor(.queued))
            bed.reader.releaseChip()  // the chip answers at last: the reader is free
            #expect(await waiting.value() == .success(.recognised))
            #expect(bed.reader.chipClears == 1)
        }
    }
}
