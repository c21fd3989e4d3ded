// Suspend and resume the way desktops expect: a logind "sleep" delay inhibitor held while awake;
// on PrepareForSleep(true) every prompt ends with systemCancel, the reader closes, the inhibitor
// goes; on resume the reader opens again and the inhibitor is taken again. No logind: nothing.
// A service of its own on the system bus, whether or not fprintd's API is served.
import CGIO
import CTouchGateLibs
import Glibc
import Logging
import TouchGateCore

@CoreActor public final class SleepWatcher: DaemonService {
    private var connection: OpaquePointer?
    private let core: Core
    private let log: Logger
    private var fd: Int32 = -1
    private var subscription: UInt32 = 0
    private var stopped = false

    public init(core: Core, log: Logger) {
        self.core = core
        self.log = log
    }

    public nonisolated var serviceName: String { "sleep watcher" }

    public func start() async -> ServiceStart {
        let (found, failure) = await SystemBus.connect()
        guard let connection = found else {
            log.info("no sleep inhibitor: \(failure ?? "?")")
            return .unavailable(failure ?? "no system bus")
        }
        self.connection = connection
        subscription = tgg_dbus_connection_signal_subscribe(
            connection, "org.freedesktop.login1", "org.freedesktop.login1.Manager", "PrepareForSleep",
            "/org/freedesktop/login1", nil, G_DBUS_SIGNAL_FLAGS_NONE,
            { _, _, _, _, _, parameters, data in
                let me = Unmanaged<SleepWatcher>.fromOpaque(data!).takeUnretainedValue()
                let sleeping = V.boolArg(parameters, 0)
                CoreActor.assumeIsolated { if let sleeping { me.prepareForSleep(sleeping) } }
            }, Unmanaged.passRetained(self).toOpaque(), { data in Unmanaged<SleepWatcher>.fromOpaque(data!).release() })
        await take()
        return .running
    }

    /// Stops listening for sleep and gives the inhibitor back (logind needs no delay for a daemon
    /// that is going away).
    public func shutdown() async {
        stopped = true
        if let connection, subscription != 0 { tgg_dbus_connection_signal_unsubscribe(connection, subscription) }
        subscription = 0
        release()
    }

    var isHeld: Bool { fd >= 0 }

    /// The last sleep or resume started: each waits for the one before it, so a resume that comes
    /// while the suspend still closes the readers takes the inhibitor after the suspend let it go.
    private var lastTransition: OneShot<Void>?

    private func prepareForSleep(_ sleeping: Bool) {
        guard !stopped else { return }
        let previous = lastTransition, mine = OneShot<Void>()
        lastTransition = mine
        CoreLoop.shared.task { [self] in
            defer { mine.set(()) }
            await previous?.wait()
            if sleeping {
                log.info("preparing for sleep")
                await core.suspend()
                release()
            } else {
                // The inhibitor first: a suspend that comes while the readers open again (up to
                // 5 s) is then delayed until this ends, and its prompts end before the sleep.
                log.info("resumed")
                await take()
                await core.resume()
            }
        }
    }

    /// logind's Inhibit("sleep", …, "delay"): the fd it returns is the inhibitor.
    private func take() async {
        guard fd < 0, !stopped, let connection else { return }
        let done = OneShot<Int32>()
        let box = Unmanaged.passRetained(FDBox(done))
        let parameters = V.tuple([
            V.string("sleep"), V.string("touchgated"),
            V.string("End fingerprint prompts and close the reader"), V.string("delay"),
        ])
        tgg_dbus_connection_call_with_unix_fd_list(
            connection, "org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
            "Inhibit", parameters, nil, G_DBUS_CALL_FLAGS_NONE, 5000, nil, nil,
            { source, result, data in
                let box = Unmanaged<FDBox>.fromOpaque(data!).takeUnretainedValue()
                var error: UnsafeMutablePointer<GError>?
                var list: UnsafeMutablePointer<GUnixFDList>?
                var fd: Int32 = -1
                if let reply = tgg_dbus_connection_call_with_unix_fd_list_finish(
                    OpaquePointer(source), &list, result, &error)
                {
                    if let list {
                        fd = tgg_unix_fd_list_get(list, 0, nil); g_object_unref(UnsafeMutableRawPointer(list))
                    }
                    g_variant_unref(reply)
                } else {
                    box.why = busError(error).message
                    g_error_free(error)
                }
                CoreActor.assumeIsolated { box.done.set(fd) }
            }, box.toOpaque())
        let taken = await done.wait()
        let why = box.takeUnretainedValue().why
        box.release()
        if taken >= 0 && stopped {
            close(taken)  // shutdown came while logind was answering
        } else if taken >= 0 {
            fd = taken
            log.info("holding a sleep delay inhibitor")
        } else {
            log.info("no sleep inhibitor (no logind on this bus?): \(why ?? "")")
        }
    }

    private func release() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
        log.info("released the sleep inhibitor")
    }
}

private final class FDBox: @unchecked Sendable {
    let done: OneShot<Int32>
    var why: String?
    init(_ done: OneShot<Int32>) { self.done = done }
}
