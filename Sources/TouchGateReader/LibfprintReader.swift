// The libfprint-2 reader: one thread owns the default GMainContext and makes every libfprint call.
import CGIO
import CTouchGateLibs
import Synchronization
import TouchGateThreads

public final class LibfprintReader: FingerprintReader, Sendable {
    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let current = Mutex<ReaderInfo?>(nil)
    private let opened = Mutex<(done: Bool, waiters: [@Sendable () -> Void])>((false, []))
    let log: @Sendable (String) -> Void
    private let infoHandlers = Mutex<[@Sendable (ReaderInfo) -> Void]>([])
    /// The prints a match-on-chip reader holds (serialized), read at open and after each change;
    /// nil for other readers or when the list could not be read.
    let chipPrints = Mutex<(driver: String, deviceID: String, prints: [[UInt8]])?>(nil)
    /// The FpDevice, touched only on the reader thread.
    nonisolated(unsafe) var device: UnsafeMutablePointer<FpDevice>?
    private nonisolated(unsafe) var context: UnsafeMutablePointer<FpContext>?

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

    private func openFirstDevice() {
        guard let context else { return }  // libfprint could not be loaded (said at start)
        guard let devices = tgfp_context_get_devices(context), devices.pointee.len > 0 else {
            log("no fingerprint reader found")
            return
        }
        let dev = cfp_ptr_array_index(devices, 0).assumingMemoryBound(to: FpDevice.self)
        var error: UnsafeMutablePointer<GError>?
        guard tgfp_device_open_sync(dev, nil, &error) != 0 else {
            log("cannot open fingerprint reader: \(Self.message(error))")
            g_error_free(error)
            return
        }
        _ = cfp_object_ref(dev)
        device = dev
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
        // The driver may change its stage count while open (libfprint notifies the property).
        let notify: @convention(c) (gpointer?, gpointer?, gpointer?) -> Void = { object, _, data in
            let reader = Unmanaged<LibfprintReader>.fromOpaque(data!).takeUnretainedValue()
            reader.enrollStagesChanged(object)
        }
        _ = g_signal_connect_data(
            dev, "notify::nr-enroll-stages", unsafeBitCast(notify, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque(), nil, GConnectFlags(rawValue: 0))
    }

    public func onInfoChanged(_ handler: @escaping @Sendable (ReaderInfo) -> Void) {
        infoHandlers.withLock { $0.append(handler) }
    }

    /// On the reader thread, from libfprint's notify::nr-enroll-stages.
    private func enrollStagesChanged(_ object: gpointer?) {
        guard let dev = device, UnsafeMutableRawPointer(dev) == object else { return }
        let stages = Int(tgfp_device_get_nr_enroll_stages(dev))
        guard
            let info = current.withLock({ s -> ReaderInfo? in
                guard var info = s, info.enrollStages != stages else { return nil }
                info.enrollStages = stages
                s = info
                return info
            })
        else { return }
        log("reader: now \(stages) enroll stages")
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
            if let dev = device {
                current.withLock { $0 = nil }
                var error: UnsafeMutablePointer<GError>?
                if tgfp_device_close_sync(dev, nil, &error) == 0 {
                    log("closing the fingerprint reader: \(Self.message(error))")
                    g_error_free(error)
                }
                cfp_object_unref(dev)
                device = nil
            }
            completion()
        }
    }

    public func reopen(completion: @escaping @Sendable (Bool) -> Void) {
        submit { [self] in
            if device == nil { openFirstDevice() }
            completion(device != nil)
        }
    }

    // MARK: operations

    public func enroll(
        user: String, fingerIndex: Int, cancellation: Cancellation,
        progress: @escaping @Sendable (EnrollEvent) -> Void,
        completion: @escaping @Sendable (Result<[UInt8], ReaderFailure>) -> Void
    ) {
        submit { [self] in
            completion(
                runEnroll(
                    user: user, fingerIndex: fingerIndex,
                    cancellation: cancellation, progress: progress))
        }
    }

    public func verify(
        templates: [[UInt8]], timeoutSeconds: Int, cancellation: Cancellation,
        retry: @escaping @Sendable (RetryHint) -> Void,
        completion: @escaping @Sendable (Result<ScanResult, ReaderFailure>) -> Void
    ) {
        submit { [self] in
            completion(
                runVerify(
                    templates: templates, timeoutSeconds: timeoutSeconds, identifyAlways: false,
                    cancellation: cancellation, retry: retry))
        }
    }

    public func identify(
        gallery: [[UInt8]], cancellation: Cancellation,
        retry: @escaping @Sendable (RetryHint) -> Void,
        completion: @escaping @Sendable (Result<ScanResult, ReaderFailure>) -> Void
    ) {
        submit { [self] in
            completion(
                runVerify(
                    templates: gallery, timeoutSeconds: nil, identifyAlways: true,
                    cancellation: cancellation, retry: retry))
        }
    }

    private func runEnroll(
        user: String, fingerIndex: Int, cancellation: Cancellation,
        progress: @escaping @Sendable (EnrollEvent) -> Void
    ) -> Result<[UInt8], ReaderFailure> {
        guard let dev = device else { return .failure(.noReader) }
        let stages = Int(tgfp_device_get_nr_enroll_stages(dev))
        // Floating reference: fp_device_enroll_sync sinks and releases it.
        let template = tgfp_print_new(dev)
        tgfp_print_set_finger(template, FpFinger(UInt32(fingerIndex)))
        tgfp_print_set_username(template, user)
        let box = Unmanaged.passRetained(EnrollContext(stages: stages, progress: progress))
        defer { box.release() }
        let attempt: Attempt<[UInt8]> = withOperation(cancellation: cancellation, timeoutSeconds: nil) {
            cancellable, error in
            let print = tgfp_device_enroll_sync(
                dev, template, cancellable,
                { _, completed, _, data, error in
                    let ctx = Unmanaged<EnrollContext>.fromOpaque(data!).takeUnretainedValue()
                    if let error, let hint = LibfprintReader.retryHint(error) {
                        ctx.progress(.retry(hint))
                    } else if error == nil {
                        ctx.progress(.stage(completed: Int(completed), of: ctx.stages))
                    }
                }, box.toOpaque(), &error)
            guard let print else { return nil }
            defer { cfp_object_unref(UnsafeMutableRawPointer(print)) }
            var data: UnsafeMutablePointer<guchar>?
            var length: gsize = 0
            var serr: UnsafeMutablePointer<GError>?
            guard tgfp_print_serialize(print, &data, &length, &serr) != 0, let data else {
                error = serr
                return nil
            }
            defer { g_free(data) }
            return Array(UnsafeBufferPointer(start: data, count: Int(length)))
        }
        if case .done = attempt { readChipPrints() }
        switch attempt {
        case .done(let bytes): return .success(bytes)
        case .failed(let f): return .failure(f)
        case .retry: return .failure(.failed("enrollment ended on a retry"))
        }
    }

    private func runVerify(
        templates: [[UInt8]], timeoutSeconds: Int?, identifyAlways: Bool, cancellation: Cancellation,
        retry: @escaping @Sendable (RetryHint) -> Void
    ) -> Result<ScanResult, ReaderFailure> {
        guard let dev = device else { return .failure(.noReader) }
        var prints: [OpaquePointer] = []
        defer { for p in prints { cfp_object_unref(UnsafeMutableRawPointer(p)) } }
        for t in templates {
            var error: UnsafeMutablePointer<GError>?
            guard let p = t.withUnsafeBufferPointer({ tgfp_print_deserialize($0.baseAddress, gsize($0.count), &error) })
            else {
                g_error_free(error)
                return .failure(.invalidTemplate)
            }
            prints.append(p)
        }
        guard !prints.isEmpty || identifyAlways else { return .failure(.invalidTemplate) }
        // Verify-only readers check one template; identify-capable readers check them all.
        let identify = identifyAlways || (prints.count > 1 && info?.supportsIdentify == true)
        while true {
            let result: Attempt<ScanResult> = withOperation(
                cancellation: cancellation, timeoutSeconds: timeoutSeconds
            ) { cancellable, error -> ScanResult? in
                if identify {
                    let array = g_ptr_array_new()
                    defer { g_ptr_array_unref(array) }
                    for p in prints { g_ptr_array_add(array, UnsafeMutableRawPointer(p)) }
                    var match: OpaquePointer?
                    guard tgfp_device_identify_sync(dev, array, cancellable, nil, nil, &match, nil, &error) != 0 else {
                        return nil
                    }
                    guard let match else { return .noMatch }
                    return prints.firstIndex(of: match).map { .match($0) } ?? .noMatch
                } else {
                    var matched: gboolean = 0
                    guard tgfp_device_verify_sync(dev, prints[0], cancellable, nil, nil, &matched, nil, &error) != 0
                    else { return nil }
                    return matched != 0 ? .match(0) : .noMatch
                }
            }
            switch result {
            case .done(let r): return .success(r)
            case .failed(let f): return .failure(f)
            case .retry(let hint): retry(hint)  // not a failed match: scan again
            }
        }
    }

    /// Runs one libfprint call with a GCancellable wired to `cancellation` and an optional timer,
    /// and maps the GError once.
    private func withOperation<T>(
        cancellation: Cancellation, timeoutSeconds: Int?,
        _ body: (UnsafeMutablePointer<GCancellable>, inout UnsafeMutablePointer<GError>?) -> T?
    ) -> Attempt<T> {
        let cancellable = tgg_cancellable_new()!
        defer { cfp_object_unref(cancellable) }
        let op = Unmanaged.passRetained(OperationState(cancellable: cancellable))
        defer { op.release() }
        // cancel() from another thread: marshal g_cancellable_cancel onto this thread.
        let opPointer = UInt(bitPattern: op.toOpaque())
        cancellation.setHook {
            let retained = Unmanaged<OperationState>.fromOpaque(UnsafeRawPointer(bitPattern: opPointer)!).retain()
            g_main_context_invoke(
                nil,
                { data in
                    let state = Unmanaged<OperationState>.fromOpaque(data!).takeRetainedValue()
                    tgg_cancellable_cancel(state.cancellable)
                    return 0
                }, retained.toOpaque())
        }
        defer { cancellation.setHook(nil) }
        var timer: guint = 0
        if let timeoutSeconds {
            timer = g_timeout_add_full(
                G_PRIORITY_DEFAULT, guint(max(1, timeoutSeconds) * 1000),
                { data in
                    let state = Unmanaged<OperationState>.fromOpaque(data!).takeUnretainedValue()
                    state.timedOut = true
                    state.timer = 0
                    tgg_cancellable_cancel(state.cancellable)
                    return 0
                }, op.toOpaque(), nil)
            op.takeUnretainedValue().timer = timer
        }
        defer { let t = op.takeUnretainedValue().timer; if t != 0 { g_source_remove(t) } }

        var error: UnsafeMutablePointer<GError>?
        let value = body(cancellable, &error)
        defer { if error != nil { g_error_free(error) } }
        if let value, error == nil { return .done(value) }
        if op.takeUnretainedValue().timedOut { return .failed(.timedOut) }
        guard let error else { return .failed(.failed("no result")) }
        if let hint = Self.retryHint(error) { return .retry(hint) }
        let domain = error.pointee.domain, code = error.pointee.code
        if domain == cfp_io_error_quark() && code == Int32(G_IO_ERROR_CANCELLED.rawValue) {
            return .failed(.cancelled)
        }
        if domain == cfp_device_error_quark() {
            switch FpDeviceError(UInt32(code)) {
            case FP_DEVICE_ERROR_REMOVED:
                markRemoved()
                return .failed(.removed)
            case FP_DEVICE_ERROR_TOO_HOT: return .failed(.tooHot)
            case FP_DEVICE_ERROR_BUSY: return .failed(.busy)
            case FP_DEVICE_ERROR_DATA_INVALID, FP_DEVICE_ERROR_DATA_NOT_FOUND: return .failed(.invalidTemplate)
            case FP_DEVICE_ERROR_PROTO: return .failed(.protocolError)
            case FP_DEVICE_ERROR_DATA_FULL: return .failed(.storageFull)
            case FP_DEVICE_ERROR_DATA_DUPLICATE: return .failed(.duplicate)
            default: return .failed(.deviceError(code))
            }
        }
        return .failed(.failed(Self.message(error)))
    }

    private func markRemoved() {
        current.withLock { $0 = nil }
        if let dev = device { cfp_object_unref(dev); device = nil }
    }

    /// nil once libfprint is loaded (the first call loads it, on whichever thread), else why not.
    static func loadLibfprint() -> String? {
        var failure: UnsafePointer<CChar>?
        return tg_fprint_load(&failure) ? nil : failure.map { String(cString: $0) } ?? "unknown error"
    }

    static func retryHint(_ error: UnsafeMutablePointer<GError>) -> RetryHint? {
        guard error.pointee.domain == cfp_device_retry_quark() else { return nil }
        return RetryHint(rawValue: Int(error.pointee.code)) ?? .general
    }

    static func message(_ error: UnsafeMutablePointer<GError>?) -> String {
        guard let error, let m = error.pointee.message else { return "unknown error" }
        return String(cString: m)
    }
}

/// One libfprint call's end: a value, a retry hint (scan again), or a failure.
private enum Attempt<T> {
    case done(T)
    case retry(RetryHint)
    case failed(ReaderFailure)
}

private final class EnrollContext: @unchecked Sendable {
    let stages: Int
    let progress: @Sendable (EnrollEvent) -> Void
    init(stages: Int, progress: @escaping @Sendable (EnrollEvent) -> Void) {
        self.stages = stages; self.progress = progress
    }
}

/// Lives as long as its operation, plus any cancel still queued for the reader thread.
private final class OperationState: @unchecked Sendable {
    let cancellable: UnsafeMutablePointer<GCancellable>
    var timedOut = false
    var timer: guint = 0
    init(cancellable: UnsafeMutablePointer<GCancellable>) {
        self.cancellable = cancellable
        _ = cfp_object_ref(cancellable)
    }
    deinit { cfp_object_unref(cancellable) }
}
