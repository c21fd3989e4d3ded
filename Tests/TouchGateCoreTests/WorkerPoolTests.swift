// WorkerPool: blocking work off the loop on a fixed number of threads, refused past its queue limit.
import Glibc
import Synchronization
import Testing
@testable import TouchGateCore
import TouchGateTestSupport
import TouchGateThreads

@Suite("WorkerPool")
@CoreActor struct WorkerPoolTests {
    /// A job that holds its thread until `gate` is signalled; `started` is set once it runs.
    func blockingJob(_ gate: TouchGateThreads.Semaphore, _ started: OneShot<Void>) -> @Sendable () -> Int {
        {
            CoreLoop.shared.post { started.set(()) }; gate.wait(); return 1
        }
    }

    @Test func workPastTheQueueLimitIsRefusedAndTheQueuedWorkStillRuns() async throws {
        let pool = WorkerPool(name: "test", threads: 1, queueLimit: 2)
        let gate = TouchGateThreads.Semaphore(), started = OneShot<Void>()
        let running = Running { try? await pool.run(blockingJob(gate, started)) }
        #expect(await value(of: started) != nil)

        // The only thread is busy: two jobs wait in the queue, the third is refused at once.
        let second = Running { try? await pool.run { 2 } }
        let third = Running { try? await pool.run { 3 } }
        let refused = await within { () -> PoolBusy? in
            do throws(PoolBusy) { _ = try await pool.run { 4 }; return nil } catch { return error }
        }
        #expect(refused == .some(PoolBusy(pool: "test")))

        gate.signal()
        #expect(await running.value() == .some(1))
        #expect(await second.value() == .some(2))
        #expect(await third.value() == .some(3))
        // The queue drained: work is accepted again.
        #expect(await within { try? await pool.run { 5 } } == .some(5))
    }

    @Test func aSlowJobDoesNotHoldTheOthersWhenThereAreThreadsForThem() async throws {
        let pool = WorkerPool(name: "test", threads: 2, queueLimit: 8)
        let gate = TouchGateThreads.Semaphore(), started = OneShot<Void>()
        let slow = Running { try? await pool.run(blockingJob(gate, started)) }
        #expect(await value(of: started) != nil)
        #expect(await within { try? await pool.run { 7 } } == .some(7))
        #expect(!slow.isFinished)
        gate.signal()
        #expect(await slow.value() == .some(1))
    }

    @Test func theNumberOfThreadsIsFixed() async throws {
        let pool = WorkerPool(name: "test", threads: 2, queueLimit: 64)
        let threads = Mutex<Set<pthread_t>>([])
        let jobs = (0..<32).map { _ in
            Running {
                try? await pool.run {
                    threads.withLock { _ = $0.insert(pthread_self()) }; return true
                }
            }
        }
        for job in jobs { #expect(await job.value() == .some(true)) }
        #expect((1...2).contains(threads.withLock { $0.count }))
    }
}
