// Closing the readers has a deadline: a driver that never lets go keeps neither the daemon from
// exiting (SIGTERM) nor logind's sleep waiting on the daemon's inhibitor.
import Testing
@testable import TouchGateCore
import TouchGateReader
import TouchGateTestSupport

/// A machine whose readers never finish closing (a stuck driver).
private final class ReadersThatNeverClose: FingerprintReaders, Sendable {
    var served: [any FingerprintReader] { [] }
    func whenOpened(_ completion: @escaping @Sendable () -> Void) { completion() }
    func describe(_ template: [UInt8]) -> PrintDescription? { nil }
    func close(completion: @escaping @Sendable () -> Void) {}
    func reopen(completion: @escaping @Sendable (Bool) -> Void) { completion(false) }
}

@Suite("Core: closing the readers has a deadline")
@CoreActor struct ReaderCloseDeadlineTests {
    @Test func shutdownGoesOnWhenTheReadersDoNotCloseWithinItsStep() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore(reader: ReadersThatNeverClose())
            let step = Core.shutdownStepMilliseconds, began = ContinuousClock.now
            #expect(await within(step + 5000) { await core.finishShutdown() } != nil)
            #expect(ContinuousClock.now - began >= .milliseconds(step))
        }
    }

    @Test func sleepGoesOnWhenTheReadersDoNotCloseWithinLogindsDelay() async throws {
        try await withTestBed { bed in
            let core = try bed.makeCore(reader: ReadersThatNeverClose())
            let delay = Core.sleepDelayMilliseconds, began = ContinuousClock.now
            #expect(await within(delay + 5000) { await core.suspend() } != nil)
            #expect(ContinuousClock.now - began >= .milliseconds(delay))
        }
    }
}
