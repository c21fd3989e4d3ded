// VerifyStart/Stop and EnrollStart/Stop: one core evaluation or enrollment each, its progress turned
// into fprintd's VerifyStatus / EnrollStatus strings.
import TouchGateCore
import TouchGateReader
import TouchGateWire

/// A verify or an enrollment started over D-Bus; fprintd keeps it until its Stop call.
@CoreActor final class DeviceAction {
    let verify: Bool
    let input = PromptInput()
    let ended = OneShot<Void>()
    /// A VerifyStop or EnrollStop is under way: a second one is refused, as fprintd refuses it.
    var stopping = false
    init(verify: Bool) { self.verify = verify }

    /// fprintd's refusal of another action while this one runs (its own words).
    var busy: BusError { .alreadyInUse(verify ? "Verification already in progress" : "Enrollment already in progress") }

    /// Ends it (VerifyStop, Release, the client gone) and waits until its result is in.
    func cancelAndWait() async {
        if !ended.isSet { input.deliver(.cancel) }
        await ended.wait()
    }
}

/// Progress from the core, as fprintd's signals.
@CoreActor final class DeviceSignals: PromptClient {
    unowned let device: FprintDevice
    let verify: Bool
    /// Set once the prompt has begun: the reader listens, or the request waits in its queue.
    let begun = OneShot<Void>()
    /// The operation's signals until its start is answered: fprintd answers VerifyStart and
    /// EnrollStart (and names the finger) before any of them, even one that ends it at once.
    private var held: [@CoreActor () -> Void]? = []
    init(device: FprintDevice, verify: Bool) { self.device = device; self.verify = verify }

    /// Runs `signal` now if the start was answered, else right after it is.
    func afterAnswer(_ signal: @escaping @CoreActor () -> Void) {
        if held == nil { signal() } else { held?.append(signal) }
    }

    /// The start is answered (and VerifyFingerSelected sent): what was held goes out, in order.
    func answered() {
        let pending = held ?? []
        held = nil
        for signal in pending { signal() }
    }

    func show(_ progress: ProgressEvent) {
        if progress.kind == .prompt || progress.kind == .queued, !begun.isSet { begun.set(()) }
        switch (progress.kind, progress.text) {
        case (.prompt, _):
            afterAnswer { [device] in device.setFingerNeeded(true) }
        case (.retry, .retry(let hint)?):
            let status = verify ? FprintStatus.verifyRetry(hint) : FprintStatus.enrollRetry(hint)
            afterAnswer { [device, verify] in
                device.emit(verify ? "VerifyStatus" : "EnrollStatus", [V.string(status), V.bool(false)])
            }
        case (.enrollStage, _):
            // fprintd reports every stage but the last as passed; the last is the completion. On
            // a reader that can identify, the first is fprintd's duplicate check, a libfprint
            // action of its own: fprintd stops listening for it, then listens for the enrollment.
            if let k = progress.stage, let n = progress.stages, k < n {
                let check = k == 1 && device.info.supportsIdentify
                afterAnswer { [device] in
                    if check { device.setFingerNeeded(false) }
                    device.emit("EnrollStatus", [V.string("enroll-stage-passed"), V.bool(false)])
                    if check { device.setFingerNeeded(true) }
                }
            }
        default:
            break  // queued, damaged-print notes: fprintd's clients have no place for them
        }
    }
}

/// fprintd's result strings (its interface documentation lists them).
enum FprintStatus {
    static func verifyRetry(_ hint: RetryHint) -> String {
        switch hint {
        case .tooShort: return "verify-swipe-too-short"
        case .centerFinger: return "verify-finger-not-centered"
        case .removeFinger: return "verify-remove-and-retry"
        case .tooFast: return "verify-too-fast"
        case .general: return "verify-retry-scan"
        }
    }

    static func enrollRetry(_ hint: RetryHint) -> String {
        switch hint {
        case .tooShort: return "enroll-swipe-too-short"
        case .centerFinger: return "enroll-finger-not-centered"
        case .removeFinger: return "enroll-remove-and-retry"
        case .tooFast: return "enroll-too-fast"
        case .general: return "enroll-retry-scan"
        }
    }

    /// A protocol error, a removed and a too hot reader: disconnections, as later fprintd has them
    /// (Debian 12's 1.94.2 says unknown error for the last two: docs/readers.md).
    static let disconnections: Set<Reason> = [.removed, .tooHot, .readerProtocol]

    /// The final VerifyStatus for the core's answer. A match the core recorded is told as one, as
    /// fprintd reports the match and ignores a cancellation after it (the enrollment's stored print
    /// wins the same way); else a verify the client stopped (VerifyStop, Release, the client gone)
    /// ends with `verify-no-match` before the stop is answered, as in fprintd.
    static func verifyResult(_ r: Reply, stopped: Bool) -> String {
        if r.isSuccess { return "verify-match" }
        if stopped { return "verify-no-match" }
        switch r.outcome {
        // A failed match (also the one that locked biometrics out: the next VerifyStart says so).
        case .authenticationFailed, .biometryLockout: return "verify-no-match"
        case .biometryNotAvailable where r.reason.map(disconnections.contains) ?? false:
            return "verify-disconnected"
        case .appCancel: return "verify-no-match"
        // Suspend or shutdown ended it: not a failed match (fprintd says no-match), so clients such
        // as pam_fprintd go to the password at once instead of retrying on a closed reader.
        default: return "verify-unknown-error"
        }
    }

    /// The final EnrollStatus. An enrollment the client stopped ends with `enroll-failed`, as in
    /// fprintd, unless the print was stored meanwhile.
    static func enrollResult(_ r: Reply) -> String {
        switch r.outcome {
        case .success: return "enroll-completed"
        case .biometryNotAvailable where r.reason.map(disconnections.contains) ?? false:
            return "enroll-disconnected"
        case .duplicate: return "enroll-duplicate"
        case .internalError where r.reason == .storageFull: return "enroll-data-full"
        // Stopped by the client: fprintd's word for a cancelled enrollment; a print not stored too.
        case .appCancel, .internalError, .notPermitted: return "enroll-failed"
        // The rest, with an enrollment the daemon ended (suspend, shutdown: systemCancel) or
        // refused while asleep (no reader): fprintd says unknown error for one suspend ends or
        // prevents.
        default: return "enroll-unknown-error"
        }
    }
}

/// How a D-Bus verify ended in the core.
enum VerifyEnd: Equatable {
    /// Refused before any prompt began: the VerifyStart is refused with it.
    case refused(Reply)
    /// The final VerifyStatus, and whether the client's stop ended the verify (it then stops
    /// listening before the status is told).
    case finished(status: String, stopped: Bool)
}

extension FprintStatus {
    /// One D-Bus verify in the core, to its end. `begun` is set once its prompt began (listening,
    /// or queued); `input` carries the client's stop.
    @CoreActor static func verify(
        _ core: Core, _ request: EvaluateRequest, caller: Caller, client: any PromptClient, begun: OneShot<Void>,
        input: PromptInput
    ) async -> VerifyEnd {
        let reply = await core.evaluate(request, caller: caller, client: client, input: input)
        guard begun.isSet else { return .refused(reply) }
        // A stop that came while the core still judged a match has not ended the verify: the
        // success is recorded (counters reset, outcome published), and it is what is told.
        let stopped = input.isDelivered && !reply.isSuccess
        return .finished(status: verifyResult(reply, stopped: stopped), stopped: stopped)
    }
}

extension FprintAction {
    /// The right of the core's table (docs/spec.md §5) this action stands for when polkit is absent.
    var right: Right {
        switch self {
        case .verify, .setUsername: return .selfOrRoot
        case .enroll: return .selfWithPasswordOrRoot
        }
    }
}

extension FprintDevice {
    /// As fprintd: the claim, then polkit, then whether another action runs.
    func verifyStart(_ call: Invocation) async -> Result<[Variant], BusError> {
        if let e = checkClaimed(call) { return .failure(e) }
        guard let claim else { return .failure(.claimDevice()) }
        return await authorized(call, [.verify], as: claim) { _, caller in
            if let e = checkClaimed(call) { return .failure(e) }  // after the awaits
            if let busy { return .failure(busy) }
            return await startVerifying(call, claim, caller)
        }
    }

    private func startVerifying(_ call: Invocation, _ claim: Claim, _ caller: Caller) async
        -> Result<[Variant], BusError>
    {
        let name = call.string(0) ?? ""
        let finger = Finger(rawValue: name)  // "any", "" or an unknown name: any finger, as fprintd
        let enrolled = await core.list(user: claim.username, caller: caller, device: info.deviceKey)
        guard enrolled.isSuccess else { return .failure(Self.error(for: enrolled)) }
        // fprintd skips the prints it cannot load (a damaged or sealed one) when it chooses the
        // finger, which it does only when none is named: here those the core would not match
        // against (its own rule); when none can be used, the core refuses below and says why.
        var usable: [Finger] = []
        if finger == nil {
            usable = await core.list(user: claim.username, caller: caller, device: info.deviceKey, listing: .matchable)
                .fingers
        }
        // As fprintd: a finger named is looked for first, then whether there is any print.
        if let finger, !enrolled.fingers.contains(finger) {
            return .failure(.noEnrolledPrints("No such print \(finger.fpFinger)"))
        }
        if enrolled.fingers.isEmpty { return .failure(.noEnrolledPrints("No fingerprints enrolled")) }
        if let busy = self.busy { return .failure(busy) }
        if self.claim?.sender != call.sender {
            return .failure(.alreadyInUse("Another operation is already in progress"))
        }

        let action = DeviceAction(verify: true)
        self.action = action
        // As fprintd: the finger asked for; else a reader that cannot identify verifies the first
        // print (the core offers it the same one), and only one that can identify checks "any".
        // Both among the prints that can be used (`usable`, above).
        let candidates = usable.isEmpty ? enrolled.fingers : usable
        let first = candidates[0].rawValue
        let selected = finger?.rawValue ?? (candidates.count == 1 || !info.supportsIdentify ? first : "any")
        // As fprintd's: one try that waits for a finger until it is stopped, with no timeout
        // (docs/spec.md §6), so no prompt deadline restarts the reader or is recorded as an outcome.
        let request = EvaluateRequest(
            user: claim.username, policy: .biometrics, origin: Origin(service: FprintNames.bus),
            maxTries: 1, untimed: true, noInput: true, fingers: finger.map { [$0] }, reader: info.selector)
        let signals = DeviceSignals(device: self, verify: true)
        // The core's own evaluation from the start, so a locked-out or password-required user is
        // refused by the same rules, with the reason, and audited as every refused evaluation is.
        let refused = OneShot<Reply>()
        CoreLoop.shared.task { [self] in
            let end = await FprintStatus.verify(
                core, request, caller: caller, client: signals, begun: signals.begun, input: action.input)
            guard case .finished(let status, let stopped) = end else {
                if case .refused(let reply) = end { refused.set(reply) }
                action.ended.set(())
                return
            }
            // As fprintd orders them: a result is told while the reader still listens, then
            // it stops; a stopped verify stops listening first.
            signals.afterAnswer { [self] in
                if stopped { setFingerNeeded(false) }
                emit("VerifyStatus", [V.string(status), V.bool(true)])
                setFingerNeeded(false)
                action.ended.set(())
            }
        }
        // Answered once the prompt has begun (listening, or queued behind another client) or was refused.
        if case .second(let refusal) = await firstOf(signals.begun, refused) {
            // Asleep: as fprintd, whose suspended device fails the verify it accepted, the start is
            // answered, then the finger and the end; the action stays until VerifyStop.
            if refusal.reason == .noReader || refusal.reason == .suspend, core.asleep {
                CoreLoop.shared.task { [self] in
                    emit("VerifyFingerSelected", [V.string(selected)])
                    emit("VerifyStatus", [V.string(FprintStatus.verifyResult(refusal, stopped: false)), V.bool(true)])
                }
                return .success([])
            }
            if self.action === action { self.action = nil }
            return .failure(readerGone(refusal) ? Self.removedError : Self.error(for: refusal))
        }
        // After the answer, as fprintd orders them: the finger it listens for, then the rest.
        CoreLoop.shared.task { [self] in
            emit("VerifyFingerSelected", [V.string(selected)])
            signals.answered()
        }
        return .success([])
    }

    /// As fprintd: the claim, then polkit, then the finger's name and whether another action runs.
    func enrollStart(_ call: Invocation) async -> Result<[Variant], BusError> {
        if let e = checkClaimed(call) { return .failure(e) }
        guard let claim else { return .failure(.claimDevice()) }
        return await authorized(call, [.enroll], as: claim) { _, caller in
            if let e = checkClaimed(call) { return .failure(e) }  // after the awaits
            guard let finger = call.string(0).flatMap(Finger.init(rawValue:)) else {
                return .failure(.invalidFingername())
            }
            if let busy { return .failure(busy) }
            return await startEnrolling(call, claim, caller, finger)
        }
    }

    private func startEnrolling(_ call: Invocation, _ claim: Claim, _ caller: Caller, _ finger: Finger) async
        -> Result<[Variant], BusError>
    {
        if let busy = self.busy { return .failure(busy) }
        if self.claim?.sender != call.sender {
            return .failure(.alreadyInUse("Another operation is already in progress"))
        }

        let action = DeviceAction(verify: false)
        self.action = action
        let signals = DeviceSignals(device: self, verify: false)
        // Whether its reader went before it began: judged once, then refused as a call on a
        // reader gone (below) instead of told in an EnrollStatus.
        let finished = OneShot<Bool>()
        CoreLoop.shared.task { [self] in
            let reply = await core.enroll(
                user: claim.username, finger: finger, password: nil,
                origin: Origin(service: FprintNames.bus), caller: caller,
                client: signals, input: action.input, reader: info.selector)
            let gone = !signals.begun.isSet && readerGone(reply)
            finished.set(gone)
            if gone {
                action.ended.set(())
                return
            }
            signals.afterAnswer { [self] in
                setFingerNeeded(false)
                emit("EnrollStatus", [V.string(FprintStatus.enrollResult(reply)), V.bool(true)])
                action.ended.set(())
            }
        }
        // Answered once the enrollment listens (or waits behind another client) or has ended, as
        // fprintd answers EnrollStart only after the print it replaces is deleted.
        if case .second(true) = await firstOf(signals.begun, finished) {
            if self.action === action { self.action = nil }
            return .failure(Self.removedError)
        }
        CoreLoop.shared.task { signals.answered() }  // after the answer
        return .success([])
    }

    /// The core found no reader for this object while the machine is awake: its reader was unplugged
    /// between the call's arrival and the object's removal (or marking, when claimed), and the call
    /// is answered as one on a reader gone is (`handle`), not as an internal error.
    func readerGone(_ reply: Reply) -> Bool { reply.reason == .noReader && !core.asleep }

    static let removedError = BusError.noSuchDevice("The fingerprint reader was removed")

    /// VerifyStop / EnrollStop: cancels what still runs and waits until its result is in.
    func stop(_ call: Invocation, verify: Bool) async -> Result<[Variant], BusError> {
        if let e = checkClaimed(call) { return .failure(e) }
        // As fprintd's can_stop_action: a deletion is an action running, not the one to stop.
        if deleting { return .failure(.alreadyInUse("Another operation is already in progress")) }
        guard let running = action else {
            return .failure(.noActionInProgress(verify ? "No verification in progress" : "No enrollment in progress"))
        }
        guard running.verify == verify, !running.stopping else {
            return .failure(.alreadyInUse("Another operation is already in progress"))
        }
        running.stopping = true
        await running.cancelAndWait()
        if action === running { action = nil }
        return .success([])
    }
}
