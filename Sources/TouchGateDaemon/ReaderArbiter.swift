// One prompt per reader at a time; later prompts wait in arrival order and leave the queue at once.
import Synchronization

final class ReaderArbiter: Sendable {
    struct Waiter { let id: UInt64; let wake: @Sendable () -> Void }
    private let state = Mutex<(nextID: UInt64, holder: UInt64?, queue: [Waiter])>((1, nil, []))

    /// Joins the queue; returns a ticket. `wake` is called (from any thread) when the ticket is granted.
    func enqueue(wake: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            if s.holder == nil { s.holder = id } else { s.queue.append(Waiter(id: id, wake: wake)) }
            return id
        }
    }

    func isGranted(_ ticket: UInt64) -> Bool { state.withLock { $0.holder == ticket } }

    /// How many prompts are ahead of this ticket (the holder counts), 0 when granted.
    func ahead(_ ticket: UInt64) -> Int {
        state.withLock { s in
            guard s.holder != ticket else { return 0 }
            return (s.queue.firstIndex { $0.id == ticket } ?? 0) + 1
        }
    }

    /// Leaves the queue, or releases the reader and grants it to the next in line.
    func leave(_ ticket: UInt64) {
        let next = state.withLock { s -> Waiter? in
            if s.holder == ticket {
                guard !s.queue.isEmpty else { s.holder = nil; return nil }
                let n = s.queue.removeFirst()
                s.holder = n.id
                return n
            }
            s.queue.removeAll { $0.id == ticket }
            return nil
        }
        next?.wake()
    }
}
