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
}
