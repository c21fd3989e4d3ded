// Every libfprint-2 reader the machine has: one thread owns the default GMainContext and makes every
// libfprint call, for all of them; each open FpDevice is a LibfprintReader.
import CGIO
import CTouchGateLibs
import Synchronization
import TouchGateThreads

public final class LibfprintReaders: FingerprintReaders, Sendable {
    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let opened = Mutex<(done: Bool, waiters: [@Sendable () -> Void])>((false, []))
    let log: @Sendable (String) -> Void
    private let changeHandlers = Mutex<[@Sendable ([ReaderInfo]) -> Void]>([])
    /// How many watch the finger's status (`watchFinger`).
    private let fingerWatchers = Mutex(0)
    /// The readers open, in the order they were found (a removed one leaves once it is closed).
    let open = Mutex<[LibfprintReader]>([])
    /// `chipListing`: bumped by a reader whose chip's list of prints changed.
    let chipListings = Mutex(0)
    /// Devices that reported themselves removed while libfprint still lists them (each held by a
    /// reference): not opened again until a resume; reader thread only.
    nonisolated(unsafe) var givenUp: [UnsafeMutablePointer<FpDevice>] = []
    /// Every reader was closed (sleep, shutdown) and stays so until `reopen`: a reader plugged in
    /// meanwhile is opened then, not now (reader thread only).
    nonisolated(unsafe) var closedAll = false
    nonisolated(unsafe) var context: UnsafeMutablePointer<FpContext>?
    /// A reader libfprint lists failed to open (not ready yet at boot or after a resume): the next
    /// try is due after this many ms, doubled each time up to a minute; reader thread only.
    nonisolated(unsafe) var openRetryDelay = LibfprintReaders.firstOpenRetry
    nonisolated(unsafe) var openRetryArmed = false
    /// Tries made since the last open that worked; past `quietAfter` a failure is not logged again.
    nonisolated(unsafe) var openRetries = 0
    static let firstOpenRetry: UInt32 = 1000
    static let lastOpenRetry: UInt32 = 60_000
    static let quietAfter = 8

    public var served: [any FingerprintReader] { open.withLock { $0.filter { $0.info != nil } } }

    /// Starts the reader thread, which opens every reader libfprint offers; returns at once (the
    /// daemon is ready before USB enumeration ends), `whenOpened` tells when that is done.
    public init(log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.log = log
        let started = startThread(name: "touchgate-fprint", stackSize: 1 << 20) { [self] in
            // Own the default context for good: g_main_context_invoke from other threads then
            // always queues onto this thread (cancelling from another thread raced).
            _ = g_main_context_acquire(nil)
            if let failure = LibfprintReader.loadLibfprint() {
                log("no fingerprint reader: cannot load libfprint (\(failure))")
            } else {
                context = tgfp_context_new()
                openDevices()
                watchForReaders()
            }
            finishOpening()
            runLoop()
        }
        if !started {
            log("cannot start the reader thread")
            finishOpening()
        }
    }

    public func whenOpened(_ completion: @escaping @Sendable () -> Void) {
        let now = opened.withLock { s -> Bool in
            if s.done { return true }
            s.waiters.append(completion)
            return false
        }
        if now { completion() }
    }

    private func finishOpening() {
        let waiters = opened.withLock { s -> [@Sendable () -> Void] in
            s.done = true
            defer { s.waiters = [] }
            return s.waiters
        }
        for w in waiters { w() }
    }

    private func runLoop() -> Never {
        while true {
            let job = jobs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            if let job { job(); continue }
            // Sleeps until a job is queued (g_main_context_wakeup) or a GLib source fires.
            _ = g_main_context_iteration(nil, 1)
        }
    }

    func submit(_ job: @escaping @Sendable () -> Void) {
        jobs.withLock { $0.append(job) }
        g_main_context_wakeup(nil)
    }

    /// On the reader thread: opens every reader libfprint lists that is still plugged in, not open
    /// yet and not given up on; true when at least one is open afterwards.
    @discardableResult
    func openDevices() -> Bool {
        guard let context else { return false }  // libfprint could not be loaded (said at start)
        guard let devices = tgfp_context_get_devices(context), devices.pointee.len > 0 else {
            if open.withLock({ $0.isEmpty }) { log("no fingerprint reader found") }
            return false
        }
        // Copied and held first: an open runs the loop, where libfprint takes an unplugged reader
        // out of its own list (unreferencing it) while this one still goes through it.
        let listed = (0..<devices.pointee.len).map { i in
            cfp_ptr_array_index(devices, i).assumingMemoryBound(to: FpDevice.self)
        }
        for dev in listed { _ = cfp_object_ref(dev) }
        defer { for dev in listed { cfp_object_unref(dev) } }
        var failed = false
        for dev in listed {
            if cfp_device_removed(dev) != 0 || givenUp.contains(dev) { continue }
            if open.withLock({ $0.contains { $0.device == dev } }) { continue }
            if let reader = LibfprintReader.open(dev, readers: self, quiet: openRetries > Self.quietAfter) {
                open.withLock { $0.append(reader) }
                // Its chip was listed while it was not in the list yet: a print judged meanwhile
                // was judged without it.
                chipListings.withLock { $0 += 1 }
            } else {
                failed = true
            }
        }
        if failed {
            retryOpeningLater()
        } else {
            openRetryDelay = Self.firstOpenRetry
            openRetries = 0
        }
        // In libfprint's order, whatever the order they were opened in: the default reader is the
        // first it lists, after a resume as at start.
        open.withLock { readers in
            let rank = { (r: LibfprintReader) in r.device.flatMap { listed.firstIndex(of: $0) } ?? listed.count }
            readers.sort { rank($0) < rank($1) }
        }
        return !served.isEmpty
    }

    /// On the reader thread: a reader that would not open is tried again later, as fprintd opens
    /// its reader again at each claim; one not ready when the daemon started (or resumed) is then
    /// served once it is, without being plugged in again. Not while every reader is closed.
    private func retryOpeningLater() {
        guard !openRetryArmed else { return }
        openRetryArmed = true
        let delay = openRetryDelay
        openRetryDelay = min(delay * 2, Self.lastOpenRetry)
        openRetries += 1
        if openRetries == Self.quietAfter + 1 {
            log("a fingerprint reader still cannot be opened: tried again every minute, failures no longer logged")
        }
        g_timeout_add_full(
            G_PRIORITY_DEFAULT, delay,
            { data in
                let readers = Unmanaged<LibfprintReaders>.fromOpaque(data!).takeRetainedValue()
                // A job, as for a reader plugged in: the timer may fire inside another reader's
                // operation, which runs this loop; the open waits until that has ended.
                readers.submit {
                    readers.openRetryArmed = false
                    guard !readers.closedAll else { return }  // reopen tries them all on resume
                    let before = readers.served.count
                    readers.openDevices()
                    if readers.served.count != before { readers.announce() }
                }
                return 0
            }, Unmanaged.passRetained(self).toOpaque(), nil)
    }

    /// On the reader thread: a reader was closed (unplugged, given up): it leaves the list.
    func forget(_ reader: LibfprintReader) {
        open.withLock { $0.removeAll { $0 === reader } }
    }

    public func onChange(_ handler: @escaping @Sendable ([ReaderInfo]) -> Void) {
        changeHandlers.withLock { $0.append(handler) }
    }

    public func watchFinger(_ watching: Bool) {
        fingerWatchers.withLock { $0 = max(0, $0 + (watching ? 1 : -1)) }
    }

    var fingerWatched: Bool { fingerWatchers.withLock { $0 > 0 } }

    /// Tells every handler what the readers served are now.
    func announce() {
        let infos = served.compactMap(\.info)
        for handler in changeHandlers.withLock({ $0 }) { handler(infos) }
    }

    /// An announcement waits for the end of what the reader thread is dispatching.
    nonisolated(unsafe) private var announcing = false

    /// On the reader thread: announces once the loop has nothing more urgent to dispatch, with the
    /// state then. A finger status a driver sets and clears within one dispatch (a virtual reader's
    /// scan) is then no change, as fprintd's D-Bus object, which sends its properties the same way.
    func announceSoon() {
        guard !announcing else { return }
        announcing = true
        g_idle_add_full(
            G_PRIORITY_DEFAULT_IDLE,
            { data in
                let readers = Unmanaged<LibfprintReaders>.fromOpaque(data!).takeRetainedValue()
                readers.announcing = false
                // Closed meanwhile (sleep, shutdown): no reader is served, none was unplugged.
                if !readers.closedAll { readers.announce() }
                return 0
            }, Unmanaged.passRetained(self).toOpaque(), nil)
    }

    public var describesPrints: Bool { LibfprintReader.loadLibfprint() == nil }

    public var chipListing: Int { chipListings.withLock { $0 } }

    public func describe(_ template: [UInt8]) -> PrintDescription? {
        var error: UnsafeMutablePointer<GError>?
        guard LibfprintReader.loadLibfprint() == nil, let print = LibfprintReader.deserialize(template, &error) else {
            if error != nil { g_error_free(error) }
            return nil
        }
        defer { cfp_object_unref(UnsafeMutableRawPointer(print)) }
        func text(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        // Whether its chip still holds it: asked of the reader it was made on, if one is open.
        let onDevice = open.withLock { $0 }.lazy.compactMap { $0.isOnChip(print) }.first
        return PrintDescription(
            driver: text(tgfp_print_get_driver(print)) ?? "",
            deviceID: text(tgfp_print_get_device_id(print)) ?? "",
            finger: Int(tgfp_print_get_finger(print).rawValue),
            username: text(tgfp_print_get_username(print)),
            onDevice: onDevice)
    }

    public func close(completion: @escaping @Sendable () -> Void) {
        endToldOperations()
        submit { [self] in
            closedAll = true
            for reader in open.withLock({ $0 }) { reader.closeDevice() }
            open.withLock { $0 = [] }
            completion()
        }
    }

    /// An operation whose result was told already (an image reader waiting for the finger to be
    /// lifted) is cancelled, so that what is queued behind it need not wait for the finger. Run on
    /// the reader thread, inside the operation's own wait.
    private func endToldOperations() {
        g_idle_add_full(
            G_PRIORITY_HIGH,
            { data in
                let readers = Unmanaged<LibfprintReaders>.fromOpaque(data!).takeRetainedValue()
                for reader in readers.open.withLock({ $0 }) {
                    if let op = reader.running, op.reported { tgg_cancellable_cancel(op.cancellable) }
                }
                return 0
            }, Unmanaged.passRetained(self).toOpaque(), nil)
    }

    public func reopen(completion: @escaping @Sendable (Bool) -> Void) {
        submit { [self] in
            for dev in givenUp { cfp_object_unref(dev) }
            givenUp = []
            closedAll = false
            openRetryDelay = Self.firstOpenRetry
            openRetries = 0
            let any = openDevices()
            // After a sleep the readers may be others, or none, and their state has moved on.
            announce()
            completion(any)
        }
    }
}
