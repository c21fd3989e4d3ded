// The management requests: list, devices, status, enable/disable, lock/reset, domain state, monitor.
import FoundationEssentials
import TouchGatePolicy
import TouchGateReader
import TouchGateWire

/// Which of a user's prints `Core.list` names.
public enum PrintListing: Sendable {
    /// Every enrolled print, damaged or sealed shut too (`touchgate list`).
    case all
    /// Without the damaged prints, which fprintd's ListEnrolledFingers leaves out (it lists the
    /// prints it can load), so a desktop offers to enroll them again; sealed ones stay listed.
    case withoutDamaged
    /// The prints a prompt can match against now (`EnrolledPrint.matchable`, the rule the core
    /// verifies by): those a D-Bus verify chooses its finger among.
    case matchable
}

extension Core {
    /// The user's fingers on the reader named (nil: the default one; on every reader when none
    /// is served), or on `device`, a reader the front-end knows even while it is closed (fprintd's
    /// device objects list their prints during a suspend, as fprintd does); `listing` says which.
    public func list(
        user: String, caller: Caller, reader: String? = nil, device known: DeviceKey? = nil,
        listing: PrintListing = .all
    ) async -> Reply {
        if let refusal = await authorize(caller, user, .selfOrRoot) { return refusal }
        var device = known
        if known == nil {
            let info = await readerInfo(reader)
            // A reader named that is not served is refused, never read as "every reader".
            if reader != nil && info == nil { return refusal(for: .noReader, timeout: 0) }
            device = info?.deviceKey
        }
        let found = await prints.list(user, device: device)
        if case .unsafe(let why) = found {
            // Prints that cannot be read are not "no prints": the caller is told, never misled.
            log.error("prints of \(user) cannot be listed: \(why)")
            return Refusal(.internalError, reason: .printsUnsafe, text: .printsUnsafe)
        }
        var reply = Reply.success()
        reply.fingers = found.prints.filter { print in
            switch listing {
            case .all: return true
            case .withoutDamaged: return !print.needsEnrolling
            case .matchable: return print.matchable
            }
        }.map(\.finger)
        return reply
    }

    /// Every reader served, the default first, as "NAME (DRIVER)": what a request may name it by.
    /// Two readers of one driver are told apart by DRIVER/DEVICE-ID, which is shown for them.
    public func devices() async -> Reply {
        let infos = await readerDescriptions()
        var reply = Reply.success()
        reply.devices = infos.map { info in
            let shared = infos.filter { $0.driver == info.driver }.count > 1
            return "\(info.name) (\(shared ? info.selector : info.driver))"
        }
        return reply
    }

    public func enable(user: String, password: String?, origin: Origin, caller: Caller) async -> Reply {
        if let refusal = await authorize(caller, user, .selfWithPasswordOrRoot, password: password, origin: origin) {
            return refusal
        }
        return await admin(user, "enable", origin, caller) { [policyEngine] in policyEngine.enable($0) }
    }

    public func disable(user: String, origin: Origin, caller: Caller) async -> Reply {
        if let refusal = await authorize(caller, user, .selfOrRoot) { return refusal }
        return await admin(user, "disable", origin, caller) { [policyEngine] in policyEngine.disable($0) }
    }

    public func lock(user: String, origin: Origin, caller: Caller) async -> Reply {
        if let refusal = await authorize(caller, user, .rootOnly) { return refusal }
        return await admin(user, "lock", origin, caller) { [policyEngine] in policyEngine.adminLock($0) }
    }

    public func reset(user: String, origin: Origin, caller: Caller) async -> Reply {
        if let refusal = await authorize(caller, user, .rootOnly) { return refusal }
        return await admin(user, "reset", origin, caller) { [policyEngine] in policyEngine.reset($0) }
    }

    private func admin(
        _ user: String, _ action: String, _ origin: Origin, _ caller: Caller,
        _ change: @escaping (UserState) -> UserState
    ) async -> Reply {
        let ctx = EventContext(user: user, origin: origin, policy: nil, byUID: caller.uid)
        do { try await adminChange(ctx, action: action, limitingRepeats: !caller.isRoot, change) } catch {
            log.error("cannot change state: \(error)")
            return Self.storageFailure
        }
        log.debug("\(action)", metadata: ["user": "\(user)"])  // the admin record says it
        return .success()
    }

    /// An admin change, on disk before it is confirmed. It never turns an unreadable state into a
    /// clean one. Recorded once it is made in memory, where it holds whether or not the disk then
    /// takes it in time (the reply then says only that the disk failed).
    /// `limitingRepeats`: the client may ask it again at will (a user's own disable needs nothing):
    /// one that leaves the state as it was is written to the journal within `clientNotices`' limit
    /// for the caller (the monitors still get it); every change that changes something is written.
    func adminChange(
        _ ctx: EventContext, action: String, limitingRepeats: Bool = false, _ change: (UserState) -> UserState
    ) async throws(StorageError) {
        var made = false, changed = true
        defer {
            if made {
                let note = changed || !limitingRepeats ? "" : clientNotices.admit(ctx.byUID)
                events.publish(
                    event("admin", ctx, method: "admin", outcome: .success, reason: action), inJournal: note != nil)
                if let note, !note.isEmpty { log.notice("admin records that changed nothing\(note)") }
            }
        }
        try await states.update(ctx.user, .beforeReply, overUnreadable: true) { stored in
            made = true
            let next = change(stored.stateOrFailClosed(policyEngine))
            if case .state(let before) = stored { changed = next != before }
            return next
        }
    }

    public func domainState(user: String, service: String, caller: Caller) async -> Reply {
        if let refusal = await authorize(caller, user, .selfOrRoot) { return refusal }
        var reply = Reply.success()
        // Absent when there are no prints or no biometrics (docs/spec.md §4).
        guard await readerInfo(nil) != nil else { return reply }
        // Over the prints on every reader, the set the enrollment snapshot is taken of: a print
        // added on another reader changes it, which reader is the default does not.
        guard let entries = await prints.snapshotEntries(user) else {
            // Prints that cannot be read are not "no prints": the caller is told, never misled.
            log.error("prints of \(user) cannot be read for the domain state")
            return Refusal(.internalError, reason: .printsUnsafe, text: .printsUnsafe)
        }
        reply.domainState = domainKey.domainState(service: service, identities: entries)
        return reply
    }

    /// Streams events to `deliver` until it returns false or `stop` is set: root may watch
    /// everyone (or one user), a user only themself (docs/spec.md §5). An account named is judged
    /// as every request judges one: another's is notPermitted, one that does not exist userUnknown.
    public func monitor(user wanted: String?, caller: Caller, deliver: @escaping (String) -> Bool) async -> (
        Reply, UInt64?
    ) {
        let filter: String?
        if let wanted {
            if let refusal = await authorize(caller, wanted, .selfOrRoot) { return (refusal, nil) }
            filter = wanted
        } else if caller.isRoot {
            filter = nil
        } else {
            guard let me = await name(of: caller) else {
                return (Refusal(.notPermitted, reason: nil, text: .notPermitted), nil)
            }
            filter = me
        }
        return (.success(), events.subscribe(user: filter, deliver: deliver))
    }

    public func stopMonitoring(_ id: UInt64) { events.unsubscribe(id) }

    /// `reader`: the reader whose prints and availability are told (nil: the default one).
    public func status(user: String, caller: Caller, reader: String? = nil) async -> Reply {
        if let refusal = await authorize(caller, user, .selfOrRoot) { return refusal }
        let info = await readerInfo(reader)
        // A reader named that is not served (unplugged, a typo) has no prints here, and its
        // canEvaluate says so; it is never read as "every reader".
        let list: PrintList =
            reader != nil && info == nil ? .prints([]) : await prints.list(user, device: info?.deviceKey)
        var doc = StatusDocument(user: user, fingers: list.prints.map(\.finger.rawValue))
        doc.damagedFingers = list.prints.filter(\.needsEnrolling).map(\.finger.rawValue)
        doc.sealedFingers = list.prints.filter(\.closed).map(\.finger.rawValue)
        (doc.keyring, doc.keyringDetail) = await keyringState(user)
        let key = keyring.key
        (doc.keyringWithoutTPM, doc.keyringKeyFile) =
            (try? await storagePool.run { (key.usesKeyFile(), key.fileExists()) }) ?? (false, false)
        switch await prints.sealingState() {
        case nil: break
        case .ready?: doc.sealing = "sealed"
        case .off(let why)?: doc.sealing = "clear"; doc.sealingDetail = why
        case .unavailable(let why)?: doc.sealing = "unavailable"; doc.sealingDetail = why
        case .refused(let refusal, let why)?:
            doc.sealing = "refused"; doc.sealingDetail = why
            doc.sealingRefusal = refusal == .key ? "key" : "ownerPassword"
            doc.sealingKeyFile = prints.files.sealing?.keyPath
        }
        if case .unsafe(let why) = list { doc.printsProblem = why }
        let env = await environment(user, prints: list.prints, readerAvailable: info != nil)
        switch await states.load(user) {
        case .corrupt(let why):
            doc.stateReadable = false
            doc.stateProblem = why
        case .state(let s) where !s.isConsistent:
            // Refused as a file that is not a state is (`preflight`): its values are not told.
            doc.stateReadable = false
            doc.stateProblem = "the state holds values no change can make"
        case .state(let s):
            doc.stateReadable = true
            doc.enabled = s.enabled
            doc.failedMatches = s.consecutiveFailedMatches
            // Locked by the flag, or by a count at a threshold lowered since: what preflight refuses.
            doc.lockedOut = policyEngine.isLockedOut(s)
            doc.adminLocked = s.adminLocked
            doc.wrongPasswords = s.consecutiveWrongPasswords
            doc.passwordRequired = policyEngine.passwordRequiredReasons(s, in: env).map(\.rawValue)
            if case .refused(.backoff(let left)) = policyEngine.canAttemptPassword(s, at: env.now) {
                doc.backoffSecondsLeft = left
            } else {
                doc.backoffSecondsLeft = 0
            }
            doc.lastPasswordSuccess = s.lastPasswordSuccess
            doc.lastFingerprintSuccess = s.lastFingerprintSuccess
        }
        let refusal = await preflight(user: user, rhost: nil, reader: reader)
        doc.canEvaluate = .init(
            code: refusal?.outcome.rawValue ?? 0, name: refusal?.outcome.name ?? "success",
            reason: refusal?.reason?.rawValue ?? "")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var reply = Reply.success()
        reply.json = (try? String(decoding: encoder.encode(doc), as: UTF8.self)) ?? "{}"
        return reply
    }
}

/// `touchgate status --json`: field names are part of the CLI's output.
struct StatusDocument: Encodable {
    struct CanEvaluate: Encodable { var code: Int32; var name: String; var reason: String }
    var user: String
    var fingers: [String]
    var damagedFingers: [String] = []
    /// Sealed prints the TPM cannot open now.
    var sealedFingers: [String] = []
    /// The print store: "sealed" (to the TPM), "clear" (not sealed: sealingDetail says why),
    /// "unavailable" (sealing required, the key cannot be had: sealingDetail says why), or
    /// "refused" (the same, the TPM refusing for good: sealingDetail says why and the way out).
    var sealing: String?
    var sealingDetail: String?
    /// What the TPM refuses when sealing is "refused": "key" (the sealed key: a TPM cleared, a
    /// disk from another machine, bound PCRs changed) or "ownerPassword" (its owner hierarchy).
    var sealingRefusal: String?
    /// `<state>/sealed-key` when sealing is "refused": the file the way out removes.
    var sealingKeyFile: String?
    /// The sealed login password (docs/spec.md §12): off, ready, void (the prints changed), unavailable.
    var keyring = "off"
    /// Why the keyring is unavailable.
    var keyringDetail: String?
    /// keyring_without_tpm is in effect: login passwords sealed under a root-only key file.
    var keyringWithoutTPM = false
    /// That key file is on disk, in use or left (not yet retired): doctor warns while it is.
    var keyringKeyFile = false
    var printsProblem: String?
    var stateReadable = false
    var stateProblem: String?
    var enabled: Bool?
    var failedMatches: Int?
    var lockedOut: Bool?
    var adminLocked: Bool?
    var wrongPasswords: Int?
    var passwordRequired: [String]?
    var backoffSecondsLeft: Int64?
    var lastPasswordSuccess: Int64?
    var lastFingerprintSuccess: Int64?
    var canEvaluate = CanEvaluate(code: 0, name: "success", reason: "")
}
