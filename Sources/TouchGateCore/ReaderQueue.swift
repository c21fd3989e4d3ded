// One prompt per reader at a time; later ones wait in arrival order, are told how many are ahead,
// and leave the queue at once when their client goes.
import TouchGateReader

@CoreActor final class ReaderQueue {
    @CoreActor final class Ticket {
        let granted = OneShot<Void>()
    }

    private var holder: Ticket?
    private var waiting: [Ticket] = []

    /// Joins the queue; the ticket's `granted` is set when the reader is this ticket's.
    func enqueue() -> Ticket {
        let t = Ticket()
        if holder == nil { holder = t; t.granted.set(()) } else { waiting.append(t) }
        return t
    }

    /// How many prompts are ahead of the ticket (the holder counts), 0 once granted.
    func ahead(_ t: Ticket) -> Int {
        guard holder !== t else { return 0 }
        return (waiting.firstIndex { $0 === t } ?? 0) + 1
    }

    /// Leaves the queue, or releases the reader to the next in line.
    func leave(_ t: Ticket) {
        if holder === t {
            holder = waiting.isEmpty ? nil : waiting.removeFirst()
            holder?.granted.set(())
        } else {
            waiting.removeAll { $0 === t }
        }
    }

    var isBusy: Bool { holder != nil }

    /// The reader's thread is still in an operation whose prompt gave up on it (a driver that did
    /// not end a cancel): it holds the reader next, ahead of every waiting prompt, until the
    /// operation ends or `capMilliseconds` pass. So the next prompt waits for the thread, and one
    /// that cannot wait is refused at once, instead of being granted a reader still busy.
    func holdUntilEnded(_ ended: (@escaping () -> Void) -> Void, capMilliseconds: Int) {
        let t = Ticket()
        waiting.insert(t, at: 0)
        var timer: LoopTimer?
        let release = { [weak self] in
            timer?.cancel()
            timer = nil
            self?.leave(t)
        }
        timer = LoopTimer(after: capMilliseconds) { release() }
        ended { release() }
    }
}

/// Why a prompt was interrupted before its operation ended.
enum Interrupt: Sendable, Equatable {
    case cancelled  // the client sent CANCEL (appCancel)
    case typedPassword(String)
    case clientGone  // the connection closed (the request's task was cancelled)
    case systemCancel(Refusal)  // the daemon ends it: shutdown, suspend
}

/// A prompt in progress: anything that must end it sets `interrupt`.
@CoreActor final class ActivePrompt {
    let interrupt = OneShot<Interrupt>()

    init(input: PromptInput, acceptsPassword: Bool) {
        input.events.onSet { [interrupt] event in
            switch event {
            case .cancel: interrupt.set(.cancelled)
            case .password(let p): interrupt.set(acceptsPassword ? .typedPassword(p) : .cancelled)
            }
        }
    }
}

/// One reader operation: its result arrives on the core loop, in order after its progress.
@CoreActor final class ReaderOperation<Value: Sendable> {
    let cancellation = Cancellation()
    let done = OneShot<Result<Value, ReaderFailure>>()

    /// A completion handler for the reader's thread that hands the result to the core loop.
    nonisolated func completion() -> @Sendable (Result<Value, ReaderFailure>) -> Void {
        { [self] result in CoreLoop.shared.post { self.done.set(result) } }
    }
}

extension Core {
    /// Runs `body` as a prompt: registered so shutdown can end it, and ended when the request's
    /// task is cancelled (the client went away).
    func runPrompt<T>(_ input: PromptInput, acceptsPassword: Bool, _ body: (ActivePrompt) async -> T) async -> T {
        let prompt = ActivePrompt(input: input, acceptsPassword: acceptsPassword)
        if acceptsPassword { input.acceptsPassword = true }  // kept to the end: a late one is ignored, not refused
        let key = ObjectIdentifier(prompt)
        activePrompts[key] = prompt
        defer { activePrompts[key] = nil }
        // A prompt begun while the readers close (for the exit, for sleep) asks for no finger.
        if stopping {
            prompt.interrupt.set(.systemCancel(Self.shutdownRefusal))
        } else if asleep {
            prompt.interrupt.set(.systemCancel(Self.suspendRefusal))
        }
        return await withTaskCancellationHandler {
            await body(prompt)
        } onCancel: {
            CoreLoop.shared.post { prompt.interrupt.set(.clientGone) }
        }
    }

    /// Waits for the operation, or for an interrupt; when interrupted the operation is cancelled
    /// and its result awaited too, for at most `cancelGraceMilliseconds`: a driver that does not
    /// end a cancelled operation must not hold the person's password or the stop (its next
    /// operation waits on the reader for it). The reader may still be ending an operation whose
    /// result was told (an image reader waits for the finger to be lifted); its next one waits too.
    func outcome<Value>(of op: ReaderOperation<Value>, or prompt: ActivePrompt) async -> FirstOf<
        Result<Value, ReaderFailure>, Interrupt
    > {
        let first = await firstOf(op.done, prompt.interrupt)
        if case .second = first {
            op.cancellation.cancel()
            let late = OneShot<Void>()
            let timer = LoopTimer(after: Self.cancelGraceMilliseconds) { late.set(()) }
            defer { timer.cancel() }
            if case .second = await firstOf(op.done, late) {
                log.notice("the reader did not end a cancelled operation within \(Self.cancelGraceMilliseconds) ms")
                queue.holdUntilEnded(
                    { ended in op.done.onSet { _ in ended() } }, capMilliseconds: Self.stuckHoldMilliseconds)
            }
        }
        return first
    }

    static let cancelGraceMilliseconds = 1000
    /// How long the reader is held for an operation its driver did not end on cancel: past it,
    /// prompts are granted the reader again (their operations then wait behind it on the reader's
    /// thread, and their clients' own deadlines end them).
    static let stuckHoldMilliseconds = 60_000
}
