// Readers that come and go: libfprint's FpContext says when a reader is plugged in, the open
// FpDevice when it is unplugged. The reader served is the first libfprint lists; when it goes, the
// next one still plugged in is served, and a reader plugged in while none is served is opened.
import CGIO
import CTouchGateLibs

extension LibfprintReader {
    /// On the reader thread, once: listens for readers libfprint finds while running.
    func watchForReaders() {
        guard let context else { return }
        let added: @convention(c) (gpointer?, gpointer?, gpointer?) -> Void = { _, device, data in
            let reader = Unmanaged<LibfprintReader>.fromOpaque(data!).takeUnretainedValue()
            reader.readerPluggedIn(device)
        }
        _ = g_signal_connect_data(
            context, "device-added", unsafeBitCast(added, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque(), nil, GConnectFlags(rawValue: 0))
    }

    /// On the reader thread (FpContext's device-added): served when no reader is.
    private func readerPluggedIn(_ object: gpointer?) {
        guard let object else { return }
        let name = String(cString: tgfp_device_get_name(object.assumingMemoryBound(to: FpDevice.self)))
        // A job, not now: an operation of the reader served may be running in this very loop.
        submit { [self] in
            guard device == nil else {
                return log("another fingerprint reader was plugged in (\(name)); serving \(info?.name ?? "?") still")
            }
            log("a fingerprint reader was plugged in: \(name)")
            if openFirstDevice() { announce(info) }
        }
    }

    /// On the reader thread (the open FpDevice's "removed"): the reader is gone at once for every
    /// new request; the operation running ends with libfprint's REMOVED, then the device is closed
    /// and the next reader, if any, served.
    func deviceUnplugged(_ object: gpointer?) {
        guard let dev = device, UnsafeMutableRawPointer(dev) == object else { return }
        retire(dev, why: "the fingerprint reader was unplugged")
    }

    /// On the reader thread (the open FpDevice's notify::removed): libfprint sends it at once, and
    /// its "removed" signal only when the action running has ended, which a driver may take long
    /// to notice. The reader is gone for every new request now, and the operation running is
    /// cancelled and ends as removed.
    func deviceRemovedNotice(_ object: gpointer?) {
        guard let dev = device, UnsafeMutableRawPointer(dev) == object, cfp_device_removed(dev) != 0 else { return }
        if let op = running {
            op.removed = true
            tgg_cancellable_cancel(op.cancellable)
        }
        retire(dev, why: "the fingerprint reader was unplugged")
    }

    /// An operation ended with REMOVED: unplugged (the "removed" signal said so, or will), or the
    /// driver reports it while libfprint still lists the reader, which is then not opened again
    /// until a resume.
    func removedDuringOperation() {
        guard let dev = device else { return }
        if cfp_device_removed(dev) == 0 && !givenUp.contains(dev) {
            _ = cfp_object_ref(dev)  // held, so that its address is never another reader's
            givenUp.append(dev)
        }
        retire(dev, why: "the fingerprint reader reported itself removed")
    }

    private func retire(_ dev: UnsafeMutablePointer<FpDevice>, why: String) {
        guard !deviceRetired else { return }
        deviceRetired = true
        let name = info?.name ?? "?"
        current.withLock { $0 = nil }
        log("\(why): \(name)")
        announce(nil)
        let retired = UInt(bitPattern: dev)  // which device, for the job (a pointer is not Sendable)
        submit { [self] in
            guard let open = device, UInt(bitPattern: open) == retired else { return }
            closeDevice()
            if openFirstDevice() { announce(info) }
        }
    }
}
