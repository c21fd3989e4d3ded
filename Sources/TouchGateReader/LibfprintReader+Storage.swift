// A match-on-chip reader's own storage: what the chip holds, and deleting from it.
import CGIO
import CTouchGateLibs

extension LibfprintReader {
    /// An enrollment's duplicate check found the finger on the chip in a print none of the gallery
    /// matched. When the gallery held every owned print (`storeReadInFull`), no user here owns it:
    /// as fprintd's enroll_identify_cb, it is deleted from the chip, which would otherwise refuse
    /// that finger's enrollment for ever. Otherwise it may be an unreadable print's, and is kept.
    /// False when the chip still holds it (kept, or its deletion failed): the enrollment ends as a
    /// duplicate then, as fprintd ends it when that deletion fails.
    func deleteUnowned(_ scanned: OpaquePointer, from dev: UnsafeMutablePointer<FpDevice>, storeReadInFull: Bool)
        -> Bool
    {
        guard tgfp_device_has_storage(dev) != 0, tgfp_print_get_device_stored(scanned) != 0 else { return true }
        guard storeReadInFull else {
            log("a print of this finger on the reader is kept: the store cannot be read in full now")
            return false
        }
        var error: UnsafeMutablePointer<GError>?
        if tgfp_device_delete_print_sync(dev, scanned, nil, &error) != 0 {
            log("deleted from the reader a print of this finger that no user here owns")
            return true
        }
        log("cannot delete from the reader a print of this finger that no user here owns: \(Self.message(error))")
        g_error_free(error)
        return false
    }

    /// A stored template as libfprint's print (the caller unrefs it), or nil with `error` set.
    /// libfprint 1.94 asserts on fewer than 4 bytes, which would abort the daemon on a truncated
    /// file: such bytes are refused here as no print, which costs that finger alone.
    static func deserialize(
        _ template: [UInt8], _ error: UnsafeMutablePointer<UnsafeMutablePointer<GError>?>? = nil
    ) -> OpaquePointer? {
        guard template.count > 3 else {
            error?.pointee = g_error_new_literal(
                g_quark_from_string("touchgate"), 0, "\(template.count) bytes are no print")
            return nil
        }
        return template.withUnsafeBufferPointer { tgfp_print_deserialize($0.baseAddress, gsize($0.count), error) }
    }

    public func deleteFromDevice(_ templates: [[UInt8]], completion: @escaping @Sendable (ChipDeletion) -> Void) {
        submit { [self] in
            guard let dev = device else { return completion(ChipDeletion(deleted: 0, failure: "the reader is closed")) }
            guard tgfp_device_has_storage(dev) != 0 else { return completion(ChipDeletion(deleted: 0)) }
            var result = ChipDeletion(deleted: 0)
            for t in templates {
                var error: UnsafeMutablePointer<GError>?
                guard let print = Self.deserialize(t, &error) else {
                    g_error_free(error)
                    continue
                }
                defer { cfp_object_unref(UnsafeMutableRawPointer(print)) }
                if tgfp_device_delete_print_sync(dev, print, nil, &error) != 0 {
                    result.deleted += 1
                } else {
                    // Already gone from the chip is what was wanted; anything else is told.
                    if !(error?.pointee.domain == cfp_device_error_quark()
                        && error?.pointee.code == Int32(FP_DEVICE_ERROR_DATA_NOT_FOUND.rawValue))
                    {
                        result.failure = result.failure ?? Self.message(error)
                    }
                    g_error_free(error)
                }
            }
            readChipPrints()
            completion(result)
        }
    }

    public func deleteOnePrintNotIn(_ owned: [[UInt8]], completion: @escaping @Sendable (Bool) -> Void) {
        submit { [self] in
            guard let dev = device, tgfp_device_has_storage(dev) != 0 else { return completion(false) }
            var error: UnsafeMutablePointer<GError>?
            guard let list = tgfp_device_list_prints_sync(dev, nil, &error) else {
                log("cannot list the prints on the reader: \(Self.message(error))")
                g_error_free(error)
                return completion(false)
            }
            defer { g_ptr_array_unref(list) }
            let kept = owned.compactMap { Self.deserialize($0) }
            defer { for p in kept { cfp_object_unref(UnsafeMutableRawPointer(p)) } }
            guard kept.count == owned.count else { return completion(false) }  // never guess an owner
            for i in 0..<list.pointee.len {
                let print = OpaquePointer(cfp_ptr_array_index(list, i))
                if kept.contains(where: { tgfp_print_equal(print, $0) != 0 }) { continue }
                var error: UnsafeMutablePointer<GError>?
                let deleted = tgfp_device_delete_print_sync(dev, print, nil, &error) != 0
                if !deleted {
                    log("cannot delete a print from the reader's storage: \(Self.message(error))")
                    g_error_free(error)
                }
                readChipPrints()
                return completion(deleted)
            }
            completion(false)
        }
    }

    public func clearStorage(completion: @escaping @Sendable (String?) -> Void) {
        submit { [self] in
            guard let dev = device else { return completion("the reader is closed") }
            guard tgfp_device_has_storage(dev) != 0 else { return completion(nil) }
            var error: UnsafeMutablePointer<GError>?
            guard tgfp_device_clear_storage_sync(dev, nil, &error) != 0 else {
                defer { g_error_free(error) }
                return completion(Self.message(error))
            }
            readChipPrints()
            completion(nil)
        }
    }

    /// On the reader thread: what a match-on-chip reader holds now (not known where it cannot list).
    func readChipPrints() {
        guard let dev = device, tgfp_device_has_storage(dev) != 0,
            tgfp_device_has_feature(dev, FP_DEVICE_FEATURE_STORAGE_LIST) != 0
        else { return setChipPrints(nil) }
        var error: UnsafeMutablePointer<GError>?
        guard let list = tgfp_device_list_prints_sync(dev, nil, &error) else {
            log("cannot list the prints on the reader: \(Self.message(error))")
            g_error_free(error)
            return setChipPrints(nil)
        }
        defer { g_ptr_array_unref(list) }
        var prints: [[UInt8]] = []
        for i in 0..<list.pointee.len {
            let print = OpaquePointer(cfp_ptr_array_index(list, i))
            var data: UnsafeMutablePointer<guchar>?
            var length: gsize = 0
            var serr: UnsafeMutablePointer<GError>?
            guard tgfp_print_serialize(print, &data, &length, &serr) != 0, let data else {
                g_error_free(serr); continue
            }
            prints.append(Array(UnsafeBufferPointer(start: data, count: Int(length))))
            g_free(data)
        }
        let driver = String(cString: tgfp_device_get_driver(dev)), id = String(cString: tgfp_device_get_device_id(dev))
        setChipPrints((driver, id, prints))
    }

    /// Sets what the chip holds (reader thread); a change makes the prints' earlier judgements
    /// stale (`chipListing`), so a print the chip no longer holds is found at the next request.
    func setChipPrints(_ new: (driver: String, deviceID: String, prints: [[UInt8]])?) {
        let changed = chipPrints.withLock { old -> Bool in
            let same = old?.driver == new?.driver && old?.deviceID == new?.deviceID && old?.prints == new?.prints
            old = new
            return !same
        }
        if changed { readers.chipListings.withLock { $0 += 1 } }
    }

    /// Whether the chip holds `print` (nil: not known, or not this chip's print).
    func isOnChip(_ print: OpaquePointer) -> Bool? {
        guard let chip = chipPrints.withLock({ $0 }),
            String(cString: tgfp_print_get_driver(print)) == chip.driver,
            String(cString: tgfp_print_get_device_id(print)) == chip.deviceID
        else { return nil }
        for bytes in chip.prints {
            var error: UnsafeMutablePointer<GError>?
            guard let other = Self.deserialize(bytes, &error) else {
                g_error_free(error)
                continue
            }
            defer { cfp_object_unref(UnsafeMutableRawPointer(other)) }
            if tgfp_print_equal(print, other) != 0 { return true }
        }
        return false
    }
}
