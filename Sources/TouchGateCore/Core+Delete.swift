// Deleting prints: the files, and a match-on-chip reader's own copy of them (docs/readers.md).
import TouchGatePolicy
import TouchGateReader
import TouchGateWire

extension Core {
    /// Deletes the named fingers (or all): the prints made on the reader named (`reader`:
    /// ReaderInfo.matches; fprintd's device objects), or on every reader when none is named.
    public func delete(
        user: String, fingers: [Finger], all: Bool, password: String?, origin: Origin, caller: Caller,
        reader selector: String? = nil
    ) async -> Reply {
        if let refusal = await authorize(caller, user, .selfWithPasswordOrRoot, password: password, origin: origin) {
            return refusal
        }
        let targets = all ? Finger.allCases : fingers
        let on: [ServedReader]
        if let selector {
            guard let named = await served(selector) else { return refusal(for: .noReader, timeout: 0) }
            on = [named]
        } else {
            on = await servedReaders()
        }
        // A match-on-chip reader keeps its own copy: read it before the files go, to delete it
        // there too (as fprintd does), so the chip neither fills up nor matches a deleted finger.
        var onChip: [(reader: any FingerprintReader, prints: [[UInt8]])] = []
        var unreadable = false  // the chip's copy cannot be named, so it stays there
        for served in on where served.info.hasStorage {
            do {
                let held = try await prints.templates(user, device: served.info.deviceKey, fingers: targets)
                if !held.isEmpty { onChip.append((served.reader, held)) }
            } catch {
                log.error("the reader's own copy of the deleted prints stays: their files cannot be read: \(error)")
                unreadable = true
            }
        }
        let device = selector == nil ? nil : on.first?.info.deviceKey
        let deletion: PrintDeletion
        do { deletion = try await prints.delete(user, device: device, fingers: targets) } catch {
            log.error("cannot delete templates: \(error)")
            return Self.storageFailure
        }
        let removed = deletion.removed
        var keptOnReader = unreadable && !removed.isEmpty
        // After a file that could not be removed, the chip keeps every copy: which of those read
        // belongs to the finger still enrolled is not known here, and a copy left over is only
        // an unowned print, where one deleted would silently end a finger still enrolled.
        for (reader, held) in onChip where deletion.failure == nil {
            if !(await deletedFromReader(reader, held)) { keptOnReader = true }
        }
        if !removed.isEmpty {
            let ctx = EventContext(user: user, origin: origin, policy: nil, byUID: caller.uid)
            // As for an enrollment: a user who proved their password for this deletion has seen
            // the set of prints it leaves, so the next prompt does not ask for it again.
            if !caller.isRoot && !caller.grants.contains(.changePrints) {
                do { try await recordOwnPrintChange(ctx) } catch {
                    log.error("cannot record the prints a deletion leaves: \(error)")
                }
            }
            events.publish(
                event(
                    "enrollmentChanged", ctx, method: nil, outcome: .success,
                    reason: "deleted:\(removed.map(\.rawValue).joined(separator: ","))"))
        }
        // A deletion of nothing is the client's to repeat at will, and changes nothing.
        log.log(
            level: removed.isEmpty ? .debug : .notice, "deleted \(removed.map(\.rawValue))",
            metadata: ["user": "\(user)"])
        // What could be removed is gone and recorded; the rest is refused as not deleted.
        if let failure = deletion.failure {
            log.error("cannot delete templates: \(failure)")
            return Self.storageFailure
        }
        if !all, let named = fingers.first, removed.isEmpty {
            return Refusal(.notFound, reason: nil, text: .fingerNotEnrolled(named))
        }
        var reply = Reply.success(.deleted(removed.count))
        if keptOnReader {
            // The files are gone, so are the prints here; the chip's refusal is told, as fprintd's
            // PrintsNotDeletedFromDevice tells it (docs/readers.md, match-on-chip storage).
            reply = Reply.success(.lines([.deleted(removed.count), .keptOnReader]), reason: .notDeletedFromReader)
        }
        reply.fingers = removed
        return reply
    }

    /// How long a deletion waits for the reader's own copy to go: the reader may be finishing a
    /// prompt of another client first (a verify ends within its deadline), or stuck in its driver.
    /// Within a short request's deadline (TG_REPLY_DEADLINE_MS), so the CLI hears the answer.
    static let readerDeletionMilliseconds = 1000

    /// A match-on-chip reader's copy of prints whose files went, deleted there, as fprintd does;
    /// false when the reader refused (the log says why). One that has not answered in time is
    /// not waited for: it is deleted when the reader is free, and its answer is logged then.
    /// `holdingReader`: asked by an enrollment that holds the reader (a late answer then holds it
    /// on, `chipStep`). `answer`, when given, is told what the reader answered, in time or late.
    func deletedFromReader(
        _ reader: any FingerprintReader, _ held: [[UInt8]], within milliseconds: Int = readerDeletionMilliseconds,
        holdingReader: Bool = false, answer: ChipAnswer? = nil
    ) async -> Bool {
        let log = self.log
        let told: @CoreActor (ChipDeletion) -> Bool = { result in
            if result.deleted > 0 { log.info("deleted \(result.deleted) print(s) from the reader's storage") }
            answer?.deleted = result.failure == nil
            guard let failure = result.failure else { return true }
            log.error("the reader's storage keeps a deleted print: \(failure)")
            return false
        }
        let step: (@escaping @CoreActor (ChipDeletion) -> Void) -> Void = { done in
            reader.deleteFromDevice(held) { result in CoreLoop.shared.post { done(result) } }
        }
        let result =
            holdingReader
            ? await chipStep(within: milliseconds, step, late: { _ = told($0) })
            : await Self.result(within: milliseconds, step, late: { _ = told($0) })
        guard let result else {
            log.notice("the reader is busy: its own copy of the deleted prints goes once it is free")
            return true
        }
        return told(result)
    }
}

/// What a reader answered to a deletion, known once it did (nil until then): an answer that came
/// past the deadline is known only to whoever kept this.
@CoreActor final class ChipAnswer {
    var deleted: Bool?
}
