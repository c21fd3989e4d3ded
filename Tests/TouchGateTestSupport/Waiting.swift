// Waiting on events with a deadline, never on time: a prompt's progress, a request's reply.
import TouchGateCore
import TouchGateWire

/// Generous: a loaded two-core machine, never a timing assertion.
public let defaultDeadlineMilliseconds = 10_000

/// The value once `shot` is set, or nil when `milliseconds` pass first.
@CoreActor public func value<T>(of shot: OneShot<T>, within milliseconds: Int = defaultDeadlineMilliseconds) async -> T?
{
    if let v = shot.value { return v }
    let expired = OneShot<Void>()
    let timer = LoopTimer(after: milliseconds) { expired.set(()) }
    defer { timer.cancel() }
    switch await firstOf(shot, expired) {
    case .first(let v): return v
    case .second: return nil
    }
}

/// Runs `body` as a task of its own on the core loop: the test goes on while it runs, can cancel
/// it (as a front-end does when its client goes away) and awaits its result with a deadline.
@CoreActor public final class Running<T: Sendable> {
    private let result = OneShot<T>()
    private var task: Task<Void, Never>?

    public init(_ body: @escaping @CoreActor () async -> T) {
        let result = self.result
        task = Task { @CoreActor in result.set(await body()) }
    }

    public var isFinished: Bool { result.isSet }

    /// The result, or nil when it did not come within the deadline.
    public func value(within milliseconds: Int = defaultDeadlineMilliseconds) async -> T? {
        await TouchGateTestSupport.value(of: result, within: milliseconds)
    }

    public func cancel() { task?.cancel() }
}

/// Runs `body` and returns its result, or nil when it takes longer than the deadline (the test
/// then fails instead of hanging).
@CoreActor public func within<T: Sendable>(
    _ milliseconds: Int = defaultDeadlineMilliseconds,
    _ body: @escaping @CoreActor () async -> T
) async -> T? {
    await Running(body).value(within: milliseconds)
}

/// What a prompt showed, in order; tests await the events they expect.
@CoreActor public final class CollectingClient: PromptClient {
    @CoreActor private struct Waiter {
        let matches: (ProgressEvent) -> Bool
        let count: Int
        let done = OneShot<Void>()
    }

    public private(set) var shown: [ProgressEvent] = []
    private var waiters: [Waiter] = []

    public init() {}

    public func show(_ progress: ProgressEvent) {
        shown.append(progress)
        let ready = waiters.filter { w in shown.filter(w.matches).count >= w.count }
        waiters.removeAll { w in ready.contains { $0.done === w.done } }
        for w in ready { w.done.set(()) }
    }

    public func kinds() -> [ProgressKind] { shown.map(\.kind) }
    public func texts(_ kind: ProgressKind) -> [Text?] { shown.filter { $0.kind == kind }.map(\.text) }

    /// True once `count` events of `kind` were shown; false when the deadline passes first.
    public func waitFor(_ kind: ProgressKind, count: Int = 1, within milliseconds: Int = defaultDeadlineMilliseconds)
        async -> Bool
    {
        await waitFor(count: count, within: milliseconds) { $0.kind == kind }
    }

    public func waitFor(
        count: Int = 1, within milliseconds: Int = defaultDeadlineMilliseconds,
        _ matches: @escaping (ProgressEvent) -> Bool
    ) async -> Bool {
        if shown.filter(matches).count >= count { return true }
        let waiter = Waiter(matches: matches, count: count)
        waiters.append(waiter)
        return await value(of: waiter.done, within: milliseconds) != nil
    }
}

/// Lets the core loop run until `condition` holds, for what has no event of its own (a job
/// queued in a worker pool, a connection gone); false when it still does not after `turns` turns,
/// or once `limit` has passed (for a check that something does *not* happen before a deadline of
/// the code's own: a loaded machine must not outrun that deadline with its turns).
@CoreActor public func loopUntil(_ turns: Int = 100_000, limit: Duration? = nil, _ condition: () -> Bool) async -> Bool
{
    let end = limit.map { ContinuousClock.now + $0 }
    var turn = 0
    while !condition(), turn < turns {
        if let end, ContinuousClock.now >= end { break }
        await Task.yield()
        turn += 1
    }
    return condition()
}
