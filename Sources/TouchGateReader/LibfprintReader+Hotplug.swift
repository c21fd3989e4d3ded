// Readers that come and go: libfprint's FpContext says when a reader is plugged in, the open
// FpDevice when it is unplugged. Every reader found is opened and served; one that goes leaves
// the others as they are.
import CGIO
import CTouchGateLibs

extension LibfprintReaders {
    /// On the reader thread, once: listens for readers libfprint finds while running.
    func watchForReaders() {
        guard let context else { return }
        let added: @convention(c) (gpointer?, gpointer?, gpointer?) -> Void = { _, device, data in
            let readers = Unmanaged<LibfprintReaders>.fromOpaque(data!).takeUnretainedValue()
            readers.readerPluggedIn(device)
        }
        _ = g_signal_connect_data(
            context, "device-added", unsafeBitCast(added, to: GCallback.self),
            Unmanaged.passUnretained(self).toOpaque(), nil, GConnectFlags(rawValue: 0))
    }

    /// On the reader thread (FpContext's device-added): opened and served beside the others.
    private func readerPluggedIn(_ object: gpointer?) {
        guard let object else { return }
        let name = String(cString: tgfp_device_get_name(object.assumingMemoryBound(to: FpDevice.self)))
        log("a fingerprint reader was plugged in: \(name)")
        // A job, not now: an operation of another reader may be running in this very loop; the
        // new reader is opened once it has ended.
        submit { [self] in
            // Plugged in while every reader is closed (before sleep): opened with the others on
            // resume, never before the machine sleeps.
            guard !closedAll else { return }
            let before = served.count
            openDevices()
            if served.count != before { announce() }
        }
    }
}

extension LibfprintReader {
    /// On the reader thread (the FpDevice's "removed"): the reader is gone at once for every new
    /// request; the operation running ends with libfprint's REMOVED, then the device is closed.
    func deviceUnplugged(_ object: gpointer?) {
        guard let dev = device, UnsafeMutableRawPointer(dev) == object else { return }
        retire(dev, why: "the fingerprint reader was unplugged")
    }

    /// On the reader thread (the FpDevice's notify::removed): libfprint sends it at once, and its
    /// "removed" signal only when the action running has ended, which a driver may take long to
    /// notice. The reader is gone for every new request now, and the operation running is
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
        if cfp_device_removed(dev) == 0 && !readers.givenUp.contains(dev) {
            _ = cfp_object_ref(dev)  // held, so that its address is never another reader's
            readers.givenUp.append(dev)
        }
        retire(dev, why: "the fingerprint reader reported itself removed")
    }

    private func retire(_ dev: UnsafeMutablePointer<FpDevice>, why: String) {
        guard !deviceRetired else { return }
        deviceRetired = true
        let name = info?.name ?? "?"
        current.withLock { $0 = nil }
        log("\(why): \(name)")
        readers.announce()
        submit { [self] in
            closeDevice()
            readers.forget(self)
        }
    }
}
