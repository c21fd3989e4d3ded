// A fixed set of threads for blocking work (PAM, NSS, disk), with a bounded queue and a refusal past it.
import Synchronization
import TouchGateThreads

/// The queue of a pool is full: the work was not started.
public struct PoolBusy: Error, Equatable, Sendable {
    public let pool: String
}

/// Runs blocking calls off the core loop, so a slow directory, PAM stack or disk never stalls the
/// other clients. The number of threads is fixed; work past `queueLimit` is refused, not queued.
public final class WorkerPool: Sendable {
    public let name: String
    private let queueLimit: Int
    private let state: Mutex<(jobs: [@Sendable () -> Void], started: Int, idle: Int)>
    private let wake = Semaphore()
    private let maxThreads: Int
    private let stackSize: Int

    public init(name: String, threads: Int, queueLimit: Int, stackSize: Int = 512 * 1024) {
        self.name = name
        self.maxThreads = max(1, threads)
        self.queueLimit = queueLimit
        self.stackSize = stackSize
        state = Mutex(([], 0, 0))
    }

    /// Runs `work` on one of the pool's threads and returns its result.
    /// Runs where the caller runs (nonsending): on the core loop, no hop through another executor.
    public nonisolated(nonsending) func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async throws(PoolBusy)
        -> T
    {
        let accepted = Mutex(true)
        let result: T? = await withCheckedContinuation { (continuation: CheckedContinuation<T?, Never>) in
            let queued = submit { continuation.resume(returning: work()) }
            if !queued {
                accepted.withLock { $0 = false }
                continuation.resume(returning: nil)
            }
        }
        guard accepted.withLock({ $0 }), let result else { throw PoolBusy(pool: name) }
        return result
    }

    /// Jobs queued and not yet taken by a thread.
    var waiting: Int { state.withLock { $0.jobs.count } }

    /// Queues `job`; false when the queue is full. Threads start on demand, up to the fixed number.
    private func submit(_ job: @escaping @Sendable () -> Void) -> Bool {
        let startThread = state.withLock { s -> Bool? in
            guard s.jobs.count < queueLimit else { return nil }
            s.jobs.append(job)
            if s.idle == 0 && s.started < maxThreads {
                s.started += 1
                return true
            }
            return false
        }
        guard let startThread else { return false }
        if startThread { spawn() }
        wake.signal()
        return true
    }

    private func spawn() {
        if !startThread(name: "tg-\(name)", stackSize: stackSize, { [self] in work() }) {
            state.withLock { $0.started -= 1 }  // the queued job waits for an existing thread
        }
    }

    private func work() -> Never {
        while true {
            state.withLock { $0.idle += 1 }
            wake.wait()
            let job = state.withLock { s -> (@Sendable () -> Void)? in
                s.idle -= 1
                return s.jobs.isEmpty ? nil : s.jobs.removeFirst()
            }
            job?()
        }
    }
}
