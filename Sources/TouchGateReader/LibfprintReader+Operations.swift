// The libfprint reader's operations (enroll, verify, identify), each run on the reader thread with
// its cancellation, deadline and retry hints; and how a failure is told.
import CGIO
import CTouchGateLibs
import Synchronization
import TouchGateThreads

extension LibfprintReader {

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
        templates: [[UInt8]], timeoutSeconds: Int?, cancellation: Cancellation,
        retry: @escaping @Sendable (RetryHint) -> Void,
        completion: @escaping @Sendable (Result<ScanResult, ReaderFailure>) -> Void
    ) {
        submit { [self] in
            runVerify(
                templates: templates, timeoutSeconds: timeoutSeconds, identifyAlways: false, deleteUnowned: false,
                cancellation: cancellation, retry: retry, completion: completion)
        }
    }

    public func identify(
        gallery: [[UInt8]], wholeGallery: Bool, cancellation: Cancellation,
        retry: @escaping @Sendable (RetryHint) -> Void,
        completion: @escaping @Sendable (Result<ScanResult, ReaderFailure>) -> Void
    ) {
        submit { [self] in
            runVerify(
                templates: gallery, timeoutSeconds: nil, identifyAlways: true, deleteUnowned: wholeGallery,
                cancellation: cancellation, retry: retry, completion: completion)
        }
    }

    private func runEnroll(
        user: String, fingerIndex: Int, cancellation: Cancellation,
        progress: @escaping @Sendable (EnrollEvent) -> Void
    ) -> Result<[UInt8], ReaderFailure> {
        guard let dev = usableDevice else { return .failure(whyUnusable) }
        let stages = Int(tgfp_device_get_nr_enroll_stages(dev))
        // Sunk here and released after the call: fp_device_enroll_sync sinks a floating template
        // only once it starts, and returns before that when cancelled, busy or closed.
        let template = tgfp_print_new(dev)
        _ = cfp_object_ref_sink(UnsafeMutableRawPointer(template))
        defer { cfp_object_unref(UnsafeMutableRawPointer(template)) }
        tgfp_print_set_finger(template, FpFinger(UInt32(fingerIndex)))
        tgfp_print_set_username(template, user)
        cfp_print_set_enroll_date_today(template)
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

    /// Calls `completion` once: at libfprint's match report when it comes (see MatchReport), else
    /// when the operation ends.
    private func runVerify(
        templates: [[UInt8]], timeoutSeconds: Int?, identifyAlways: Bool, deleteUnowned: Bool,
        cancellation: Cancellation,
        retry: @escaping @Sendable (RetryHint) -> Void,
        completion: @escaping @Sendable (Result<ScanResult, ReaderFailure>) -> Void
    ) {
        guard let dev = usableDevice else { return completion(.failure(whyUnusable)) }
        var prints: [OpaquePointer] = []
        defer { for p in prints { cfp_object_unref(UnsafeMutableRawPointer(p)) } }
        for t in templates {
            var error: UnsafeMutablePointer<GError>?
            guard let p = Self.deserialize(t, &error) else {
                g_error_free(error)
                return completion(.failure(.invalidTemplate))
            }
            prints.append(p)
        }
        guard !prints.isEmpty || identifyAlways else { return completion(.failure(.invalidTemplate)) }
        // Verify-only readers check one template; identify-capable readers check them all.
        let identify = identifyAlways || (prints.count > 1 && info?.supportsIdentify == true)
        let report = Unmanaged.passRetained(
            MatchReport(
                reader: self, prints: prints, identify: identify, cancellation: cancellation,
                holdsNoMatch: identifyAlways, completion: completion))
        defer { report.release() }
        let onMatch: FpMatchCb = { _, match, _, data, error in
            guard error == nil else { return }  // a retry: the operation ends with it and is made again
            Unmanaged<MatchReport>.fromOpaque(data!).takeUnretainedValue().reported(match)
        }
        while true {
            // The finger is on the chip in a print no one here matched, and the chip keeps it.
            var keptOnChip = false
            let result: Attempt<ScanResult> = withOperation(
                cancellation: cancellation, timeoutSeconds: timeoutSeconds
            ) { cancellable, error -> ScanResult? in
                let told = report.toOpaque()
                if identify {
                    let array = g_ptr_array_new()
                    defer { g_ptr_array_unref(array) }
                    for p in prints { g_ptr_array_add(array, UnsafeMutableRawPointer(p)) }
                    // A reference of our own (transfer full), handed back even when the operation
                    // then fails (a deadline or a cancel after the match was reported).
                    var match: OpaquePointer?, scanned: OpaquePointer?
                    defer { cfp_object_unref(match.map(UnsafeMutableRawPointer.init)) }
                    defer { cfp_object_unref(scanned.map(UnsafeMutableRawPointer.init)) }
                    guard
                        tgfp_device_identify_sync(dev, array, cancellable, onMatch, told, &match, &scanned, &error)
                            != 0
                    else { return nil }
                    if identifyAlways, match == nil, let scanned {
                        keptOnChip = !self.deleteUnowned(scanned, from: dev, storeReadInFull: deleteUnowned)
                    }
                    return report.takeUnretainedValue().result(match)
                } else {
                    var matched: gboolean = 0
                    let print = prints[0]
                    guard tgfp_device_verify_sync(dev, print, cancellable, onMatch, told, &matched, nil, &error) != 0
                    else { return nil }
                    return matched != 0 ? .match(0) : .noMatch
                }
            }
            switch result {
            case .done(let r):
                // A print kept because the reader went while it was being deleted: that is the
                // reader removed, not a finger enrolled already.
                let kept: ReaderFailure = cfp_device_removed(dev) != 0 ? .removed : .duplicate
                return report.takeUnretainedValue().finish(keptOnChip ? .failure(kept) : .success(r))
            // DATA_NOT_FOUND: the reader knows none of the prints offered for this finger. Some
            // match-on-chip drivers answer an unknown finger so (elanmoc2), others a print the chip
            // lost since it was listed, or an empty storage. It is no match, as fprintd's
            // verify-no-match: a prompt counts it toward the lockout (an error there would let a
            // stranger try finger after finger uncounted), and an enrollment's duplicate check has
            // found no duplicate and goes on.
            case .failed(.printsNotFound):
                return report.takeUnretainedValue().finish(.success(.noMatch))
            case .failed(let f): return report.takeUnretainedValue().finish(.failure(f))
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
        // cancel() from another thread: marshal g_cancellable_cancel onto this thread. The hook
        // holds the state (and through it the cancellable): cancel() may run a hook it took just
        // before the operation ended and removed it, and then nothing it touches is freed yet.
        let state = op.takeUnretainedValue()
        cancellation.setHook {
            let retained = Unmanaged.passRetained(state)
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

        running = op.takeUnretainedValue()
        defer { running = nil }
        var error: UnsafeMutablePointer<GError>?
        let value = body(cancellable, &error)
        defer { if error != nil { g_error_free(error) } }
        if let value, error == nil { return .done(value) }
        if op.takeUnretainedValue().removed { return .failed(.removed) }
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
                removedDuringOperation()
                return .failed(.removed)
            case FP_DEVICE_ERROR_TOO_HOT: return .failed(.tooHot)
            case FP_DEVICE_ERROR_BUSY: return .failed(.busy)
            case FP_DEVICE_ERROR_DATA_INVALID: return .failed(.invalidTemplate)
            case FP_DEVICE_ERROR_DATA_NOT_FOUND: return .failed(.printsNotFound)
            case FP_DEVICE_ERROR_PROTO: return .failed(.protocolError)
            case FP_DEVICE_ERROR_DATA_FULL: return .failed(.storageFull)
            case FP_DEVICE_ERROR_DATA_DUPLICATE: return .failed(.duplicate)
            default: return .failed(.deviceError(code))
            }
        }
        return .failed(.failed(Self.message(error)))
    }

    /// nil once libfprint is loaded (the first call loads it, on whichever thread), else why not.
    static func loadLibfprint() -> String? {
        var failure: UnsafePointer<CChar>?
        return tg_fprint_load(&failure) ? nil : failure.map { String(cString: $0) } ?? "unknown error"
    }

    static func retryHint(_ error: UnsafeMutablePointer<GError>) -> RetryHint? {
        guard error.pointee.domain == cfp_device_retry_quark() else { return nil }
        return RetryHint(libfprintCode: Int(error.pointee.code))
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
final class OperationState: @unchecked Sendable {
    let cancellable: UnsafeMutablePointer<GCancellable>
    var timedOut = false
    /// Its result was told at libfprint's match report and it is only ending now (reader thread only).
    var reported = false
    /// Cancelled because libfprint said the device was unplugged (reader thread only).
    var removed = false
    var timer: guint = 0
    init(cancellable: UnsafeMutablePointer<GCancellable>) {
        self.cancellable = cancellable
        _ = cfp_object_ref(cancellable)
    }
    deinit { cfp_object_unref(cancellable) }
}

/// A verification's result told as soon as libfprint reports it (its FpMatchCb), as fprintd's
/// VerifyStatus is. An image reader ends the operation only once the finger is lifted and the
/// reader deactivated: the user need not lift the finger for the result. The operation still ends
/// as before (the finger lifted, its deadline, a close), and the reader's next one waits for that,
/// so a finger left on the reader is not scanned again. A report made after a cancel or a deadline
/// is not told: the operation's end says why it ended. Reader thread only.
private final class MatchReport: @unchecked Sendable {
    unowned let reader: LibfprintReader
    let prints: [OpaquePointer]
    let identify: Bool
    let cancellation: Cancellation
    /// An enrollment's duplicate check: its "no match" waits for the end of the identify, which
    /// may still find the finger held on the chip (`deleteUnowned`) and make it a duplicate.
    let holdsNoMatch: Bool
    private var completion: (@Sendable (Result<ScanResult, ReaderFailure>) -> Void)?

    init(
        reader: LibfprintReader, prints: [OpaquePointer], identify: Bool, cancellation: Cancellation,
        holdsNoMatch: Bool, completion: @escaping @Sendable (Result<ScanResult, ReaderFailure>) -> Void
    ) {
        self.reader = reader; self.prints = prints; self.identify = identify; self.cancellation = cancellation
        self.holdsNoMatch = holdsNoMatch
        self.completion = completion
    }

    /// nil: no match. A verification checks `prints[0]`; an identification's `match` is one of
    /// `prints` (libfprint hands back the template itself).
    func result(_ match: OpaquePointer?) -> ScanResult {
        guard let match else { return .noMatch }
        guard identify else { return .match(0) }
        return prints.firstIndex(of: match).map { .match($0) } ?? .noMatch
    }

    func reported(_ match: OpaquePointer?) {
        guard let op = reader.running, !op.timedOut, !op.removed, !cancellation.isCancelled else { return }
        if holdsNoMatch && result(match) == .noMatch { return }
        op.reported = true
        finish(.success(result(match)))
    }

    /// Tells the result, unless the report told it already.
    func finish(_ outcome: Result<ScanResult, ReaderFailure>) {
        guard let completion else { return }
        self.completion = nil
        completion(outcome)
    }
}
