// Passwords: the daemon's own check (back-off first, then PAM on its pool) and what a success clears.
import Synchronization
import TouchGatePolicy
import TouchGateWire

enum PasswordOutcome: Equatable {
    case correct
    case refused(Refusal)
}

extension Core {
    /// Checks a password the daemon itself received: back-off first (a locked attempt is not even
    /// checked, so there is no oracle), then PAM on the password pool, bounded by a deadline; every
    /// answer is recorded before it is returned, and published here (a success too).
    /// A right password also renews the user's keyring password, after the reply
    /// (`renewsKeyring: false` for the keyring's own set-up, which seals it itself).
    /// One check per user at a time: checks that overlapped would each pass the back-off before
    /// any of them recorded its answer, so a burst of wrong passwords would all be checked. A
    /// waiter waits for the checks ahead of it, each bounded by the check's deadline.
    func verifyPassword(_ ctx: EventContext, _ password: String, renewsKeyring: Bool = true) async -> PasswordOutcome {
        passwordsBeingVerified += 1
        defer {
            passwordsBeingVerified -= 1
            if passwordsBeingVerified == 0 { passwordsVerified?.set(()) }
        }
        return await passwordTurns.run(ctx.user) {
            await verifyPasswordInTurn(ctx, password, renewsKeyring: renewsKeyring)
        }
    }

    private func verifyPasswordInTurn(_ ctx: EventContext, _ password: String, renewsKeyring: Bool) async
        -> PasswordOutcome
    {
        // A refusal before or without the password's own answer (the back-off, no password set,
        // the state or the password service failed): published as every refusal is, with its reason.
        func refused(_ refusal: Refusal) -> PasswordOutcome {
            publishOutcome(ctx, method: "password", outcome: refusal.outcome, reason: refusal.reason)
            return .refused(refusal)
        }
        // A state that could not be read now may hold a back-off: no check without it. (One that
        // is unreadable on disk is judged below: its first wrong password backs off.)
        let stored: StoredState
        do { stored = try await states.read(ctx.user) } catch {
            log.error("cannot read the state of \(ctx.user) for a password check: \(error)")
            return refused(Self.storageFailure)
        }
        if case .state(let s) = stored,
            case .refused(.backoff(let left)) = policyEngine.canAttemptPassword(s, at: clock.now())
        {
            // The clock went back since the back-off began: its end is pulled in to the step told
            // (`left`), so the person is not refused for as long as the clock jumped.
            if policyEngine.backoffCappedToItsStep(s, at: clock.now()) != s {
                _ = try? await states.update(ctx.user, .afterReply) {
                    policyEngine.backoffCappedToItsStep($0.stateOrFailClosed(policyEngine), at: clock.now())
                }
            }
            return refused(
                Refusal(.passwordBackoff, reason: .backoff, text: .backoff(seconds: Int(left)), seconds: Int(left)))
        }
        switch await checkWithDeadline(user: ctx.user, password: password) {
        case .correct:
            do { try await recordPasswordSuccess(ctx) } catch {
                log.error("cannot record password success: \(error)")
                return refused(Self.storageFailure)
            }
            if renewsKeyring { renewKeyringAfterReply(ctx.user, password) }
            publishOutcome(ctx, method: "password", outcome: .success, reason: nil)
            return .correct
        case .wrong:
            var backoff: Int64?
            var count: Int?  // nil: the count was not reached (the state could not be read now)
            var unrecorded: StorageError?
            do {
                try await states.update(ctx.user, .beforeReply) { stored in
                    // A state that cannot be read counts on from the threshold: this one backs off.
                    let (next, b) = policyEngine.recordWrongPassword(
                        stored.stateOrFailClosed(policyEngine), at: clock.now())
                    backoff = b
                    count = next.consecutiveWrongPasswords
                    return next
                }
            } catch {
                unrecorded = error
            }
            // The password was judged, whether or not the disk took the count: its record first.
            var e = event("outcome", ctx, method: "password", outcome: .authenticationFailed, reason: .wrongPassword)
            e.wrongPasswords = count
            events.publish(e)
            if let unrecorded {
                log.error("cannot record wrong password: \(unrecorded)")
                return refused(Self.storageFailure)
            }
            var wrong = Refusal(.authenticationFailed, reason: .wrongPassword, text: .wrongPassword)
            if let backoff {
                wrong.text = .wrongPasswordBackoff(seconds: Int(backoff))
                wrong.seconds = Int(backoff)
            }
            wrong.byPassword = true
            return .refused(wrong)
        case .notSet:
            return refused(Refusal(.passwordNotSet, reason: .passwordNotSet, text: .passwordNotSet))
        case .unavailable(let why):
            log.error("password check unavailable: \(why)")
            return refused(Refusal(.internalError, reason: .passwordService, text: .internalError))
        }
    }

    /// PAM on the password pool; a stack that hangs is given up after the deadline, and a full
    /// queue answers at once. A check given up on before a thread took it is withdrawn (PAM never
    /// sees it); one already in PAM finishes whenever it does, its answer unused, and until it has
    /// left the pool that user's next check is refused rather than run beside it (one at a time).
    private func checkWithDeadline(user: String, password: String) async -> PasswordCheck {
        if passwordChecksOverdue.contains(user) {
            return .unavailable("the check of \(user)'s password given up on earlier has not ended")
        }
        let answer = OneShot<PasswordCheck>()
        let timer = LoopTimer(after: passwordDeadline) {
            answer.set(.unavailable("no answer within \(self.passwordDeadline) ms"))
        }
        defer { timer.cancel() }
        let passwords = self.passwords, pool = passwordPool
        let job = PasswordJob()
        CoreLoop.shared.task {
            let check =
                (try? await pool.run {
                    job.take() ? passwords.check(user: user, password: password) : .unavailable("withdrawn")
                }) ?? .unavailable("password checks queue full")
            job.end()
            self.passwordChecksOverdue.remove(user)
            answer.set(check)
        }
        let check = await answer.wait()
        if job.giveUp() { passwordChecksOverdue.insert(user) }
        return check
    }

    /// A password success clears lockout, every passwordRequired reason and the back-off, and
    /// records the boot and the current set of prints. Losing this write only keeps the old,
    /// stricter state, so the reply does not wait for the disk.
    func recordPasswordSuccess(_ ctx: EventContext, enable: Bool = false) async throws(StorageError) {
        let info = await readerInfo(nil)
        let list = await prints.list(ctx.user, device: info?.deviceKey)
        let env = await environment(ctx.user, prints: list.prints, readerAvailable: info != nil)
        var wasLocked = false
        try await states.update(ctx.user, .afterReply) { stored in
            var s: UserState
            switch stored {
            case .state(let current):
                s = current
                wasLocked = policyEngine.isLockedOut(s) || s.adminLocked
            case .corrupt:
                // Start afresh, opted in when prints exist (enrolling is what opts in). Its
                // fingerprint was refused as locked (stateUnreadable): this lifts that.
                s = UserState()
                s.enabled = env.enrollmentSnapshot != nil
                wasLocked = true
            }
            if enable { s = policyEngine.enable(s) }
            return policyEngine.recordPasswordSuccess(s, in: env)
        }
        if wasLocked {
            events.publish(event("unlock", ctx, method: "password", outcome: .success, reason: .passwordSuccess))
        }
    }

    /// After the user's own enrollment or deletion, made with the password checked for it: the
    /// set of prints it leaves becomes the known one (Policy.recordOwnPrintChange), and nothing
    /// else is cleared a second time.
    func recordOwnPrintChange(_ ctx: EventContext) async throws(StorageError) {
        let info = await readerInfo(nil)
        let list = await prints.list(ctx.user, device: info?.deviceKey)
        let env = await environment(ctx.user, prints: list.prints, readerAvailable: info != nil)
        try await states.update(ctx.user, .afterReply) {
            policyEngine.recordOwnPrintChange($0.stateOrFailClosed(policyEngine), in: env)
        }
    }

    /// deviceOwnerAuthentication: when the fingerprint is locked out, a password is required, or
    /// the tries are used up, the password comes next — unless password entry itself is in
    /// back-off, which the person is told at once instead of after typing.
    func offeringPassword(_ refusal: Refusal, user: String) -> Refusal {
        let passwordNext =
            refusal.outcome == .biometryLockout || refusal.outcome == .passwordRequired
            || (refusal.outcome == .authenticationFailed && refusal.reason == .maxTries)
        guard passwordNext else { return refusal }
        var offer = refusal
        if case .state(let s)? = states.cached(user),
            case .refused(.backoff(let left)) = policyEngine.canAttemptPassword(s, at: clock.now())
        {
            offer.text = .lines([refusal.text, .backoff(seconds: Int(left))].compactMap { $0 })
        } else {
            offer.askPassword = true
        }
        return offer
    }

    // MARK: requests

    /// VERIFY_PASSWORD: deviceOwnerAuthentication's password step, for a screen locker running as
    /// the user (or root).
    public func verifyPasswordRequest(user: String, password: String, origin: Origin, caller: Caller) async -> Reply {
        if let refusal = await authorize(caller, user, .selfOrRoot) { return refusal }
        let ctx = EventContext(user: user, origin: origin, policy: .biometricsOrPassword, byUID: caller.uid)
        return await answerTypedPassword(ctx, password)
    }

    /// The answer to a password typed for biometrics-or-password (at the prompt or after a
    /// refusal): checked with back-off (verifyPassword publishes the outcome).
    func answerTypedPassword(_ ctx: EventContext, _ password: String) async -> Reply {
        switch await verifyPassword(ctx, password) {
        case .correct: return .passwordVerified
        case .refused(let refusal): return refusal
        }
    }

    /// A password success reported by the PAM stack: only root callers (sudo, login, su run the
    /// stack as root) may vouch for a password.
    /// With `password` (a report line with authtok), a keyring password the user set up is renewed.
    public func passwordSuccessReport(user: String, password: String? = nil, origin: Origin, caller: Caller) async
        -> Reply
    {
        if let refusal = await authorize(caller, user, .rootOnly) { return refusal }
        let ctx = EventContext(user: user, origin: origin, policy: nil, byUID: caller.uid)
        do { try await recordPasswordSuccess(ctx) } catch {
            log.error("cannot record password success: \(error)")
            return Self.storageFailure
        }
        if let password, !password.isEmpty { renewKeyringAfterReply(user, password) }
        publishOutcome(ctx, method: "password", outcome: .success, reason: .pamStack)
        return .success()
    }
}

/// A password check on the pool: taken by a thread, or withdrawn first; ended, or given up on.
private final class PasswordJob: Sendable {
    private let state = Mutex<(withdrawn: Bool, ended: Bool)>((false, false))

    /// On the pool's thread: true when the check is to run (it was not withdrawn before).
    func take() -> Bool { state.withLock { !$0.withdrawn } }

    func end() { state.withLock { $0.ended = true } }

    /// After the answer: a check not taken yet is withdrawn; true when it is still running.
    func giveUp() -> Bool {
        state.withLock { s in
            s.withdrawn = true
            return !s.ended
        }
    }
}
