// /net/reactivated/Fprint/Device/N: fprintd's claim, list and delete semantics over touchgate's core.
import CGIO
import TouchGateCore
import TouchGateReader
import TouchGateWire

@CoreActor final class FprintDevice {
    unowned let service: FprintService
    private(set) var info: ReaderInfo
    let path: String
    let registration: UInt32
    /// The reader was unplugged while claimed: only Release and the Stop calls are answered, and
    /// the object leaves the bus when the claim ends.
    var gone = false
    var core: Core { service.core }

    /// Who claimed the device: their bus name, the user they act for, and what polkit granted.
    struct Claim {
        let sender: String
        let username: String
        let caller: Caller
        let watch: UInt32
    }
    var claim: Claim?
    /// The verify or enroll running (or finished but not yet stopped, as fprintd keeps it).
    var action: DeviceAction?
    /// A deletion runs (fprintd's ACTION_DELETE): nothing else starts until it has ended; a
    /// second deletion waits for it, except on a reader with its own storage (`delete`).
    private var deletion: OneShot<Void>?
    var deleting: Bool { deletion != nil }
    /// A Release runs: as in fprintd, a call of the claim's meanwhile is another user's.
    private var releasing = false
    /// fprintd's refusal of a start while an action or a deletion runs; nil when none does.
    var busy: BusError? { action?.busy ?? (deleting ? .alreadyInUse("Delete already in progress") : nil) }
    /// A verify or enrollment of this object's listens on the reader (finger-needed).
    private(set) var fingerNeeded = false

    init(service: FprintService, info: ReaderInfo, path: String, registration: UInt32) {
        self.service = service
        self.info = info
        self.path = path
        self.registration = registration
        heard = Heard(stages: Int32(info.enrollScans), swipe: info.isSwipe, present: false, needed: false)
    }

    /// Emits a signal of this device.
    func emit(_ signal: String, interface: String = FprintNames.deviceInterface, _ arguments: [Variant]) {
        service.emit(signal, path: path, interface: interface, arguments)
    }

    // MARK: properties

    func property(_ name: String) -> Variant? {
        switch name {
        case "name": return V.string(info.name)
        // fprintd counts one more stage on identify-capable readers (its duplicate check).
        case "num-enroll-stages": return V.int32(Int32(info.enrollScans))
        case "scan-type": return V.string(info.isSwipe ? "swipe" : "press")
        case "finger-present": return V.bool(fingerOn)
        case "finger-needed": return V.bool(fingerWantedNow)
        default: return nil
        }
    }

    static let propertyNames = ["name", "num-enroll-stages", "scan-type", "finger-present", "finger-needed"]

    func allProperties() -> Variant {
        V.vardict(Self.propertyNames.compactMap { name in property(name).map { (name, $0) } })
    }

    /// finger-needed and finger-present speak of this object's own verify or enrollment only, as
    /// fprintd's do (its reader is open only while claimed, for its clients' operations): while a
    /// PAM prompt of the socket's uses the reader they stay false, and that prompt costs the bus
    /// nothing. finger-needed: ours listens (`fingerNeeded`) and the driver wants a finger (an
    /// image reader drops that between captures); finger-present: the driver feels a finger
    /// meanwhile. What a read answers is what the last change signal said.
    private var fingerOn: Bool { fingerNeeded && info.fingerPresent }
    private var fingerWantedNow: Bool { fingerNeeded && info.fingerWanted }

    /// The properties that change, as clients last heard them (at export, then by PropertiesChanged).
    private struct Heard: Equatable {
        var stages: Int32
        var swipe: Bool
        var present: Bool
        var needed: Bool
    }
    private var heard: Heard
    private var current: Heard {
        Heard(
            stages: Int32(info.enrollScans), swipe: info.isSwipe, present: fingerOn,
            needed: fingerWantedNow)
    }

    /// The driver changed its stage count, scan type or the finger's status: clients hear it.
    func update(_ new: ReaderInfo) {
        info = new
        emitChanged()
    }

    func setFingerNeeded(_ needed: Bool) {
        guard needed != fingerNeeded else { return }
        fingerNeeded = needed
        // The driver's finger status reaches this object only while it listens; every call counts
        // (each start is ended), so it is made whatever `needed` is.
        let now = core.watchFinger(needed, on: info.selector)
        if needed, let now { info = now }
        emitChanged()
    }

    /// A PropertiesChanged with what differs from what clients heard, at once: each operation's
    /// finger-needed true and false reach them in order with its other signals.
    private func emitChanged() {
        let now = current
        guard now != heard else { return }
        var changed: [(String, Variant)] = []
        if now.stages != heard.stages { changed.append(("num-enroll-stages", V.int32(now.stages))) }
        if now.swipe != heard.swipe { changed.append(("scan-type", V.string(now.swipe ? "swipe" : "press"))) }
        if now.present != heard.present { changed.append(("finger-present", V.bool(now.present))) }
        if now.needed != heard.needed { changed.append(("finger-needed", V.bool(now.needed))) }
        heard = now
        emit(
            "PropertiesChanged", interface: "org.freedesktop.DBus.Properties",
            [V.string(FprintNames.deviceInterface), V.vardict(changed), V.array("s", [])])
    }

    // MARK: dispatch

    func handle(_ call: Invocation) {
        if gone && !["Release", "VerifyStop", "EnrollStop"].contains(call.method) {
            return call.fail(Self.removedError)
        }
        CoreLoop.shared.task { [self] in
            switch call.method {
            case "Claim": call.answer(await claimDevice(call))
            case "Release": call.answer(await release(call))
            case "ListEnrolledFingers": call.answer(await listEnrolled(call))
            case "DeleteEnrolledFingers": call.answer(await delete(call, oneFinger: false, needsClaim: false))
            case "DeleteEnrolledFingers2": call.answer(await delete(call, oneFinger: false, needsClaim: true))
            case "DeleteEnrolledFinger": call.answer(await delete(call, oneFinger: true, needsClaim: true))
            case "VerifyStart": call.answer(await verifyStart(call))
            case "VerifyStop": call.answer(await stop(call, verify: true))
            case "EnrollStart": call.answer(await enrollStart(call))
            case "EnrollStop": call.answer(await stop(call, verify: false))
            default:
                call.fail(
                    BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "No such method \(call.method)")
                )
            }
        }
    }

    // MARK: who may

    /// The one answer to "for whom, and may they": the user a call is for ("" or the caller's own
    /// name is the caller; once claimed, the claim's user) and the caller with what polkit granted,
    /// handed to `body`. Where polkit runs it decides, as fprintd has it, for every caller, root
    /// included: `.setusername` for another user, then any one of `actions`. Without polkit the
    /// core's own table (docs/spec.md §5) decides. Either way before anything else is answered.
    func authorized(
        _ call: Invocation, _ actions: [FprintAction], as claimed: Claim? = nil,
        _ body: (_ user: String, _ caller: Caller) async -> Result<[Variant], BusError>
    ) async -> Result<[Variant], BusError> {
        guard let authority = service.authority else { return .failure(.internalError("no bus")) }
        var user: String, caller: Caller
        if let claimed {
            (user, caller) = (claimed.username, claimed.caller)
        } else {
            switch await authority.caller(call.sender) {
            case .failure(let e): return .failure(e)
            case .success(let c): caller = c
            }
            guard let own = await core.accountName(uid: caller.uid) else {
                return .failure(.internalError("Failed to get information about user UID \(caller.uid)"))
            }
            let requested = call.string(0) ?? ""
            user = requested.isEmpty ? own : requested
            if user != own {
                switch await authority.check(.setUsername, sender: call.sender, caller: caller) {
                case .allowed: caller.grants.insert(.actForOthers)
                case .denied(let why): return .failure(.permissionDenied(why))
                case .noAuthority: break  // the core's table, below, lets only root act for another user
                }
            }
        }
        if let denied = await permit(call, user, &caller, actions) { return .failure(denied) }
        return await body(user, caller)
    }

    /// fprintd's permission check: any one of `actions` suffices; without polkit, the core's table.
    private func permit(_ call: Invocation, _ user: String, _ caller: inout Caller, _ actions: [FprintAction]) async
        -> BusError?
    {
        guard let authority = service.authority else { return .internalError("no bus") }
        var denial: BusError?
        for action in actions {
            switch await authority.check(action, sender: call.sender, caller: caller) {
            case .allowed:
                if action == .enroll { caller.grants.insert(.changePrints) }
                return nil
            case .denied(let why): denial = .permissionDenied(why)
            case .noAuthority:
                guard let refusal = await core.permission(caller, user, action.right) else { return nil }
                denial = Self.permissionDenied(refusal)
            }
        }
        return denial ?? .permissionDenied("Not Authorized")
    }

    /// The core's refusal in fprintd's words; D-Bus cannot carry the password the core wants.
    static func permissionDenied(_ refusal: Refusal) -> BusError {
        guard refusal.reason == .passwordNeeded else {
            return .permissionDenied("Not Authorized: only root may act for another user")
        }
        return .permissionDenied(
            "Not Authorized: enrolling or deleting fingerprints needs your password, which this interface "
                + "cannot ask for without polkit; use 'touchgate enroll' or 'touchgate delete'")
    }

    /// nil when `call` comes from the client that claimed the device and nothing else runs.
    func checkClaimed(_ call: Invocation) -> BusError? {
        guard let claim else { return .claimDevice() }
        guard claim.sender == call.sender, !releasing else {
            return .alreadyInUse("Device already in use by another user")
        }
        return nil
    }

    // MARK: claim

    private func claimDevice(_ call: Invocation) async -> Result<[Variant], BusError> {
        if claim != nil { return .failure(.alreadyInUse("Device was already claimed")) }
        return await authorized(call, [.verify, .enroll]) { user, caller in
            // Re-checked after the awaits: a second claimer may have won meanwhile.
            if claim != nil { return .failure(.alreadyInUse("Device was already claimed")) }
            // As fprintd, whose Claim opens the device and libfprint refuses to open a suspended
            // one: asleep, with this reader closed for it (not one opened since, plugged in again).
            if core.asleep, !core.serves(info.selector) {
                return .failure(
                    .internalError(
                        "Open failed with error: The device is still busy with another operation, please try again later."
                    ))
            }
            let sender = call.sender
            let watch = service.watch(sender) { [weak self] in self?.clientVanished(sender) }
            claim = Claim(sender: sender, username: user, caller: caller, watch: watch)
            core.clientLine(
                .info, uid: caller.uid, "device claimed over D-Bus",
                metadata: ["user": "\(Core.shownName(user))", "uid": "\(caller.uid)"])
            return .success([])
        }
    }

    private func release(_ call: Invocation) async -> Result<[Variant], BusError> {
        if let e = checkClaimed(call) { return .failure(e) }
        let unplugged = gone
        releasing = true
        defer { releasing = false }
        await endClaim()
        // As fprintd answers it (Debian's 1.94.2, and upstream's test_removal_during_enroll): the
        // claim ends and the object goes, but the Release of a reader unplugged meanwhile fails.
        if unplugged {
            return .failure(.internalError("Release failed with error: This device has been removed from the system."))
        }
        return .success([])
    }

    /// A client that goes away releases the device at once, as a PAM client's does.
    private func clientVanished(_ sender: String) {
        service.authority?.forget(sender)
        guard let claim, claim.sender == sender else { return }
        service.core.clientLine(
            .info, uid: claim.caller.uid, "D-Bus client \(sender) left: its claim is released",
            metadata: ["uid": "\(claim.caller.uid)"])
        CoreLoop.shared.task { [self] in await endClaim() }
    }

    func endClaim() async {
        if let action { await action.cancelAndWait() }
        action = nil
        setFingerNeeded(false)
        let held = claim != nil
        if let claim { service.unwatch(claim.watch) }
        claim = nil
        if gone { service.unexport(self) }
        if held { service.afterClaim() }
    }

    // MARK: prints

    private func listEnrolled(_ call: Invocation) async -> Result<[Variant], BusError> {
        await authorized(call, [.verify]) { user, caller in
            let reply = await core.list(user: user, caller: caller, device: info.deviceKey, listing: .withoutDamaged)
            guard reply.isSuccess else { return .failure(Self.error(for: reply)) }
            guard !reply.fingers.isEmpty else { return .failure(.noEnrolledPrints("Failed to discover prints")) }
            return .success([V.array("s", reply.fingers.map { V.string($0.rawValue) })])
        }
    }

    /// DeleteEnrolledFinger (`oneFinger`, the name in the call), DeleteEnrolledFingers2 and the
    /// deprecated DeleteEnrolledFingers. As fprintd: the claim, then polkit, then the finger's
    /// name and whether another action runs.
    private func delete(_ call: Invocation, oneFinger: Bool, needsClaim: Bool) async -> Result<[Variant], BusError> {
        if needsClaim || claim != nil, let e = checkClaimed(call) { return .failure(e) }
        // The deprecated DeleteEnrolledFingers names its user even from the claim's holder, as in
        // fprintd: the name (or "" for the caller) decides, not the claim.
        return await authorized(call, [.enroll], as: needsClaim ? claim : nil) { user, caller in
            if needsClaim || claim != nil, let e = checkClaimed(call) { return .failure(e) }  // after the awaits
            var finger: Finger?
            if oneFinger {
                guard let named = call.string(0).flatMap(Finger.init(rawValue:)) else {
                    return .failure(.invalidFingername())
                }
                finger = named
            }
            // On a reader with its own storage fprintd's deletion waits for the chip, and a second
            // is refused; elsewhere it deletes in one go, so a second one follows the first.
            if action != nil || info.hasStorage, let busy { return .failure(busy) }  // what runs, named
            while let running = deletion { await running.wait() }
            if needsClaim || claim != nil, let e = checkClaimed(call) { return .failure(e) }  // released meanwhile
            if let busy { return .failure(busy) }  // one begun meanwhile
            let mine = OneShot<Void>()
            deletion = mine
            defer {
                deletion = nil
                mine.set(())
            }
            return await deletePrints(user, caller, finger: finger)
        }
    }

    private func deletePrints(_ user: String, _ caller: Caller, finger: Finger?) async -> Result<[Variant], BusError> {
        let reply = await core.delete(
            user: user, fingers: finger.map { [$0] } ?? [], all: finger == nil, password: nil,
            origin: Origin(service: FprintNames.bus), caller: caller, reader: info.selector)
        if reply.outcome == .notFound || (reply.isSuccess && reply.fingers.isEmpty) {
            return .failure(
                .noEnrolledPrints(
                    finger.map { "Fingerprint for finger \($0.rawValue) is not enrolled" }
                        ?? "No fingerprint enrolled"))
        }
        guard reply.isSuccess else {
            if readerGone(reply) { return .failure(Self.removedError) }
            // The store could not be changed: fprintd's name for prints left in place.
            if reply.outcome == .internalError {
                return .failure(
                    .printsNotDeleted(
                        "Failed to delete the prints: the print store cannot be changed (the daemon's log says why)"))
            }
            return .failure(Self.error(for: reply))
        }
        // Deleted, but the match-on-chip reader kept its copy: fprintd's lower-priority error.
        if reply.reason == .notDeletedFromReader {
            return .failure(
                .printsNotDeletedFromDevice(
                    "Failed to delete print from device storage: the reader refused (the daemon's log says why)"))
        }
        return .success([])
    }

    /// fprintd's error for a refusal of the core; the sentence says why.
    static func error(for reply: Reply) -> BusError {
        let why = reply.text?.render(.english) ?? reply.outcome.name
        switch reply.outcome {
        // Every print damaged: fprintd, too, finds none it can load.
        case .biometryNotEnrolled, .templateDamaged: return .noEnrolledPrints(why)
        // An account that does not exist has no prints (fprintd's answer), told to those who may ask.
        case .userUnknown: return .noEnrolledPrints(why)
        case .notPermitted, .biometryLockout, .passwordRequired, .passwordBackoff: return .permissionDenied(why)
        default: return .internalError(why)
        }
    }
}
