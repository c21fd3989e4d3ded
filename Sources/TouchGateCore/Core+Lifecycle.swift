// Stopping (SIGTERM) and, for suspend, pausing: every prompt ends with systemCancel and says why.
import TouchGateWire

extension Core {
    /// Ends every running prompt with systemCancel and `refusal`; new prompts end the same way
    /// while `stopping`. Front-ends send the replies as their requests finish.
    public func beginShutdown() {
        stopping = true
        cancelPrompts(Self.shutdownRefusal)
    }

    func cancelPrompts(_ refusal: Refusal) {
        for prompt in activePrompts.values { prompt.interrupt.set(.systemCancel(refusal)) }
    }

    /// After the replies: every state change on disk, the reader closed.
    public func finishShutdown() async {
        await states.flush()
        let closed = OneShot<Void>()
        reader.close { CoreLoop.shared.post { closed.set(()) } }
        await closed.wait()
    }

    /// How many prompts are running (for the front-ends' drain and for tests).
    public var runningPrompts: Int { activePrompts.count }
}
