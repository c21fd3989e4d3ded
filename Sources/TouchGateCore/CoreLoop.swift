// The daemon's one event loop: a thread running a GLib main context, and Swift's executor on it.
import CTouchGateLoop
import Glibc
import Synchronization
import TouchGateThreads

/// Everything the core decides runs here, one thing at a time: socket I/O, D-Bus calls, timers,
/// and the async functions of `@CoreActor` code. Blocking work goes to a `WorkerPool`.
public final class CoreLoop: @unchecked Sendable {
    public static let shared = CoreLoop()

    let handle: OpaquePointer
    public let executor: LoopExecutor
    private let loopThread = LoopThread()

    private init() {
        handle = tg_loop_new()
        executor = LoopExecutor()
        let started = Semaphore()
        nonisolated(unsafe) let handle = self.handle
        let loopThread = self.loopThread
        let ok = startThread(name: "touchgate-core", stackSize: 1 << 20) {
            loopThread.id.withLock { $0 = pthread_self() }
            started.signal()
            tg_loop_run(handle)
        }
        precondition(ok, "cannot start the core thread")
        started.wait()
    }

    /// Whether the caller runs on the loop's thread.
    public var isCurrent: Bool {
        loopThread.id.withLock { id in id.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Runs `body` on the loop thread, after what was posted before it; callable from any thread.
    public func post(_ body: @escaping @Sendable @CoreActor () -> Void) {
        let box = Unmanaged.passRetained(JobBox(body)).toOpaque()
        tg_loop_post(
            handle,
            { raw in
                let job = Unmanaged<JobBox>.fromOpaque(raw!).takeRetainedValue()
                CoreActor.assumeIsolated(job.body)
            }, box)
    }

    /// Starts a task on the loop that prefers the loop as its task executor (see `LoopExecutor`).
    @discardableResult
    public func task(_ body: @escaping @Sendable @CoreActor () async -> Void) -> Task<Void, Never> {
        Task<Void, Never>(executorPreference: executor, operation: body)
    }

    /// The GMainContext (for GDBus, which must dispatch on this loop).
    public var mainContext: UnsafeMutableRawPointer { tg_loop_main_context(handle) }
}

/// The executor of `CoreActor`, and the task executor every daemon task prefers: its jobs run on
/// the loop thread, in order. As the preferred task executor it also receives what Swift would
/// otherwise send to its global pool (resumed continuations, nonisolated async code), so the
/// daemon runs no Dispatch threads — and nothing that exhausting descriptors could crash.
public final class LoopExecutor: SerialExecutor, TaskExecutor, @unchecked Sendable {
    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        tg_loop_post(
            CoreLoop.shared.handle,
            { raw in
                let job = unsafeBitCast(raw!, to: UnownedJob.self)
                let executor = CoreLoop.shared.executor
                job.runSynchronously(
                    isolatedTo: executor.asUnownedSerialExecutor(), taskExecutor: executor.asUnownedTaskExecutor())
            }, unsafeBitCast(unowned, to: UnsafeMutableRawPointer.self))
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    public func checkIsolated() {
        precondition(CoreLoop.shared.isCurrent, "not on the touchgate core thread")
    }
}

/// The isolation of the daemon's core: one thread, so its state needs no locks.
@globalActor public actor CoreActor {
    public static let shared = CoreActor()
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        CoreLoop.shared.executor.asUnownedSerialExecutor()
    }

    /// Runs core-isolated code from a GLib callback that is already on the loop thread.
    public static func assumeIsolated<T>(_ operation: @CoreActor () throws -> T) rethrows -> T {
        CoreLoop.shared.executor.checkIsolated()
        return try withoutActuallyEscaping(operation) { op in
            try unsafeBitCast(op, to: (() throws -> T).self)()
        }
    }
}

private final class LoopThread: Sendable {
    let id = Mutex<pthread_t?>(nil)
}

private final class JobBox: @unchecked Sendable {
    let body: @Sendable @CoreActor () -> Void
    init(_ body: @escaping @Sendable @CoreActor () -> Void) { self.body = body }
}
