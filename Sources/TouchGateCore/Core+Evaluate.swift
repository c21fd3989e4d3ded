// evaluatePolicy: the fingerprint prompt (queue, tries, lockout) and, for biometrics-or-password, the
// password typed at it — LocalAuthentication's rules, the same for every front-end.
import TouchGatePolicy
import TouchGateReader
import TouchGateWire

/// The one place that decides what a password may do in an evaluation (deviceOwnerAuthentication).
/// The client says only what it alone knows (the policy its configuration names, whether it takes
/// input at all, whether it reads keys during the prompt); the replies carry the decision as flags
/// (docs/spec.md §6), and front-ends and the PAM module follow them.
extension EvaluateRequest {
    /// A password typed at the prompt is sent to the daemon and checked here (PASSWORD frame).
    public var acceptsTypedPassword: Bool { policy == .biometricsOrPassword && !noInput && !noTerminal }

    /// A refused or failed fingerprint is followed by the password, which the client asks for and
    /// sends back (VERIFY_PASSWORD); it needs input, not keys during the prompt.
    public var offersPasswordStep: Bool { policy == .biometricsOrPassword && !noInput }

    /// A prompt's progress, marked when a password typed at it is taken.
    func offering(_ progress: ProgressEvent) -> ProgressEvent {
        var marked = progress
        marked.acceptsPassword = acceptsTypedPassword
        return marked
    }
}

extension Core {
    /// canEvaluatePolicy: the answer an evaluation would start with, without touching the reader.
    /// `reader`: the reader the request names (nil: the default one).
    public func canEvaluate(
        user: String, policy: EvaluationPolicy, rhost: String?, reader: String? = nil, caller: Caller
    ) async -> Reply {
        if let refusal = await authorize(caller, user, .selfOrRoot) { return refusal }
        return await preflight(user: user, rhost: rhost, reader: reader) ?? .success()
    }

    /// evaluatePolicy. Progress goes to `client`; `input` carries what the person does at the prompt;
    /// cancelling the calling task means the client went away (the reply is then only published).
    public func evaluate(_ r: EvaluateRequest, caller: Caller, client: any PromptClient, input: PromptInput) async
        -> Reply
    {
        if let refusal = await authorize(caller, r.user, .selfOrRoot) { return refusal }
        let ctx = EventContext(user: r.user, origin: r.origin, policy: r.policy, byUID: caller.uid)
        func finish(_ refusal: Refusal, method: String?) -> Reply {
            publishOutcome(ctx, method: method, outcome: refusal.outcome, reason: refusal.reason)
            return r.offersPasswordStep ? offeringPassword(refusal, user: r.user) : refusal
        }
        if let refusal = await preflight(user: r.user, rhost: r.origin.rhost, reader: r.reader) {
            log.debug(
                "evaluate refused: \(refusal.outcome.name) \(refusal.reason?.rawValue ?? "")",
                metadata: ["user": "\(r.user)"])
            return finish(refusal, method: nil)
        }
        let scan = await runPrompt(input, acceptsPassword: r.acceptsTypedPassword) { prompt in
            await scanPhase(r, ctx, client: client, prompt: prompt)
        }
        switch scan {
        case .reply(var reply, let method):
            guard reply.isSuccess else { return finish(reply, method: method) }
            if !reply.byPassword { reply.authtok = await releaseKeyring(r, caller, client: client) }
            return reply
        case .clientGone:
            // The outcome record says it, within its limit: a client can leave as often as it likes.
            log.debug("client left mid-prompt: cancelled", metadata: ["user": "\(r.user)"])
            publishOutcome(ctx, method: nil, outcome: .appCancel, reason: .clientGone)
            return Refusal(.appCancel, reason: .clientGone, text: .cancelled)
        case .typedPassword(let password):
            // biometrics-or-password: the daemon checks the typed password itself, so back-off applies.
            return await answerTypedPassword(ctx, password)
        }
    }

    enum ScanOutcome {
        case reply(Reply, method: String?)
        case typedPassword(String)
        case clientGone
    }

    /// The part of a prompt that holds the reader: queue, templates, tries. The reader is free
    /// again when it returns (before any password is checked).
    private func scanPhase(
        _ r: EvaluateRequest, _ ctx: EventContext, client: any PromptClient,
        prompt: ActivePrompt
    ) async -> ScanOutcome {
        let maxTries = min(config.maxTries, r.maxTries.map { max(1, $0) } ?? .max)
        // Seconds each try waits for a finger; nil: until the prompt is ended (`untimed`).
        let timeout: Int? =
            r.untimed ? nil : Int(min(config.timeout, r.timeoutSeconds.map { Int64(max(1, $0)) } ?? .max))
        let ticket = queue.enqueue()
        defer { queue.leave(ticket) }
        if !ticket.granted.isSet {
            // A client that reads no keys (a graphical stack, a polkit agent) cannot let the person
            // leave a wait for the reader, and its password module runs only after this one: it is
            // refused at once, as fprintd refuses a second claim, and the password follows
            // (docs/spec.md §3). At a terminal the wait says so, and Enter leaves it.
            if r.noTerminal {
                return .reply(Refusal(.biometryNotAvailable, reason: .busy, text: .readerBusy), method: nil)
            }
            client.show(r.offering(ProgressEvent(.queued, .queued(ahead: queue.ahead(ticket)))))
            if case .second(let interrupt) = await firstOf(ticket.granted, prompt.interrupt) {
                return ended(by: interrupt)
            }
        }
        let reader: any FingerprintReader, info: ReaderInfo, list: [EnrolledPrint], templates: [[UInt8]]
        // What a match is judged against again, unless nothing moved since the judgement the
        // prompt was prepared on (the common case: a check without a single await).
        var seen: Seen
        switch await prepare(r) {
        case .refused(let refusal): return .reply(refusal, method: nil)
        case .ready(let served, let l, let t, let s):
            (reader, info, list, templates, seen) = (served.reader, served.info, l, t, s)
        }
        for damaged in list where damaged.needsEnrolling {
            client.show(ProgressEvent(.retry, .templateDamaged(damaged.finger), style: .error))
        }
        if let interrupt = prompt.interrupt.value { return ended(by: interrupt) }
        client.show(r.offering(ProgressEvent(.prompt, .placeFinger(swipe: info.isSwipe))))

        var failures = 0
        // Failed matches the prompt's own ending does not record (a match after them, a cancel, a
        // timeout, a typed password, a disk that did not take their count): one fingerprint
        // authenticationFailed outcome, before that ending's, so each judged finger leaves an
        // audit record (docs/logging.md).
        func recordFailures() {
            if failures > 0 { publishOutcome(ctx, method: "fingerprint", outcome: .authenticationFailed, reason: nil) }
        }
        while true {
            let op = ReaderOperation<ScanResult>()
            reader.verify(
                templates: templates, timeoutSeconds: timeout, cancellation: op.cancellation,
                retry: { hint in CoreLoop.shared.post { client.show(ProgressEvent(.retry, .retry(hint))) } },
                completion: op.completion())
            switch await outcome(of: op, or: prompt) {
            case .second(let interrupt):
                recordFailures()
                return ended(by: interrupt)
            case .first(.success(.match(let i))):
                // A lock, a disable or a deletion made while the prompt listened counts, and so
                // does the time that passed (a rule of time may have begun): the match is judged
                // again against the state, the prints and the clock as they are now.
                let moved = seen != seenNow(r.user)
                if let refusal = await stillAllowed(r, template: templates[i], printsMayHaveMoved: moved) {
                    log.notice("a match no longer allowed: \(refusal.outcome.name)", metadata: ["user": "\(r.user)"])
                    recordFailures()
                    return .reply(refusal, method: "fingerprint")
                }
                recordFailures()
                do {
                    try await states.update(r.user, .afterReply) {
                        policyEngine.recordFingerprintSuccess($0.stateOrFailClosed(policyEngine), at: clock.now())
                    }
                } catch {
                    // The match happened; a lost reset only leaves the counters higher (fail closed).
                    log.error("cannot record fingerprint success: \(error)")
                }
                log.debug("fingerprint matched", metadata: ["user": "\(r.user)"])  // the audit record says it
                publishOutcome(ctx, method: "fingerprint", outcome: .success, reason: nil)
                return .reply(.success(.recognised), method: "fingerprint")
            case .first(.success(.noMatch)):
                failures += 1
                let lockout: Refusal?
                do { lockout = try await recordFailedMatch(ctx) } catch {
                    // Not on disk, so not reported as a mere failure: refuse outright. The finger
                    // was judged all the same, so its record is written first.
                    log.error("cannot record failed match: \(error)")
                    recordFailures()
                    return .reply(Self.storageFailure, method: "fingerprint")
                }
                seen.state += 1  // this failure's own change; any other still shows
                log.info("no match (\(failures)/\(maxTries))", metadata: ["user": "\(r.user)"])
                if let lockout { return .reply(lockout, method: "fingerprint") }
                if failures >= maxTries {
                    return .reply(
                        Refusal(.authenticationFailed, reason: .maxTries, text: .notRecognised(tries: failures)),
                        method: "fingerprint")
                }
                client.show(ProgressEvent(.noMatch, .noMatch(triesLeft: maxTries - failures), style: .error))
            case .first(.failure(let failure)):
                log.notice("reader: \(failure)")
                recordFailures()
                return .reply(refusal(for: failure, timeout: timeout ?? 0), method: "fingerprint")
            }
        }
    }

    private enum Prepared {
        case ready(ServedReader, [EnrolledPrint], [[UInt8]], Seen)
        case refused(Reply)
    }

    /// How far the user's state and the print lists had moved: a state read for the first time
    /// has had no change (0), and every change after it counts one.
    typealias Seen = (state: Int, prints: Int)
    private func seenNow(_ user: String) -> Seen { (states.version(user) ?? 0, prints.changes) }

    /// What a prompt that holds the reader scans against: the state judged again (it may have
    /// changed while queued: another prompt, an unplug), the reader, the user's prints and the
    /// usable ones' templates. The files are read for each prompt; when they differ from the
    /// prints judged (changed outside the daemon: by hand, by another tool), that judgement is
    /// stale, so the prints are judged again from disk, the policy included (docs/SECURITY.md: a
    /// changed set of prints asks the password once). Files that change again in between refuse.
    private func prepare(_ r: EvaluateRequest) async -> Prepared {
        for attempt in 1...2 {
            // Taken before the judgement: a lock, disable or deletion during any await below is
            // seen as a move when the finger matches.
            let seen = seenNow(r.user)
            if let refusal = await preflight(user: r.user, rhost: r.origin.rhost, reader: r.reader) {
                return .refused(refusal)
            }
            guard let served = await served(r.reader) else {  // the reader it names went while it waited
                return .refused(refusal(for: r.reader == nil ? .noReader : .removed, timeout: 0))
            }
            let list = await prints.list(r.user, device: served.info.deviceKey).prints
            let wanted = list.filter { r.fingers?.contains($0.finger) ?? true }
            let usable = wanted.filter(\.matchable)
            guard !usable.isEmpty || !list.contains(where: \.matchable) else {
                // Only damaged prints for the fingers asked for: say which, as when every print is.
                guard !wanted.isEmpty else {
                    return .refused(Refusal(.biometryNotEnrolled, reason: .noPrints, text: .notEnrolled))
                }
                if wanted.contains(where: \.closed) {
                    return .refused(Refusal(.biometryNotAvailable, reason: .printsSealed, text: sealedText))
                }
                var refusal = Refusal(
                    .templateDamaged, reason: .templateDamaged, text: .templatesDamaged(wanted.map(\.finger)))
                refusal.fingers = wanted.map(\.finger)
                return .refused(refusal)
            }
            let templates: [[UInt8]]
            do {
                templates = try await prints.templates(
                    r.user, device: served.info.deviceKey, fingers: usable.map(\.finger))
            } catch {
                log.error("cannot read templates: \(error)", metadata: ["user": "\(r.user)"])
                return .refused(Self.storageFailure)
            }
            if templates.map(PrintFiles.digest) == usable.map(\.digest) {
                return .ready(served, list, templates, seen)
            }
            prints.invalidate(r.user)
            log.notice(
                "the prints changed outside the daemon: judged again",
                metadata: ["user": "\(r.user)", "attempt": "\(attempt)"])
        }
        log.error("the prints keep changing outside the daemon: refused", metadata: ["user": "\(r.user)"])
        return .refused(Self.storageFailure)
    }

    /// nil when a match against `template` still stands: the user's state allows a fingerprint
    /// now, and the print is still enrolled, unchanged (both read from the caches: microseconds).
    /// The template's own check first, then the state's: preflight takes the state again after
    /// its last wait, so a lock or a disable decided while either read waited is seen.
    private func stillAllowed(_ r: EvaluateRequest, template: [UInt8], printsMayHaveMoved: Bool) async -> Refusal? {
        if printsMayHaveMoved {  // else the template matched is one judged usable
            let digest = PrintFiles.digest(template)
            let device = await readerInfo(r.reader)?.deviceKey
            let now = await prints.list(r.user, device: device).prints
            guard now.contains(where: { $0.digest == digest && $0.matchable }) else {
                return Refusal(.biometryNotEnrolled, reason: .noPrints, text: .notEnrolled)
            }
        }
        return await preflight(user: r.user, rhost: r.origin.rhost, reader: r.reader)
    }

    private func ended(by interrupt: Interrupt) -> ScanOutcome {
        switch interrupt {
        case .cancelled: return .reply(Refusal(.appCancel, reason: .cancelled, text: .cancelled), method: nil)
        case .typedPassword(let p): return .typedPassword(p)
        case .clientGone: return .clientGone
        case .systemCancel(let refusal): return .reply(refusal, method: nil)
        }
    }

    /// A failed match: counts toward lockout, on disk before the reply. Returns the lockout
    /// refusal when this failure caused it.
    func recordFailedMatch(_ ctx: EventContext) async throws(StorageError) -> Refusal? {
        var lockedAt: Int?  // the count, when this failure locked biometrics out
        // Said once the change is made in memory, whether or not the disk then takes it in time:
        // the lockout holds from then on, and every lockout is recorded (docs/logging.md).
        func announce() {
            guard let count = lockedAt else { return }
            var e = event("lockout", ctx, method: "fingerprint", outcome: .biometryLockout, reason: .lockout)
            e.failedMatches = count
            events.publish(e)
        }
        do {
            try await states.update(ctx.user, .beforeReply) { stored in
                let (next, became) = policyEngine.recordFailedMatch(
                    stored.stateOrFailClosed(policyEngine), at: clock.now())
                if became { lockedAt = next.consecutiveFailedMatches }
                return next
            }
        } catch {
            announce()
            throw error
        }
        announce()
        return lockedAt == nil ? nil : refusal(for: .lockout)
    }
}
