// A value set once on the core loop, awaited or observed by anyone; and "whichever comes first".

/// Set at most once; later `set`s are ignored. Waiters and observers run on the core loop.
@CoreActor public final class OneShot<Value: Sendable> {
    public private(set) var value: Value?
    private var observers: [(Value) -> Void] = []

    public init() {}

    public var isSet: Bool { value != nil }

    public func set(_ newValue: Value) {
        guard value == nil else { return }
        value = newValue
        let pending = observers
        observers = []
        for observe in pending { observe(newValue) }
    }

    /// Calls `observe` once the value is set (at once if it already is).
    public func onSet(_ observe: @escaping (Value) -> Void) {
        if let value { observe(value) } else { observers.append(observe) }
    }

    public func wait() async -> Value {
        if let value { return value }
        return await withCheckedContinuation { continuation in
            onSet { continuation.resume(returning: $0) }
        }
    }
}

public enum FirstOf<A: Sendable, B: Sendable>: Sendable {
    case first(A)
    case second(B)
}

/// Waits for whichever of the two is set first.
@CoreActor public func firstOf<A, B>(_ a: OneShot<A>, _ b: OneShot<B>) async -> FirstOf<A, B> {
    let either = OneShot<FirstOf<A, B>>()
    a.onSet { either.set(.first($0)) }
    b.onSet { either.set(.second($0)) }
    return await either.wait()
}
