// Every thread of a worker pool kept busy, so that work queued behind them waits: how a test
// holds a request at a given point (its templates being read, say) and acts meanwhile.
import TouchGateCore
import TouchGateThreads

@CoreActor public final class PoolHold {
    private let gate = Semaphore()
    private var holders: [Running<Int?>] = []

    /// Returns once each of the pool's `threads` runs a job that waits for `release()`; nil when
    /// one did not start within the deadline.
    public init?(_ pool: WorkerPool, threads: Int) async {
        for _ in 0..<threads {
            let started = OneShot<Void>()
            let gate = self.gate
            holders.append(
                Running {
                    try? await pool.run {
                        CoreLoop.shared.post { started.set(()) }
                        gate.wait()
                        return 0
                    }
                })
            guard await value(of: started) != nil else {
                await release()
                return nil
            }
        }
    }

    /// Lets every held thread go, and waits until each job has ended.
    public func release() async {
        for _ in holders { gate.signal() }
        for holder in holders { _ = await holder.value() }
        holders = []
    }
}
