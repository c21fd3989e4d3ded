// The libfprint-2 reader: one thread owns the default GMainContext and makes every libfprint call.
import CGIO
import CTouchGateLibs
import Synchronization
import TouchGateThreads

public final class LibfprintReader: FingerprintReader, Sendable {
    private let jobs = Mutex<[@Sendable () -> Void]>([])
    let current = Mutex<ReaderInfo?>(nil)
    private let opened = Mutex<(done: Bool, waiters: [@Sendable () -> Void])>((false, []))
    let log: @Sendable (String) -> Void
    private let infoHandlers = Mutex<[@Sendable (ReaderInfo?) -> Void]>([])
    /// The prints a match-on-chip reader holds (serialized), read at open and after each change;
    /// nil for other readers or when the list could not be read.
    let chipPrints = Mutex<(driver: String, deviceID: String, prints: [[UInt8]])?>(nil)
    /// The FpDevice, touched only on the reader thread.
    nonisolated(unsafe) var device: UnsafeMutablePointer<FpDevice>?
    /// The device's signal handlers (stage count, finger status, removal); reader thread only.
    nonisolated(unsafe) var deviceHandlers: [gulong] = []
    /// The open device was unplugged (or said so) and is being let go; reader thread only.
    nonisolated(unsafe) var deviceRetired = false
    /// Devices that reported themselves removed while libfprint still lists them (each held by a
    /// reference): not opened again until a resume; reader thread only.
    nonisolated(unsafe) var givenUp: [UnsafeMutablePointer<FpDevice>] = []
    nonisolated(unsafe) var context: UnsafeMutablePointer<FpContext>?
    /// The operation libfprint is running now, if any; reader thread only.
    nonisolated(unsafe) var running: OperationState?

    public var info: ReaderInfo? { current.withLock { $0 } }

    /// Starts the reader thread, which opens the first reader libfprint offers; returns at once
    /// (the daemon is ready before USB enumeration ends), `whenOpened` tells when that is done.
    public init(log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.log = log
        let started = startThread(name: "touchgate-fprint", stackSize: 1 << 20) { [self] in
            // Own the default context for good: g_main_context_invoke from other threads then
            // always queues onto this thread (cancelling from another thread raced).
            _ = g_main_context_acquire(nil)
            if let failure = Self.loadLibfprint() {
                log("no fingerprint reader: cannot load libfprint (\(failure))")
            } else {
                context = tgfp_context_new()
                openFirstDevice()
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

    /// Calls `completion` (on any thread) once the first attempt to open a reader has ended.
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

    /// On the reader thread: opens the first reader libfprint lists that is still plugged in and
    /// was not given up on; true when one is open. fprintd's default device is the first it lists.
    @discardableResult
    func openFirstDevice() -> Bool {
        guard device == nil else { return true }
        guard let context else { return false }  // libfprint could not be loaded (said at start)
        guard let devices = tgfp_context_get_devices(context), devices.pointee.len > 0 else {
            log("no fingerprint reader found")
            return false
        }
        for i in 0..<devices.pointee.len {
            let dev = cfp_ptr_array_index(devices, i).assumingMemoryBound(to: FpDevice.self)
            if cfp_device_removed(dev) != 0 || givenUp.contains(dev) { continue }
            if open(dev) { return true }
        }
        return false
    }

    /// On the reader thread: opens `dev` and makes it the reader served.
    private func open(_ dev: UnsafeMutablePointer<FpDevice>) -> Bool {
        var error: UnsafeMutablePointer<GError>?
        guard tgfp_device_open_sync(dev, nil, &error) != 0 else {
            log("cannot open fingerprint reader \(String(cString: tgfp_device_get_name(dev))): \(Self.message(error))")
            g_error_free(error)
            return false
        }
        _ = cfp_object_ref(dev)
        device = dev
        deviceRetired = false
        let info = ReaderInfo(
            name: String(cString: tgfp_device_get_name(dev)),
            driver: String(cString: tgfp_device_get_driver(dev)),
            deviceID: String(cString: tgfp_device_get_device_id(dev)),
            enrollStages: Int(tgfp_device_get_nr_enroll_stages(dev)),
            supportsIdentify: tgfp_device_has_feature(dev, FP_DEVICE_FEATURE_IDENTIFY) != 0,
            isSwipe: tgfp_device_get_scan_type(dev) == FP_SCAN_TYPE_SWIPE)
        current.withLock { $0 = info }
        readChipPrints()
        log("reader: \(info.name) (\(info.driver)), \(info.enrollStages) enroll stages")
        // The driver may change its stage count and the finger's status while open (libfprint
        // notifies both properties); libfprint says when the reader is unplugged: its "removed"
        // property at once, its "removed" signal once the action running, if any, has ended.
        let notify: @convention(c) (gpointer?, gpointer?, gpointer?) -> Void = { object, _, data in
            let reader = Unmanaged<LibfprintReader>.fromOpaque(data!).takeUnretainedValue()
            reader.deviceChanged(object)
        }
        let removed: @convention(c) (gpointer?, gpointer?) -> Void = { object, data in
            let reader = Unmanaged<LibfprintReader>.fromOpaque(data!).takeUnretainedValue()
            reader.deviceUnplugged(object)
        }
        let removedNotice: @convention(c) (gpointer?, gpointer?, gpointer?) -> Void = { object, _, data in
            let reader = Unmanaged<LibfprintReader>.fromOpaque(data!).takeUnretainedValue()
            reader.deviceRemovedNotice(object)
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        let handlers: [(String, GCallback)] = [
            ("notify::nr-enroll-stages", unsafeBitCast(notify, to: GCallback.self)),
            ("notify::finger-status", unsafeBitCast(notify, to: GCallback.self)),
            ("removed", unsafeBitCast(removed, to: GCallback.self)),
            ("notify::removed", unsafeBitCast(removedNotice, to: GCallback.self)),
        ]
        deviceHandlers = handlers.map { signal, callback in
            g_signal_connect_data(dev, signal, callback, me, nil, GConnectFlags(rawValue: 0))
        }
        return true
    }

    /// On the reader thread: closes the open device and lets it go (shutdown, suspend, removal).
    func closeDevice() {
        guard let dev = device else { return }
        current.withLock { $0 = nil }
        for id in deviceHandlers { g_signal_handler_disconnect(dev, id) }
        deviceHandlers = []
        var error: UnsafeMutablePointer<GError>?
        if tgfp_device_close_sync(dev, nil, &error) == 0 {
            // A reader unplugged cannot be closed cleanly; libfprint lets it go all the same.
            if !deviceRetired { log("closing the fingerprint reader: \(Self.message(error))") }
            g_error_free(error)
        }
        cfp_object_unref(dev)
        device = nil
        chipPrints.withLock { $0 = nil }
    }

    public func onInfoChanged(_ handler: @escaping @Sendable (ReaderInfo?) -> Void) {
        infoHandlers.withLock { $0.append(handler) }
    }

    /// On the reader thread, from libfprint's notify::nr-enroll-stages and notify::finger-status.
    private func deviceChanged(_ object: gpointer?) {
        guard let dev = device, UnsafeMutableRawPointer(dev) == object else { return }
        let stages = Int(tgfp_device_get_nr_enroll_stages(dev))
        let status = tgfp_device_get_finger_status(dev).rawValue
        let needed = status & FP_FINGER_STATUS_NEEDED.rawValue != 0
        let present = status & FP_FINGER_STATUS_PRESENT.rawValue != 0
        guard
            let (info, stagesChanged) = current.withLock({ s -> (ReaderInfo, Bool)? in
                guard var info = s else { return nil }
                let before = info
                info.enrollStages = stages
                info.fingerNeeded = needed
                info.fingerPresent = present
                guard info != before else { return nil }
                s = info
                return (info, before.enrollStages != stages)
            })
        else { return }
        if stagesChanged { log("reader: now \(stages) enroll stages") }
        announce(info)
    }

    /// Tells every handler what the reader served is now (nil: none).
    func announce(_ info: ReaderInfo?) {
        for handler in infoHandlers.withLock({ $0 }) { handler(info) }
    }

    // MARK: prints and the device's life

    public var describesPrints: Bool { Self.loadLibfprint() == nil }

    public func describe(_ template: [UInt8]) -> PrintDescription? {
        var error: UnsafeMutablePointer<GError>?
        guard !template.isEmpty, Self.loadLibfprint() == nil,
            let print = template.withUnsafeBufferPointer({
                tgfp_print_deserialize($0.baseAddress, gsize($0.count), &error)
            })
        else {
            if error != nil { g_error_free(error) }
            return nil
        }
        defer { cfp_object_unref(UnsafeMutableRawPointer(print)) }
        func text(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }
        return PrintDescription(
            driver: text(tgfp_print_get_driver(print)) ?? "",
            deviceID: text(tgfp_print_get_device_id(print)) ?? "",
            finger: Int(tgfp_print_get_finger(print).rawValue),
            username: text(tgfp_print_get_username(print)),
            onDevice: isOnChip(print))
    }

    public func close(completion: @escaping @Sendable () -> Void) {
        submit { [self] in
            closeDevice()
            completion()
        }
    }

    public func reopen(completion: @escaping @Sendable (Bool) -> Void) {
        submit { [self] in
            for dev in givenUp { cfp_object_unref(dev) }
            givenUp = []
            let open = openFirstDevice()
            // After a sleep the reader may be another one, or none, and its state has moved on.
            announce(info)
            completion(open)
        }
    }
}
