// Closing and reopening the readers have deadlines: a driver that never answers keeps neither the
// daemon from exiting (SIGTERM), nor logind's sleep waiting on the daemon's inhibitor, nor the
// inhibitor from being taken again after a resume.
import Testing
@testable import TouchGateCore
import TouchGateReader
import TouchGateTestSupport

/// A machine whose readers never finish closing or opening again (a stuck driver).
private final class StuckReaders: FingerprintReaders, Sendable {
    var served: [any FingerprintReader] { [] }
    func whenOpened(_ completion: @escaping @Sendable () -> Void) { completion() }
    func describe(_ template: [UInt8]) -> PrintDescription? { nil }
    func close(completion: @escaping @Sendable () -> Void) {}
    func reopen(completion: @escaping @Sendable (Bool) -> Void) {}
}

@Suite("Core: closing and reopening the readers have deadlines")
@CoreActor struct ReaderDeadlineTests {
    @Test func shutdownGoesOnWhenTheReadersDoNotCloseWithinItsStep() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore(reader: StuckReaders())
            let step = Core.shutdownStepMilliseconds, began = ContinuousClock.now
            #expect(await within(step + 5000) { await core.finishShutdown() } != nil)
            #expect(ContinuousClock.now - began >= .milliseconds(step))
        }
    }

    @Test func sleepGoesOnWhenTheReadersDoNotCloseWithinLogindsDelay() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore(reader: StuckReaders())
            let delay = Core.sleepDelayMilliseconds, began = ContinuousClock.now
            #expect(await within(delay + 5000) { await core.suspend() } != nil)
            #expect(ContinuousClock.now - began >= .milliseconds(delay))
        }
    }

    @Test func resumeGoesOnWhenTheReadersDoNotOpenAgainWithinTheSleepDelay() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore(reader: StuckReaders())
            let delay = Core.sleepDelayMilliseconds, began = ContinuousClock.now
            #expect(await within(delay + 5000) { await core.resume() } != nil)
            #expect(ContinuousClock.now - began >= .milliseconds(delay))
        }
    }
}
