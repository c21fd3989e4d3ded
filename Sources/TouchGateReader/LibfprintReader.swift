// One open libfprint-2 reader (an FpDevice): its description, the driver's notifications, and its
// closing. Every call on it runs on the readers' thread (LibfprintReaders).
import CGIO
import CTouchGateLibs
import Synchronization

public final class LibfprintReader: FingerprintReader, Sendable {
    unowned let readers: LibfprintReaders
    let current = Mutex<ReaderInfo?>(nil)
    /// The prints a match-on-chip reader holds (serialized), read at open and after each change;
    /// nil for other readers or when the list could not be read.
    let chipPrints = Mutex<(driver: String, deviceID: String, prints: [[UInt8]])?>(nil)
    /// The FpDevice (nil once closed), touched only on the reader thread.
    nonisolated(unsafe) var device: UnsafeMutablePointer<FpDevice>?
    /// The device's signal handlers (stage count, finger status, removal); reader thread only.
    nonisolated(unsafe) var deviceHandlers: [gulong] = []
    /// The device was unplugged (or said so) and is being let go; reader thread only.
    nonisolated(unsafe) var deviceRetired = false
    /// The operation libfprint is running now, if any; reader thread only.
    nonisolated(unsafe) var running: OperationState?

    public var info: ReaderInfo? { current.withLock { $0 } }

    var log: @Sendable (String) -> Void { readers.log }

    func submit(_ job: @escaping @Sendable () -> Void) { readers.submit(job) }

    private init(readers: LibfprintReaders) { self.readers = readers }

    /// On the reader thread: opens `dev`; nil (said in the log unless `quiet`) when it cannot be opened.
    static func open(_ dev: UnsafeMutablePointer<FpDevice>, readers: LibfprintReaders, quiet: Bool = false)
        -> LibfprintReader?
    {
        var error: UnsafeMutablePointer<GError>?
        guard tgfp_device_open_sync(dev, nil, &error) != 0 else {
            if !quiet {
                readers.log(
                    "cannot open fingerprint reader \(String(cString: tgfp_device_get_name(dev))): \(message(error))")
            }
            g_error_free(error)
            return nil
        }
        let reader = LibfprintReader(readers: readers)
        reader.adopt(dev)
        return reader
    }

    private func adopt(_ dev: UnsafeMutablePointer<FpDevice>) {
        _ = cfp_object_ref(dev)
        device = dev
        var info = ReaderInfo(
            name: String(cString: tgfp_device_get_name(dev)),
            driver: String(cString: tgfp_device_get_driver(dev)),
            deviceID: String(cString: tgfp_device_get_device_id(dev)),
            enrollStages: Int(tgfp_device_get_nr_enroll_stages(dev)),
            supportsIdentify: tgfp_device_has_feature(dev, FP_DEVICE_FEATURE_IDENTIFY) != 0,
            isSwipe: tgfp_device_get_scan_type(dev) == FP_SCAN_TYPE_SWIPE)
        info.hasStorage = tgfp_device_has_storage(dev) != 0
        info.listsStorage = tgfp_device_has_feature(dev, FP_DEVICE_FEATURE_STORAGE_LIST) != 0
        info.fingerWanted = tgfp_device_get_finger_status(dev).rawValue & FP_FINGER_STATUS_NEEDED.rawValue != 0
        current.withLock { $0 = info }
        readChipPrints()
        log("reader: \(info.name) (\(info.driver)), \(info.enrollStages) enroll stages")
        // The driver may change its stage count, its scan type and the finger's status while open
        // (libfprint notifies each property); libfprint says when the reader is unplugged: its
        // "removed" property at once, its "removed" signal once the action running, if any, has
        // ended.
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
            ("notify::scan-type", unsafeBitCast(notify, to: GCallback.self)),
            ("notify::finger-status", unsafeBitCast(notify, to: GCallback.self)),
            ("removed", unsafeBitCast(removed, to: GCallback.self)),
            ("notify::removed", unsafeBitCast(removedNotice, to: GCallback.self)),
        ]
        deviceHandlers = handlers.map { signal, callback in
            g_signal_connect_data(dev, signal, callback, me, nil, GConnectFlags(rawValue: 0))
        }
        // Reading the chip's prints above ran libfprint's loop: an unplug then came before anyone
        // listened. Retired now, the reader is forgotten by the job after this one.
        deviceRemovedNotice(dev)
    }

    /// On the reader thread: the device an operation may start on; nil when there is none, for
    /// the reason `whyUnusable` gives.
    var usableDevice: UnsafeMutablePointer<FpDevice>? { deviceRetired ? nil : device }
    /// A reader unplugged after the request was let in fails as removed (its prompt says so), not
    /// as "no reader".
    var whyUnusable: ReaderFailure { deviceRetired ? .removed : .noReader }

    /// On the reader thread: closes the device and lets it go (shutdown, suspend, removal).
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
        setChipPrints(nil)
    }

    /// On the reader thread, from libfprint's notify::nr-enroll-stages and notify::finger-status.
    private func deviceChanged(_ object: gpointer?) {
        guard let dev = device, UnsafeMutableRawPointer(dev) == object else { return }
        let stages = Int(tgfp_device_get_nr_enroll_stages(dev))
        let swipe = tgfp_device_get_scan_type(dev) == FP_SCAN_TYPE_SWIPE
        let status = tgfp_device_get_finger_status(dev).rawValue
        let present = status & FP_FINGER_STATUS_PRESENT.rawValue != 0
        // Once the result is told, the drop that ends the operation waits for the next change:
        // the result goes first, as fprintd tells it at the report (an image reader drops it
        // between captures, before any report, and that drop is seen at once).
        let wanted = status & FP_FINGER_STATUS_NEEDED.rawValue != 0 || (running?.reported ?? false)
        guard
            let (info, before) = current.withLock({ s -> (ReaderInfo, ReaderInfo)? in
                guard var info = s else { return nil }
                let before = info
                info.enrollStages = stages
                info.isSwipe = swipe
                info.fingerPresent = present
                info.fingerWanted = wanted
                guard info != before else { return nil }
                s = info
                return (info, before)
            })
        else { return }
        let stagesChanged = before.enrollStages != stages, scanTypeChanged = before.isSwipe != swipe
        if stagesChanged { log("reader \(info.name): now \(stages) enroll stages") }
        if scanTypeChanged { log("reader \(info.name): now a \(swipe ? "swipe" : "press") reader") }
        // After `current` is written: a watcher that starts now reads it, or is announced to.
        if stagesChanged || scanTypeChanged {
            readers.announce()
        } else if readers.fingerWatched {
            readers.announceSoon()
        }
    }
}
