// Log lines a client can cause at will, limited per user, so that no one can flood the journal.
import TouchGateWire

/// Lines such as a refused connection, a malformed request or a request for another user's
/// account are caused by clients at will. Unlimited, one user could fill journald's rate limit for
/// the daemon, which then drops its other records, the audit trail among them. At most `burst`
/// lines per uid are logged in each window; the last one says that more are left out, and the
/// first one of a later window says how many were.
@CoreActor public final class LogThrottle<Key: Hashable> {
    private struct Window {
        var start: Int64
        var logged = 0
        var leftOut = 0
    }

    private let burst: Int
    private let window: Int64
    private let now: () -> Int64
    /// Who causes the lines, in words ("uid 1000").
    private let source: (Key) -> String
    private var windows: [Key: Window] = [:]

    public init(
        burst: Int = 5, windowMilliseconds: Int64 = 10_000, now: @escaping () -> Int64 = monotonicMilliseconds,
        source: @escaping (Key) -> String
    ) {
        self.burst = burst
        self.window = windowMilliseconds
        self.now = now
        self.source = source
    }

    /// nil: leave this line out. Else what to append to it ("" in the common case).
    public func admit(_ key: Key) -> String? {
        let t = now()
        var w = windows[key] ?? Window(start: t)
        var note = ""
        if t - w.start >= window {
            if w.leftOut > 0 { note = " (\(w.leftOut) more like it were left out)" }
            w = Window(start: t)
        }
        defer {
            windows[key] = w
            if windows.count > 4096 { windows = windows.filter { t - $0.value.start < window } }
        }
        guard w.logged < burst else {
            w.leftOut += 1
            return nil
        }
        w.logged += 1
        if w.logged == burst { note += " (more like it from \(source(key)) are left out for \(window / 1000) s)" }
        return note
    }
}
