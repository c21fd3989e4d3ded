// Timers and fd watches on the core loop, owned by Swift objects: removing or dropping them stops them.
import CTouchGateLoop

/// A timer on the core loop; `cancel()` (or deinit) stops it.
@CoreActor public final class LoopTimer {
    private var id: UInt32 = 0
    private var box: Unmanaged<TimerBox>?

    /// Calls `fire` after `milliseconds`, then again every `milliseconds` while it returns true.
    public init(milliseconds: Int, _ fire: @escaping @CoreActor () -> Bool) {
        let box = Unmanaged.passRetained(TimerBox(fire))
        self.box = box
        id = tg_loop_timer(
            CoreLoop.shared.handle, UInt32(clamping: max(0, milliseconds)),
            { raw in
                let timer = Unmanaged<TimerBox>.fromOpaque(raw!).takeUnretainedValue()
                let again = CoreActor.assumeIsolated { timer.fire() }
                if !again { timer.finished = true }
                return again ? 1 : 0
            }, box.toOpaque())
    }

    /// Calls `fire` once after `milliseconds`.
    public convenience init(after milliseconds: Int, _ fire: @escaping @CoreActor () -> Void) {
        self.init(milliseconds: milliseconds) {
            fire(); return false
        }
    }

    public func cancel() {
        guard let box else { return }
        if !box.takeUnretainedValue().finished { tg_loop_remove(CoreLoop.shared.handle, id) }
        box.release()
        self.box = nil
    }

    isolated deinit { cancel() }
}

private final class TimerBox {
    let fire: @CoreActor () -> Bool
    var finished = false
    init(_ fire: @escaping @CoreActor () -> Bool) { self.fire = fire }
}

/// Readiness of one file descriptor on the core loop; `cancel()` (or deinit) stops watching.
@CoreActor public final class FDWatch {
    public struct Events: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let readable = Events(rawValue: TG_EV_IN)
        public static let writable = Events(rawValue: TG_EV_OUT)
        public static let error = Events(rawValue: TG_EV_ERR)
        public static let hangUp = Events(rawValue: TG_EV_HUP)
    }

    private var id: UInt32 = 0
    private var box: Unmanaged<WatchBox>?

    /// Calls `ready` with the events that occurred while it returns true.
    public init(fd: Int32, events: Events, _ ready: @escaping @CoreActor (Events) -> Bool) {
        let box = Unmanaged.passRetained(WatchBox(ready))
        self.box = box
        id = tg_loop_watch(
            CoreLoop.shared.handle, fd, events.rawValue,
            { _, revents, raw in
                let watch = Unmanaged<WatchBox>.fromOpaque(raw!).takeUnretainedValue()
                let again = CoreActor.assumeIsolated { watch.ready(Events(rawValue: revents)) }
                if !again { watch.finished = true }
                return again ? 1 : 0
            }, box.toOpaque())
    }

    /// Changes what is watched (e.g. adds `.writable` while output is queued).
    public func watch(_ events: Events) {
        guard let box, !box.takeUnretainedValue().finished else { return }
        tg_loop_watch_events(CoreLoop.shared.handle, id, events.rawValue)
    }

    public func cancel() {
        guard let box else { return }
        if !box.takeUnretainedValue().finished { tg_loop_remove(CoreLoop.shared.handle, id) }
        box.release()
        self.box = nil
    }

    isolated deinit { cancel() }
}

private final class WatchBox {
    let ready: @CoreActor (FDWatch.Events) -> Bool
    var finished = false
    init(_ ready: @escaping @CoreActor (FDWatch.Events) -> Bool) { self.ready = ready }
}
