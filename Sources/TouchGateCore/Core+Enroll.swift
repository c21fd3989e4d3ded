// Enrolling prints: what unlocks an account changes, so the user's password or root.
import TouchGatePolicy
import TouchGateReader
import TouchGateWire

extension Core {
    /// `reader`: the reader it is for (ReaderInfo.matches: PAM's and the CLI's reader name, a D-Bus
    /// device object's DRIVER/DEVICE-ID); nil: the default one.
    public func enroll(
        user: String, finger: Finger, password: String?, origin: Origin, caller: Caller,
        client: any PromptClient, input: PromptInput, reader selector: String? = nil
    ) async -> Reply {
        if let refusal = await authorize(caller, user, .selfWithPasswordOrRoot, password: password, origin: origin) {
            return refusal
        }
        guard let served = await served(selector) else { return refusal(for: .noReader, timeout: 0) }
        // Prints must be sealed and the TPM cannot seal them now: refused before a scan, not after
        // the last one (docs/spec.md §9, a TPM that does not answer: no print is written).
        let unsealable: (why: String, refusal: Refusal)? =
            switch await prints.sealingState() {
            case .unavailable(let why)?: (why, Self.sealingRefusal)
            case .refused(_, let why)?:
                (why, Refusal(.internalError, reason: .printsSealed, text: .enrollSealingRefused))
            default: nil
            }
        if let unsealable {
            clientLine(
                uid: caller.uid, "enroll refused: the print would have to be sealed, and \(unsealable.why)",
                metadata: ["user": "\(user)"])
            return unsealable.refusal
        }
        let reader = served.reader, info = served.info
        let ctx = EventContext(user: user, origin: origin, policy: nil, byUID: caller.uid)
        var dropped = false  // the print being replaced was deleted, and no new one stored
        let scanned: Result<[UInt8], Reply>? = await runPrompt(input, acceptsPassword: false) { prompt in
            let ticket = queue.enqueue()
            defer { queue.leave(ticket) }
            if !ticket.granted.isSet {
                client.show(ProgressEvent(.queued, .queued(ahead: queue.ahead(ticket))))
                if case .second(let interrupt) = await firstOf(ticket.granted, prompt.interrupt) {
                    return interrupted(interrupt)
                }
            }
            // The reader may have gone while this waited.
            guard reader.info?.deviceKey == info.deviceKey else {
                return .failure(refusal(for: .removed, timeout: 0))
            }
            let replaced = await makeRoomForReplacement(user: user, finger: finger, on: served)
            await clearStorageBeforeFirstEnrollment(served)
            let result = await scanAndStore(
                user: user, finger: finger, caller: caller, on: served, client: client, prompt: prompt)
            // Still holding the reader: no other enrollment of this finger saves meanwhile.
            // Only once the reader said it deleted its copy (an answer past the deadline counts, as
            // the reader runs one job at a time): a copy it kept keeps its file.
            if let replaced, !result.stored, replaced.answer.deleted == true {
                dropped = await forgetReplaced(
                    user: user, finger: finger, device: info.deviceKey, digest: replaced.digest)
            }
            return result
        }
        if dropped { await recordDeletion(of: finger, ctx, caller: caller) }
        guard let scanned else { return Refusal(.appCancel, reason: .clientGone, text: .cancelled) }
        if case .failure(let reply) = scanned { return reply }
        // The print is saved: the set of prints changed, whether or not the state writes below
        // then fail (as a deletion records what it removed before its failure is told).
        events.publish(
            event("enrollmentChanged", ctx, method: nil, outcome: .success, reason: "enrolled:\(finger.rawValue)"))
        do {
            // Enrolling opts in. A user who proved their password to the daemon just now has seen
            // the new set of prints; after root, or a polkit grant the daemon cannot see into,
            // changes them, the password is asked once (a grant never clears a lockout).
            try await adminChange(ctx, action: "enroll:\(finger.rawValue)") { policyEngine.enable($0) }
            if !caller.isRoot && !caller.grants.contains(.changePrints) { try await recordOwnPrintChange(ctx) }
        } catch {
            log.error("cannot record the enrollment: \(error)")
            return Self.storageFailure
        }
        log.notice("enrolled", metadata: ["user": "\(user)", "finger": "\(finger.rawValue)"])
        return .success(.enrolled(finger))
    }

    /// An enrollment refused because its print cannot be sealed now (the TPM away or refusing):
    /// as a keyring password the TPM cannot seal now (docs/spec.md §12), `internal`, `printsSealed`.
    static let sealingRefusal = Refusal(.internalError, reason: .printsSealed, text: .enrollNotSealedNow)

    /// The enrollment itself, on the reader it holds: the duplicate check, the driver's stages, the
    /// print stored. nil: the client went away (nothing to answer).
    private func scanAndStore(
        user: String, finger: Finger, caller: Caller, on served: ServedReader, client: any PromptClient,
        prompt: ActivePrompt
    ) async -> Result<[UInt8], Reply>? {
        let reader = served.reader, info = served.info
        let scans = info.enrollScans
        client.show(ProgressEvent(.prompt, .enrollPrompt(finger: finger, stages: scans)))
        // A reader that can identify spends the first scan on refusing a finger already
        // enrolled (fprintd 1.94 does the same, and counts it as a stage).
        if info.supportsIdentify {
            if let refused = await refuseDuplicate(
                user: user, replacing: finger, caller: caller, on: served, client: client, prompt: prompt)
            {
                return refused
            }
            client.show(ProgressEvent(.enrollStage, .enrollStage(1, scans), stage: 1, stages: scans))
        }
        let first = scans - info.enrollStages  // the driver's stages come after the identify scan
        var reclaimed = 0
        while true {
            let op = ReaderOperation<[UInt8]>()
            reader.enroll(
                user: user, fingerIndex: finger.fpFinger, cancellation: op.cancellation,
                progress: { event in
                    CoreLoop.shared.post {
                        switch event {
                        case .stage(let k, let n):
                            let k = k + first, n = n + first
                            client.show(ProgressEvent(.enrollStage, .enrollStage(k, n), stage: k, stages: n))
                        case .retry(let hint):
                            client.show(ProgressEvent(.retry, .retry(hint)))
                        }
                    }
                },
                completion: op.completion())
            switch await outcome(of: op, or: prompt) {
            case .second(let interrupt):
                if case .systemCancel = interrupt {
                    // The stop or the sleep must not wait on the chip: a print left there is
                    // unowned, and the next enrollment's clearing or a full chip's reclaim takes it.
                    if served.info.hasStorage { log.notice("an enrollment was cancelled for the stop or sleep") }
                } else {
                    await forgetOnChip(op, on: served, "an enrollment cancelled as it completed")
                }
                return interrupted(interrupt)
            case .first(.success(let template)):
                // Stored while the reader is still held: the next enrollment's duplicate check,
                // a full chip's reclaim and a first enrollment's clearing of the chip then judge
                // a store that has this print (a chip already holds it).
                do { try await prints.save(template, user: user, device: info.deviceKey, finger: finger) } catch {
                    log.error("cannot store template: \(error)")
                    // A file of this print there all the same (written, its directory's sync
                    // failed) keeps the chip's copy with it; the file of the print it was to
                    // replace does not (the chip no longer holds that one).
                    let digest = PrintFiles.digest(template)
                    let listed = await prints.list(user, device: info.deviceKey).prints
                    if !listed.contains(where: { $0.finger == finger && $0.digest == digest }) {
                        await forgetOnChip(op, on: served, "an enrollment whose print cannot be stored")
                    }
                    if case .sealing = error { return .failure(Self.sealingRefusal) }
                    return .failure(Self.storageFailure)
                }
                return .success(template)
            case .first(.failure(let failure)):
                // As fprintd: a full chip gives up one print nobody here owns, and the
                // enrollment starts again (the scans so far were not stored).
                if failure == .storageFull, reclaimed < Self.maxReclaimedPrints, await reclaimReaderStorage(served) {
                    reclaimed += 1
                    // The same count as the first prompt: the stages go on from the identify scan's.
                    client.show(ProgressEvent(.prompt, .enrollPrompt(finger: finger, stages: scans)))
                    continue
                }
                log.notice("enroll failed: \(failure)")
                return .failure(refusal(for: failure, timeout: 0))
            }
        }
    }

    /// A print the driver made that nobody will own (`why`: its enrollment was cancelled as it
    /// completed, or the print could not be stored) is deleted from a reader that keeps its own
    /// copy, while the reader is still held: the chip neither fills with it nor holds it against
    /// the next enrollment. An enrollment still in the driver past the cancel's grace (the reader
    /// stays held for it) has its print deleted when it ends, before the reader is handed on.
    private func forgetOnChip(_ op: ReaderOperation<[UInt8]>, on served: ServedReader, _ why: String) async {
        guard served.info.hasStorage else { return }
        guard let result = op.done.value else {
            let reader = served.reader, log = self.log
            op.done.onSet { result in
                guard case .success(let template) = result else { return }
                log.notice("\(why), late: its print is deleted from the reader")
                reader.deleteFromDevice([template]) { d in
                    if let failure = d.failure { log.error("the reader's storage keeps an unowned print: \(failure)") }
                }
            }
            return
        }
        guard case .success(let template) = result else { return }
        log.notice("\(why): its print is deleted from the reader")
        _ = await deletedFromReader(
            served.reader, [template], within: Self.readerReclaimMilliseconds, holdingReader: true)
    }

    /// Enrolling a finger the user already has on this reader replaces its print, as in fprintd.
    /// A reader with its own storage would refuse the finger as one it holds, so its copy is
    /// deleted first; the file stays until the enrollment ends (`forgetReplaced`). Returns the
    /// digest of the print whose copy was asked to go and the reader's answer (nil: none was).
    private func makeRoomForReplacement(
        user: String, finger: Finger, on served: ServedReader
    ) async -> (digest: String, answer: ChipAnswer)? {
        guard served.info.hasStorage else { return nil }
        let held: [[UInt8]]
        do { held = try await prints.templates(user, device: served.info.deviceKey, fingers: [finger]) } catch {
            log.error("the reader's own copy of the print being replaced cannot be deleted: \(error)")
            return nil
        }
        guard let old = held.first else { return nil }
        // The enrollment holds the reader, so its deletion and listing run now; the prompt is
        // shown once they are done (a deadline as for a full reader's reclaim).
        let answer = ChipAnswer()
        guard
            await deletedFromReader(
                served.reader, held, within: Self.readerReclaimMilliseconds, holdingReader: true, answer: answer)
        else { return nil }
        log.info("replacing \(finger.rawValue): the reader's own copy of the old print is deleted")
        return (PrintFiles.digest(old), answer)
    }

    /// A replacement that ended without its new print stored (cancelled, a duplicate, a reader
    /// error, a full reader, the print not saved): the file of the print it replaced names nothing
    /// the reader holds, so it is deleted too, as fprintd deletes it when the enrollment starts. The
    /// finger is then not enrolled, on a reader that can list its storage as on one that cannot
    /// (which could not tell the print gone, and would offer it at every prompt). Only that print's
    /// file (`digest`): one of the new print the save left stays. True when it was deleted.
    private func forgetReplaced(user: String, finger: Finger, device: DeviceKey, digest: String) async -> Bool {
        let listed = await prints.list(user, device: device).prints
        guard listed.contains(where: { $0.finger == finger && $0.digest == digest }) else { return false }
        do {
            let deletion = try await prints.delete(user, device: device, fingers: [finger])
            if let failure = deletion.failure { throw failure }
            guard deletion.removed == [finger] else { return false }
        } catch {
            log.error("replacing \(finger.rawValue) ended without a new print; the old print's file stays: \(error)")
            return false
        }
        log.notice(
            "replacing \(finger.rawValue) ended without a new print: the old print, which the reader no longer holds, is deleted",
            metadata: ["user": "\(user)"])
        return true
    }

    /// A print deleted for the user, recorded as a deletion records it (Core+Delete.swift): a
    /// user who proved their password for this request has seen the set of prints it leaves;
    /// after root or a polkit grant the next prompt asks for the password (enrollmentChanged).
    private func recordDeletion(of finger: Finger, _ ctx: EventContext, caller: Caller) async {
        if !caller.isRoot && !caller.grants.contains(.changePrints) {
            do { try await recordOwnPrintChange(ctx) } catch {
                log.error("cannot record the prints a deletion leaves: \(error)")
            }
        }
        events.publish(
            event("enrollmentChanged", ctx, method: nil, outcome: .success, reason: "deleted:\(finger.rawValue)"))
    }

    /// A reader whose own storage cannot be listed may hold prints no user here owns (an earlier
    /// installation's), which no full chip's reclaim can find: before the first print of this
    /// reader is enrolled, its storage is cleared, as fprintd clears it. Only when the store says
    /// for certain it holds no print of this reader: one it cannot read may be on the chip.
    private func clearStorageBeforeFirstEnrollment(_ served: ServedReader) async {
        guard served.info.hasStorage, !served.info.listsStorage,
            let every = try? await prints.everyTemplate(device: served.info.deviceKey), every.isEmpty
        else { return }
        let log = self.log
        let cleared = await chipStep(
            within: Self.readerReclaimMilliseconds,
            { done in served.reader.clearStorage { why in CoreLoop.shared.post { done(why) } } },
            late: { why in log.notice("the reader cleared its storage late: \(why ?? "done")") })
        switch cleared {
        case nil: log.error("the reader did not clear its storage within \(Self.readerReclaimMilliseconds) ms")
        case nil?: log.notice("cleared the reader's own storage before its first enrollment")
        case let why??: log.notice("cannot clear the reader's own storage before its first enrollment: \(why)")
        }
    }

    /// A chip operation an enrollment runs while it holds the reader, awaited for at most `within`
    /// ms. One that answers later holds the reader after the enrollment until it ends (at most
    /// `stuckHoldMilliseconds`), as a scan its driver did not end on cancel does: the next prompt
    /// is not granted a reader whose thread is still busy, and one without a terminal is refused
    /// as busy at once rather than waiting behind it.
    func chipStep<T: Sendable>(
        within: Int, _ step: (@escaping @CoreActor (T) -> Void) -> Void, late: @escaping @CoreActor (T) -> Void
    ) async -> T? {
        let ended = OneShot<Void>()
        let value = await Self.result(
            within: within,
            { done in
                step { v in
                    ended.set(())
                    done(v)
                }
            }, late: late)
        if value == nil {
            queue.holdUntilEnded({ e in ended.onSet { _ in e() } }, capMilliseconds: Self.stuckHoldMilliseconds)
        }
        return value
    }

    /// The identify scan before an enrollment: nil when the finger is not enrolled yet, else the
    /// answer (the duplicate, a reader failure, an interrupt; `.some(nil)`: the client went away).
    /// The print being replaced (`user`'s `replacing` finger) is left out of the gallery.
    private func refuseDuplicate(
        user: String, replacing finger: Finger, caller: Caller, on served: ServedReader, client: PromptClient,
        prompt: ActivePrompt
    ) async -> Result<[UInt8], Reply>?? {
        let gallery: [GalleryPrint]
        // Only a store read in full says that a print the chip holds is no one's (a print sealed
        // with the TPM away, or damaged, may be it): otherwise the chip keeps it.
        var whole = false
        // A caller other than root learns nothing of other users' prints from an enrollment: on a
        // reader that matches on the computer the gallery is `user`'s own prints, so the scan is no
        // test of a finger against everyone's, outside their attempt limits (docs/spec.md §2). A
        // reader with its own storage matches against what it holds whatever the gallery says;
        // there every print stays in it, so that a print no one here owns can be told and deleted.
        let everyone = caller.isRoot || served.info.hasStorage
        do {
            gallery = try await prints.gallery(device: served.info.deviceKey).filter {
                !($0.user == user && $0.finger == finger) && (everyone || $0.user == user)
            }
            if served.info.hasStorage { whole = try await prints.everyTemplate(device: served.info.deviceKey) != nil }
        } catch {
            log.error("cannot read the enrolled prints: \(error)")
            return .some(.failure(Self.storageFailure))
        }
        let op = ReaderOperation<ScanResult>()
        served.reader.identify(
            gallery: gallery.map(\.template), wholeGallery: whole, cancellation: op.cancellation,
            retry: { hint in CoreLoop.shared.post { client.show(ProgressEvent(.retry, .retry(hint))) } },
            completion: op.completion())
        switch await outcome(of: op, or: prompt) {
        case .second(let interrupt): return .some(interrupted(interrupt))
        case .first(.failure(let failure)):
            log.notice("enroll failed: \(failure)")
            return .some(.failure(refusal(for: failure, timeout: 0)))
        case .first(.success(.noMatch)): return nil
        case .first(.success(.match(let i))):
            let found = gallery[i]
            log.notice("enroll refused: the finger is already enrolled", metadata: ["user": "\(user)"])
            // Whose print it is, only to root; a caller allowed to change `user`'s prints is told which
            // of them it is; of anyone else's, only that it exists.
            let text: Text =
                caller.isRoot
                ? .alreadyEnrolledFor(found.finger, user: found.user)
                : found.user == user ? .alreadyEnrolled(found.finger) : .enrolledForAnotherUser
            return .some(.failure(Refusal(.duplicate, reason: .duplicate, text: text)))
        }
    }

    /// How many prints one enrollment may delete from a full reader before it gives up.
    static let maxReclaimedPrints = 16

    /// How long an enrollment waits for a full reader to list its prints and delete one: a driver
    /// stuck there ends the enrollment (storage full) instead of holding it for ever.
    static let readerReclaimMilliseconds = 5000

    /// The reader's own storage is full: deletes one print it holds that no user here owns; false
    /// when there is none, the store cannot tell (a print it cannot read now), or the reader has not
    /// answered in time (its late answer is logged).
    private func reclaimReaderStorage(_ served: ServedReader) async -> Bool {
        guard let owned = try? await prints.everyTemplate(device: served.info.deviceKey) else {
            log.notice(
                "the reader's storage is full; none of its prints is deleted: the print store cannot be read in full now"
            )
            return false
        }
        let log = self.log
        let deleted = await chipStep(
            within: Self.readerReclaimMilliseconds,
            { done in served.reader.deleteOnePrintNotIn(owned) { d in CoreLoop.shared.post { done(d) } } },
            late: { d in log.notice("the full reader answered late: \(d ? "one print deleted" : "nothing deleted")") })
        guard let deleted else {
            let ms = Self.readerReclaimMilliseconds
            log.error("the reader did not delete a print from its full storage within \(ms) ms")
            return false
        }
        guard deleted else { return false }
        log.notice("the reader's storage was full: deleted one print no user here owns, and enrolling again")
        return true
    }

    /// nil: the client went away (nothing to answer).
    private func interrupted(_ interrupt: Interrupt) -> Result<[UInt8], Reply>? {
        switch interrupt {
        case .cancelled, .typedPassword: return .failure(Refusal(.appCancel, reason: .cancelled, text: .cancelled))
        case .clientGone: return nil
        case .systemCancel(let refusal): return .failure(refusal)
        }
    }
}

extension Optional where Wrapped == Result<[UInt8], Reply> {
    /// An enrollment's end that stored its print.
    fileprivate var stored: Bool { if case .success? = self { return true } else { return false } }
}
